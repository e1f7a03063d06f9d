"""Real-client compatibility: etcdctl 3.4's watch, lock and elect, unmodified,
over gRPC against `tenure server -dev -grpc-addr` (decision 0048, the watch
hub of etcd/watch_hub.h).

watch: live changes of a prefix with --prev-kv, a watch from a past
revision replayed from the history window, and one from before a
compaction, which etcdctl reports as etcd's "required revision has been
compacted". lock: three contenders running a command under one lock, each
appending to one file; their lines never interleave. elect: two
candidates and an observer; the leader is killed with SIGKILL, its lease
revoked (etcdctl's session TTL is 60 s), and the second candidate leads.
"""

import json
import os
import signal
import subprocess
import tempfile
import unittest

from etcd_testlib import EtcdDevServerCase, held_script
from tenure_testlib import http_request, overlaps, poll_until

ETCDCTL = "/usr/bin/etcdctl"


class EtcdctlWatchTest(EtcdDevServerCase):
    def argv(self, *args):
        return [ETCDCTL, "--endpoints", self.endpoint, "--dial-timeout", "5s", *args]

    def env(self):
        return dict(os.environ, ETCDCTL_API="3")

    def etcdctl(self, *args, stdin=None, check=True):
        done = subprocess.run([*self.argv("--command-timeout", "10s"), *args], input=stdin,
                              capture_output=True, text=True, timeout=60, env=self.env())
        if check:
            self.assertEqual(done.returncode, 0, f"etcdctl {' '.join(args)}: {done.stderr}")
        return done

    def start(self, *args):
        return self.start_lines(self.argv(*args), env=self.env())

    def revision(self):
        got = json.loads(self.etcdctl("-w", "json", "get", "/no-such-key").stdout)
        return int(got["header"]["revision"])

    def test_watch_of_a_prefix_with_prev_kv(self):
        # From the next revision, so no change is lost to the watch's startup.
        start = self.revision() + 1
        watch = self.start("watch", "--prefix", "--prev-kv", "--rev", str(start), "/wl/")
        self.etcdctl("put", "/wl/a", "1")
        self.etcdctl("put", "/elsewhere", "x")
        self.etcdctl("put", "/wl/a", "2")
        self.etcdctl("del", "/wl/a")
        want = ["PUT", "/wl/a", "1",
                "PUT", "/wl/a", "1", "/wl/a", "2",
                "DELETE", "/wl/a", "2", "/wl/a", ""]
        poll_until(lambda: watch.snapshot()[:len(want)] == want and len(watch.snapshot()) >= len(want),
                   timeout=20, message=f"watch output {want}")
        self.assertEqual(watch.snapshot(), want)

    def test_watch_from_a_past_revision_and_across_a_compaction(self):
        first = json.loads(self.etcdctl("-w", "json", "put", "/wp/k", "one").stdout)
        r1 = int(first["header"]["revision"])
        self.etcdctl("put", "/wp/k", "two")
        replay = self.start("watch", "--rev", str(r1), "/wp/k")
        poll_until(lambda: replay.snapshot() == ["PUT", "/wp/k", "one", "PUT", "/wp/k", "two"],
                   timeout=20, message="the replay of both puts")
        self.etcdctl("put", "/wp/k", "three")
        poll_until(lambda: replay.snapshot()[-3:] == ["PUT", "/wp/k", "three"], timeout=20,
                   message="the live put after the replay")

        compact_at = self.revision()
        self.etcdctl("compact", str(compact_at))
        done = subprocess.run([*self.argv(), "watch", "--rev", str(r1), "/wp/k"],
                              capture_output=True, text=True, timeout=30, env=self.env())
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("required revision has been compacted", done.stdout + done.stderr)

    def test_lock_contenders_never_overlap(self):
        with tempfile.TemporaryDirectory() as scratch:
            log = os.path.join(scratch, "held")
            script = held_script(log)
            contenders = [subprocess.Popen(self.argv("lock", "/locks/shared", "--", "sh", "-c",
                                                     script),
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                           text=True, env=self.env())
                          for _ in range(3)]
            for contender in contenders:
                _, err = contender.communicate(timeout=60)
                self.assertEqual(contender.returncode, 0, err)
            self.assertIsNone(overlaps(log, 3))
        # The lock's keys went with their sessions.
        self.assertEqual(self.etcdctl("get", "--prefix", "/locks/shared").stdout, "")

    def test_elect_two_candidates_and_a_killed_leader(self):
        observer = self.start("elect", "--listen", "/el/main")
        first = self.start("elect", "/el/main", "one")
        poll_until(lambda: "one" in first.snapshot(), timeout=20, message="one leads")
        second = self.start("elect", "/el/main", "two")
        poll_until(lambda: "one" in observer.snapshot(), timeout=20,
                   message="the observer sees one")
        # The second candidate's key (its campaign waits behind the first's).
        keys = poll_until(lambda: (lambda got: got if len(got.get("kvs", [])) == 2 else None)(
            json.loads(self.etcdctl("-w", "json", "get", "--prefix", "/el/main/").stdout)),
            timeout=20, message="both candidates' keys")
        self.assertNotIn("two", second.snapshot())

        first.process.send_signal(signal.SIGKILL)
        first.process.wait(timeout=10)
        leader = min(keys["kvs"], key=lambda kv: int(kv["create_revision"]))
        self.etcdctl("lease", "revoke", format(int(leader["lease"]), "x"))
        poll_until(lambda: "two" in second.snapshot(), timeout=20, message="two leads")
        poll_until(lambda: "two" in observer.snapshot(), timeout=20,
                   message="the observer sees two")

    def metrics(self):
        resp = http_request(self.server.http_addr, "GET", "/v1/agent/metrics?format=prometheus")
        self.assertEqual(resp.status, 200)
        return resp.text

    def test_metrics_count_calls_by_method_and_code_and_the_watchers(self):
        watch = self.start("watch", "/metrics-watch")
        poll_until(lambda: "tenure_etcd_watchers 1" in self.metrics(), timeout=20,
                   message="the watcher counted")
        self.etcdctl("put", "/metrics-watch", "v")
        self.etcdctl("get", "--rev", "999999999", "/metrics-watch", check=False)
        text = self.metrics()
        self.assertRegex(text, r'tenure_etcd_grpc_calls_total\{method="etcdserverpb.KV/Put",'
                               r'code="OK"\} [1-9]')
        self.assertRegex(text, r'tenure_etcd_grpc_calls_total\{method="etcdserverpb.KV/Range",'
                               r'code="OutOfRange"\} [1-9]')
        watch.stop()
        poll_until(lambda: "tenure_etcd_watchers 0" in self.metrics(), timeout=20,
                   message="the watcher gone")
        self.assertRegex(self.metrics(), r'tenure_etcd_grpc_calls_total\{method='
                                         r'"etcdserverpb.Watch/Watch",code="Canceled"\} [1-9]')


if __name__ == "__main__":
    unittest.main()
