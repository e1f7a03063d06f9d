"""The one rule for a blocking read's next index (client/blocking_read.h,
decision 0044), as `tenure watch`, `tenure lock` and `tenure run` (libtenure's
election) follow it, against a stub
agent that sends the X-Consul-Index headers a broken or restored server
would: none, garbage, or one that goes backwards. Consul's documented rule:
an index that went backwards starts the loop again with an immediate read;
0 or none waits on 1; a header that is not a uint64 is an error.
"""

import base64
import json
import os
import signal
import tempfile
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tenure_testlib import Cli, poll_until

LOCK_FLAGS = 3304740253564472344  # Consul's api.Lock flag value


class _Agent(BaseHTTPRequestHandler):
    """Answers by `script(method, path)`: (status, body, index or None) or
    None to hold the request until the test ends. Every request's method and
    path is recorded."""

    protocol_version = "HTTP/1.1"
    script = None
    requests = []
    lock = threading.Lock()
    release = threading.Event()

    def _serve(self, method):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        with _Agent.lock:
            _Agent.requests.append((method, self.path))
        answer = _Agent.script(method, self.path)
        if answer is None:
            _Agent.release.wait(timeout=60)
            answer = (500, "stub agent: stopping", None)
        status, body, index = answer
        data = body.encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if index is not None:
                self.send_header("X-Consul-Index", index)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # a held request answered after the command ended

    def do_GET(self):
        self._serve("GET")

    def do_PUT(self):
        self._serve("PUT")

    def do_DELETE(self):
        self._serve("DELETE")

    def log_message(self, *args):
        pass


def entry(key, value, index, session=None, flags=0):
    row = {"LockIndex": 1 if session else 0, "Key": key, "Flags": flags,
           "Value": base64.b64encode(value.encode()).decode(), "CreateIndex": 1,
           "ModifyIndex": index}
    if session:
        row["Session"] = session
    return json.dumps([row])


