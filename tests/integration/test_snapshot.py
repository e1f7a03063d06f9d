"""Snapshots (docs/snapshots.md, decision 0024): GET and PUT /v1/snapshot and
`tenure snapshot save|restore|inspect`.

- A snapshot saved while four clients write is one state: every writer's
  keys are the unbroken run its counter says (each step writes its key and
  its counter in one txn), restored into a fresh server and into a fresh
  3-server cluster (through a follower), whose members then all hold the
  same entries, indexes included, as the fresh server.
- Restoring an older snapshot into a server that moved on: the index a
  blocking query waited on, every index a client saw, and every fencing
  token given out stay below what comes after, while clients keep writing.
- Garbage, truncated, damaged, empty and newer-version files are refused
  with a sentence by the CLI and by the server, nothing changes, the server
  keeps serving.
- Without the operator token (ACLs off) both endpoints answer 403; with ACLs
  on, test_acl_matrix.py covers them.
- With ACLs on, a restore brings the snapshot's tokens back (a token made
  after the save, cached before, is refused); a restored TTL session renews,
  and on a fresh server an unrenewed one expires a TTL after the restore.
- A state above libraft's 8 MiB segment restores into one server (and
  survives kill -9 and a restart) and into a 3-server cluster.
"""
import base64
import json
import os
import re
import shutil
import socket
import tempfile
import threading
import time
import unittest

from tenure_testlib import Cluster, DevServer, poll_until, write_secret

WRITERS = 4


def inspect_fields(text):
    """`tenure snapshot inspect`'s rows as a dict."""
    fields = {}
    for line in text.splitlines():
        m = re.match(r"^ (\S.*?)\s{2,}(\S.*)$", line)
        if m:
            fields[m.group(1)] = m.group(2)
    return fields


class SnapshotTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tenure-snapshot-test-")
        self.token = "op-" + os.urandom(16).hex()
        self.token_file = write_secret(self.dir, "operator.token", self.token)
        self.servers = []

    def tearDown(self):
        for server in self.servers:
            server.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def server(self, **kwargs):
        server = DevServer(extra_args=["-operator-token-file", self.token_file], **kwargs)
        self.servers.append(server)
        server.start()
        return server

    def op(self):
        return {"X-Consul-Token": self.token}

    def cli(self, server, *args, timeout=60.0):
        return server.cli(*args, env={"CONSUL_HTTP_TOKEN": self.token}, timeout=timeout)

    def leadership_gained(self, server):
        return server.metric('tenure_raft_leadership_changes_total{change="gained"}')

    def recurse(self, server, stale=False):
        resp = server.request("GET", "/v1/kv/?recurse" + ("&stale" if stale else ""))
        self.assertEqual(resp.status, 200, resp.text)
        return resp.json(), int(resp.header("x-consul-index"))

    def sessions(self, server, stale=False):
        resp = server.request("GET", "/v1/session/list" + ("?stale" if stale else ""))
        self.assertEqual(resp.status, 200, resp.text)
        return resp.json()

    def check_writers_consistent(self, entries, from_zero=True):
        """Each writer's keys are one unbroken run w<t>/k..n-1, n its counter
        (k = 0 when from_zero): a state that mixed two indexes would show a
        key without its counter or a counter without its key."""
        by_key = {e["Key"]: e for e in entries}
        for t in range(WRITERS):
            counter = by_key.get(f"count/{t}")
            n = int(base64.b64decode(counter["Value"]).decode()) if counter else 0
            numbers = sorted(int(k.split("/")[1]) for k in by_key if k.startswith(f"w{t}/"))
            if not numbers:
                self.assertIsNone(counter, f"writer {t}: a counter without keys")
                continue
            first = 0 if from_zero else numbers[0]
            self.assertEqual(numbers, list(range(first, n)),
                             f"writer {t}: counter {n}, keys {numbers[:3]}...{numbers[-3:]}")
        return sum(1 for k in by_key if k.startswith("w"))

    def start_writers(self, server, stop, errors, counts):
        def write(t):
            i = 0
            with server.client(timeout=30.0) as client:
                while not stop.is_set() and i < 100000:
                    ops = [{"KV": {"Verb": "set", "Key": f"w{t}/{i:06d}", "Value": "eA=="}},
                           {"KV": {"Verb": "set", "Key": f"count/{t}",
                                   "Value": base64.b64encode(str(i + 1).encode()).decode()}}]
                    try:
                        resp = client.request("PUT", "/v1/txn", json.dumps(ops))
                    except Exception as e:  # the server went away: a failure
                        errors.append(f"writer {t}: {e!r}")
                        return
                    if resp.status != 200:
                        errors.append(f"writer {t}: {resp.status} {resp.text}")
                        return
                    i += 1
                    counts[t] = i
        threads = [threading.Thread(target=write, args=(t,)) for t in range(WRITERS)]
        for thread in threads:
            thread.start()
        return threads

    # -------------------------------------------------------------------------

    def test_save_under_write_load_restores_into_one_and_three_servers(self):
        source = self.server()
        session = source.create_session({"Name": "holder", "LockDelay": "5s"})
        resp = source.request("PUT", f"/v1/kv/service/db/leader?acquire={session}", b"me")
        self.assertEqual(resp.text, "true")
        fence = int(resp.header("x-tenure-fence"))

        stop, errors, counts = threading.Event(), [], [0] * WRITERS
        threads = self.start_writers(source, stop, errors, counts)
        try:
            poll_until(lambda: min(counts) >= 20, timeout=30.0, message="writers never wrote")
            path = os.path.join(self.dir, "load.snap")
            saved = self.cli(source, "snapshot", "save", path)
            self.assertEqual(saved.returncode, 0, saved.stderr)
            self.assertRegex(saved.stdout, r"^Saved and verified snapshot to index \d+\n$")
            at_save = list(counts)
            poll_until(lambda: min(counts) >= min(at_save) + 10, timeout=30.0,
                       message="writers stopped after the save")
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=60)
        self.assertEqual(errors, [])
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)

        inspected = self.cli(source, "snapshot", "inspect", path)
        self.assertEqual(inspected.returncode, 0, inspected.stderr)
        info = inspect_fields(inspected.stdout)
        index = int(info["Index"])
        self.assertIn(f"to index {index}", saved.stdout)
        self.assertEqual(int(info["Size"]), os.path.getsize(path))
        self.assertEqual(info["Sessions"], "1")
        self.assertEqual(info["Locks"], "1")
        self.assertRegex(info["SHA-256"], r"^[0-9a-f]{64}$")

        # A fresh single server: the snapshot's state, its indexes included.
        single = self.server()
        # /v1/status/leader (what start() waits for) names the leader as soon
        # as raft elects it; the counter moves once its first barrier
        # committed, a few milliseconds later.
        poll_until(lambda: self.leadership_gained(single) == 1, timeout=10.0,
                   message="the leadership counter of a fresh server")
        gained_before = self.leadership_gained(single)
        restored = self.cli(single, "snapshot", "restore", path)
        self.assertEqual(restored.returncode, 0, restored.stderr)
        self.assertEqual(restored.stdout, "Restored snapshot\n")
        # The leader's duties start again from the restored state, but a
        # restore is not a leadership change: the counter stays.
        poll_until(lambda: "snapshot restored; leader duties start again" in single.log(),
                   timeout=10.0, message="the restore's duties line")
        self.assertEqual(self.leadership_gained(single), gained_before)
        entries, kv_index = self.recurse(single)
        written = self.check_writers_consistent(entries)
        self.assertGreater(written, 4 * 20)
        self.assertLess(written, sum(counts), "the snapshot holds writes made after it")
        self.assertEqual(len(entries), int(info["Keys"]))
        self.assertLessEqual(kv_index, index)
        leader_entry = [e for e in entries if e["Key"] == "service/db/leader"][0]
        self.assertEqual(leader_entry["Session"], session)
        self.assertEqual(leader_entry["Fence"], fence)
        sessions = self.sessions(single)
        self.assertEqual([s["ID"] for s in sessions], [session])
        # Saved again from the restored server: the same index and counts.
        again_path = os.path.join(self.dir, "again.snap")
        again = self.cli(single, "snapshot", "save", again_path)
        self.assertEqual(again.returncode, 0, again.stderr)
        again_info = inspect_fields(self.cli(single, "snapshot", "inspect", again_path).stdout)
        for field in ("Keys", "Tombstones", "Sessions", "Locks", "Lock-delays"):
            self.assertEqual(again_info[field], info[field], field)
        self.assertGreaterEqual(int(again_info["Index"]), index)

        # A fresh 3-server cluster, restored through a follower: every member
        # ends with the fresh single server's entries and sessions.
        with Cluster(3) as cluster:
            leader = cluster.leader()
            follower = [m for m in cluster.members if m is not leader][0]
            restored = follower.cli("snapshot", "restore", path,
                                    env={"CONSUL_HTTP_TOKEN": cluster.operator_token}, timeout=60)
            self.assertEqual(restored.returncode, 0, restored.stderr)

            def all_equal():
                for member in cluster.members:
                    got, _ = self.recurse(member, stale=True)
                    if got != entries:
                        return False
                    if [s["ID"] for s in self.sessions(member, stale=True)] != [session]:
                        return False
                return True
            poll_until(all_equal, timeout=30.0, message="the members never held the snapshot")
            # ?stale: a follower saves what it has applied, with its index.
            resp = follower.request("GET", "/v1/snapshot?stale",
                                    headers=cluster.operator_headers())
            self.assertEqual(resp.status, 200, resp.text)
            self.assertEqual(resp.header("content-type"), "application/octet-stream")
            self.assertGreaterEqual(int(resp.header("x-consul-index")), index)
            self.assertEqual(resp.body[:8], b"TNRBKUP\n")
            # New writes number after the snapshot on every member.
            resp = leader.request("PUT", "/v1/kv/after-restore", b"x")
            self.assertEqual(resp.status, 200, resp.text)
            self.assertGreater(leader.kv_entry("after-restore")["ModifyIndex"], index)

    def test_indexes_and_fences_never_go_backwards_while_clients_write(self):
        server = self.server()
        session = server.create_session({"Name": "old", "LockDelay": "0s"})
        resp = server.request("PUT", f"/v1/kv/lock/a?acquire={session}", b"")
        self.assertEqual(resp.text, "true")
        old_fence = int(resp.header("x-tenure-fence"))
        path = os.path.join(self.dir, "old.snap")
        self.assertEqual(self.cli(server, "snapshot", "save", path).returncode, 0)

        # The server moves on: more writes, and a lock granted much later.
        with server.client() as client:
            for i in range(200):
                self.assertEqual(client.request("PUT", f"/v1/kv/later/{i}", b"v").status, 200)
        resp = server.request("PUT", f"/v1/kv/lock/b?acquire={session}", b"")
        newest_fence = int(resp.header("x-tenure-fence"))
        _, seen_index = self.recurse(server)
        self.assertGreater(newest_fence, old_fence + 200)

        # A blocking query on a key the writers leave alone, parked at its
        # index, is woken by the restore (the key is gone) with a larger one.
        parked_at = server.kv_entry("later/0")["ModifyIndex"]
        woke = {}

        def block():
            resp = server.request("GET", f"/v1/kv/later/0?index={parked_at}&wait=30s",
                                  timeout=60)
            woke["status"], woke["index"] = resp.status, int(resp.header("x-consul-index"))
        waiter = threading.Thread(target=block)
        waiter.start()

        stop, errors, counts = threading.Event(), [], [0] * WRITERS
        threads = self.start_writers(server, stop, errors, counts)
        try:
            poll_until(lambda: min(counts) >= 5, timeout=30.0, message="writers never wrote")
            restored = self.cli(server, "snapshot", "restore", path)
            self.assertEqual(restored.returncode, 0, restored.stderr)
            at_restore = list(counts)
            poll_until(lambda: min(counts) >= min(at_restore) + 5, timeout=30.0,
                       message="writers stopped after the restore")
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=60)
        waiter.join(timeout=60)
        self.assertEqual(errors, [], "writes failed during the restore")
        self.assertEqual(woke.get("status"), 404, "the parked query did not see the restore")
        self.assertGreater(woke["index"], seen_index)

        entries, kv_index = self.recurse(server)
        self.assertGreater(kv_index, seen_index)
        keys = {e["Key"] for e in entries}
        self.assertNotIn("later/0", keys, "the older snapshot's state was not restored")
        self.assertNotIn("lock/b", keys)
        self.assertIn("lock/a", keys)
        # Writes after the restore landed on the restored state, above it.
        self.check_writers_consistent(entries, from_zero=False)
        self.assertTrue(all(e["ModifyIndex"] > seen_index for e in entries
                            if e["Key"].startswith(("w", "count/"))))
        # The restored holder keeps its token; a new grant is above every
        # token given out before.
        lock_a = [e for e in entries if e["Key"] == "lock/a"][0]
        self.assertEqual(lock_a["Fence"], old_fence)
        resp = server.request("PUT", f"/v1/kv/lock/b?acquire={session}", b"")
        self.assertEqual(resp.text, "true")
        self.assertGreater(int(resp.header("x-tenure-fence")), newest_fence)
        server.check_healthy("after the restore")

    def test_bad_files_are_refused_and_change_nothing(self):
        server = self.server()
        server.request("PUT", "/v1/kv/keep", b"1")
        path = os.path.join(self.dir, "good.snap")
        self.assertEqual(self.cli(server, "snapshot", "save", path).returncode, 0)
        with open(path, "rb") as f:
            good = f.read()
        server.request("PUT", "/v1/kv/after", b"2")
        before = self.recurse(server)

        newer = bytearray(good)
        newer[8] = 2
        flipped = bytearray(good)
        flipped[len(good) - 10] ^= 0x01
        cases = {
            "garbage": (os.urandom(500), "not a tenure snapshot"),
            "json": (b'{"not": "a snapshot"}', "not a tenure snapshot"),
            "empty": (b"", "truncated (0 bytes"),
            "magic only": (good[:8], "not even the header"),
            "header only": (good[:136], "truncated (the header says"),
            "half": (good[:len(good) // 2], "truncated"),
            "one byte short": (good[:-1], "truncated"),
            "trailing": (good + b"\0", "after the end of the state"),
            "flipped": (bytes(flipped), "checksum mismatch"),
            "newer": (bytes(newer), "format version 2 is newer than this tenure reads (1)"),
        }
        for name, (data, expected) in cases.items():
            with self.subTest(name):
                bad = os.path.join(self.dir, "bad.snap")
                with open(bad, "wb") as f:
                    f.write(data)
                for command in ("inspect", "restore"):
                    run = self.cli(server, "snapshot", command, bad)
                    self.assertEqual(run.returncode, 1, f"{command}: {run.stdout}")
                    self.assertIn(expected, run.stderr, command)
                    self.assertIn("snapshot file: " if data else "snapshot", run.stderr)
                resp = server.request("PUT", "/v1/snapshot", data, headers=self.op())
                self.assertEqual(resp.status, 400, resp.text)
                self.assertIn(expected, resp.text)
                self.assertEqual(self.recurse(server), before)
        # A missing file and a wrong argument count: errors, exit 1.
        run = self.cli(server, "snapshot", "restore", os.path.join(self.dir, "missing.snap"))
        self.assertEqual(run.returncode, 1)
        self.assertIn("No such file", run.stderr)
        run = self.cli(server, "snapshot", "save")
        self.assertEqual(run.returncode, 1)
        self.assertIn("give exactly one FILE", run.stderr)
        # A body past the limit gets 413 before it is read, naming the limit.
        resp = server.request("PUT", "/v1/snapshot", b"", headers={
            **self.op(), "Content-Length": str(64 * 1024 * 1024 + 1)})
        self.assertEqual(resp.status, 413, resp.text)
        self.assertIn("max size: 67108864 bytes", resp.text)
        self.assertEqual(self.recurse(server), before)
        server.check_healthy("after the refusals")

    def test_without_the_operator_token_both_endpoints_are_refused(self):
        server = self.server()
        path = os.path.join(self.dir, "x.snap")
        self.assertEqual(self.cli(server, "snapshot", "save", path).returncode, 0)
        with open(path, "rb") as f:
            good = f.read()
        for method, body in (("GET", None), ("PUT", good)):
            resp = server.request(method, "/v1/snapshot", body)
            self.assertEqual(resp.status, 403, resp.text)
            self.assertIn("Permission denied", resp.text)
            resp = server.request(method, "/v1/snapshot", body,
                                  headers={"X-Consul-Token": "op-wrong-" + "0" * 16})
            self.assertEqual(resp.status, 403, resp.text)
            self.assertEqual(resp.text, "ACL not found")
        # Only the operator may send a body past the usual 512 KiB: a
        # stranger declaring 8 MiB gets 413 at once, before sending any of
        # it, so nobody without the token makes the server buffer 64 MiB.
        for headers in ({}, {"X-Consul-Token": "op-wrong-" + "0" * 16}):
            resp = server.request("PUT", "/v1/snapshot", b"", headers={
                **headers, "Content-Length": str(8 * 1024 * 1024)})
            self.assertEqual(resp.status, 413, resp.text)
            self.assertIn("max size: 524288 bytes", resp.text)
        # The operator may, and a large body on one connection does not
        # raise the next request's limit on the same connection.
        host, port = server.http_addr.rsplit(":", 1)
        with socket.create_connection((host, int(port))) as sock:
            junk = b"x" * (600 * 1024)
            sock.sendall(b"PUT /v1/snapshot HTTP/1.1\r\nHost: t\r\nX-Consul-Token: " +
                         self.token.encode() + b"\r\nContent-Length: %d\r\n\r\n" % len(junk) +
                         junk + b"PUT /v1/snapshot HTTP/1.1\r\nHost: t\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(junk))
            answers = b""
            deadline = time.monotonic() + 20
            while answers.count(b"HTTP/1.1 ") < 2 and time.monotonic() < deadline:
                sock.settimeout(max(0.1, deadline - time.monotonic()))
                chunk = sock.recv(65536)
                if not chunk:
                    break
                answers += chunk
            statuses = re.findall(rb"HTTP/1.1 (\d+)", answers)
            # The operator's 600 KiB body is read and refused as a file (400),
            # not by size; the stranger's next one is refused by size.
            self.assertEqual(statuses[:1], [b"400"], answers[:300])
            self.assertIn(b"max size: 524288 bytes", answers)
        run = server.cli("snapshot", "save", os.path.join(self.dir, "y.snap"))
        self.assertEqual(run.returncode, 1)
        self.assertIn("403", run.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "y.snap")))

    def test_with_acls_tokens_are_the_snapshots_and_ttl_sessions_renew(self):
        mgmt = "5e1ec7ed-0000-4000-8000-00000000c0de"
        server = DevServer(extra_args=["-acl-enabled", "-acl-default-policy", "deny",
                                       "-acl-initial-management", mgmt])
        self.servers.append(server)
        server.start()
        auth = {"X-Consul-Token": mgmt}
        poll_until(lambda: server.request("GET", "/v1/acl/token/self", headers=auth).status
                   == 200, timeout=15.0, message="the initial management token never worked")
        resp = server.request("PUT", "/v1/session/create",
                              json.dumps({"Name": "ttl", "TTL": "30s"}), headers=auth)
        self.assertEqual(resp.status, 200, resp.text)
        ttl_session = resp.json()["ID"]
        path = os.path.join(self.dir, "acl.snap")
        saved = server.cli("snapshot", "save", path, env={"CONSUL_HTTP_TOKEN": mgmt})
        self.assertEqual(saved.returncode, 0, saved.stderr)
        self.assertEqual(inspect_fields(server.cli("snapshot", "inspect", path).stdout)
                         ["Sessions"], "1")

        # A token made after the save, resolved (and cached) before the restore.
        resp = server.request("PUT", "/v1/acl/token", json.dumps({"Description": "later"}),
                              headers=auth)
        self.assertEqual(resp.status, 200, resp.text)
        later = {"X-Consul-Token": resp.json()["SecretID"]}
        self.assertEqual(server.request("GET", "/v1/acl/token/self", headers=later).status, 200)
        # acl:write is needed: the later token has none.
        self.assertEqual(server.request("GET", "/v1/snapshot", headers=later).status, 403)
        # Nor may it send a body past the usual limit: 413 before the body.
        resp = server.request("PUT", "/v1/snapshot", b"", headers={
            **later, "Content-Length": str(8 * 1024 * 1024)})
        self.assertEqual(resp.status, 413, resp.text)
        self.assertIn("max size: 524288 bytes", resp.text)

        restored = server.cli("snapshot", "restore", path, env={"CONSUL_HTTP_TOKEN": mgmt})
        self.assertEqual(restored.returncode, 0, restored.stderr)
        resp = server.request("GET", "/v1/acl/token/self", headers=later)
        self.assertEqual((resp.status, resp.text), (403, "ACL not found"))
        self.assertEqual(server.request("GET", "/v1/acl/token/self", headers=auth).status, 200)
        # The restored TTL session is live and its timer armed: renewals pass.
        resp = server.request("PUT", f"/v1/session/renew/{ttl_session}", headers=auth)
        self.assertEqual(resp.status, 200, resp.text)
        self.assertEqual(resp.json()[0]["ID"], ttl_session)

    def test_a_restored_ttl_session_expires_on_the_new_server(self):
        """A fresh server has no timer for the snapshot's sessions until the
        restore arms them: an unrenewed one expires a TTL after the restore
        (multiplier 1), and its lock is released."""
        source = self.server()
        resp = source.request("PUT", "/v1/session/create",
                              json.dumps({"Name": "ttl", "TTL": "10s", "LockDelay": "0s"}))
        ttl_session = resp.json()["ID"]
        self.assertEqual(source.request(
            "PUT", f"/v1/kv/held?acquire={ttl_session}", b"x").text, "true")
        path = os.path.join(self.dir, "ttl.snap")
        self.assertEqual(self.cli(source, "snapshot", "save", path).returncode, 0)
        source.close()

        target = DevServer(extra_args=["-operator-token-file", self.token_file,
                                       "-session-ttl-multiplier", "1"])
        self.servers.append(target)
        target.start()
        restored_at = time.monotonic()
        self.assertEqual(self.cli(target, "snapshot", "restore", path).returncode, 0)
        self.assertEqual([s["ID"] for s in self.sessions(target)], [ttl_session])
        poll_until(lambda: self.sessions(target) == [], timeout=30.0,
                   message="a restored TTL session never expired")
        self.assertGreaterEqual(time.monotonic() - restored_at, 9.0, "expired before its TTL")
        self.assertNotIn("Session", target.kv_entry("held"))

    def test_a_state_past_the_segment_size_restores_and_survives_a_restart(self):
        source = self.server()
        value = os.urandom(400 * 1024)
        with source.client(timeout=30.0) as client:
            for i in range(24):  # ~9.6 MiB: past libraft's 8 MiB segment
                self.assertEqual(client.request("PUT", f"/v1/kv/big/{i}", value).status, 200)
        path = os.path.join(self.dir, "big.snap")
        self.assertEqual(self.cli(source, "snapshot", "save", path).returncode, 0)
        self.assertGreater(os.path.getsize(path), 9 * 1024 * 1024)
        expected, _ = self.recurse(source)

        target = self.server(dev=False)
        restored = self.cli(target, "snapshot", "restore", path, timeout=120)
        self.assertEqual(restored.returncode, 0, restored.stderr)
        self.assertEqual(self.recurse(target)[0], expected)
        # kill -9: the restore's entry may still be in an open segment, which
        # it made larger than libraft's 8 MiB preallocation.
        target.kill()
        target.start()
        self.assertEqual(self.recurse(target)[0], expected)
        resp = target.request("PUT", "/v1/kv/after", b"x")
        self.assertEqual(resp.status, 200)
        self.assertGreater(target.kv_entry("after")["ModifyIndex"],
                           max(e["ModifyIndex"] for e in expected))

        # The same restore replicated: past 1 MiB it travels as chunks of at
        # most 1 MiB, one raft entry each, and a last entry that swaps the
        # state in (decision 0050). Followers take them through the raft
        # message gate and their own libraft segments, and decode the state
        # before they acknowledge that last entry.
        with Cluster(3) as cluster:
            leader = cluster.leader()
            restored = leader.cli("snapshot", "restore", path,
                                  env={"CONSUL_HTTP_TOKEN": cluster.operator_token}, timeout=120)
            self.assertEqual(restored.returncode, 0, restored.stderr)
            poll_until(lambda: all(self.recurse(m, stale=True)[0] == expected
                                   for m in cluster.members),
                       timeout=60.0, message="a follower never held the large state")
            for member in cluster.members:
                if member is leader:
                    continue
                self.assertIn("a snapshot restore before acknowledging its last chunk",
                              member.log())


if __name__ == "__main__":
    unittest.main()
