"""The ACL matrix for etcd's API (docs/security.md, "The etcd port"; decision
0048 section 6): every etcd method tenure serves by every token kind, each
cell the gRPC code the call must end with, run against a real server.

One server runs with -acl-enabled -acl-default-policy deny, an
-acl-initial-management secret, -node acl-node and its etcd port. The token
kinds (the columns):
  mgmt       the -acl-initial-management secret (global-management)
  anon       no token: the anonymous token under default deny
  candidate  policy `candidate`: write on etcd/app/, session write
  read-only  policy `read-only`: read on every key and session
  observer   policy `observer`: read on etcd/ but etcd/other/ (a deny prefix
             inside a read prefix), session read, operator read
  unknown    a random secret no token has

Each row is a gateway call (POST /v3/..., the token in `Authorization`,
as etcd's gateway takes it); the gRPC transport resolves the same token
from the `token` metadata, which the etcdctl tests below cover with
`--user`, through Authenticate as clientv3 does it. A cell is the code
the answer must carry: ok (0), deny (PermissionDenied, 7), unauth
(Unauthenticated, 16), or a number. Before a cell its row's setup runs
with the management token, and the fixture is put back after it.

The test prints the cells, those that matched, and the unauthorized
successes: an answer without an error where the grid says the token must be
refused, or an answer that shows a key or lease the token may not read.
Every cell must match and there must be 0 unauthorized successes.

Beside the grid: etcdctl (gRPC, clientv3's Authenticate then the `token`
metadata) with a token's secret as password, refused without one or with a
wrong one; `etcdctl lock` and `elect` under a candidate's token; a watch
the token may not make cancelled at once, and a watch cancelled when its
token is deleted; a follower's relayed calls decided on the leader with the
client's token.
"""

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import uuid

from process_lines import ProcessLines
from tenure_testlib import (Cluster, DevServer, free_port, generate_cluster_key, http_request,
                            poll_until, write_secret)

NODE = "acl-node"
ETCDCTL = "/usr/bin/etcdctl"

POLICIES = {
    "candidate": 'key_prefix "etcd/app/" { policy = "write" }\n'
                 'session_prefix "" { policy = "write" }',
    "read-only": 'key_prefix "" { policy = "read" }\n'
                 'session_prefix "" { policy = "read" }',
    "observer": 'key_prefix "etcd/" { policy = "read" }\n'
                'key_prefix "etcd/other/" { policy = "deny" }\n'
                'session_prefix "" { policy = "read" }\n'
                'operator = "read"',
}

# The keys every cell starts with.
FIXTURE = {"etcd/app/leader": "a", "etcd/other/leader": "o"}

