"""Metrics (docs/metrics.md), with the real binary: real
traffic moves the counters, `promtool check metrics` finds nothing wrong
with the text, and a real Prometheus server started here scrapes tenure
with a bearer token (ACLs on, default deny) until the value shows in its
query API. A 3-server cluster shows forwarded requests counted.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.parse

from tenure_testlib import Cluster, DevServer, free_port, http_request, poll_until

MANAGEMENT = "5b7c1d3e-9f4a-4b6c-8d2e-1a3b5c7d9e0f"
NODE = "metrics-node"
PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$")


def parse(text):
    """{'name{labels}': value} of a Prometheus text."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        assert match, f"not a sample line: {line!r}"
        samples[match.group(1)] = float(match.group(2))
    return samples


class MetricsAclTest(unittest.TestCase):
    """One server, ACLs on with default deny: every metrics read needs agent:read."""

    @classmethod
    def setUpClass(cls):
        cls.server = DevServer(extra_args=[
            "-acl-enabled", "-acl-default-policy", "deny", "-acl-initial-management", MANAGEMENT,
            "-node", NODE])
        cls.server.start()
        # The first leader writes the initial management token just after it leads.
        poll_until(lambda: cls.req("GET", "/v1/agent/self").status == 200, timeout=20,
                   message="the initial management token works")

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    @classmethod
    def req(cls, method, path, body=None, token=MANAGEMENT, timeout=10.0):
        headers = {"X-Consul-Token": token} if token else {}
        return cls.server.request(method, path, body, headers=headers, timeout=timeout)

    def scrape(self):
        resp = http_request(self.server.http_addr, "GET", "/metrics",
                            headers={"Authorization": "Bearer " + MANAGEMENT})
        self.assertEqual(resp.status, 200, resp.text)
        self.assertEqual(resp.header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8")
        return resp.text

    def test_traffic_moves_the_counters_and_promtool_accepts_the_text(self):
        before = parse(self.scrape())
        for i in range(3):
            self.assertEqual(self.req("PUT", f"/v1/kv/m/{i}", b"v").status, 200)
        s1 = self.req("PUT", "/v1/session/create", b'{"TTL": "30s"}').json()["ID"]
        s2 = self.req("PUT", "/v1/session/create", b'{"TTL": "30s"}').json()["ID"]
        self.assertEqual(self.req("PUT", f"/v1/kv/m/lock?acquire={s1}", b"a").text, "true")
        self.assertEqual(self.req("PUT", f"/v1/kv/m/lock?acquire={s2}", b"b").text, "false")
        self.assertEqual(self.req("PUT", f"/v1/session/destroy/{s1}").status, 200)
        # s1's default lock-delay (15 s) now keeps the key from s2.
        self.assertEqual(self.req("PUT", f"/v1/kv/m/lock?acquire={s2}", b"b").text, "false")
        self.assertEqual(self.req("PUT", f"/v1/session/renew/{s2}").status, 200)
        self.assertEqual(self.req("PUT", f"/v1/session/renew/{s2}").status, 200)
        # An ACL denial: no token under default deny.
        self.assertEqual(self.req("GET", "/v1/kv/m/0", token=None).status, 403)
        # A blocking query parked, then woken by a write.
        index = self.req("GET", "/v1/kv/m/0").header("X-Consul-Index")
        answers = []
        waiter = threading.Thread(target=lambda: answers.append(
            self.req("GET", f"/v1/kv/m/0?index={index}&wait=20s", timeout=30)))
        waiter.start()
        try:
            poll_until(lambda: parse(self.scrape())["tenure_blocking_queries_parked"] == 1,
                       timeout=10, message="the blocking query is parked")
            self.assertEqual(self.req("PUT", "/v1/kv/m/0", b"new").status, 200)
        finally:
            waiter.join(timeout=30)
        self.assertEqual(len(answers), 1)
        self.assertEqual(answers[0].status, 200)

        text = self.scrape()
        after = parse(text)

        def moved(name):
            return after.get(name, 0) - before.get(name, 0)

        self.assertEqual(moved("tenure_sessions_created_total"), 2)
        self.assertEqual(moved('tenure_sessions_destroyed_total{cause="request"}'), 1)
        self.assertEqual(moved("tenure_lock_grants_total"), 1)
        self.assertEqual(moved('tenure_lock_refusals_total{reason="held"}'), 1)
        self.assertEqual(moved('tenure_lock_refusals_total{reason="lock_delay"}'), 1)
        self.assertEqual(moved('tenure_session_renewals_total{result="ok"}'), 2)
        self.assertEqual(moved("tenure_acl_denials_total"), 1)
        self.assertEqual(moved("tenure_blocking_query_wake_duration_seconds_count"), 1)
        self.assertEqual(after["tenure_blocking_queries_parked"], 0)
        # 4 sets, 2 creates, a destroy, a grant and the refusal of a held
        # lock; the lock-delay refusal is the leader's own, never proposed.
        # The leader's housekeeping (checkpoints, reaping) may add more.
        self.assertGreaterEqual(moved("tenure_raft_proposals_committed_total"), 9)
        self.assertGreaterEqual(moved("tenure_raft_apply_duration_seconds_count"), 9)
        self.assertGreaterEqual(moved("tenure_raft_commit_duration_seconds_count"), 9)
        # Every committed entry was written to the log; libraft may write
        # several in one append, so at least one timed write, never more
        # than the entries, and each took some time.
        appends = moved("tenure_raft_log_append_duration_seconds_count")
        self.assertGreaterEqual(appends, 1)
        self.assertLessEqual(appends, moved("tenure_raft_apply_duration_seconds_count"))
        self.assertGreater(moved("tenure_raft_log_append_duration_seconds_sum"), 0)
        self.assertGreaterEqual(moved('tenure_http_requests_total'
                                      '{endpoint="kv",method="PUT",code="200"}'), 7)
        self.assertEqual(moved('tenure_http_requests_total{endpoint="kv",method="GET",code="403"}'),
                         1)
        self.assertEqual(after["tenure_raft_is_leader"], 1)
        self.assertEqual(after["tenure_raft_leader_present"], 1)
        self.assertEqual(after["tenure_sessions_active"], before["tenure_sessions_active"] + 1)

        check = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(),
                               capture_output=True, timeout=60)
        self.assertEqual((check.returncode, check.stdout, check.stderr), (0, b"", b""))

    def test_json_form_and_refusals(self):
        resp = self.req("GET", "/v1/agent/metrics")
        self.assertEqual(resp.status, 200)
        body = resp.json()
        self.assertEqual(sorted(body), ["Counters", "Gauges", "Points", "Samples", "Timestamp"])
        names = {g["Name"] for g in body["Gauges"]}
        self.assertIn("tenure_raft_term", names)
        text = self.req("GET", "/v1/agent/metrics?format=prometheus")
        self.assertEqual(text.status, 200)
        self.assertIn("# TYPE tenure_raft_term gauge", text.text)
        for path in ("/metrics", "/v1/agent/metrics"):
            refused = self.req("GET", path, token=None)
            self.assertEqual(refused.status, 403, path)
            self.assertIn("agent:read", refused.text)

    def test_prometheus_scrapes_it(self):
        created = parse(self.scrape())["tenure_sessions_created_total"]
        self.req("PUT", "/v1/session/create", b"{}")
        expected = created + 1
        with PrometheusServer(self.server.http_addr, MANAGEMENT) as prom:
            def shown():
                result = prom.query("tenure_sessions_created_total")
                return result and float(result[0]["value"][1]) >= expected
            poll_until(shown, timeout=60, interval=0.5,
                       message="Prometheus shows tenure_sessions_created_total"
                               f" >= {expected}; its log:\n{prom.log_tail()}")
            up = prom.query('up{job="tenure"}')
            self.assertEqual(float(up[0]["value"][1]), 1.0)


