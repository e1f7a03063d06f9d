"""Real-client compatibility: etcdctl 3.4 (Debian's etcd-client), unmodified,
over gRPC against `tenure server -dev -grpc-addr` (decision 0048 section 7).

put/get/del with prefixes and revisions, txn (etcdctl's interactive
syntax), compaction, leases (grant, put with a lease, keep-alive --once,
timetolive --keys, list, revoke), endpoint status and health, member list,
and etcd's error texts as etcdctl prints them. Watch, elect and lock:
test_etcdctl_watch.py.
"""

import json
import os
import subprocess
import unittest

from etcd_testlib import EtcdDevServerCase

ETCDCTL = "/usr/bin/etcdctl"


class EtcdctlTest(EtcdDevServerCase):

    def etcdctl(self, *args, stdin=None, check=True):
        env = dict(os.environ, ETCDCTL_API="3")
        done = subprocess.run([ETCDCTL, "--endpoints", self.endpoint, "--dial-timeout", "5s",
                               "--command-timeout", "10s", *args], input=stdin,
                              capture_output=True, text=True, timeout=60, env=env)
        if check:
            self.assertEqual(done.returncode, 0, f"etcdctl {' '.join(args)}: {done.stderr}")
        return done

    def json(self, *args):
        return json.loads(self.etcdctl("-w", "json", *args).stdout)

    def test_put_get_delete_with_prefixes_and_revisions(self):
        self.assertEqual(self.etcdctl("put", "/ctl/a", "one").stdout, "OK\n")
        self.etcdctl("put", "/ctl/b", "two")
        self.assertEqual(self.etcdctl("get", "/ctl/a").stdout, "/ctl/a\none\n")
        self.assertEqual(self.etcdctl("get", "--prefix", "/ctl/").stdout,
                         "/ctl/a\none\n/ctl/b\ntwo\n")
        self.assertEqual(self.etcdctl("get", "--prefix", "--keys-only", "/ctl/").stdout,
                         "/ctl/a\n\n/ctl/b\n\n")
        got = self.json("get", "/ctl/a")
        revision = got["kvs"][0]["mod_revision"]
        self.etcdctl("put", "/ctl/a", "uno")
        self.assertEqual(self.etcdctl("get", "--rev", str(revision), "/ctl/a").stdout,
                         "/ctl/a\none\n")
        self.assertEqual(self.json("get", "--prefix", "--keys-only", "/ctl/")["count"], 2)
        self.assertEqual(self.etcdctl("del", "--prefix", "/ctl/").stdout, "2\n")
        self.assertEqual(self.etcdctl("get", "--prefix", "/ctl/").stdout, "")

    def test_txn_in_etcdctls_own_syntax(self):
        script = 'create("/ctl-txn/k") = "0"\n\nput /ctl-txn/k first\n\nget /ctl-txn/k\n\n'
        self.assertEqual(self.etcdctl("txn", stdin=script).stdout, "SUCCESS\n\nOK\n")
        lost = self.etcdctl("txn", stdin=script).stdout
        self.assertEqual(lost, "FAILURE\n\n/ctl-txn/k\nfirst\n")
        fenced = ('value("/ctl-txn/k") = "first"\n\nput /ctl-txn/k second\n\n\n')
        self.assertEqual(self.etcdctl("txn", stdin=fenced).stdout, "SUCCESS\n\nOK\n")

    def test_compaction_and_a_read_before_it(self):
        first = self.json("put", "/ctl-compact/k", "v1")["header"]["revision"]
        self.etcdctl("put", "/ctl-compact/k", "v2")
        self.assertIn(f"compacted revision {first}", self.etcdctl("compact", str(first)).stdout)
        failed = self.etcdctl("get", "--rev", str(first - 1), "/ctl-compact/k", check=False)
        self.assertNotEqual(failed.returncode, 0)
        self.assertIn("required revision has been compacted", failed.stderr)

    def test_leases(self):
        granted = self.etcdctl("lease", "grant", "60").stdout
        # "lease 694d77aa9e38260f granted with TTL(60s)"
        self.assertTrue(granted.startswith("lease ") and granted.endswith("granted with TTL(60s)\n"),
                        granted)
        lease = granted.split()[1]
        self.etcdctl("put", "--lease", lease, "/ctl-lease/k", "v")
        kept = self.etcdctl("lease", "keep-alive", "--once", lease).stdout
        self.assertEqual(kept, f"lease {lease} keepalived with TTL(60)\n")
        ttl = self.etcdctl("lease", "timetolive", "--keys", lease).stdout
        self.assertIn(f"lease {lease} granted with TTL(60s), remaining(", ttl)
        self.assertIn("attached keys([/ctl-lease/k])", ttl)
        self.assertIn(lease, self.etcdctl("lease", "list").stdout)
        self.assertEqual(self.etcdctl("lease", "revoke", lease).stdout, f"lease {lease} revoked\n")
        self.assertEqual(self.etcdctl("get", "/ctl-lease/k").stdout, "")
        gone = self.etcdctl("lease", "revoke", lease, check=False)
        self.assertNotEqual(gone.returncode, 0)
        self.assertIn("requested lease not found", gone.stderr)

    def test_endpoint_status_health_and_member_list(self):
        status = self.json("endpoint", "status")[0]
        self.assertEqual(status["Endpoint"], self.endpoint)
        self.assertEqual(status["Status"]["version"], "3.4.23")
        self.assertEqual(status["Status"]["leader"], status["Status"]["header"]["member_id"])
        health = self.etcdctl("endpoint", "health")  # etcdctl 3.4 prints it on stderr
        self.assertIn(f"{self.endpoint} is healthy: successfully committed proposal",
                      health.stdout + health.stderr)
        members = self.json("member", "list")["members"]
        self.assertEqual(len(members), 1)
        self.assertEqual(members[0]["clientURLs"], [f"http://{self.endpoint}"])

    def test_values_up_to_etcds_request_limit(self):
        # etcdctl reads a value from its standard input; a request of up to
        # 1.5 MiB is etcd's (--max-request-bytes), past Consul's 512 KiB.
        value = "m" * 1000000
        self.assertEqual(self.etcdctl("put", "/ctl-big/mib", stdin=value).stdout, "OK\n")
        self.assertEqual(self.etcdctl("get", "--print-value-only", "/ctl-big/mib").stdout,
                         value + "\n")
        failed = self.etcdctl("put", "/ctl-big/past", stdin="p" * 1600000, check=False)
        self.assertNotEqual(failed.returncode, 0)
        self.assertIn("etcdserver: request is too large", failed.stderr)
        self.assertEqual(self.etcdctl("get", "--prefix", "--keys-only", "/ctl-big/").stdout,
                         "/ctl-big/mib\n\n")

    def test_errors_as_etcdctl_prints_them(self):
        failed = self.etcdctl("put", "", "v", check=False)
        self.assertNotEqual(failed.returncode, 0)
        failed = self.etcdctl("lease", "keep-alive", "--once", "abc", check=False)
        self.assertNotEqual(failed.returncode, 0)
        failed = self.etcdctl("member", "add", "x", "--peer-urls", "http://127.0.0.1:1",
                              check=False)
        self.assertNotEqual(failed.returncode, 0)
        self.assertIn("tenure:", failed.stderr)


if __name__ == "__main__":
    unittest.main()