# What each row sends: (gateway path, body, setup). The body's strings are
# plain text here and base64 on the wire; {lease}, {leader_key} and
# {leader_rev} come from the row's setup: "lease" (a lease the management
# token granted), "elected" (a lease that leads etcd/app/elect),
# "locked" (a lease that holds the lock etcd/app/lk).
ALL = "\0"
REQUESTS = {
    # --- KV ---------------------------------------------------------------------------
    "range.key": ("/v3/kv/range", {"key": "etcd/app/leader"}, None),
    "range.other": ("/v3/kv/range", {"key": "etcd/other/leader"}, None),
    "range.prefix": ("/v3/kv/range", {"key": "etcd/app/", "range_end": "etcd/app0"}, None),
    "range.wide": ("/v3/kv/range", {"key": "etcd/", "range_end": "etcd0"}, None),
    "range.all": ("/v3/kv/range", {"key": ALL, "range_end": ALL}, None),
    "put": ("/v3/kv/put", {"key": "etcd/app/x", "value": "1"}, None),
    "put.prev_kv": ("/v3/kv/put", {"key": "etcd/app/x", "value": "1", "prev_kv": True}, None),
    "put.other": ("/v3/kv/put", {"key": "etcd/other/x", "value": "1"}, None),
    "delete": ("/v3/kv/deleterange", {"key": "etcd/app/x"}, None),
    "delete.prefix": ("/v3/kv/deleterange", {"key": "etcd/app/tmp/", "range_end": "etcd/app/tmp0"},
                      None),
    "delete.wide": ("/v3/kv/deleterange", {"key": "etcd/", "range_end": "etcd0"}, None),
    "txn.read": ("/v3/kv/txn", {
        "compare": [{"key": "etcd/other/leader", "target": "VERSION", "result": "GREATER",
                     "version": "0"}],
        "success": [{"request_range": {"key": "etcd/app/leader"}}]}, None),
    "txn.write": ("/v3/kv/txn", {
        "compare": [{"key": "etcd/app/leader", "target": "VERSION", "result": "GREATER",
                     "version": "0"}],
        "success": [{"request_put": {"key": "etcd/app/t", "value": "1"}}]}, None),
    # A write in the branch that does not run is checked all the same.
    "txn.failure-branch": ("/v3/kv/txn", {
        "success": [{"request_put": {"key": "etcd/app/t", "value": "1"}}],
        "failure": [{"request_put": {"key": "etcd/other/t", "value": "1"}}]}, None),
    "txn.nested": ("/v3/kv/txn", {
        "success": [{"request_txn": {
            "success": [{"request_put": {"key": "etcd/other/t", "value": "1"}}]}}]}, None),
    "compact": ("/v3/kv/compaction", {"revision": "1"}, None),
    # --- Leases: sessions of the server's node -----------------------------------------
    "lease.grant": ("/v3/lease/grant", {"TTL": "60"}, None),
    "lease.revoke": ("/v3/lease/revoke", {"ID": "{lease}"}, "lease"),
    "lease.keepalive": ("/v3/lease/keepalive", {"ID": "{lease}"}, "lease"),
    "lease.timetolive": ("/v3/lease/timetolive", {"ID": "{lease}", "keys": True}, "lease"),
    "lease.leases": ("/v3/lease/leases", {}, "lease"),
    # --- Election and Lock ----------------------------------------------------------
    "election.campaign": ("/v3/election/campaign",
                          {"name": "etcd/app/elect", "lease": "{lease}", "value": "me"}, "lease"),
    "election.campaign.other": ("/v3/election/campaign",
                                {"name": "etcd/other/elect", "lease": "{lease}", "value": "me"},
                                "lease"),
    "election.leader": ("/v3/election/leader", {"name": "etcd/app/elect"}, "elected"),
    "election.proclaim": ("/v3/election/proclaim", {
        "leader": {"name": "etcd/app/elect", "key": "{leader_key}", "rev": "{leader_rev}",
                   "lease": "{lease}"}, "value": "new"}, "elected"),
    "election.resign": ("/v3/election/resign", {
        "leader": {"name": "etcd/app/elect", "key": "{leader_key}", "rev": "{leader_rev}",
                   "lease": "{lease}"}}, "elected"),
    "lock.lock": ("/v3/lock/lock", {"name": "etcd/app/lk", "lease": "{lease}"}, "lease"),
    "lock.unlock": ("/v3/lock/unlock", {"key": "{leader_key}"}, "locked"),
    # --- Open to anyone ---------------------------------------------------------------
    "status": ("/v3/maintenance/status", {}, None),
    "member.list": ("/v3/cluster/member/list", {}, None),
}

