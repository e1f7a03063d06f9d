"""docs/acl.md as a new user follows it, against a fresh server started as
the page says (-acl-enabled -acl-default-policy deny): the quick start's
commands, checked to appear in the page as they are run, and each minimal
policy of the page, taken from its ```hcl blocks, tried for what it must
allow and what it must refuse.

Run: TENURE_BIN=build/src/tenure PYTHONPATH=tests/lib /usr/bin/python3 -m unittest -v test_acl_walkthrough
"""
import os
import re
import signal
import stat
import tempfile
import unittest

from tenure_testlib import DevServer, poll_until, stop_process

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "acl.md")
ANONYMOUS = "The anonymous token is used implicitly when a request does not specify a token."


def read_doc():
    with open(DOC) as f:
        return f.read()


def hcl_blocks(doc):
    """The page's ```hcl blocks, in order: the candidate confined to its own
    session node, the observer, the leader-settings writer, the operator."""
    return re.findall(r"```hcl\n(.*?)```", doc, re.S)


def quick_start_rules(doc):
    """The billing-candidate.hcl the quick start writes with cat <<'EOF'."""
    m = re.search(r"cat > billing-candidate\.hcl <<'EOF'\n(.*?)\nEOF\n", doc, re.S)
    assert m, "docs/acl.md lost its quick-start policy"
    return m.group(1) + "\n"


def secret_of(output):
    m = re.search(r"^SecretID:\s+(\S+)$", output, re.M)
    assert m, f"no SecretID in:\n{output}"
    return m.group(1)


class AclWalkthroughTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.doc = read_doc()
        assert "tenure server -dev -acl-enabled -acl-default-policy deny" in cls.doc
        cls.server = DevServer(extra_args=["-acl-enabled", "-acl-default-policy", "deny"])
        cls.server.__enter__()
        cls.dir = tempfile.mkdtemp(prefix="tenure-acl-walkthrough-")
        cls.procs = []

    @classmethod
    def tearDownClass(cls):
        for proc in cls.procs:
            stop_process(proc)
        cls.server.__exit__(None, None, None)

    def documented(self, command):
        """The command as a user types it must be on the page."""
        self.assertIn(command, self.doc, "docs/acl.md no longer shows this command")

    def tenure(self, *args, token=None, check=True, timeout=30):
        env = {"CONSUL_HTTP_TOKEN": token} if token else {}
        out = self.server.cli(*args, env=env, timeout=timeout)
        if check:
            self.assertEqual(out.returncode, 0, f"tenure {' '.join(args)}:\n{out.stderr}")
        return out

    def worker(self, name):
        """A stand-in for ./billing-worker: records its fencing token."""
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write('#!/bin/sh\necho "$TENURE_FENCING_TOKEN" > "$0.token"\n')
        os.chmod(path, stat.S_IRWXU)
        return path

    def management(self):
        if not hasattr(type(self), "root"):
            self.documented("tenure acl bootstrap")
            out = self.tenure("acl", "bootstrap")
            self.assertIn("Bootstrap Token (Global Management)", out.stdout)
            self.assertIn("00000000-0000-0000-0000-000000000001 - global-management", out.stdout)
            type(self).root = secret_of(out.stdout)
        return self.root

    def token_for(self, name, rules):
        root = self.management()
        rules_file = os.path.join(self.dir, f"{name}.hcl")
        with open(rules_file, "w") as f:
            f.write(rules)
        self.tenure("acl", "policy", "create", "-name", name, "-rules", "@" + rules_file,
                    token=root)
        out = self.tenure("acl", "token", "create", "-description", name, "-policy-name", name,
                          token=root)
        return secret_of(out.stdout)

    # --- the quick start ----------------------------------------------------------

    def test_1_quick_start(self):
        root = self.management()
        rules = quick_start_rules(self.doc)
        for command in ("tenure acl policy create -name billing-candidate -rules @billing-candidate.hcl",
                        'tenure acl token create -description "billing workers" '
                        "-policy-name billing-candidate",
                        "tenure run billing -token <the candidates' token> -- ./billing-worker",
                        "CONSUL_HTTP_TOKEN= tenure run billing -- ./billing-worker"):
            self.documented(command)
        with open(os.path.join(self.dir, "billing-candidate.hcl"), "w") as f:
            f.write(rules)
        self.tenure("acl", "policy", "create", "-name", "billing-candidate", "-rules",
                    "@" + os.path.join(self.dir, "billing-candidate.hcl"), token=root)
        out = self.tenure("acl", "token", "create", "-description", "billing workers",
                          "-policy-name", "billing-candidate", token=root)
        candidates = secret_of(out.stdout)

        worker = self.worker("billing-worker")
        self.tenure("run", "billing", "-token", candidates, "--", worker)
        with open(worker + ".token") as f:
            self.assertGreater(int(f.read()), 0, "the worker got a fencing token")

        refused = self.tenure("run", "billing", "--", worker, check=False)
        self.assertEqual(refused.returncode, 1, refused.stderr)
        self.assertRegex(refused.stderr,
                         r"HTTP 403: Permission denied: anonymous token lacks permission "
                         r"'session:write' on \"[^\"]+\"\. " + re.escape(ANONYMOUS))

    # --- the minimal policies ------------------------------------------------------

    def test_2_candidate_on_its_own_session_node(self):
        confined = self.token_for("billing-confined", hcl_blocks(self.doc)[0])
        self.documented("-session-node billing")
        worker = self.worker("confined-worker")
        out = self.tenure("run", "billing", "-session-node", "billing", "-token", confined, "--",
                          worker)
        self.assertTrue(os.path.exists(worker + ".token"), out.stderr)
        # On the server's node it may not create a session...
        refused = self.tenure("run", "billing", "-token", confined, "--", worker, check=False)
        self.assertEqual(refused.returncode, 1)
        self.assertIn("lacks permission 'session:write' on", refused.stderr)
        # ...nor destroy anyone else's.
        other = self.server.request("PUT", "/v1/session/create", "{}",
                                    headers={"X-Consul-Token": self.management()}).json()["ID"]
        r = self.server.request("PUT", f"/v1/session/destroy/{other}",
                                headers={"X-Consul-Token": confined})
        self.assertEqual(r.status, 403, r.text)

    def test_3_observer_reads_the_election_and_nothing_else(self):
        candidates = self.token_for("observer-test-candidate", quick_start_rules(self.doc))
        observer = self.token_for("billing-observer", hcl_blocks(self.doc)[1])
        leader = self.server.popen_cli("run", "billing", "-token", candidates, "--", "sleep", "60")
        self.procs.append(leader)
        poll_until(lambda: "fencing token" in self.tenure("leader", "billing", token=observer,
                                                          check=False).stdout,
                   timeout=20, message="the observer sees the leader")
        out = self.tenure("leader", "billing", token=observer)
        self.assertIn("fencing token", out.stdout)
        self.tenure("leader-get", "billing", token=observer)
        put = self.tenure("kv", "put", "service/billing/settings/x", "y", token=observer,
                          check=False)
        self.assertNotEqual(put.returncode, 0)
        self.assertIn("lacks permission 'key:write' on \"service/billing/settings/x\"", put.stderr)
        other = self.tenure("kv", "get", "service/payroll/leader", token=observer, check=False)
        self.assertIn("lacks permission 'key:read'", other.stderr)
        leader.send_signal(signal.SIGTERM)
        leader.wait(timeout=20)

    def test_4_leader_settings_writer(self):
        writer = self.token_for("billing-settings", hcl_blocks(self.doc)[2])
        self.documented("tenure kv put service/billing/settings/<key> <value>")
        out = self.tenure("kv", "put", "service/billing/settings/mode", "fast", token=writer)
        self.assertIn("Success!", out.stdout)
        self.assertEqual(self.tenure("leader-get", "billing", "mode",
                                     token=self.management()).stdout.strip(), "fast")
        lock = self.tenure("kv", "put", "service/billing/leader", "me", token=writer, check=False)
        self.assertNotEqual(lock.returncode, 0)
        self.assertIn("lacks permission 'key:write' on \"service/billing/leader\"", lock.stderr)

    def test_5_operator(self):
        operator = self.token_for("operator", hcl_blocks(self.doc)[3])
        out = self.tenure("operator", "raft", "list-peers", token=operator)
        self.assertIn("leader", out.stdout)
        r = self.server.request("GET", "/v1/agent/self", headers={"X-Consul-Token": operator})
        self.assertEqual(r.status, 200)
        key = self.tenure("kv", "get", "service/billing/leader", token=operator, check=False)
        self.assertNotEqual(key.returncode, 0)
        self.assertIn("lacks permission 'key:read'", key.stderr)


if __name__ == "__main__":
    unittest.main()