class PrometheusServer:
    """/usr/bin/prometheus scraping one tenure every second, with its own
    config and storage in a temporary directory, on a free loopback port;
    ended by its PID."""

    def __init__(self, target, token):
        self.dir = tempfile.mkdtemp(prefix="tenure-prometheus-")
        self.port = free_port()
        config = os.path.join(self.dir, "prometheus.yml")
        with open(config, "w", encoding="utf-8") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: tenure\n    metrics_path: /metrics\n"
                    "    authorization:\n      type: Bearer\n"
                    f"      credentials: {token}\n"
                    f"    static_configs:\n      - targets: ['{target}']\n")
        self.log_path = os.path.join(self.dir, "prometheus.log")
        self.argv = [PROMETHEUS, f"--config.file={config}",
                     f"--storage.tsdb.path={os.path.join(self.dir, 'data')}",
                     f"--web.listen-address=127.0.0.1:{self.port}"]
        self.process = None

    def __enter__(self):
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT)
        return self

    def __exit__(self, *exc):
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)
        return False

    def query(self, expression):
        if self.process.poll() is not None:
            raise AssertionError(f"prometheus exited {self.process.returncode}:\n"
                                 + self.log_tail())
        path = "/api/v1/query?query=" + urllib.parse.quote(expression)
        resp = http_request(f"127.0.0.1:{self.port}", "GET", path, timeout=5)
        if resp.status != 200:
            return None
        body = json.loads(resp.body)
        return body["data"]["result"] if body.get("status") == "success" else None

    def log_tail(self, lines=30):
        with open(self.log_path, "rb") as f:
            return "\n".join(f.read().decode(errors="replace").splitlines()[-lines:])


