"""Real clients with ACL tokens (docs/acl.md): python-consul with token=, a
Patroni-style client sending X-Consul-Token, `tenure run` and `tenure elect`
with a candidate's minimal token, each refused without one.

One server for the class: -acl-enabled -acl-default-policy deny, an initial
management token, -node acl-node.

The minimal policy of one election's candidate (CANDIDATE_RULES) follows
from src/client: an Election writes only under <prefix><name>/ (the leader
key, candidates/<candidate> and settings/, prefix "service/"), through
single-key PUTs with ?acquire and /v1/txn (check-fence, check-session,
set, delete, lock, unlock); its Session is created without a Node, so the
server gives it its own node name and session:write is needed on that one
node; renewals and the destroy need the same. Nothing else is called
(/v1/status is open, and neither tenure run nor tenure elect reads
/v1/agent/self).
"""

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import textwrap
import unittest
import uuid
from unittest import mock

import consul
import consul.base
import requests

from tenure_testlib import SharedServerTestCase, poll_until, stop_process

NODE = "acl-node"
CANDIDATE_RULES = ('key_prefix "service/billing/" { policy = "write" }\n'
                   f'session "{NODE}" {{ policy = "write" }}')
# Patroni (patroni/dcs/consul.py) also reads /v1/agent/self for the
# server's SessionTTLMin: agent:read on the node.
PATRONI_RULES = ('key_prefix "service/pgcluster/" { policy = "write" }\n'
                 f'session "{NODE}" {{ policy = "write" }}\n'
                 f'agent "{NODE}" {{ policy = "read" }}')


def anonymous_denial(permission, name):
    return (f"Permission denied: anonymous token lacks permission '{permission}' on "
            f"\"{name}\". The anonymous token is used implicitly when a request does not "
            "specify a token.")


def token_denial(accessor, permission, name):
    return (f"Permission denied: token with AccessorID '{accessor}' lacks permission "
            f"'{permission}' on \"{name}\"")


def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except FileNotFoundError:
        return ""


