"""Every command's -h and bad usage follow one rule (docs/cli.md):

  - `-h` prints the command's usage on stdout and exits 0, with nothing on stderr;
  - bad usage (an unknown flag) prints why on stderr, nothing on stdout, and exits 1 for
    the commands Consul also has (Consul's code) and 2 for tenure's own commands, whose
    exit 1 means an answer (damaged, not leading, a failed request).

No server is needed: usage is checked before anything is contacted.

Run (from tests/integration):
  TENURE_BIN=<path>/tenure PYTHONPATH=<repo>/tests/lib /usr/bin/python3 -m unittest -v test_cli_conventions
"""

import subprocess
import unittest

from tenure_testlib import tenure_bin

# (argv after `tenure`, exit code of bad usage)
CONSUL_COMMANDS = [
    (["server"], 1),  # consul agent
    (["kv", "get"], 1),
    (["kv", "put"], 1),
    (["kv", "delete"], 1),
    (["watch"], 1),
    (["members"], 1),
    (["operator", "raft", "list-peers"], 1),
    (["operator", "raft", "remove-peer"], 1),
    (["operator", "raft", "transfer-leader"], 1),
    (["keygen"], 1),
    (["validate"], 1),
    (["acl"], 1),
    (["acl", "policy"], 1),
    (["acl", "token"], 1),
    (["acl", "bootstrap"], 1),
    (["acl", "policy", "create"], 1),
    (["acl", "policy", "read"], 1),
    (["acl", "policy", "update"], 1),
    (["acl", "policy", "delete"], 1),
    (["acl", "policy", "list"], 1),
    (["acl", "token", "create"], 1),
    (["acl", "token", "read"], 1),
    (["acl", "token", "update"], 1),
    (["acl", "token", "clone"], 1),
    (["acl", "token", "delete"], 1),
    (["acl", "token", "list"], 1),
    (["snapshot"], 1),
    (["snapshot", "save"], 1),
    (["snapshot", "restore"], 1),
    (["snapshot", "inspect"], 1),
    (["lock"], 1),
]
TENURE_COMMANDS = [
    (["session", "create"], 2),
    (["session", "list"], 2),
    (["session", "info"], 2),
    (["session", "renew"], 2),
    (["session", "destroy"], 2),
    (["leader"], 2),
    (["leader-get"], 2),
    (["history"], 2),
    (["run"], 2),
    (["elect"], 2),
    (["is-leader"], 2),
    (["leader-set"], 2),
    (["resign"], 2),
    (["recover"], 2),
]


def run(argv):
    return subprocess.run([tenure_bin(), *argv], capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)


class CliConventionsTest(unittest.TestCase):
    def test_help_goes_to_stdout_and_exits_zero(self):
        for command, _ in CONSUL_COMMANDS + TENURE_COMMANDS:
            for flag in ("-h", "-help", "--help"):
                with self.subTest(command=command, flag=flag):
                    proc = run(command + [flag])
                    self.assertEqual(proc.returncode, 0, proc.stderr)
                    self.assertTrue(proc.stdout.startswith("Usage: tenure "), proc.stdout)
                    self.assertIn("tenure " + command[0], proc.stdout)
                    self.assertEqual(proc.stderr, "")

    def test_bad_usage_goes_to_stderr_with_the_rule_s_exit_code(self):
        for command, code in CONSUL_COMMANDS + TENURE_COMMANDS:
            with self.subTest(command=command):
                proc = run(command + ["-no-such-flag"])
                self.assertEqual(proc.returncode, code, proc.stderr)
                self.assertIn("-no-such-flag", proc.stderr)
                self.assertEqual(proc.stdout, "")

    def test_bad_usage_shows_the_usage_line_of_help(self):
        # The usage printed with an unknown flag is -h's, arguments and all
        # (`tenure run NAME [options] -- CMD ARGS...`), not a shortened one.
        for command, _ in CONSUL_COMMANDS + TENURE_COMMANDS:
            with self.subTest(command=command):
                usage_line = run(command + ["-h"]).stdout.splitlines()[0]
                proc = run(command + ["-no-such-flag"])
                self.assertIn(usage_line, proc.stderr.splitlines(), proc.stderr)

    def test_the_top_level(self):
        self.assertEqual(run(["help"]).returncode, 0)
        self.assertIn("Usage: tenure <command>", run(["-h"]).stdout)
        unknown = run(["no-such-command"])
        self.assertEqual(unknown.returncode, 2)
        self.assertIn('unknown command "no-such-command"', unknown.stderr)
        self.assertEqual(unknown.stdout, "")
        bare = run([])
        self.assertEqual(bare.returncode, 2)
        self.assertIn("Usage: tenure <command>", bare.stderr)
        self.assertEqual(run(["version"]).stdout.split()[0], "tenure")


if __name__ == "__main__":
    unittest.main()
