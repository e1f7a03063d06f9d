"""etcd's API on a 3-server cluster (decisions 0048 and 0055), driven by
etcdctl 3.4 and the JSON gateway, with the raft leader killed under them.

Every member answers every call as an etcd member does: serializable reads
and watches from its own state, writes, linearizable reads and lease calls
relayed to the leader (LeaderRelay). So a watch held on a follower goes on
through the kill -9 of the leader; a follower's writes and reads see each
other at once; `member list` on any member names every member's client URL;
a lease kept alive through a follower outlives the leader; `etcdctl lock`
contenders on three different members never overlap; and a Lock parked on a
follower (etcd's v3lock service, through the gateway) gets its turn when the
holder unlocks on another follower after the leader died.
"""

import base64
import json
import os
import subprocess
import tempfile
import threading
import unittest

from etcd_testlib import held_script
from process_lines import ProcessLines
from tenure_testlib import Cluster, free_port, http_request, overlaps, poll_until

ETCDCTL = "/usr/bin/etcdctl"


def etcd_cluster():
    """A 3-server Cluster whose members serve etcd's API, each member's
    address in `etcd_addr`."""
    cluster = Cluster(3, extra_args=("-session-ttl-multiplier", "1", "-grpc-addr", "x"))
    for member in cluster.members:
        member.etcd_addr = f"127.0.0.1:{free_port()}"
        at = member.extra_args.index("-grpc-addr")
        member.extra_args[at + 1] = member.etcd_addr
    return cluster


def b64(text):
    return base64.b64encode(text.encode()).decode()


