"""ZooKeeper's own command-line clients from Debian against `tenure server
-zk-addr` (decision 0056, docs/zookeeper-compat.md): the Java CLI zkCli.sh
(package zookeeper) and the C CLI cli_mt (package zookeeper-bin), as an
operator types them. tests/integration/test_zookeeper_port.py drives the port with kazoo and
frame by frame; these are the tools people reach for first when a
ZooKeeper misbehaves, and each prints what the server answered in its own
words: zkCli.sh's "Created /x", Stat fields and messages ("Node does not
exist: /x"), cli_mt's raw return codes (rc = -101) and Stat dumps. The
expected transcripts are what both CLIs print against ZooKeeper 3.8.0 for
the same commands, less what differs from run to run (zxids, times, session
ids): those are checked against each other instead (mZxid after pZxid after
cZxid once children came and a set followed, an ephemeral's owner the
session cli_mt was given, ctime the server's clock).

zkCli.sh starts a JVM, so each test feeds it a script on stdin (it reads
commands there when none is on its command line) and splits the output on
`printwatches`, a command it answers itself ("printwatches is on"), put
between the commands. cli_mt answers asynchronously, so each command waits
for the end of its answer before the next is typed.

Both CLIs ask for watches (zkCli.sh's -w, cli_mt's get, ls and wexists);
tenure accepts the flag but sends no events yet, so only the answers to
those requests are checked, and event lines (ZooKeeper would print them)
are ignored."""

import datetime
import os
import re
import signal
import subprocess
import unittest

from process_lines import ProcessLines
from tenure_testlib import DevServer, free_port, poll_until

ZKCLI = "/usr/share/zookeeper/bin/zkCli.sh"
CLI_MT = "/usr/lib/zookeeper/bin/cli_mt"
CLI_TIMEOUT_S = 30  # one whole zkCli.sh script, or one cli_mt answer
SEPARATOR = "printwatches"  # answered by zkCli.sh itself: "printwatches is on"

# zkCli.sh's lines that are not answers: its logger's complaints, its
# greeting, and watch events (printed by another thread, at any point).
ZKCLI_NOISE = re.compile(r"SLF4J: |Connecting to |Welcome to ZooKeeper!|JLine support is "
                         r"disabled|WATCHER::|WatchedEvent |$")


def zkcli_env():
    # ctime and mtime are printed in the JVM's time zone: fix it to parse them.
    return dict(os.environ, TZ="UTC")


def run_bounded(argv, input_text, env=None, timeout=CLI_TIMEOUT_S):
    """Runs argv in a process group of its own (zkCli.sh is a shell that
    starts java) and returns (exit code, stdout and stderr merged). Past
    `timeout` the group is killed and the test fails with what it printed."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(input_text, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        raise AssertionError(f"{argv} did not end within {timeout}s; it printed:\n{out}")
    return proc.returncode, out


def parse_stat(lines):
    """zkCli.sh's Stat lines ("cZxid = 0x1f") as a dict; zxids and the
    owner as ints, ctime and mtime as aware datetimes."""
    stat = {}
    for line in lines:
        name, sep, value = line.partition(" = ")
        if not sep:
            continue
        if name in ("ctime", "mtime"):
            stat[name] = datetime.datetime.strptime(value, "%a %b %d %H:%M:%S UTC %Y").replace(
                tzinfo=datetime.timezone.utc)
        elif value.startswith("0x"):
            stat[name] = int(value, 16)
        else:
            stat[name] = int(value)
    return stat


def parse_dump(lines):
    """cli_mt's Stat dump (its dumpStat: czxid=1f, version=1, all hex) as a dict."""
    text = "\n".join(lines)
    fields = {}
    for name in ("czxid", "mzxid", "version", "aversion"):
        match = re.search(rf"\b{name}=([0-9a-f]+)", text)
        if match:
            fields[name] = int(match.group(1), 16)
    match = re.search(r"ephemeralOwner = ([0-9a-f]+)", text)
    if match:
        fields["ephemeralOwner"] = int(match.group(1), 16)
    return fields