class AclClientsTest(SharedServerTestCase):
    MANAGEMENT = str(uuid.uuid4())
    server_args = ("-session-ttl-multiplier", "1", "-acl-enabled", "-acl-default-policy", "deny",
                   "-acl-initial-management", MANAGEMENT, "-node", NODE)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            # The first leader writes the -acl-initial-management token just
            # after it is elected: until then it is "ACL not found" (as in
            # Consul).
            poll_until(lambda: cls.server.request("GET", "/v1/acl/token/self", headers={
                "X-Consul-Token": cls.MANAGEMENT}).status == 200, timeout=15,
                message="the initial management token never worked")
            cls.tokens = {}
            for name, rules in (("candidate", CANDIDATE_RULES), ("patroni", PATRONI_RULES)):
                cls.admin("PUT", "/v1/acl/policy", {"Name": name, "Rules": rules})
                cls.tokens[name] = cls.admin("PUT", "/v1/acl/token", {
                    "Description": name, "Policies": [{"Name": name}]})
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def admin(cls, method, path, body=None):
        resp = cls.server.request(method, path, None if body is None else json.dumps(body),
                                  {"X-Consul-Token": cls.MANAGEMENT})
        if resp.status != 200:
            raise AssertionError(f"management {method} {path}: {resp!r}")
        return resp.json()

    def setUp(self):
        super().setUp()
        # python-consul takes CONSUL_HTTP_ADDR and CONSUL_HTTP_TOKEN over its
        # arguments: neither may leak in from the environment.
        patcher = mock.patch.dict(os.environ)
        patcher.start()
        self.addCleanup(patcher.stop)
        for name in ("CONSUL_HTTP_ADDR", "CONSUL_HTTP_TOKEN", "CONSUL_HTTP_TOKEN_FILE",
                     "TENURE_HTTP_TOKEN", "CONSUL_HTTP_SSL", "CONSUL_HTTP_SSL_VERIFY"):
            os.environ.pop(name, None)
        self.processes = []
        self.addCleanup(self.stop_processes)

    def secret(self, name):
        return self.tokens[name]["SecretID"]

    def accessor(self, name):
        return self.tokens[name]["AccessorID"]

    def port(self):
        return int(self.server.http_addr.rsplit(":", 1)[1])

    def stop_processes(self):
        for proc in self.processes:
            stop_process(proc)

    def key_entry(self, key):
        resp = self.server.request("GET", "/v1/kv/" + key, headers={
            "X-Consul-Token": self.MANAGEMENT})
        return None if resp.status == 404 else resp.json()[0]

    # --- python-consul ---------------------------------------------------------------

    def test_python_consul_with_and_without_a_token(self):
        c = consul.Consul(host="127.0.0.1", port=self.port(), token=self.secret("candidate"))
        self.assertIs(c.kv.put("service/billing/config", "v1"), True)
        _, entry = c.kv.get("service/billing/config")
        self.assertEqual(entry["Value"], b"v1")

        # python-consul 0.7.1's Session.create sends no token (its KV calls
        # add ?token=, its session calls do not): the same request through its
        # own HTTP layer and status mapping, with the ?token= the rest send.
        sid = c.http.put(consul.base.CB.json(is_id=True), "/v1/session/create",
                         params={"token": self.secret("candidate")},
                         data=json.dumps({"Name": "py", "TTL": "10s", "LockDelay": "1s"}))
        self.assertIs(c.kv.put("service/billing/leader", "py", acquire=sid), True)
        _, entry = c.kv.get("service/billing/leader")
        self.assertEqual(entry["Session"], sid)
        self.assertIs(c.kv.put("service/billing/leader", "py", release=sid), True)
        with self.assertRaises(consul.ACLPermissionDenied) as refused:
            c.kv.put("service/other/config", "v")
        self.assertEqual(str(refused.exception), token_denial(
            self.accessor("candidate"), "key:write", "service/other/config"))

        anonymous = consul.Consul(host="127.0.0.1", port=self.port())
        with self.assertRaises(consul.ACLPermissionDenied) as refused:
            anonymous.kv.put("service/billing/config", "v2")
        self.assertEqual(str(refused.exception),
                         anonymous_denial("key:write", "service/billing/config"))
        with self.assertRaises(consul.ACLPermissionDenied) as refused:
            anonymous.kv.get("service/billing/config")
        self.assertEqual(str(refused.exception),
                         anonymous_denial("key:read", "service/billing/config"))
        with self.assertRaises(consul.ACLPermissionDenied) as refused:
            anonymous.session.create(name="py", ttl=10)
        self.assertEqual(str(refused.exception), anonymous_denial("session:write", NODE))
        # The client given a token, where its session call leaves it out.
        with self.assertRaises(consul.ACLPermissionDenied):
            c.session.create(name="py", ttl=10)

        unknown = consul.Consul(host="127.0.0.1", port=self.port(), token=str(uuid.uuid4()))
        with self.assertRaises(consul.ACLPermissionDenied) as refused:
            unknown.kv.get("service/billing/config")
        self.assertEqual(str(refused.exception), "ACL not found")
        # Nothing the refused calls asked for happened.
        self.assertEqual(self.key_entry("service/billing/config")["Value"], "djE=")  # v1
        self.assertIsNone(self.key_entry("service/other/config"))

    # --- a Patroni-style client ------------------------------------------------------

    def test_patroni_style_client_with_x_consul_token(self):
        """Patroni 3 sends the token as X-Consul-Token on python-consul's
        calls: agent/self for SessionTTLMin, a session with Behavior delete,
        its member key and the leader key acquired, the cluster read back
        recursively, renewals, and the leader key deleted with ?cas."""
        url = self.server.url
        with requests.Session() as http:
            http.headers["X-Consul-Token"] = self.secret("patroni")
            r = http.get(url + "/v1/agent/self")
            self.assertEqual(r.status_code, 200, r.text)
            self.assertGreater(r.json()["Config"]["SessionTTLMin"], 0)
            r = http.put(url + "/v1/session/create", data=json.dumps(
                {"Name": "pgcluster-node1", "TTL": "15s", "Behavior": "delete",
                 "LockDelay": "0.001s", "Checks": []}))
            self.assertEqual(r.status_code, 200, r.text)
            sid = r.json()["ID"]
            base = url + "/v1/kv/service/pgcluster/"
            r = http.put(base + "members/node1", params={"acquire": sid},
                         data='{"conn_url": "postgres://10.0.0.1:5432/postgres"}')
            self.assertEqual((r.status_code, r.text), (200, "true"))
            r = http.put(base + "leader", params={"acquire": sid}, data="node1")
            self.assertEqual((r.status_code, r.text), (200, "true"))
            r = http.get(base, params={"recurse": ""})
            self.assertEqual(r.status_code, 200, r.text)
            self.assertEqual(sorted(e["Key"] for e in r.json()),
                             ["service/pgcluster/leader", "service/pgcluster/members/node1"])
            self.assertIsNone(r.headers.get("X-Consul-Results-Filtered-By-Acls"))
            r = http.put(url + "/v1/session/renew/" + sid)
            self.assertEqual(r.status_code, 200, r.text)
            self.assertEqual(r.json()[0]["ID"], sid)
            index = http.get(base + "leader").json()[0]["ModifyIndex"]
            r = http.delete(base + "leader", params={"cas": index})
            self.assertEqual((r.status_code, r.text), (200, "true"))
            # Outside its cluster's prefix, even with its token.
            r = http.put(url + "/v1/kv/service/other/leader", params={"acquire": sid}, data="x")
            self.assertEqual((r.status_code, r.text), (403, token_denial(
                self.accessor("patroni"), "key:write", "service/other/leader")))
            r = http.put(url + "/v1/session/destroy/" + sid)
            self.assertEqual(r.status_code, 200, r.text)

        # Without the header every step is refused, with Consul's texts.
        r = requests.get(url + "/v1/agent/self")
        self.assertEqual((r.status_code, r.text), (403, anonymous_denial("agent:read", NODE)))
        r = requests.put(url + "/v1/session/create", data=json.dumps({"Name": "x", "TTL": "15s"}))
        self.assertEqual((r.status_code, r.text), (403, anonymous_denial("session:write", NODE)))
        r = requests.put(url + "/v1/kv/service/pgcluster/leader", data="node2")
        self.assertEqual((r.status_code, r.text),
                         (403, anonymous_denial("key:write", "service/pgcluster/leader")))
        r = requests.get(url + "/v1/kv/service/pgcluster/", params={"recurse": ""})
        self.assertEqual(r.status_code, 404, r.text)  # filtered, not refused (Consul)

    # --- tenure run --------------------------------------------------------------------

    CHILD = textwrap.dedent("""\
        import json, os, sys, urllib.request
        req = urllib.request.Request(
            os.environ["ACL_TEST_URL"] + "/v1/kv/" + os.environ["TENURE_LEADER_KEY"],
            headers={"X-Consul-Token": os.environ["ACL_TEST_TOKEN"]})
        entry = json.loads(urllib.request.urlopen(req, timeout=10).read())[0]
        with open(sys.argv[1], "w") as out:
            json.dump({"fence": os.environ["TENURE_FENCING_TOKEN"],
                       "session": os.environ["TENURE_SESSION"],
                       "key_fence": entry.get("Fence"), "key_session": entry.get("Session")}, out)
        """)

    def run_args(self, name, out_path, token_args):
        return ["run", name, "-http-addr", self.server.http_addr, "-ttl", "10s",
                "-lock-delay", "1s", *token_args, "--", sys.executable, "-c", self.CHILD,
                out_path]

    def test_run_with_the_candidate_token_runs_its_child(self):
        out_path = os.path.join(self.dir, "child.json")
        env = {"ACL_TEST_URL": self.server.url, "ACL_TEST_TOKEN": self.secret("candidate")}
        proc = self.server.cli(*self.run_args("billing", out_path,
                                              ["-token", self.secret("candidate")]), env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        seen = json.loads(read_text(out_path))
        # The child ran while elected: its token is the key's Fence then.
        self.assertGreater(int(seen["fence"]), 0)
        self.assertEqual(int(seen["fence"]), seen["key_fence"], seen)
        self.assertEqual(seen["session"], seen["key_session"], seen)
        self.assertIn(f"elected with fencing token {seen['fence']}", proc.stderr)

    def test_run_without_a_token_is_refused_with_the_403_text(self):
        out_path = os.path.join(self.dir, "child.json")
        proc = self.server.cli(*self.run_args("billing", out_path, []), timeout=30)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("HTTP 403: " + anonymous_denial("session:write", NODE), proc.stderr)
        self.assertFalse(os.path.exists(out_path), "the child ran")
        # An unknown secret: "ACL not found".
        proc = self.server.cli(*self.run_args("billing", out_path,
                                              ["-token", str(uuid.uuid4())]), timeout=30)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("HTTP 403: ACL not found", proc.stderr)
        self.assertFalse(os.path.exists(out_path), "the child ran")

    def test_run_with_a_token_without_the_session_rule_is_refused(self):
        """The key rule alone is not enough: the session needs session:write
        on the server's node."""
        self.admin("PUT", "/v1/acl/policy", {
            "Name": "keys-only", "Rules": 'key_prefix "service/billing/" { policy = "write" }'})
        token = self.admin("PUT", "/v1/acl/token", {"Description": "keys only",
                                                     "Policies": [{"Name": "keys-only"}]})
        out_path = os.path.join(self.dir, "child.json")
        proc = self.server.cli(*self.run_args("billing", out_path, ["-token", token["SecretID"]]))
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("HTTP 403: " + token_denial(token["AccessorID"], "session:write", NODE),
                      proc.stderr)
        self.assertFalse(os.path.exists(out_path), "the child ran")

    def test_run_with_a_token_for_another_election_is_refused(self):
        """The candidate's token may create sessions but not write under
        service/payroll/: the campaign's first acquire gets 403. Consul's
        `consul lock` gives up on a 403 ("Lock acquisition failed") and so
        must tenure run: a refusal no retry can change, shown to the user,
        not a silent campaign for ever."""
        out_path = os.path.join(self.dir, "child.json")
        proc = self.server.popen_cli(*self.run_args("payroll", out_path,
                                                    ["-token", self.secret("candidate")]))
        self.processes.append(proc)
        try:
            _, stderr = proc.communicate(timeout=10)
            campaigning = False
        except subprocess.TimeoutExpired:
            campaigning = True
        if campaigning:
            proc.send_signal(signal.SIGTERM)
            _, stderr = proc.communicate(timeout=20)
            self.fail("tenure run still campaigning 10 s after its acquires were refused "
                      f"with 403; its output:\n{stderr}")
        self.assertNotEqual(proc.returncode, 0, stderr)
        self.assertIn("lacks permission 'key:write' on \"service/payroll/", stderr)
        self.assertFalse(os.path.exists(out_path), "the child ran")

    # --- tenure elect ------------------------------------------------------------------

    def start_agent(self, name, candidate, token_args):
        sock = os.path.join(self.dir, f"{candidate}.sock")
        hooks = os.path.join(self.dir, f"{candidate}.hooks")
        log_path = os.path.join(self.dir, f"{candidate}.log")
        log = open(log_path, "ab")
        self.addCleanup(log.close)
        proc = self.server.popen_cli(
            "elect", name, "-http-addr", self.server.http_addr, "-ttl", "10s",
            "-lock-delay", "1s", "-candidate", candidate, "-socket", sock, *token_args,
            "-on-elected", f'echo "elected $TENURE_FENCING_TOKEN" >> {shlex.quote(hooks)}',
            stdout=log, stderr=subprocess.STDOUT)
        self.processes.append(proc)
        return proc, sock, hooks, log_path

    @staticmethod
    def ask(sock_path, payload=b'{"Op":"status"}\n'):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(sock_path)
            sock.sendall(payload)
            data = b""
            while not data.endswith(b"\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        return json.loads(data)

    def test_elect_with_the_candidate_token_is_elected(self):
        proc, sock, hooks, log_path = self.start_agent(
            "billing", "c1", ["-token", self.secret("candidate")])
        poll_until(lambda: self.ask(sock)["Leader"], timeout=20,
                   message="the agent never led; its log:\n" + read_text(log_path))
        poll_until(lambda: read_text(hooks).startswith("elected "), timeout=10,
                   message="on-elected never ran")
        fence = int(read_text(hooks).split()[1])
        entry = self.key_entry("service/billing/leader")
        self.assertEqual(entry["Fence"], fence)
        out = self.server.cli("is-leader", "billing", "-socket", sock)
        self.assertEqual((out.returncode, out.stdout), (0, "True\n"), out.stderr)
        # Leader settings (a txn guarded by check-fence) need no more rules.
        out = self.server.cli("leader-set", "billing", "db=10.0.0.7", "-socket", sock)
        self.assertEqual(out.returncode, 0, out.stderr)
        out = self.server.cli("leader-get", "billing", "db", "-token", self.secret("candidate"))
        self.assertEqual((out.returncode, out.stdout), (0, "10.0.0.7\n"), out.stderr)
        # Read without a token, the settings are filtered away (never shown).
        out = self.server.cli("leader-get", "billing", "db")
        self.assertNotIn("10.0.0.7", out.stdout)
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(timeout=20), 0, read_text(log_path))
        self.assertEqual((self.key_entry("service/billing/leader") or {}).get("Session", ""), "")

    def test_elect_without_a_token_is_refused_with_the_403_text(self):
        proc, sock, hooks, log_path = self.start_agent("billing", "c2", [])
        want = "HTTP 403: " + anonymous_denial("session:write", NODE)
        poll_until(lambda: want in read_text(log_path), timeout=15,
                   message="the agent never showed the 403; its log:\n" + read_text(log_path))
        self.assertIs(self.ask(sock)["Leader"], False)
        out = self.server.cli("is-leader", "billing", "-socket", sock)
        self.assertNotEqual(out.stdout, "True\n")
        self.assertEqual(read_text(hooks), "")
        self.assertIsNone(self.key_entry("service/billing/candidates/c2"))


if __name__ == "__main__":
    unittest.main()