MATRIX = """
row                      mgmt  anon  candidate  read-only  observer  unknown

# One key: key read or write. A range: the right on the prefix covering it,
# with no deny below it: all or nothing, never filtered.
range.key                ok    deny  ok         ok         ok        unauth
range.other              ok    deny  deny       ok         deny      unauth
range.prefix             ok    deny  ok         ok         ok        unauth
range.wide               ok    deny  deny       ok         deny      unauth
range.all                ok    deny  deny       ok         deny      unauth
put                      ok    deny  ok         deny       deny      unauth
put.prev_kv              ok    deny  ok         deny       deny      unauth
put.other                ok    deny  deny       deny       deny      unauth
delete                   ok    deny  ok         deny       deny      unauth
delete.prefix            ok    deny  ok         deny       deny      unauth
delete.wide              ok    deny  deny       deny       deny      unauth
# Txn: read on every compared key, each op's right in both branches, nested too.
txn.read                 ok    deny  deny       ok         deny      unauth
txn.write                ok    deny  ok         deny       deny      unauth
txn.failure-branch       ok    deny  deny       deny       deny      unauth
txn.nested               ok    deny  deny       deny       deny      unauth
# Compact changes the cluster: operator write.
compact                  ok    deny  deny       deny       deny      unauth

# Leases are sessions of the granting server's node: write to grant, revoke
# and renew, read for TimeToLive; Leases lists only the readable ones.
lease.grant              ok    deny  ok         deny       deny      unauth
lease.revoke             ok    deny  ok         deny       deny      unauth
lease.keepalive          ok    deny  ok         deny       deny      unauth
lease.timetolive         ok    deny  ok         ok         ok        unauth
lease.leases             ok    ok    ok         ok         ok        unauth

# Election and Lock: write on the own key and read on the line's prefix to
# enter; the holder's key to proclaim, resign or unlock; read to ask.
election.campaign        ok    deny  ok         deny       deny      unauth
election.campaign.other  ok    deny  deny       deny       deny      unauth
election.leader          ok    deny  ok         ok         ok        unauth
election.proclaim        ok    deny  ok         deny       deny      unauth
election.resign          ok    deny  ok         deny       deny      unauth
lock.lock                ok    deny  ok         deny       deny      unauth
lock.unlock              ok    deny  ok         deny       deny      unauth

# Status and MemberList resolve no token (Consul's status endpoints are open).
status                   ok    ok    ok         ok         ok        ok
member.list              ok    ok    ok         ok         ok        ok
"""

CODES = {"ok": 0, "deny": 7, "unauth": 16}


def b64(text):
    return base64.b64encode(text.encode()).decode()