class EtcdClusterTest(unittest.TestCase):
    def etcdctl(self, endpoint, *args, check=True):
        done = subprocess.run([ETCDCTL, "--endpoints", endpoint, "--dial-timeout", "5s",
                               "--command-timeout", "10s", *args], capture_output=True,
                              text=True, timeout=60, env=dict(os.environ, ETCDCTL_API="3"))
        if check:
            self.assertEqual(done.returncode, 0, f"etcdctl {' '.join(args)}: {done.stderr}")
        return done

    def json_of(self, endpoint, *args):
        return json.loads(self.etcdctl(endpoint, "-w", "json", *args).stdout)

    def background(self, endpoint, *args):
        lines = ProcessLines([ETCDCTL, "--endpoints", endpoint, *args],
                             env=dict(os.environ, ETCDCTL_API="3"))
        self.addCleanup(lines.stop)
        return lines

    def gateway(self, member, path, body, timeout=10.0):
        resp = http_request(member.etcd_addr, "POST", path, json.dumps(body), timeout=timeout)
        return resp.status, resp.json()

    def test_a_watch_on_a_follower_outlives_the_leader(self):
        with etcd_cluster() as cluster:
            leader = cluster.leader()
            follower = next(m for m in cluster.members if m is not leader)
            # A follower's serializable read names the revision to watch from.
            got = self.json_of(follower.etcd_addr, "get", "ha/none", "--consistency=s")
            start = int(got["header"].get("revision", 0)) + 1  # 0 is left out
            watch = self.background(follower.etcd_addr, "watch", "--prefix", "ha/", "--rev",
                                    str(start))
            self.assertEqual(leader.request("PUT", "/v1/kv/ha/a", b"1").status, 200)
            poll_until(lambda: watch.snapshot()[:3] == ["PUT", "ha/a", "1"], timeout=20,
                       message="the first write seen on the follower")

            leader.kill()
            new_leader = cluster.wait_leader(exclude=leader)
            # Written through the follower the watch is on: relayed to the new leader.
            poll_until(lambda: self.etcdctl(follower.etcd_addr, "put", "ha/b", "2",
                                            check=False).returncode == 0,
                       timeout=30, message="a put through the follower once a leader is back")
            poll_until(lambda: watch.snapshot()[3:6] == ["PUT", "ha/b", "2"], timeout=30,
                       message="the new leader's write seen by the same watch")
            self.assertIsNone(watch.process.poll(), "the watch ended with the leader")
            self.assertEqual(new_leader.request("GET", "/v1/kv/ha/b?raw").text, "2")

    def test_a_follower_relays_writes_linearizable_reads_and_lease_calls(self):
        with etcd_cluster() as cluster:
            leader = cluster.leader()
            follower = next(m for m in cluster.members if m is not leader)
            at = follower.etcd_addr
            put = self.json_of(at, "put", "rel/k", "v1")
            revision = int(put["header"]["revision"])
            # A linearizable read on the same follower sees its own write.
            got = self.json_of(at, "get", "rel/k")
            self.assertEqual(base64.b64decode(got["kvs"][0]["value"]).decode(), "v1")
            self.assertGreaterEqual(int(got["header"]["revision"]), revision)
            # A txn whose compare holds, then one whose compare fails.
            done = subprocess.run([ETCDCTL, "--endpoints", at, "txn"],
                                  input='value("rel/k") = "v1"\n\nput rel/k v2\n\nput rel/k no\n\n',
                                  capture_output=True, text=True, timeout=60,
                                  env=dict(os.environ, ETCDCTL_API="3"))
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertTrue(done.stdout.startswith("SUCCESS"), done.stdout)
            self.assertEqual(self.etcdctl(at, "get", "--print-value-only", "rel/k").stdout, "v2\n")
            # The same key through the leader's Consul API.
            self.assertEqual(leader.request("GET", "/v1/kv/rel/k?raw").text, "v2")

            # Every member's client URL, from any member (the leader writes
            # the member records a second apart after it is elected).
            def client_urls():
                members = self.json_of(at, "member", "list")["members"]
                return sorted(url for m in members for url in m.get("clientURLs", []))

            want = sorted(f"http://{m.etcd_addr}" for m in cluster.members)
            poll_until(lambda: client_urls() == want, timeout=20,
                       message=f"member list naming {want}")

            # A lease granted, read, attached and revoked, all through the follower.
            granted = self.json_of(at, "lease", "grant", "30")
            lease = format(int(granted["ID"]), "016x")
            self.etcdctl(at, "put", "--lease", lease, "rel/leased", "x")
            ttl = self.json_of(at, "lease", "timetolive", "--keys", lease)
            self.assertGreater(int(ttl["ttl"]), 0)
            self.assertEqual([base64.b64decode(k).decode() for k in ttl["keys"]], ["rel/leased"])
            self.etcdctl(at, "lease", "revoke", lease)
            self.assertEqual(self.etcdctl(at, "get", "rel/leased").stdout, "")
            # A relayed call that reaches a follower is not relayed again
            # (one hop: servers that disagree about the leader cannot loop).
            resp = http_request(at, "POST", "/tenure/relay/etcdserverpb.KV/Put",
                                b"\x0a\x09rel/twice\x12\x01v",
                                {"X-Tenure-Forwarded-By": "9"})
            self.assertEqual((resp.status, resp.header("grpc-status")), (200, "9"), resp.headers)
            self.assertEqual(resp.header("grpc-message"), "etcdserver: not leader")
            self.assertEqual(self.etcdctl(at, "get", "rel/twice").stdout, "")
            # Compaction decided by the leader's state.
            self.etcdctl(at, "compact", str(revision))
            refused = self.etcdctl(at, "compact", str(revision), check=False)
            self.assertIn("required revision has been compacted", refused.stderr)

    def test_a_lease_kept_alive_through_a_follower_outlives_the_leader(self):
        with etcd_cluster() as cluster:
            leader = cluster.leader()
            follower = next(m for m in cluster.members if m is not leader)
            granted = self.json_of(follower.etcd_addr, "lease", "grant", "6")
            # etcdctl prints a lease ID as 16 hex digits: an ID below
            # 2^60 (1 in 16) has leading zeros, which "x" would drop.
            lease = format(int(granted["ID"]), "016x")
            self.etcdctl(follower.etcd_addr, "put", "--lease", lease, "ka/key", "held")
            keeper = self.background(follower.etcd_addr, "lease", "keep-alive", lease)
            renewals = lambda: keeper.seen(f"lease {lease} keepalived")  # noqa: E731

            def poll_renewals(count, timeout, what):
                # What etcdctl printed and what the servers logged, as they
                # are when the deadline passes.
                try:
                    poll_until(lambda: len(renewals()) >= count, timeout=timeout)
                except AssertionError:
                    servers = "\n".join(f"--- node{i + 1} ---\n{m.log_tail(30)}"
                                        for i, m in enumerate(cluster.members))
                    raise AssertionError(f"{what} not met within {timeout}s; etcdctl printed "
                                         f"{keeper.snapshot()}\n{servers}") from None

            poll_renewals(1, 20, "a first renewal through the follower")
            leader.kill()
            new_leader = cluster.wait_leader(exclude=leader)
            renewed = len(renewals())
            # Renewals go on through the new leader (etcdctl renews every
            # TTL/3 = 2 s): four more span more than a TTL after the kill.
            poll_renewals(renewed + 4, 40, "renewals through the follower after the leader died")
            self.assertTrue(all(line.endswith("TTL(6)") for line in renewals()), renewals())
            self.assertEqual(new_leader.request("GET", "/v1/kv/ka/key?raw").text, "held")

    def test_lock_contenders_on_three_members_never_overlap(self):
        with etcd_cluster() as cluster, tempfile.TemporaryDirectory() as scratch:
            log = os.path.join(scratch, "held")
            script = held_script(log)
            contenders = [subprocess.Popen([ETCDCTL, "--endpoints", member.etcd_addr,
                                            "--dial-timeout", "5s", "lock", "ha/lock", "--",
                                            "sh", "-c", script],
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                           text=True, env=dict(os.environ, ETCDCTL_API="3"))
                          for member in cluster.members]
            try:
                for contender in contenders:
                    _, err = contender.communicate(timeout=60)
                    self.assertEqual(contender.returncode, 0, err)
            except subprocess.TimeoutExpired:
                self.fail(self.stuck_lock_report(cluster, contenders, log))
            self.assertIsNone(overlaps(log, 3))

    def stuck_lock_report(self, cluster, contenders, log):
        """What a contender that never got the lock saw, for the failure."""
        report = []
        for member, contender in zip(cluster.members, contenders):
            if contender.poll() is None:
                contender.kill()
            out, err = contender.communicate(timeout=10)
            report.append(f"contender on {member.etcd_addr} (exit {contender.returncode}): "
                          f"{out[-500:]} {err[-1500:]}")
        keys = self.etcdctl(cluster.members[0].etcd_addr, "get", "--prefix", "ha/lock",
                            "-w", "json", check=False)
        report.append(f"lock keys: {keys.stdout} {keys.stderr[-300:]}")
        with open(log, encoding="utf-8") as f:
            report.append(f"held: {f.read()!r}")
        for member in cluster.members:
            report.append(f"{member.etcd_addr}:\n{member.log_tail(15)}")
        return "a contender never got the lock:\n" + "\n".join(report)

    def test_a_lock_parked_on_a_follower_gets_its_turn_after_the_leader_dies(self):
        with etcd_cluster() as cluster:
            leader = cluster.leader()
            first, second = [m for m in cluster.members if m is not leader]
            lease_a = int(self.gateway(first, "/v3/lease/grant", {"TTL": 30})[1]["ID"])
            lease_b = int(self.gateway(second, "/v3/lease/grant", {"TTL": 30})[1]["ID"])
            status, held = self.gateway(first, "/v3/lock/lock",
                                        {"name": b64("ha/parked"), "lease": str(lease_a)})
            self.assertEqual(status, 200, held)
            answer = {}

            def wait_for_lock():
                answer["got"] = self.gateway(second, "/v3/lock/lock",
                                             {"name": b64("ha/parked"), "lease": str(lease_b)},
                                             timeout=60)

            waiter = threading.Thread(target=wait_for_lock, daemon=True)
            waiter.start()
            # The second contender's key exists (it waits behind the first's).
            poll_until(lambda: len(self.json_of(second.etcd_addr, "get", "--prefix",
                                                "ha/parked/").get("kvs", [])) == 2,
                       timeout=20, message="the second contender's key")
            self.assertNotIn("got", answer)

            leader.kill()
            cluster.wait_leader(exclude=leader)
            poll_until(lambda: self.gateway(first, "/v3/lock/unlock",
                                            {"key": held["key"]})[0] == 200,
                       timeout=30, message="the holder's unlock once a leader is back")
            waiter.join(timeout=30)
            self.assertFalse(waiter.is_alive(), "the parked Lock never got its turn")
            status, got = answer["got"]
            self.assertEqual(status, 200, got)
            self.assertEqual(base64.b64decode(got["key"]).decode(),
                             f"ha/parked/{lease_b:x}")


if __name__ == "__main__":
    unittest.main()
