"""`tenure elect` (the candidate agent) and the commands that ask it
(`is-leader`, `leader-set`, `resign`) against a real server, with real agent
processes, real hooks and the real local socket: answers and exit codes, the
probe, leader settings (refused from followers, atomic groups, one
settings-changed per change on every follower), handoffs (resign, resign -to),
the is-leader guarantee across a forced failover (the leader SIGSTOPped past
its TTL), a socket that survives bad input, and a clean exit on SIGTERM.

The server runs with -session-ttl-multiplier 1 and the agents with -ttl 10s
-lock-delay 1s, so a failover takes about 11 s and G (the guarantee window)
is T/3, read from the agent's status as GuaranteeMs.
"""

import base64
import json
import os
import shlex
import signal
import socket
import subprocess
import threading
import time
import unittest

from fault_proxy import FaultProxy
from tenure_testlib import SharedServerTestCase, free_port, http_request, poll_until, tenure_bin

TTL_S = 10
LOCK_DELAY_S = 1


def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except FileNotFoundError:
        return ""


def ask_socket(path, payload, timeout=5.0):
    """One request on the agent's socket: bytes out, the answer line in (parsed)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall(payload)
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    return json.loads(data)


class Agent:
    """One `tenure elect NAME` process with hooks appending to a file:
    "elected CANDIDATE TOKEN", "deposed CANDIDATE REASON",
    "settings-changed CANDIDATE <leader-get -format json>"."""

    def __init__(self, test, name, candidate, extra=()):
        self.test = test
        self.name = name
        self.candidate = candidate
        self.socket = os.path.join(test.dir, f"{name}-{candidate}.sock")
        self.hooks = os.path.join(test.dir, f"{name}-{candidate}.hooks")
        self.log_path = os.path.join(test.dir, f"{name}-{candidate}.log")
        http = test.server.http_addr
        f = shlex.quote(self.hooks)
        get = (f"{shlex.quote(tenure_bin())} leader-get {shlex.quote(name)} -format json "
               f"-http-addr {http}")
        cmd = [tenure_bin(), "elect", name, "-ttl", f"{TTL_S}s", "-lock-delay", f"{LOCK_DELAY_S}s",
               "-candidate", candidate, "-socket", self.socket, "-http-addr", http,
               "-on-elected", f'echo "elected $TENURE_CANDIDATE $TENURE_FENCING_TOKEN" >> {f}',
               "-on-deposed", f'echo "deposed $TENURE_CANDIDATE $TENURE_REASON" >> {f}',
               "-on-settings-changed",
               f'out=$({get}); echo "settings-changed $TENURE_CANDIDATE $out" >> {f}',
               *extra]
        self._log = open(self.log_path, "ab")
        self.process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self._log,
                                        stderr=subprocess.STDOUT)
        self.pid = self.process.pid

    # --- asking it -------------------------------------------------------------

    def cli(self, *args, timeout=30.0):
        """`tenure ARGS -socket <this agent's socket>`."""
        return self.test.server.cli(*args, "-socket", self.socket, timeout=timeout)

    def status(self, timeout=5.0):
        return ask_socket(self.socket, b'{"Op":"status"}\n', timeout)

    def is_leader(self):
        """True/False from `tenure is-leader`, None when it cannot tell (exit 1)."""
        out = self.cli("is-leader", self.name, "-timeout", "2s")
        if out.returncode != 0:
            return None
        return {"True\n": True, "False\n": False}[out.stdout]

    def hook_lines(self):
        """The complete lines of the hook file, split as (hook, candidate, rest)."""
        text = read_text(self.hooks)
        lines = text.split("\n")[:-1]  # a line still being written has no newline yet
        return [tuple((line.split(" ", 2) + ["", ""])[:3]) for line in lines]

    def settings_seen(self):
        return [json.loads(rest) for hook, _, rest in self.hook_lines()
                if hook == "settings-changed"]

    def log(self):
        return read_text(self.log_path)

    def describe(self):
        return (f"--- agent {self.candidate} log:\n{self.log()}--- hooks:\n"
                f"{read_text(self.hooks)}")

    # --- waiting and stopping ------------------------------------------------------

    def wait_ready(self, timeout=20.0):
        poll_until(lambda: self.status(), timeout=timeout,
                   message=f"agent {self.candidate} never answered on its socket\n"
                           + self.describe())
        return self

    def wait_leader(self, timeout=20.0):
        poll_until(lambda: self.status()["Leader"], timeout=timeout,
                   message=f"agent {self.candidate} never led\n" + self.describe())
        return self

    def wait_follower(self, leader, timeout=20.0):
        """Until it sees `leader` (an Agent) leading, and is not the leader itself."""
        sid = leader.status()["Session"]
        poll_until(lambda: (lambda s: s["LeaderSession"] == sid and not s["Leader"])(self.status()),
                   timeout=timeout,
                   message=f"agent {self.candidate} never saw {leader.candidate} lead\n"
                           + self.describe())
        return self

    def stop(self, sig=signal.SIGTERM, timeout=30.0):
        """Stops it (SIGCONT first, in case it was stopped); returns the exit code."""
        if self.process.poll() is None:
            try:
                os.kill(self.pid, signal.SIGCONT)
                self.process.send_signal(sig)
            except ProcessLookupError:
                pass
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()
        return self.process.returncode


class ElectTest(SharedServerTestCase):
    def setUp(self):
        super().setUp()
        self.agents = []
        self.addCleanup(self.stop_agents)

    def stop_agents(self):
        # All at once: followers and leaders resign and exit in parallel.
        for agent in self.agents:
            if agent.process.poll() is None:
                try:
                    os.kill(agent.pid, signal.SIGCONT)
                    agent.process.send_signal(signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for agent in self.agents:
            agent.stop()

    def start(self, name, candidate, extra=()):
        agent = Agent(self, name, candidate, extra)
        self.agents.append(agent)
        return agent.wait_ready()

    def start_leader_and_followers(self, name, followers=1, extra=()):
        """c1 leads, then c2.. start and see it lead."""
        leader = self.start(name, "c1", extra).wait_leader()
        rest = [self.start(name, f"c{i + 2}", extra) for i in range(followers)]
        for agent in rest:
            agent.wait_follower(leader)
        return [leader, *rest]

    def leader_key_session(self, name):
        r = self.server.request("GET", f"/v1/kv/service/{name}/leader")
        if r.status == 404:
            return ""
        return r.json()[0].get("Session", "") or ""

    def leader_get(self, name):
        out = self.server.cli("leader-get", name, "-format", "json")
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    # --- 1 -----------------------------------------------------------------------

    def test_1_is_leader_formats_exit_codes_and_probe(self):
        name = "formats"
        ports = [free_port(), free_port()]
        leader = self.start(name, "c1", ("-probe-addr", f"127.0.0.1:{ports[0]}")).wait_leader()
        follower = self.start(name, "c2", ("-probe-addr", f"127.0.0.1:{ports[1]}"))
        follower.wait_follower(leader)

        for agent, want in ((leader, True), (follower, False)):
            for fmt, text in (("text", str(want)), ("json", str(want).lower()),
                              ("yaml", str(want).lower())):
                out = agent.cli("is-leader", name, "-format", fmt)
                self.assertEqual((out.returncode, out.stdout), (0, text + "\n"),
                                 f"{agent.candidate} -format {fmt}: {out.stderr}")
            out = agent.cli("is-leader", name)  # the default format is text
            self.assertEqual((out.returncode, out.stdout), (0, f"{want}\n"), out.stderr)

        # No agent at the socket: exit 1, says so, prints no answer.
        missing = os.path.join(self.dir, "nobody.sock")
        out = self.server.cli("is-leader", name, "-socket", missing)
        self.assertEqual(out.returncode, 1, out.stdout)
        self.assertEqual(out.stdout, "")
        self.assertIn("cannot reach the candidate agent", out.stderr)
        self.assertIn(f"tenure elect {name}", out.stderr)
        # A socket of another election's agent: refused, exit 1.
        out = self.server.cli("is-leader", "other", "-socket", leader.socket)
        self.assertEqual((out.returncode, out.stdout), (1, ""), out.stderr)
        self.assertIn('serves election "formats"', out.stderr)
        # Bad usage: exit 2.
        out = leader.cli("is-leader", name, "-format", "xml")
        self.assertEqual((out.returncode, out.stdout), (2, ""), out.stderr)
        self.assertIn("-format", out.stderr)
        self.assertEqual(leader.cli("is-leader", "-format", "json").returncode, 2)
        self.assertEqual(leader.cli("is-leader", name, "extra").returncode, 2)
        self.assertEqual(leader.cli("is-leader", name, "-timeout", "never").returncode, 2)

        # The probe: /leader is 200 only on the leader; /status is JSON.
        addrs = {leader: f"127.0.0.1:{ports[0]}", follower: f"127.0.0.1:{ports[1]}"}
        for agent, code in ((leader, 200), (follower, 503)):
            r = http_request(addrs[agent], "GET", "/leader")
            self.assertEqual(r.status, code, r.text)
            r = http_request(addrs[agent], "HEAD", "/leader")
            self.assertEqual(r.status, code)
            r = http_request(addrs[agent], "GET", "/status")
            self.assertEqual(r.status, 200, r.text)
            self.assertEqual(r.header("Content-Type"), "application/json")
            status = r.json()
            self.assertEqual(status["Leader"], agent is leader)
            self.assertEqual(status["Candidate"], agent.candidate)
            self.assertEqual(status["Election"], name)
            self.assertEqual(status["LeaderSession"], self.leader_key_session(name))
            self.assertEqual(status["GuaranteeMs"], agent.status()["GuaranteeMs"])
            self.assertEqual(http_request(addrs[agent], "GET", "/nope").status, 404)
            self.assertEqual(http_request(addrs[agent], "POST", "/leader", b"").status, 405)
        self.assertGreater(http_request(addrs[leader], "GET", "/status").json()["FencingToken"], 0)
        self.assertEqual(http_request(addrs[follower], "GET", "/status").json()["FencingToken"], 0)

    # --- 2 -----------------------------------------------------------------------

    def test_2_leader_set_only_from_the_leader(self):
        name = "setter"
        leader, follower = self.start_leader_and_followers(name)

        out = leader.cli("leader-set", name, "a=1", "b=2", "c=x=y")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(self.leader_get(name), {"a": "1", "b": "2", "c": "x=y"})

        # From a follower: refused as a whole, nothing written.
        out = follower.cli("leader-set", name, "a=9", "z=9")
        self.assertEqual(out.returncode, 1, out.stdout)
        self.assertIn("not the leader", out.stderr)
        self.assertEqual(self.leader_get(name), {"a": "1", "b": "2", "c": "x=y"})

        # An empty value deletes the key (and the others of the group are set).
        out = leader.cli("leader-set", name, "a=", "d=4")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(self.leader_get(name), {"b": "2", "c": "x=y", "d": "4"})
        self.assertEqual(self.server.request("GET", f"/v1/kv/service/{name}/settings/a").status,
                         404)

        # Bad arguments: exit 2, nothing sent.
        for args in (("noequals",), (), ("=v",), ("b=3", "oops")):
            out = leader.cli("leader-set", name, *args)
            self.assertEqual(out.returncode, 2, f"leader-set {args}: {out.stderr}")
            self.assertTrue(out.stderr, args)
        self.assertEqual(self.leader_get(name), {"b": "2", "c": "x=y", "d": "4"})
        # No agent at the socket: exit 1.
        out = self.server.cli("leader-set", name, "b=5", "-socket",
                              os.path.join(self.dir, "nobody.sock"))
        self.assertEqual(out.returncode, 1)
        self.assertIn("cannot reach the candidate agent", out.stderr)
        self.assertEqual(self.leader_get(name), {"b": "2", "c": "x=y", "d": "4"})

    # --- 3 -----------------------------------------------------------------------

    def test_3_settings_changed_once_per_change_on_followers_only(self):
        name = "hooks"
        leader, *followers = self.start_leader_and_followers(name, followers=2)
        # Each follower announced itself once, with the (empty) settings.
        for agent in followers:
            poll_until(lambda: agent.settings_seen() == [{}], timeout=20,
                       message=f"initial settings-changed of {agent.candidate}\n"
                               + agent.describe())

        n = 4
        expected = [{}]
        for i in range(n):
            settings = {"k": str(i), f"only{i}": "x"}
            if i:
                settings[f"only{i - 1}"] = ""  # and delete the previous one
            out = leader.cli("leader-set", name, *[f"{k}={v}" for k, v in settings.items()])
            self.assertEqual(out.returncode, 0, out.stderr)
            want = {"k": str(i), f"only{i}": "x"}
            expected.append(want)
            for agent in followers:
                poll_until(lambda: agent.settings_seen()[-1:] == [want], timeout=20,
                           message=f"settings-changed {i} of {agent.candidate}\n"
                                   + agent.describe())

        # Counting "exactly once" needs a moment for a late duplicate to show up:
        # a second after the last hook (each change above took milliseconds).
        deadline = time.monotonic() + 1.0
        poll_until(lambda: time.monotonic() >= deadline, timeout=5)
        for agent in followers:
            seen = agent.settings_seen()
            self.assertEqual(len(seen), 1 + n, agent.describe())
            self.assertEqual(seen, expected, agent.describe())
            self.assertEqual([h for h, _, _ in agent.hook_lines()], ["settings-changed"] * (1 + n))
        hooks = [h for h, _, _ in leader.hook_lines()]
        self.assertEqual(hooks, ["elected"], leader.describe())

    # --- 4 -----------------------------------------------------------------------

    def test_4_leader_get_never_sees_half_a_group(self):
        name = "groups"
        leader = self.start(name, "c1").wait_leader()
        path = f"/v1/kv/service/{name}/settings/?recurse"
        stop = threading.Event()
        reads, bad, errors = [], [], []

        def reader():
            i = 0
            while not stop.is_set():
                i += 1
                try:
                    if i % 10 == 0:  # the CLI too, now and then
                        got = self.leader_get(name)
                    else:
                        r = self.server.request("GET", path)
                        if r.status == 404:
                            got = {}
                        else:
                            self.assertEqual(r.status, 200, r.text)
                            got = {e["Key"].rsplit("/", 1)[1]:
                                   base64.b64decode(e["Value"] or "").decode() for e in r.json()}
                except Exception as error:  # noqa: BLE001 -- reported below
                    errors.append(repr(error))
                    continue
                reads.append(got)
                if got and not (set(got) == {"a", "b", "c"} and len(set(got.values())) == 1):
                    bad.append(got)

        thread = threading.Thread(target=reader, daemon=True)
        thread.start()
        try:
            for i in range(20):
                out = leader.cli("leader-set", name, f"a={i}", f"b={i}", f"c={i}")
                self.assertEqual(out.returncode, 0, out.stderr)
        finally:
            stop.set()
            thread.join(timeout=30)
        self.assertFalse(thread.is_alive())
        self.assertEqual(errors, [])
        self.assertEqual(bad, [])
        distinct = {json.dumps(r, sort_keys=True) for r in reads}
        print(f"{len(reads)} reads saw {len(distinct)} distinct groups", flush=True)
        self.assertGreater(len(distinct), 2, "the reader did not overlap the writes")
        self.assertEqual(self.leader_get(name), {"a": "19", "b": "19", "c": "19"})

    # --- 5 -----------------------------------------------------------------------

    def test_5a_resign_hands_over_in_under_a_second(self):
        name = "handoff"
        leader, waiting = self.start_leader_and_followers(name)
        start = time.monotonic()
        out = leader.cli("resign", name)
        self.assertEqual(out.returncode, 0, out.stderr)
        # The release handed the key to the next in line in the same entry.
        self.assertEqual(out.stdout, f"Resigned the leadership of {name}; now led by c2\n")
        poll_until(lambda: waiting.is_leader(), timeout=10, interval=0.02,
                   message="the waiting candidate never led\n" + waiting.describe())
        took = time.monotonic() - start
        print(f"resign: the waiting candidate leads {took * 1000:.0f} ms after `tenure resign`",
              flush=True)
        self.assertLess(took, 1.0)
        self.assertIs(leader.is_leader(), False)
        self.assertEqual(self.leader_key_session(name), waiting.status()["Session"])
        poll_until(lambda: [h for h, _, _ in leader.hook_lines()][:2] == ["elected", "deposed"],
                   timeout=10, message=leader.describe())
        self.assertEqual(leader.hook_lines()[1][2], "resigned")

    def test_5b_resign_to_picks_exactly_the_named_candidate(self):
        name = "handto"
        # A long back-off: a candidate that handed over rests all through the test,
        # so handing the key back to it must wake it (it finds the key held by its
        # own session), and only the named candidate can ever take the key.
        # Without the fair queue: with it, -to may name any candidate that waits
        # in the line (test_fair_clients), but here c3 hands back to c1 while c1
        # rests outside the line and c2 waits in it, which would jump the queue.
        a, b, c = self.start_leader_and_followers(name, followers=2,
                                                  extra=("-resign-backoff", "60s", "-fair=false"))
        sessions = {x: x.status()["Session"] for x in (a, b, c)}
        holder = a
        for target in (c, a, b):  # c1 -> c3, c3 -> c1 (resting), c1 -> c2
            if target is a:
                self.assertIs(a.status()["Resting"], True)
            out = holder.cli("resign", name, "-to", target.candidate)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(out.stdout,
                             f"Handed the leadership of {name} to {target.candidate}\n")
            poll_until(lambda: target.is_leader(), timeout=10,
                       message=f"{target.candidate} never led\n" + target.describe())
            self.assertEqual(self.leader_key_session(name), sessions[target])
            self.assertEqual(target.status()["Session"], sessions[target])
            for other in (a, b, c):
                if other is not target:
                    self.assertIs(other.is_leader(), False, other.candidate)
                    self.assertEqual(other.status()["LeaderSession"], sessions[target])
            holder = target
        poll_until(lambda: len(a.hook_lines()) >= 4 and len(c.hook_lines()) >= 2, timeout=10,
                   message=a.describe() + c.describe())

        def events(x):
            return [(h, rest) for h, _, rest in x.hook_lines() if h != "settings-changed"]

        # elected and deposed alternate, in the order of the handoffs, each deposal
        # naming the successor; the fencing token grows with every grant.
        self.assertEqual([h for h, _ in events(a)], ["elected", "deposed", "elected", "deposed"],
                         a.describe())
        self.assertEqual([r for h, r in events(a) if h == "deposed"],
                         ["handed over to c3", "handed over to c2"], a.describe())
        self.assertEqual(events(c)[1:], [("deposed", "handed over to c1")], c.describe())
        self.assertEqual([h for h, _ in events(c)], ["elected", "deposed"], c.describe())
        self.assertEqual([h for h, _ in events(b)], ["elected"], b.describe())
        a_tokens = [int(r) for h, r in events(a) if h == "elected"]
        tokens = [a_tokens[0], int(events(c)[0][1]), a_tokens[1], int(events(b)[0][1])]
        self.assertEqual(tokens, sorted(set(tokens)), f"fencing tokens {tokens}")

    def test_5c_resign_refusals(self):
        name = "refuse"
        leader, follower = self.start_leader_and_followers(name)
        sid = self.leader_key_session(name)
        token = leader.status()["FencingToken"]

        out = follower.cli("resign", name)
        self.assertEqual((out.returncode, out.stdout), (1, ""), out.stderr)
        self.assertIn("not the leader", out.stderr)
        out = follower.cli("resign", name, "-to", "c1")
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("not the leader", out.stderr)

        out = leader.cli("resign", name, "-to", "nobody")
        self.assertEqual((out.returncode, out.stdout), (1, ""), out.stderr)
        self.assertTrue(out.stderr.startswith("tenure resign: "), out.stderr)
        self.assertEqual(leader.cli("resign", name, "-to", "a/b").returncode, 1)
        out = leader.cli("resign", name, "-to", leader.candidate)
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("that is this candidate", out.stderr)
        self.assertEqual(leader.cli("resign", name, "unexpected").returncode, 2)

        # Leadership unchanged: same session, same token, no deposed hook.
        self.assertIs(leader.is_leader(), True)
        self.assertIs(follower.is_leader(), False)
        self.assertEqual(self.leader_key_session(name), sid)
        self.assertEqual(leader.status()["FencingToken"], token)
        self.assertEqual([h for h, _, _ in leader.hook_lines()], ["elected"], leader.describe())
        out = leader.cli("leader-set", name, "still=leader")
        self.assertEqual(out.returncode, 0, out.stderr)

    # --- 6 -----------------------------------------------------------------------

    def test_6_is_leader_never_true_while_another_holds_across_a_failover(self):
        name = "failover"
        a, b = self.start_leader_and_followers(name)
        guarantee_s = a.status()["GuaranteeMs"] / 1000.0
        a_session = a.status()["Session"]
        self.assertGreater(guarantee_s, 0)
        records = []  # (agent, sent, answered, answer: True/False/None)
        lock = threading.Lock()
        stop = threading.Event()

        def poll(agent):
            while not stop.is_set():
                sent = time.monotonic()
                out = agent.cli("is-leader", name, "-timeout", "1s")
                answered = time.monotonic()
                answer = None
                if out.returncode == 0:
                    answer = {"True\n": True, "False\n": False}[out.stdout]
                with lock:
                    records.append((agent.candidate, sent, answered, answer))
                stop.wait(0.02)

        def first(candidate, answer, after=0.0):
            with lock:
                times = [r[2] for r in records
                         if r[0] == candidate and r[3] is answer and r[1] >= after]
            return min(times) if times else None

        threads = [threading.Thread(target=poll, args=(x,), daemon=True) for x in (a, b)]
        for thread in threads:
            thread.start()
        try:
            poll_until(lambda: first("c1", True), timeout=10, message="c1 never said True")
            stopped = time.monotonic()
            os.kill(a.pid, signal.SIGSTOP)
            try:
                poll_until(lambda: first("c2", True), timeout=TTL_S + LOCK_DELAY_S + 20,
                           message="c2 never led after c1 was stopped\n" + b.describe())
                # Keep c1 stopped past TTL + lock-delay + a margin in any case.
                poll_until(lambda: time.monotonic() >= stopped + TTL_S + LOCK_DELAY_S + 1,
                           timeout=TTL_S + LOCK_DELAY_S + 5)
            finally:
                os.kill(a.pid, signal.SIGCONT)
            resumed = time.monotonic()
            poll_until(lambda: first("c1", False, after=resumed), timeout=15,
                       message="c1 never said False after SIGCONT\n" + a.describe())
            poll_until(lambda: [h for h, _, _ in a.hook_lines()][:2] == ["elected", "deposed"],
                       timeout=15, message="c1's deposed hook\n" + a.describe())
            # c1 recovers as a follower: a new session (the old one expired), c2 seen leading.
            b_session = b.status()["Session"]
            poll_until(lambda: (lambda s: s["Session"] not in ("", a_session)
                                and s["LeaderSession"] == b_session and not s["Leader"])(
                                    a.status()),
                       timeout=20, message="c1 never followed c2 with a new session\n"
                                           + a.describe())
            # A few more answers from both after that.
            with lock:
                count = len(records)
            poll_until(lambda: len(records) >= count + 10, timeout=15)
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=10)

        t_b = first("c2", True)
        a_true = [r for r in records if r[0] == "c1" and r[3] is True]
        late = [r for r in a_true if r[1] + guarantee_s > t_b]
        unknown = [r for r in records if r[0] == "c1" and r[3] is None]
        last_a_true = max(r[1] for r in a_true)
        print(f"failover: c2 leads {t_b - stopped:.2f} s after SIGSTOP of c1; c1's last True was "
              f"asked {t_b - last_a_true:.2f} s before (G = {guarantee_s:.2f} s); "
              f"{len(records)} answers, {len(unknown)} unknown from the stopped c1; "
              f"c1 deposed: {a.hook_lines()[1][2]!r}", flush=True)
        self.assertEqual(late, [], f"c1 said True within G of c2's first True at {t_b}")
        # After the resume c1 answers False (never True) while c2 holds.
        self.assertEqual([r for r in records if r[0] == "c1" and r[1] >= resumed and r[3]], [])
        self.assertEqual([r for r in records if r[0] == "c2" and r[2] > t_b and r[3] is not True],
                         [], "c2 wavered after it led")
        self.assertGreater(len(unknown), 0, "no is-leader call reached the stopped c1")
        self.assertIs(b.is_leader(), True)
        self.assertEqual(self.leader_key_session(name), b.status()["Session"])
        hooks = a.hook_lines()
        self.assertEqual([h for h, _, _ in hooks][:2], ["elected", "deposed"], a.describe())
        self.assertNotIn("elected", [h for h, _, _ in hooks[1:]], a.describe())
        self.assertEqual([h for h, _, _ in b.hook_lines() if h != "settings-changed"],
                         ["elected"], b.describe())
        a_token = int(hooks[0][2])
        b_token = int([rest for h, _, rest in b.hook_lines() if h == "elected"][0])
        self.assertGreater(b_token, a_token)

    # --- 7 -----------------------------------------------------------------------

    def test_7_socket_rejects_bad_input_and_keeps_serving(self):
        name = "garbage"
        agent = self.start(name, "c1").wait_leader()

        def error_of(payload):
            answer = ask_socket(agent.socket, payload)
            self.assertIs(answer.get("Ok"), False, answer)
            self.assertTrue(answer.get("Error"), answer)
            return answer["Error"]

        self.assertIn("malformed", error_of(b"hello there\n"))
        self.assertIn("malformed", error_of(b"[1,2,3]\n"))
        self.assertIn("malformed", error_of(b'{"Op":"status"\n'))
        self.assertIn("malformed", error_of(b'{"Election":"garbage"}\n'))
        self.assertIn("malformed", error_of(b'{"Op":7}\n'))
        self.assertIn("unknown op", error_of(b'{"Op":"launch"}\n'))
        self.assertIn('serves election "garbage"', error_of(b'{"Op":"status","Election":"x"}\n'))
        self.assertIn('serves election "garbage"', error_of(b'{"Op":"status","Election":5}\n'))
        for settings in (b'"a=1"', b'["a","1"]', b"null", b'{"a":1}', b'{"":"x"}', b"{}"):
            error_of(b'{"Op":"leader-set","Settings":' + settings + b"}\n")
        self.assertIn("malformed", error_of(b'{"Op":"leader-set"}\n'))
        self.assertIn("malformed", error_of(b'{"Op":"resign","To":3}\n'))
        self.assertIn("malformed", error_of(b'{"Op":"resign","To":""}\n'))

        # A line longer than the limit (1 MiB): refused as soon as it passes the limit.
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            sock.connect(agent.socket)
            big = b'{"Op":"status","Pad":"' + b"x" * (2 << 20) + b'"}\n'
            try:
                sock.sendall(big)
            except (BrokenPipeError, ConnectionResetError):
                pass
            data = b""
            try:
                while not data.endswith(b"\n"):
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except ConnectionResetError:
                pass
        answer = json.loads(data)
        self.assertIs(answer["Ok"], False)
        self.assertIn("too large", answer["Error"])

        # A client that connects and says nothing does not block the others.
        idle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(idle.close)
        idle.connect(agent.socket)
        idle.sendall(b'{"Op":')  # and a half-sent line

        status = agent.status()
        self.assertIs(status["Ok"], True)
        self.assertIs(status["Leader"], True)
        self.assertIsNone(agent.process.poll())
        self.assertEqual(agent.cli("is-leader", name).stdout, "True\n")
        self.assertEqual([h for h, _, _ in agent.hook_lines()], ["elected"], agent.describe())
        self.assertEqual(self.leader_get(name), {})  # no bad leader-set wrote anything

    # --- 8 -----------------------------------------------------------------------

    def test_8_sigterm_of_the_leader_resigns_and_exits_0(self):
        name = "term"
        leader, follower = self.start_leader_and_followers(name)
        start = time.monotonic()
        leader.process.send_signal(signal.SIGTERM)
        self.assertEqual(leader.stop(), 0, leader.describe())
        exited = time.monotonic() - start
        # The hooks ran before it exited: deposed, because it was stopping.
        self.assertEqual(leader.hook_lines(), [("elected", "c1", leader.hook_lines()[0][2]),
                                               ("deposed", "c1", "stopping")], leader.describe())
        self.assertFalse(os.path.exists(leader.socket))
        poll_until(lambda: follower.is_leader(), timeout=10, interval=0.02,
                   message="c2 never led after c1 stopped\n" + follower.describe())
        took = time.monotonic() - start
        print(f"SIGTERM: c1 exited after {exited * 1000:.0f} ms; c2 leads "
              f"{took * 1000:.0f} ms after the signal", flush=True)
        self.assertLess(took, 3.0)
        self.assertEqual(self.leader_key_session(name), follower.status()["Session"])
        # c1's session is gone (destroyed, not left to expire).
        sessions = self.server.get_json("/v1/session/list")
        self.assertNotIn("tenure elect term", [s.get("Name") for s in sessions
                                                if s["ID"] != follower.status()["Session"]])
        # c1 deleted its registration as it stopped; c2's stays.
        self.assertEqual(self.server.request("GET", "/v1/kv/service/term/candidates/c1").status,
                         404)
        self.assertEqual(self.server.request("GET", "/v1/kv/service/term/candidates/c2").status,
                         200)


    # --- 9 -----------------------------------------------------------------------

    def test_9_consul_mode_settings_guarded_by_the_session(self):
        """Against a server that sends no fencing tokens, as a real Consul, the
        agents still elect one leader and leader-set is guarded by check-session."""
        proxy = FaultProxy(self.server.http_addr, hide_tenure_extensions=True).start()
        try:
            name = "consulmode"
            via = ("-http-addr", proxy.http_addr)
            leader, follower = self.start_leader_and_followers(name, extra=via)
            seen = http_request(proxy.http_addr, "GET", f"/v1/kv/service/{name}/leader")
            self.assertEqual(seen.status, 200)
            self.assertNotIn(b"Fence", seen.body)
            self.assertIsNone(seen.header("X-Tenure-Fence"))
            self.assertEqual(leader.status()["FencingToken"], 0)
            self.assertIs(leader.is_leader(), True)
            self.assertIs(follower.is_leader(), False)

            out = leader.cli("leader-set", name, "db=10.0.0.7", "epoch=1")
            self.assertEqual(out.returncode, 0, out.stderr)
            out = follower.cli("leader-set", name, "db=evil")
            self.assertEqual(out.returncode, 1, out.stderr)
            self.assertIn("not the leader", out.stderr)
            got = self.server.cli("leader-get", name, "-format", "json")
            self.assertEqual(json.loads(got.stdout), {"db": "10.0.0.7", "epoch": "1"})
            out = leader.cli("resign", name)
            self.assertEqual(out.returncode, 0, out.stderr)
            poll_until(lambda: follower.is_leader() is True, timeout=10,
                       message="the follower never led after the resign")
            out = follower.cli("leader-set", name, "epoch=2")
            self.assertEqual(out.returncode, 0, out.stderr)
        finally:
            self.stop_agents()
            proxy.close()


if __name__ == "__main__":
    unittest.main()