def encode(value, fill):
    """The row's body with its {vars} filled and key-like strings in base64."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            item = encode(item, fill)
            if key in ("key", "range_end", "value", "name") and isinstance(item, str):
                item = b64(item)
            out[key] = item
        return out
    if isinstance(value, list):
        return [encode(item, fill) for item in value]
    if isinstance(value, str):
        return value.format(**fill)
    return value


def parse_matrix(text):
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    columns = lines[0].split()[1:]
    grid = {}
    for line in lines[1:]:
        row, *cells = line.split()
        assert row in REQUESTS, row
        assert len(cells) == len(columns), line
        grid[row] = dict(zip(columns, cells))
    assert set(grid) == set(REQUESTS), set(REQUESTS) ^ set(grid)
    return columns, grid


class EtcdAclServer:
    """The ACL server, its management secret, its tokens and fixture."""

    def __init__(self):
        self.management = str(uuid.uuid4())
        self.etcd_addr = f"127.0.0.1:{free_port()}"
        self.server = DevServer(extra_args=[
            "-acl-enabled", "-acl-default-policy", "deny",
            "-acl-initial-management", self.management, "-node", NODE,
            "-grpc-addr", self.etcd_addr])
        self.secrets = {"mgmt": self.management, "anon": None,
                        "unknown": str(uuid.uuid4())}

    def start(self):
        self.server.start()
        poll_until(lambda: self.consul("GET", "/v1/acl/token/self").status == 200, timeout=15,
                   message="the initial management token works")
        for name, rules in POLICIES.items():
            self.admin("PUT", "/v1/acl/policy", {"Name": name, "Rules": rules})
            token = self.admin("PUT", "/v1/acl/token", {"Policies": [{"Name": name}]})
            self.secrets[name] = token["SecretID"]

    def close(self):
        self.server.close()

    def consul(self, method, path, body=None, token=None):
        return self.server.request(method, path, body,
                                   headers={"X-Consul-Token": token or self.management})

    def admin(self, method, path, body=None):
        resp = self.consul(method, path, json.dumps(body) if body is not None else None)
        if resp.status != 200:
            raise AssertionError(f"management {method} {path}: {resp!r}")
        return resp.json()

    def etcd(self, path, body, token=None):
        """A gateway call: (gRPC code, the answer's JSON)."""
        headers = {"Authorization": token} if token else {}
        resp = http_request(self.etcd_addr, "POST", path, json.dumps(body), headers=headers,
                            timeout=15)
        text = resp.body.decode()
        # A keep-alive's answer is a stream of {"result"} or {"error"} lines.
        first = json.loads(text.split("\n")[0]) if text else {}
        if "error" in first and isinstance(first["error"], dict):
            return first["error"]["grpc_code"], first
        if resp.status != 200:
            return first.get("code", -1), first
        return 0, first.get("result", first)

    def must(self, path, body):
        code, answer = self.etcd(path, body, self.management)
        if code != 0:
            raise AssertionError(f"management {path}: {answer}")
        return answer

    def reset(self):
        self.must("/v3/kv/deleterange", {"key": b64("etcd/"), "range_end": b64("etcd0")})
        for key, value in FIXTURE.items():
            self.must("/v3/kv/put", {"key": b64(key), "value": b64(value)})

    def setup(self, kind):
        fill = {}
        if kind is None:
            return fill
        lease = self.must("/v3/lease/grant", {"TTL": "60"})["ID"]
        fill["lease"] = lease
        if kind == "elected":
            won = self.must("/v3/election/campaign",
                            {"name": b64("etcd/app/elect"), "lease": lease, "value": b64("v")})
            fill["leader_key"] = base64.b64decode(won["leader"]["key"]).decode()
            fill["leader_rev"] = won["leader"]["rev"]
        elif kind == "locked":
            held = self.must("/v3/lock/lock", {"name": b64("etcd/app/lk"), "lease": lease})
            fill["leader_key"] = base64.b64decode(held["key"]).decode()
        return fill

    def teardown(self, fill):
        if "lease" in fill:
            self.etcd("/v3/lease/revoke", {"ID": fill["lease"]}, self.management)


class EtcdAclMatrixTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.acl = EtcdAclServer()
        cls.acl.start()

    @classmethod
    def tearDownClass(cls):
        cls.acl.close()

    def etcdctl(self, *args, user=None, endpoint=None):
        argv = [ETCDCTL, "--endpoints", endpoint or self.acl.etcd_addr, "--dial-timeout", "5s",
                "--command-timeout", "10s"]
        if user is not None:
            argv += ["--user", user]
        return subprocess.run(argv + list(args), capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, ETCDCTL_API="3"))

    def test_matrix(self):
        columns, grid = parse_matrix(MATRIX)
        cells = matched = unauthorized = 0
        mismatches = []
        for row, (path, body, setup) in REQUESTS.items():
            for column in columns:
                self.acl.reset()
                fill = self.acl.setup(setup)
                try:
                    code, answer = self.acl.etcd(path, encode(body, fill),
                                                 self.acl.secrets[column])
                finally:
                    self.acl.teardown(fill)
                want = CODES.get(grid[row][column])
                cells += 1
                leaked = self.leaked(column, row, answer, fill) if code == 0 else None
                if code == 0 and want != 0:
                    unauthorized += 1
                if leaked:
                    unauthorized += 1
                if code == want and not leaked:
                    matched += 1
                else:
                    mismatches.append(f"{row} as {column}: code {code}, want {want}"
                                      f"{' (' + leaked + ')' if leaked else ''}: {answer}")
        print(f"\netcd ACL matrix: {cells} cells, {matched} matched, "
              f"{unauthorized} unauthorized successes", file=sys.stderr)
        self.assertEqual(mismatches, [])
        self.assertEqual(unauthorized, 0)

    def leaked(self, column, row, answer, fill):
        """What an allowed answer shows that the token may not read, or None."""
        if row == "lease.leases" and column == "anon":
            listed = [lease["ID"] for lease in answer.get("leases", [])]
            if str(fill["lease"]) in [str(x) for x in listed]:
                return f"lists lease {fill['lease']} to the anonymous token"
        if row.startswith("range") and column in ("candidate", "observer"):
            for kv in answer.get("kvs", []):
                if base64.b64decode(kv["key"]).decode().startswith("etcd/other/"):
                    return "shows a key under etcd/other/"
        return None

    def test_etcdctl_authenticates_with_a_tokens_secret(self):
        self.acl.reset()
        candidate = "candidate:" + self.acl.secrets["candidate"]
        done = self.etcdctl("put", "etcd/app/ctl", "v", user=candidate)
        self.assertEqual(done.returncode, 0, done.stderr)
        done = self.etcdctl("get", "etcd/app/ctl", "--print-value-only", user=candidate)
        self.assertEqual(done.stdout.strip(), "v")
        # A key the token may not read, no token, a wrong secret.
        done = self.etcdctl("get", "etcd/other/leader", user=candidate)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("etcdserver: permission denied", done.stderr)
        done = self.etcdctl("put", "etcd/app/ctl", "w")
        self.assertIn("etcdserver: permission denied", done.stderr)
        done = self.etcdctl("get", "etcd/app/ctl", user="candidate:" + str(uuid.uuid4()))
        self.assertIn("authentication failed, invalid user ID or password", done.stderr)
        self.assertEqual(self.etcdctl("get", "etcd/app/ctl", "--print-value-only",
                                      user=candidate).stdout.strip(), "v")
        # Anyone may ask for the status, as Consul's /v1/status.
        done = self.etcdctl("endpoint", "status")
        self.assertEqual(done.returncode, 0, done.stderr)

    def test_lock_and_elect_under_a_candidates_token(self):
        self.acl.reset()
        candidate = "candidate:" + self.acl.secrets["candidate"]
        done = self.etcdctl("lock", "etcd/app/ctl-lock", "--", "echo", "held", user=candidate)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("held", done.stdout)
        done = self.etcdctl("lock", "etcd/other/ctl-lock", "--", "echo", "held", user=candidate)
        self.assertNotEqual(done.returncode, 0)
        self.assertNotIn("held", done.stdout)
        self.assertIn("permission denied", done.stderr)
        elect = ProcessLines([ETCDCTL, "--endpoints", self.acl.etcd_addr, "--user", candidate,
                              "elect", "etcd/app/ctl-elect", "me"],
                             env=dict(os.environ, ETCDCTL_API="3"))
        self.addCleanup(elect.stop)
        poll_until(lambda: "me" in elect.snapshot(), timeout=20, message="the candidate leads")
        reader = "reader:" + self.acl.secrets["read-only"]
        done = self.etcdctl("get", "etcd/app/ctl-elect", "--prefix", "--print-value-only",
                            user=reader)
        self.assertEqual(done.stdout.split(), ["me"])

    def test_a_watch_the_token_may_not_make_is_cancelled(self):
        self.acl.reset()
        candidate = "candidate:" + self.acl.secrets["candidate"]
        done = subprocess.run([ETCDCTL, "--endpoints", self.acl.etcd_addr, "--user", candidate,
                               "watch", "--prefix", "etcd/other/"], capture_output=True,
                              text=True, timeout=30, env=dict(os.environ, ETCDCTL_API="3"))
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("permission denied", done.stderr)

    def test_a_watch_ends_when_its_token_is_deleted(self):
        self.acl.reset()
        token = self.acl.admin("PUT", "/v1/acl/token", {"Policies": [{"Name": "candidate"}]})
        watch = ProcessLines([ETCDCTL, "--endpoints", self.acl.etcd_addr, "--user",
                              "w:" + token["SecretID"], "watch", "--prefix", "etcd/app/"],
                             env=dict(os.environ, ETCDCTL_API="3"))
        self.addCleanup(watch.stop)
        # etcdctl says nothing once its watch is made: put until it sees one.
        poll_until(lambda: self.acl.must("/v3/kv/put", {"key": b64("etcd/app/w1"),
                                                        "value": b64("1")}) is not None
                   and "etcd/app/w1" in watch.snapshot(), timeout=20,
                   message="the watch sees the first put")
        self.acl.admin("DELETE", f"/v1/acl/token/{token['AccessorID']}")
        self.acl.must("/v3/kv/put", {"key": b64("etcd/app/w2"), "value": b64("2")})
        poll_until(lambda: watch.process.poll() is not None, timeout=20,
                   message="etcdctl's watch ends once its token is gone")
        self.assertNotIn("etcd/app/w2", watch.snapshot())
        self.assertIn("canceled", "\n".join(watch.snapshot()))