class MetricsClusterTest(unittest.TestCase):
    def test_follower_counts_what_it_forwards(self):
        with Cluster(3) as cluster:
            leader = cluster.leader()
            follower = next(m for m in cluster.members if m is not leader)

            def samples(member):
                resp = member.request("GET", "/metrics")
                self.assertEqual(resp.status, 200)
                return parse(resp.text)

            before_f, before_l = samples(follower), samples(leader)
            for i in range(4):
                self.assertEqual(follower.request("PUT", f"/v1/kv/f/{i}", b"x").status, 200)
            # A renewal on a cluster waits for the leader's barrier (decision 0011).
            sid = follower.request("PUT", "/v1/session/create", b'{"TTL": "30s"}').json()["ID"]
            self.assertEqual(follower.request("PUT", f"/v1/session/renew/{sid}").status, 200)
            after_f, after_l = samples(follower), samples(leader)
            renewed = 'tenure_session_renewals_total{result="ok"}'
            self.assertEqual(after_l[renewed] - before_l[renewed], 1)
            self.assertEqual(after_f[renewed] - before_f[renewed], 0)
            fwd_s = 'tenure_http_forwarded_requests_total{endpoint="session"}'
            self.assertEqual(after_f[fwd_s] - before_f[fwd_s], 2)
            fwd = 'tenure_http_forwarded_requests_total{endpoint="kv"}'
            put = 'tenure_http_requests_total{endpoint="kv",method="PUT",code="200"}'
            self.assertEqual(after_f[fwd] - before_f[fwd], 4)
            self.assertEqual(after_f.get(put, 0) - before_f.get(put, 0), 4)  # answered to clients
            self.assertEqual(after_l.get(put, 0) - before_l.get(put, 0), 4)  # answered to followers
            # 4 sets and a create; a checkpoint (every 30 s) may land in between.
            self.assertGreaterEqual(after_l["tenure_raft_proposals_committed_total"]
                                    - before_l["tenure_raft_proposals_committed_total"], 5)
            self.assertEqual(after_f["tenure_raft_is_leader"], 0)
            self.assertEqual(after_f["tenure_raft_leader_present"], 1)
            self.assertEqual(after_l["tenure_raft_is_leader"], 1)
            # Snapshot and history requests have their own classes, in both families.
            op = {"X-Consul-Token": cluster.operator_token}
            before_f = samples(follower)
            snap = follower.request("GET", "/v1/snapshot", headers=op, timeout=30)
            self.assertEqual(snap.status, 200, snap.text[:200])
            hist = follower.request("GET", "/v1/tenure/history/f/0")
            for endpoint, status in (("snapshot", snap.status), ("tenure", hist.status)):
                after_f = samples(follower)
                fwd = f'tenure_http_forwarded_requests_total{{endpoint="{endpoint}"}}'
                self.assertEqual(after_f[fwd] - before_f[fwd], 1, fwd)
                answered = (f'tenure_http_requests_total{{endpoint="{endpoint}",method="GET",'
                            f'code="{status}"}}')
                self.assertEqual(after_f.get(answered, 0) - before_f.get(answered, 0), 1, answered)
            poll_until(lambda: samples(follower)["tenure_raft_applied_index"]
                       >= after_l["tenure_raft_applied_index"], timeout=10,
                       message="the follower applies what the leader did")


class MetricsDisabledTest(unittest.TestCase):
    def test_disabled_answers_404(self):
        with DevServer(extra_args=["-disable-metrics"]) as server:
            self.assertEqual(server.request("PUT", "/v1/kv/a", b"1").status, 200)
            for path in ("/metrics", "/v1/agent/metrics"):
                resp = server.request("GET", path)
                self.assertEqual(resp.status, 404, path)
                self.assertEqual(resp.text,
                                 "metrics are disabled on this server (-disable-metrics)")


if __name__ == "__main__":
    unittest.main()