class BlockingIndexTest(unittest.TestCase):

    def setUp(self):
        _Agent.requests = []
        _Agent.release = threading.Event()
        self.stub = ThreadingHTTPServer(("127.0.0.1", 0), _Agent)
        self.thread = threading.Thread(target=self.stub.serve_forever, daemon=True)
        self.thread.start()
        self.cli = Cli(f"127.0.0.1:{self.stub.server_address[1]}")

    def tearDown(self):
        _Agent.release.set()
        self.stub.shutdown()
        self.stub.server_close()

    def kv_gets(self, path):
        with _Agent.lock:
            return [p for m, p in _Agent.requests if m == "GET" and p.startswith(path)]

    def stop(self, proc):
        proc.send_signal(signal.SIGTERM)
        return proc.communicate(timeout=30)

    def test_watch_takes_an_answer_without_an_index_and_waits_on_one(self):
        def script(method, path):
            if path == "/v1/status/leader":
                return 200, '"127.0.0.1:8300"', "1"
            if path == "/v1/kv/k":
                return 200, entry("k", "v1", 4), None  # no X-Consul-Index
            return None
        _Agent.script = script
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            watch = self.cli.popen("watch", "-type=key", "-key=k",
                                   f'echo "$CONSUL_INDEX $(cat)" >> {out}')
            try:
                poll_until(lambda: "/v1/kv/k?index=1" in self.kv_gets("/v1/kv/k"), timeout=15,
                           message="the second read waits on index 1")
                with open(out) as f:
                    delivered = f.read().splitlines()
            finally:
                _, stderr = self.stop(watch)
        self.assertEqual(len(delivered), 1, delivered)
        self.assertTrue(delivered[0].startswith("0 {"), delivered)
        self.assertNotIn("errored", stderr)
        self.assertEqual(self.kv_gets("/v1/kv/k"), ["/v1/kv/k", "/v1/kv/k?index=1"])

    def test_watch_starts_again_when_the_index_goes_backwards(self):
        def script(method, path):
            if path == "/v1/status/leader":
                return 200, '"127.0.0.1:8300"', "1"
            if path == "/v1/kv/k":
                first = len(self.kv_gets("/v1/kv/k")) == 1
                return 200, entry("k", "v1" if first else "v2", 50 if first else 7), \
                    "50" if first else "7"
            if path == "/v1/kv/k?index=50":
                return 200, entry("k", "v2", 7), "7"  # a restored server
            return None
        _Agent.script = script
        watch = self.cli.popen("watch", "-type=key", "-key=k", "cat > /dev/null")
        try:
            poll_until(lambda: "/v1/kv/k?index=7" in self.kv_gets("/v1/kv/k"), timeout=15,
                       message="the watch waits on the new index")
        finally:
            _, stderr = self.stop(watch)
        self.assertEqual(self.kv_gets("/v1/kv/k"),
                         ["/v1/kv/k", "/v1/kv/k?index=50", "/v1/kv/k", "/v1/kv/k?index=7"])
        self.assertNotIn("errored", stderr)

    def test_watch_reports_a_header_that_is_not_a_uint64(self):
        def script(method, path):
            if path == "/v1/status/leader":
                return 200, '"127.0.0.1:8300"', "1"
            if path == "/v1/kv/k":
                return 200, entry("k", "v1", 4), "18446744073709551616"
            return None
        _Agent.script = script
        watch = self.cli.popen("watch", "-type=key", "-key=k")
        try:
            poll_until(lambda: len(self.kv_gets("/v1/kv/k")) >= 1, timeout=15)
            poll_until(lambda: watch.poll() is None and len(self.kv_gets("/v1/kv/k")) >= 2,
                       timeout=15, message="the watch retries after the error")
        finally:
            stdout, stderr = self.stop(watch)
        self.assertEqual(stdout, "")
        self.assertIn("Watch errored: bad X-Consul-Index 18446744073709551616 (retry in 1s)",
                      stderr)

    def test_lock_reads_afresh_when_the_index_goes_backwards(self):
        def script(method, path):
            if path == "/v1/agent/self":
                return 200, "{}", None
            if path == "/v1/session/create":
                return 200, '{"ID":"mine"}', "3"
            if path.startswith("/v1/session/renew/"):
                return 200, '[{"ID":"mine"}]', "3"
            if path.startswith("/v1/session/destroy/") or method == "PUT":
                return 200, "true" if "destroy" in path else "false", "3"
            if path == "/v1/kv/p/.lock" and len(self.kv_gets("/v1/kv/p/.lock")) == 1:
                return 200, entry("p/.lock", "", 50, "other", LOCK_FLAGS), "50"
            if path.startswith("/v1/kv/p/.lock?index=50&"):
                return 200, entry("p/.lock", "", 7, "other", LOCK_FLAGS), "7"  # backwards
            return None
        _Agent.script = script
        lock = self.cli.popen("lock", "-fair=false", "p", "true")
        try:
            poll_until(lambda: len(self.kv_gets("/v1/kv/p/.lock")) >= 3, timeout=15,
                       message="three reads of the lock")
        finally:
            _, stderr = self.stop(lock)
        reads = self.kv_gets("/v1/kv/p/.lock")
        self.assertEqual(reads[0], "/v1/kv/p/.lock")
        self.assertEqual(reads[1], "/v1/kv/p/.lock?index=50&wait=15000ms")
        # Consul's rule: back to an immediate read, not a wait on the smaller index.
        self.assertEqual(reads[2], "/v1/kv/p/.lock")
        self.assertEqual(lock.returncode, 1)
        self.assertIn("Shutdown triggered or timeout during lock acquisition", stderr)

    def test_a_campaign_reads_afresh_when_the_index_goes_backwards(self):
        leader = "/v1/kv/service/job/leader"

        def script(method, path):
            if path == "/v1/session/create":
                return 200, '{"ID":"mine"}', "3"
            if path.startswith("/v1/session/renew/"):
                return 200, '[{"ID":"mine"}]', "3"
            if method == "PUT" and path.startswith(leader + "?acquire="):
                return 200, "false", "3"  # held by another
            if method == "GET" and path == leader and len(self.kv_gets(leader)) == 1:
                return 200, entry("service/job/leader", "them", 50, "other"), "50"
            if method == "GET" and path.startswith(leader + "?index=50&"):
                return 200, entry("service/job/leader", "them", 7, "other"), "7"  # backwards
            if method == "GET" and path.startswith(leader):
                return None
            if method == "GET":
                return 404, "", "3"
            return 200, "true", "3"
        _Agent.script = script
        run = self.cli.popen("run", "-fair=false", "job", "--", "true")
        try:
            poll_until(lambda: len(self.kv_gets(leader)) >= 3, timeout=15,
                       message="three reads of the leader key")
        finally:
            self.stop(run)
        reads = self.kv_gets(leader)
        self.assertEqual(reads[0], leader)
        self.assertRegex(reads[1], r"^/v1/kv/service/job/leader\?index=50&wait=[0-9]+ms$")
        # Consul's rule: an immediate read, not a wait on index 1.
        self.assertEqual(reads[2], leader)


if __name__ == "__main__":
    unittest.main()