class CliMt:
    """One cli_mt process: a ZooKeeper session that takes commands on stdin."""

    HELP_END = "    i.e. 'aget /foo' to get /foo asynchronously"

    def __init__(self, zk_addr):
        self.proc = ProcessLines([CLI_MT, zk_addr])
        match = self.wait_for(lambda lines: any(re.match(r"Got a new session id: 0x[0-9a-f]+$", x)
                                                for x in lines), [], "a session")
        self.session_id = int(match[-1].rsplit("0x", 1)[1], 16)

    def lines(self):
        # "Watcher ..." lines are watch events (ZooKeeper sends them; tenure not yet).
        return [x for x in self.proc.snapshot() if not x.startswith("Watcher ")]

    def wait_for(self, done, before, what):
        """The lines printed since `before` (an earlier lines()) once done(them) holds."""
        start = len(before)
        try:
            poll_until(lambda: done(self.lines()[start:]), timeout=CLI_TIMEOUT_S)
        except AssertionError:
            raise AssertionError(f"cli_mt: no {what} within {CLI_TIMEOUT_S}s; it printed:\n"
                                 + "\n".join(self.proc.snapshot())) from None
        return self.lines()[start:]

    def run(self, command, done):
        """Types command and returns its answer's lines, once done(lines) holds."""
        before = self.lines()
        self.proc.send(command)
        return self.wait_for(done, before, f"answer to {command!r}")

    # When each kind of answer is whole (cli.c's completions).
    @staticmethod
    def until(*patterns):
        return lambda lines: any(re.search(p, x) for p in patterns for x in lines)

    def create(self, command):
        # "[/x]: rc = 0" then "\tname = /x", or the rc alone on an error.
        return self.run(command, self.until(r"^\tname = ", r"^\[.*\]: rc = -\d+$"))

    def with_stat(self, command):
        # get, set, create2, ls2: a Stat dump, or "null" without one.
        return self.run(command, self.until(r"^\tephemeralOwner = ", r"^null$"))

    def ls(self, command):
        # "time = N msec" before and after the children.
        return self.run(command, lambda lines: sum(x.startswith("time = ") for x in lines) == 2)

    def delete(self, command):
        return self.run(command, self.until(r": rc = -?\d+$"))

    def synchronous(self, command):
        """exists and wexists: cli_mt waits for their answer and prints only an
        error; `help` typed after them ends the answer."""
        before = self.lines()
        self.proc.send(command)
        self.proc.send("help")
        lines = self.wait_for(lambda lines: self.HELP_END in lines, before,
                              f"answer to {command!r}")
        return lines[:lines.index("    create [+[e|s|c|t=ttl]] <path>")]

    def quit(self):
        self.proc.send("quit")
        try:
            code = self.proc.process.wait(timeout=CLI_TIMEOUT_S)
        finally:
            self.proc.stop()
        return code

    def stop(self):
        self.proc.stop()


def children_of(lines):
    """The names cli_mt listed (the tab-indented lines between its "rc ="
    line and the next "time =" line), as a sorted list."""
    names, listing = [], False
    for line in lines:
        if re.search(r": rc = -?\d+$", line):
            listing = True
        elif line.startswith("time = "):
            listing = False
        elif listing and line.startswith("\t"):
            names.append(line[1:])
    return sorted(names)


class ZooKeeperClisTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.zk_addr = f"127.0.0.1:{free_port()}"
        cls.server = DevServer(extra_args=["-zk-addr", cls.zk_addr]).__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def tearDown(self):
        self.assertTrue(self.server.alive(), self.server.log_tail(60))

    # --- zkCli.sh -------------------------------------------------------------

    def zkcli_script(self, commands):
        """Runs commands in one zkCli.sh session ended by `quit` (which closes
        the session); returns its exit code (the last command's: ZooKeeperMain
        keeps it through quit), each command's answer lines, and all it printed."""
        script = "".join(f"{SEPARATOR}\n{command}\n" for command in commands)
        code, out = run_bounded([ZKCLI, "-server", self.zk_addr], f"{script}quit\n",
                                env=zkcli_env())
        answers, current = [], None
        for line in out.splitlines():
            if line == "printwatches is on":
                if current is not None:
                    answers.append(current)
                current = []
            elif current is not None and not ZKCLI_NOISE.match(line):
                current.append(line)
        if current is not None:
            answers.append(current)  # the last command's, up to quit
        self.assertEqual(len(answers), len(commands),
                         f"one answer per command; zkCli.sh printed:\n{out}\n"
                         f"server log:\n{self.server.log_tail(30)}")
        return code, answers, out

    def zkcli_command(self, *command):
        """zkCli.sh with one command on its command line; (exit code, answer lines)."""
        code, out = run_bounded([ZKCLI, "-server", self.zk_addr, *command], None,
                                env=zkcli_env())
        return code, [x for x in out.splitlines() if not ZKCLI_NOISE.match(x)]

    def test_zkcli_creates_reads_and_writes_nodes_as_against_zookeeper(self):
        started = datetime.datetime.now(datetime.timezone.utc)
        commands = [
            "create /zkcli hello",               # 0
            "create -e /zkcli/eph held",         # 1
            "create -s /zkcli/seq- one",         # 2
            "create -s /zkcli/seq- two",         # 3
            "get /zkcli",                        # 4
            "set /zkcli world",                  # 5
            "get -s /zkcli",                     # 6
            "stat /zkcli/eph",                   # 7
            "ls /zkcli",                         # 8
            "ls -s /zkcli",                      # 9
            "getEphemerals /zkcli",              # 10
            "getAllChildrenNumber /zkcli",       # 11
            "getAcl /zkcli",                     # 12
            "sync /zkcli",                       # 13
            "whoami",                            # 14
            "delete /zkcli/seq-0000000001",      # 15
            "stat /zkcli",                       # 16
            "get -w /zkcli",                     # 17: watch flags, answered as plain reads
            "ls -w /zkcli",                      # 18
            "stat -w /zkcli/eph",                # 19
            "addWatch /zkcli",                   # 20: persistent recursive (zkCli's default)
            "create -e /zkcli/w x",              # 21
            "set /zkcli/w y",                    # 22
            "removewatches /zkcli -a",           # 23: a persistent watch is removed as any kind
            "set /zkcli/w z",                    # 24: no event
        ]
        code, answers, out = self.zkcli_script(commands)
        self.assertEqual(code, 0, out)
        self.assertEqual(answers[0:4], [["Created /zkcli"], ["Created /zkcli/eph"],
                                        ["Created /zkcli/seq-0000000001"],
                                        ["Created /zkcli/seq-0000000002"]])
        self.assertEqual(answers[4], ["hello"])
        self.assertEqual(answers[5], [])
        self.assertEqual(answers[6][0], "world")
        stat = parse_stat(answers[6][1:])
        self.assertEqual(list(stat), ["cZxid", "ctime", "mZxid", "mtime", "pZxid", "cversion",
                                      "dataVersion", "aclVersion", "ephemeralOwner", "dataLength",
                                      "numChildren"], answers[6])
        self.assertEqual((stat["dataVersion"], stat["aclVersion"], stat["cversion"],
                          stat["ephemeralOwner"], stat["dataLength"], stat["numChildren"]),
                         (1, 0, 3, 0, 5, 3))
        self.assertLess(stat["cZxid"], stat["pZxid"], "children created after their parent")
        self.assertLess(stat["pZxid"], stat["mZxid"], "the set came after the creates")
        self.assertLessEqual(stat["ctime"], stat["mtime"])
        for name in ("ctime", "mtime"):
            self.assertLess(abs((stat[name] - started).total_seconds()), 120,
                            f"{name} {stat[name]} is the server's clock, not {started}")
        eph = parse_stat(answers[7])
        self.assertNotEqual(eph["ephemeralOwner"], 0, answers[7])
        self.assertEqual((eph["dataVersion"], eph["dataLength"], eph["numChildren"],
                          eph["cversion"]), (0, 4, 0, 0))
        self.assertEqual(eph["pZxid"], eph["cZxid"], "a new node's pZxid is its cZxid")
        self.assertLess(stat["cZxid"], eph["cZxid"])
        self.assertEqual(answers[8], ["[eph, seq-0000000001, seq-0000000002]"])
        self.assertEqual(answers[9][0], "[eph, seq-0000000001, seq-0000000002]")
        self.assertEqual(parse_stat(answers[9][1:]), stat, "ls -s: the same Stat as get -s")
        self.assertEqual(answers[10], ["[/zkcli/eph]"])
        self.assertEqual(answers[11], ["3"])
        self.assertEqual(answers[12], ["'world,'anyone", ": cdrwa"])
        self.assertEqual(answers[13], ["Sync is OK"])
        self.assertEqual(answers[14], ["Auth scheme: User", "ip: 127.0.0.1"])
        self.assertEqual(answers[15], [])
        after = parse_stat(answers[16])
        # ZooKeeper 3.8 counts the delete in cversion; pZxid moves, mZxid does not.
        self.assertEqual((after["cversion"], after["numChildren"], after["dataVersion"],
                          after["mZxid"], after["cZxid"]),
                         (4, 2, 1, stat["mZxid"], stat["cZxid"]))
        self.assertGreater(after["pZxid"], stat["mZxid"])
        self.assertEqual(answers[17], ["world"])
        self.assertEqual(answers[18], ["[eph, seq-0000000002]"])
        self.assertEqual(parse_stat(answers[19]), eph)
        self.assertEqual(answers[20:25], [[], ["Created /zkcli/w"], [], [], []])
        # The recursive watch's events, printed by zkCli's event thread before
        # the answers that came after them.
        events = re.findall(r"WatchedEvent state:SyncConnected type:(\w+) path:(/zkcli\S*)", out)
        self.assertEqual([e for e in events if e[1] == "/zkcli/w"],
                         [("NodeCreated", "/zkcli/w"), ("NodeDataChanged", "/zkcli/w")], out)

        # `quit` closed the session: its ephemeral went with it, before the
        # close was answered. One command on the command line, as scripts run it.
        self.assertEqual(self.zkcli_command("ls", "/zkcli"), (0, ["[seq-0000000002]"]))
        self.assertEqual(self.zkcli_command("get", "/zkcli/eph"),
                         (1, ["Node does not exist: /zkcli/eph"]))

    def test_zkcli_prints_zookeepers_errors_and_changes_nothing(self):
        commands = [
            "create /zkerr base",                        # 0
            "create -e /zkerr/eph x",                    # 1
            "create /zkerr again",                       # 2
            "delete /zkerr",                             # 3
            "set -v 5 /zkerr y",                         # 4
            "delete -v 5 /zkerr/eph",                    # 5
            "get /zkerr/missing",                        # 6
            "stat /zkerr/missing",                       # 7
            "ls /zkerr/missing",                         # 8
            "set /zkerr/missing y",                      # 9
            "delete /zkerr/missing",                     # 10
            "create /zkerr/missing/child x",             # 11
            "create -e /zkerr/eph/child x",              # 12
            "create -t 1000 /zkerr/ttl x",               # 13: TTL nodes are off in ZooKeeper's default
            "get -s /zkerr",                             # 14
            "deleteall /zkerr",                          # 15
            "get /zkerr",                                # 16: the last command: the exit code
        ]
        code, answers, out = self.zkcli_script(commands)
        self.assertEqual(code, 1, f"the last command failed; zkCli.sh printed:\n{out}")
        self.assertEqual(answers, [
            ["Created /zkerr"],
            ["Created /zkerr/eph"],
            ["Node already exists: /zkerr"],
            ["Node not empty: /zkerr"],
            ["version No is not valid : /zkerr"],
            ["version No is not valid : /zkerr/eph"],
            ["Node does not exist: /zkerr/missing"],
            ["Node does not exist: /zkerr/missing"],
            ["Node does not exist: /zkerr/missing"],
            ["Node does not exist: /zkerr/missing"],
            ["Node does not exist: /zkerr/missing"],
            ["Node does not exist: /zkerr/missing/child"],
            ["Ephemerals cannot have children: /zkerr/eph/child"],
            ["KeeperErrorCode = Unimplemented for /zkerr/ttl"],
            answers[14],
            [],
            ["Node does not exist: /zkerr"],
        ])
        self.assertEqual(answers[14][0], "base", "the failed writes changed nothing")
        stat = parse_stat(answers[14][1:])
        self.assertEqual((stat["dataVersion"], stat["cversion"], stat["numChildren"]), (0, 1, 1))
        self.assertEqual(stat["mZxid"], stat["cZxid"])

    # --- cli_mt ---------------------------------------------------------------

    def cli_mt(self):
        client = CliMt(self.zk_addr)
        self.addCleanup(client.stop)
        return client

    def test_cli_mt_creates_reads_and_writes_nodes_as_against_zookeeper(self):
        cli = self.cli_mt()
        # cli_mt creates every node with the data "new".
        self.assertEqual(cli.create("create /climt"), ["Creating [/climt] node (mode: 0)",
                                                       "[/climt]: rc = 0", "\tname = /climt"])
        self.assertEqual(cli.create("create +e /climt/eph")[1:],
                         ["[/climt/eph]: rc = 0", "\tname = /climt/eph"])
        self.assertEqual(cli.create("create +s /climt/seq-")[1:],
                         ["[/climt/seq-]: rc = 0", "\tname = /climt/seq-0000000001"])
        two = cli.with_stat("create2 /climt/two")
        self.assertEqual(two[1:3], ["[/climt/two]: rc = 0", "\tname = /climt/two"])
        self.assertEqual(parse_dump(two)["version"], 0)
        # get, ls and ls2 ask for a watch (cli_mt always does): plain answers.
        got = cli.with_stat("get /climt")
        self.assertEqual(got[1:5], ["/climt: rc = 0", " value_len = 3", "new", "Stat:"])
        created = parse_dump(got)
        self.assertEqual((created["version"], created["aversion"], created["ephemeralOwner"]),
                         (0, 0, 0))
        self.assertEqual(created["czxid"], created["mzxid"])
        changed = cli.with_stat("set /climt hello world")
        self.assertEqual(changed[0], "/climt: rc = 0 Stat:")
        after_set = parse_dump(changed)
        self.assertEqual((after_set["version"], after_set["czxid"]), (1, created["czxid"]))
        self.assertGreater(after_set["mzxid"], created["mzxid"])
        got = cli.with_stat("get /climt")
        self.assertEqual(got[1:5], ["/climt: rc = 0", " value_len = 11", "hello world", "Stat:"])
        self.assertEqual(parse_dump(got), after_set)
        eph = parse_dump(cli.with_stat("get /climt/eph"))
        self.assertEqual(eph["ephemeralOwner"], cli.session_id, "owned by cli_mt's session")
        listed = cli.ls("ls /climt")
        self.assertIn("/climt: rc = 0", listed)
        self.assertEqual(children_of(listed), ["eph", "seq-0000000001", "two"])
        listed = cli.with_stat("ls2 /climt")
        self.assertIn("/climt: rc = 0", listed)
        self.assertEqual(children_of(listed), ["eph", "seq-0000000001", "two"])
        self.assertEqual(parse_dump(listed), after_set)
        self.assertEqual(cli.synchronous("exists /climt"), [])
        self.assertEqual(cli.synchronous("wexists /climt/two"), [])
        self.assertEqual(cli.delete("delete /climt/two"), ["/climt/two: rc = 0"])
        self.assertEqual(cli.create("sync /climt"), ["[/climt]: rc = 0", "\tname = /climt"])
        self.assertEqual(cli.quit(), 0)

        # Its session closed with it, and its ephemeral with the session.
        again = self.cli_mt()
        self.assertNotEqual(again.session_id, cli.session_id)
        self.assertEqual(children_of(again.ls("ls /climt")), ["seq-0000000001"])
        self.assertEqual(again.delete("delete /climt/seq-0000000001"),
                         ["/climt/seq-0000000001: rc = 0"])
        self.assertEqual(again.delete("delete /climt"), ["/climt: rc = 0"])
        self.assertEqual(again.synchronous("exists /climt"), ["Error -101 for /climt"])
        self.assertEqual(again.quit(), 0)

    def test_cli_mt_prints_zookeepers_return_codes(self):
        cli = self.cli_mt()
        cli.create("create /climterr")
        cli.create("create +e /climterr/eph")
        # ZNONODE -101, ZNODEEXISTS -110, ZNOTEMPTY -111, ZNOCHILDRENFOREPHEMERALS -108.
        missing = cli.with_stat("get /climterr/none")
        self.assertEqual(missing[1:], ["/climterr/none: rc = -101", "", "Stat:", "null"])
        self.assertEqual(cli.with_stat("set /climterr/none x"),
                         ["/climterr/none: rc = -101 Stat:", "null"])
        listed = cli.ls("ls /climterr/none")
        self.assertIn("/climterr/none: rc = -101", listed)
        self.assertEqual(children_of(listed), [])
        self.assertEqual(cli.delete("delete /climterr/none"), ["/climterr/none: rc = -101"])
        self.assertEqual(cli.synchronous("exists /climterr/none"), ["Error -101 for /climterr/none"])
        self.assertEqual(cli.synchronous("wexists /climterr/none"),
                         ["Error -101 for /climterr/none"])
        self.assertEqual(cli.create("create /climterr")[1:], ["[/climterr]: rc = -110"])
        self.assertEqual(cli.delete("delete /climterr"), ["/climterr: rc = -111"])
        self.assertEqual(cli.create("create /climterr/eph/x")[1:],
                         ["[/climterr/eph/x]: rc = -108"])
        self.assertEqual(cli.create("create /climterr/none/x")[1:],
                         ["[/climterr/none/x]: rc = -101"])
        # Nothing changed: the node still at version 0 with its one child.
        got = cli.with_stat("get /climterr")
        self.assertEqual(got[1:4], ["/climterr: rc = 0", " value_len = 3", "new"])
        self.assertEqual(parse_dump(got)["version"], 0)
        self.assertEqual(children_of(cli.ls("ls /climterr")), ["eph"])
        self.assertEqual(cli.quit(), 0)


if __name__ == "__main__":
    unittest.main()
