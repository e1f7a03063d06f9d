"""ACLs on a 3-server cluster (docs/acl.md): tokens and policies created
through one member work through every member, after the leader is killed,
and after every member restarts from its data dir through a snapshot; a
token deleted through one member is refused by every member.

The members run with -bootstrap-peers, a shared -raft-key-file and
-acl-enabled -acl-default-policy deny -acl-initial-management (the same
secret on each). -operator-token-file is not given: with ACLs on, the
server refuses it (operator:write comes from a token then).

A follower forwards a request with its token and the leader decides; a
?stale read is answered by the follower from its own replica, so there the
follower resolves the token itself. Both are tried on every member.

Snapshots: the raft log is snapshotted every 16,384 entries or once the
entries since the last snapshot hold the log's memory budget (256 MiB;
raft::NodeOptions in src/raft/node.h, docs/limits.md). The members run
with the test hook TENURE_TEST_RAFT_LOG_BYTES_MAX=1 MiB, so a few large
writes make every member take one past the last ACL change; their logs
then say `snapshots restored 1` at the restart.

The tests run in order on one cluster, each starting from what the one
before it left.
"""

import base64
import contextlib
import json
import os
import re
import shutil
import tempfile
import time
import unittest
import uuid

from tenure_testlib import Cluster, generate_cluster_key, poll_until, write_secret

MANAGEMENT = str(uuid.uuid4())
LOG_BYTES_MAX = 1024 * 1024
CANDIDATE_RULES = ('key_prefix "service/billing/" { policy = "write" }\n'
                   'session_prefix "" { policy = "write" }')


def token_denial(accessor, permission, name):
    return (f"Permission denied: token with AccessorID '{accessor}' lacks permission "
            f"'{permission}' on \"{name}\"")


def anonymous_denial(permission, name):
    return (f"Permission denied: anonymous token lacks permission '{permission}' on "
            f"\"{name}\". The anonymous token is used implicitly when a request does not "
            "specify a token.")


def b64(text):
    return base64.b64encode(text.encode()).decode()


def call(member, method, path, body=None, token=None):
    if body is not None and not isinstance(body, (str, bytes)):
        body = json.dumps(body)
    return member.request(method, path, body, {"X-Consul-Token": token} if token else None)


class AclClusterTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.secrets_dir = tempfile.mkdtemp(prefix="tenure-acl-cluster-")
        key_file = write_secret(cls.secrets_dir, "raft.key", generate_cluster_key())
        cls.cluster = Cluster(3, secrets=False, extra_args=(
            "-session-ttl-multiplier", "1", "-raft-key-file", key_file,
            "-acl-enabled", "-acl-default-policy", "deny", "-acl-initial-management", MANAGEMENT))
        for member in cls.cluster.members:
            member.env["TENURE_TEST_RAFT_LOG_BYTES_MAX"] = str(LOG_BYTES_MAX)
        try:
            cls.cluster.__enter__()
        except Exception:
            shutil.rmtree(cls.secrets_dir, ignore_errors=True)
            raise
        # The first leader writes the -acl-initial-management token just
        # after it is elected: until then it is "ACL not found" (as in Consul).
        try:
            for member in cls.cluster.members:
                poll_until(lambda: call(member, "GET", "/v1/acl/token/self?stale",
                                        token=MANAGEMENT).status == 200, timeout=15,
                           message=f"the management token never worked on {member.http_addr}")
        except Exception:
            cls.tearDownClass()
            raise
        cls.tokens = {}  # name -> the token as created
        cls.last_acl_index = 0

    @classmethod
    def tearDownClass(cls):
        cls.cluster.close()
        shutil.rmtree(cls.secrets_dir, ignore_errors=True)

    # --- helpers ---------------------------------------------------------------------

    def leader_and_followers(self):
        leader = self.cluster.wait_leader()
        return leader, [m for m in self.cluster.running() if m is not leader]

    def admin(self, member, method, path, body=None):
        """A management request that must succeed. A follower's forwarded
        write may meet no leader for a moment after an election (500 No
        cluster leader): retried, as clients do."""
        deadline = time.monotonic() + 15
        while True:
            resp = call(member, method, path, body, MANAGEMENT)
            if resp.status != 500 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertEqual(resp.status, 200, f"{method} {path} via {member.http_addr}: {resp.text}")
        return resp.json()

    @contextlib.contextmanager
    def logs_on_failure(self):
        try:
            yield
        except BaseException:
            for i, member in enumerate(self.cluster.members):
                print(f"--- member {i + 1} ({member.http_addr}), its log's tail:\n"
                      f"{member.log_tail(25)}", flush=True)
            raise

    def make_token(self, member, name):
        token = self.admin(member, "PUT", "/v1/acl/token", {
            "Description": name, "Policies": [{"Name": "candidate"}]})
        self.tokens[name] = token
        type(self).last_acl_index = max(self.last_acl_index, token["ModifyIndex"])
        return token

    def assert_token_works(self, member, name):
        """Through `member`: the token writes under its prefix (forwarded
        unless member leads), is refused outside it with its own text, opens
        a session on this member's node, and reads with ?stale from the
        member's own replica (polled: the member may still be catching up)."""
        token = self.tokens[name]
        secret, accessor = token["SecretID"], token["AccessorID"]
        where = f"{name} via {member.http_addr}"
        poll_until(lambda: call(member, "GET", "/v1/acl/token/self?stale", token=secret)
                   .status == 200, timeout=15, message=f"{where}: token/self?stale never 200")
        resp = call(member, "GET", "/v1/acl/token/self?stale", token=secret)
        self.assertEqual(resp.json()["AccessorID"], accessor, where)
        resp = call(member, "PUT", "/v1/kv/service/billing/leader", name, secret)
        self.assertEqual((resp.status, resp.text), (200, "true"), where)
        resp = call(member, "PUT", "/v1/kv/service/other/leader", name, secret)
        self.assertEqual((resp.status, resp.text),
                         (403, token_denial(accessor, "key:write", "service/other/leader")), where)
        resp = call(member, "PUT", "/v1/session/create", {"Name": name, "LockDelay": "0s"}, secret)
        self.assertEqual(resp.status, 200, f"{where}: {resp.text}")
        session = resp.json()["ID"]
        resp = call(member, "PUT", "/v1/session/destroy/" + session, None, secret)
        self.assertEqual((resp.status, resp.text), (200, "true"), where)
        # Consistent and stale reads, and a stale refusal decided by this member.
        poll_until(lambda: call(member, "GET", "/v1/kv/service/billing/leader?stale",
                                token=secret).json()[0]["Value"] == b64(name),
                   timeout=15, message=f"{where}: the stale read never saw the write")
        resp = call(member, "GET", "/v1/kv/service/billing/leader", token=secret)
        self.assertEqual((resp.status, resp.json()[0]["Value"]), (200, b64(name)), where)
        resp = call(member, "GET", "/v1/kv/service/other/leader?stale", token=secret)
        self.assertEqual((resp.status, resp.text),
                         (403, token_denial(accessor, "key:read", "service/other/leader")), where)
        resp = call(member, "GET", "/v1/kv/service/billing/leader?stale")
        self.assertEqual((resp.status, resp.text),
                         (403, anonymous_denial("key:read", "service/billing/leader")), where)

    def assert_token_refused(self, member, name):
        """Every member, stale or not, answers 403 "ACL not found"."""
        secret = self.tokens[name]["SecretID"]
        where = f"deleted {name} via {member.http_addr}"
        poll_until(lambda: call(member, "GET", "/v1/kv/service/billing/leader?stale",
                                token=secret).status == 403, timeout=15,
                   message=f"{where}: still accepted by a stale read")
        for method, path, body in (("GET", "/v1/kv/service/billing/leader?stale", None),
                                   ("GET", "/v1/kv/service/billing/leader", None),
                                   ("GET", "/v1/acl/token/self?stale", None),
                                   ("PUT", "/v1/kv/service/billing/leader", "x"),
                                   ("PUT", "/v1/session/create", "{}")):
            resp = call(member, method, path, body, secret)
            self.assertEqual((resp.status, resp.text), (403, "ACL not found"),
                             f"{where}: {method} {path}")

    # --- the tests, in order -------------------------------------------------------------

    def test_1_made_through_a_follower_work_through_every_member(self):
        with self.logs_on_failure():
            _, followers = self.leader_and_followers()
            self.admin(followers[0], "PUT", "/v1/acl/policy",
                       {"Name": "candidate", "Rules": CANDIDATE_RULES})
            self.make_token(followers[0], "t1")
            self.make_token(followers[1], "t2")
            for member in self.cluster.members:
                poll_until(lambda: call(member, "GET", "/v1/acl/policy/name/candidate?stale",
                                        token=MANAGEMENT).status == 200, timeout=15,
                           message=f"{member.http_addr} never had the policy")
                resp = call(member, "GET", "/v1/acl/policy/name/candidate?stale", token=MANAGEMENT)
                self.assertEqual(resp.json()["Rules"], CANDIDATE_RULES)
                for name in ("t1", "t2"):
                    self.assert_token_works(member, name)

    def test_2_deleted_through_one_member_is_refused_by_every_member(self):
        with self.logs_on_failure():
            _, followers = self.leader_and_followers()
            resp = call(followers[1], "DELETE", "/v1/acl/token/" + self.tokens["t2"]["AccessorID"],
                        token=MANAGEMENT)
            self.assertEqual((resp.status, resp.text), (200, "true"))
            for member in self.cluster.members:
                self.assert_token_refused(member, "t2")
                self.assert_token_works(member, "t1")
            type(self).last_acl_index = max(
                self.last_acl_index,
                int(call(followers[1], "GET", "/v1/acl/tokens", token=MANAGEMENT)
                    .header("X-Consul-Index")))

    def test_3_after_the_leader_is_killed(self):
        with self.logs_on_failure():
            old, _ = self.leader_and_followers()
            self.assertEqual(old.kill(), -9)
            new = self.cluster.wait_leader(exclude=old)
            survivors = self.cluster.running()
            self.assertEqual(len(survivors), 2)
            self.assertIn(new, survivors)
            for member in survivors:
                self.assert_token_works(member, "t1")
                self.assert_token_refused(member, "t2")
            # The new leader takes ACL writes: a token made through a survivor
            # that is not the leader.
            other = next(m for m in survivors if m is not new)
            self.make_token(other, "t3")
            for member in survivors:
                self.assert_token_works(member, "t3")
            # The killed member comes back with its data and catches up.
            old.start()
            self.cluster.wait_leader()
            for name in ("t1", "t3"):
                self.assert_token_works(old, name)
            self.assert_token_refused(old, "t2")

    def test_4_after_every_member_restarts_from_a_snapshot(self):
        with self.logs_on_failure():
            leader, _ = self.leader_and_followers()
            # Past the log's memory budget: every member snapshots after the
            # last ACL change.
            value = "x" * (128 * 1024)
            for i in range(2 * LOG_BYTES_MAX // len(value) + 2):
                resp = call(leader, "PUT", f"/v1/kv/bulk/{i}", value, MANAGEMENT)
                self.assertEqual((resp.status, resp.text), (200, "true"))

            def snapshot_index(member):
                raft_dir = os.path.join(member.data_dir, "raft")
                indexes = [int(m.group(1)) for name in os.listdir(raft_dir)
                           for m in [re.fullmatch(r"snapshot-\d+-(\d+)-\d+", name)] if m]
                return max(indexes, default=0)
            for member in self.cluster.members:
                poll_until(lambda: snapshot_index(member) > self.last_acl_index, timeout=30,
                           message=f"{member.http_addr} took no snapshot past index "
                                   f"{self.last_acl_index}: "
                                   f"{os.listdir(os.path.join(member.data_dir, 'raft'))}")

            for member in self.cluster.members:
                self.assertEqual(member.stop(), 0, member.log_tail())
            for member in self.cluster.members:  # all first: none has a quorum alone
                member._spawn()
            for member in self.cluster.members:
                member._wait_ready()
            for i, member in enumerate(self.cluster.members):
                started = re.findall(r"snapshots restored (\d+)", member.log())
                self.assertTrue(started and int(started[-1]) >= 1,
                                f"member {i + 1} did not start from a snapshot: {started}")
                print(f"member {i + 1} restarted from its snapshot at index "
                      f"{snapshot_index(member)} (last ACL change at {self.last_acl_index})",
                      flush=True)

            for member in self.cluster.members:
                resp = call(member, "GET", "/v1/acl/policy/name/candidate?stale", token=MANAGEMENT)
                self.assertEqual((resp.status, resp.json()["Rules"]), (200, CANDIDATE_RULES))
                listed = {t["AccessorID"] for t in
                          call(member, "GET", "/v1/acl/tokens?stale", token=MANAGEMENT).json()}
                self.assertLessEqual({self.tokens["t1"]["AccessorID"],
                                      self.tokens["t3"]["AccessorID"]}, listed)
                self.assertNotIn(self.tokens["t2"]["AccessorID"], listed)
                for name in ("t1", "t3"):
                    self.assert_token_works(member, name)
                self.assert_token_refused(member, "t2")


if __name__ == "__main__":
    unittest.main()