class EtcdAclClusterTest(unittest.TestCase):
    def test_a_followers_calls_are_decided_on_the_leader_with_the_clients_token(self):
        management = str(uuid.uuid4())
        secrets_dir = tempfile.mkdtemp(prefix="tenure-etcd-acl-")
        self.addCleanup(shutil.rmtree, secrets_dir, ignore_errors=True)
        key_file = write_secret(secrets_dir, "raft.key", generate_cluster_key())
        # With ACLs on the operator token is a policy's, so no -operator-token-file.
        cluster = Cluster(3, secrets=False, extra_args=(
            "-session-ttl-multiplier", "1", "-raft-key-file", key_file, "-acl-enabled",
            "-acl-default-policy", "deny", "-acl-initial-management", management,
            "-grpc-addr", "x"))
        for member in cluster.members:
            member.etcd_addr = f"127.0.0.1:{free_port()}"
            at = member.extra_args.index("-grpc-addr")
            member.extra_args[at + 1] = member.etcd_addr
        with cluster:
            leader = cluster.leader()
            follower = next(m for m in cluster.members if m is not leader)
            headers = {"X-Consul-Token": management}
            poll_until(lambda: leader.request("GET", "/v1/acl/token/self",
                                              headers=headers).status == 200,
                       timeout=15, message="the initial management token works")
            resp = leader.request("PUT", "/v1/acl/policy", json.dumps(
                {"Name": "candidate", "Rules": POLICIES["candidate"]}), headers=headers)
            self.assertEqual(resp.status, 200, resp.text)
            resp = leader.request("PUT", "/v1/acl/token", json.dumps(
                {"Policies": [{"Name": "candidate"}]}), headers=headers)
            secret = resp.json()["SecretID"]

            def call(member, path, body, token):
                resp = http_request(member.etcd_addr, "POST", path, json.dumps(body),
                                    headers={"Authorization": token}, timeout=15)
                return resp.status, resp.json()

            # The token reaches the follower's store too before it is used there.
            poll_until(lambda: call(follower, "/v3/kv/range",
                                    {"key": b64("etcd/app/x"), "serializable": True},
                                    secret)[0] == 200,
                       timeout=15, message="the follower knows the token")
            status, answer = call(follower, "/v3/kv/put",
                                  {"key": b64("etcd/app/x"), "value": b64("1")}, secret)
            self.assertEqual(status, 200, answer)
            status, answer = call(follower, "/v3/kv/put",
                                  {"key": b64("etcd/other/x"), "value": b64("1")}, secret)
            self.assertEqual((status, answer.get("code")), (403, 7), answer)
            status, answer = call(follower, "/v3/lease/grant", {"TTL": "30"}, secret)
            self.assertEqual(status, 200, answer)
            status, answer = call(follower, "/v3/kv/put",
                                  {"key": b64("etcd/app/x"), "value": b64("1")},
                                  str(uuid.uuid4()))
            self.assertEqual((status, answer.get("code")), (401, 16), answer)
            # What the follower relayed was applied once, as the leader decided.
            got = leader.request("GET", "/v1/kv/etcd/other/x", headers=headers)
            self.assertEqual(got.status, 404)
            got = leader.request("GET", "/v1/kv/etcd/app/x?raw", headers=headers)
            self.assertEqual(got.body, b"1")


if __name__ == "__main__":
    unittest.main()
