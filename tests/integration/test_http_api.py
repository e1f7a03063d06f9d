"""The HTTP API against a real `tenure server -dev` process (no mocks).

The shapes of answers and the error texts of every endpoint live in the in-process golden
transcripts, tests/inprocess/testdata/*.txt (api_tests; docs/testing.md). What stays here
needs a real process: the transport (binary bodies, Content-Length, sizes past the limits,
100-continue, bad escapes and malformed HTTP through the request reader, stalled, idle,
pipelined and vanishing clients) and blocking queries woken by writes or timed by a clock.

What must hold, and where it is written down:
  - shapes, headers, status codes and error texts: docs/consul-api.md sections 0-4
    (cited per test as "§x.y"), the trap list in section 10 and the state table in 11;
  - bad input (docs/limits.md): each gets Consul's status and text (or a clear one
    where Consul has none), changes nothing, and never crashes or blocks the server;
  - every limit: src/common/limits.h and docs/limits.md;
  - tenure's extensions (Fence, X-Tenure-Fence, txn check-fence): docs/fencing.md.

Each class runs its own server; at the end of each class the process must still be alive
and /v1/status/leader must answer (tearDownClass). "Changes nothing" is checked by
comparing the whole KV store (recurse listing + its X-Consul-Index) and the session list
(+ its index) before and after the bad request.

Run (from tests/integration):
  TENURE_BIN=<path>/tenure PYTHONPATH=<repo>/tests/lib /usr/bin/python3 -m unittest -v test_http_api
"""

import base64
import contextlib
import json
import resource
import socket
import struct
import threading
import time
import unittest

from tenure_testlib import DevServer, connect, poll_until, quote_key, raw_request, read_response

U64_MAX = 2 ** 64 - 1
KIB = 1024
VALUE_MAX = 512 * KIB  # limits::kConsulValueBytesMax
BODY_TOO_LARGE = ("Request body(%d bytes) too large, max size: 524288 bytes. See "
                  "https://developer.hashicorp.com/consul/docs/agent/config/"
                  "config-files#kv_max_value_size.")
# Generous bound for "answered promptly" on a loaded 2-core CI machine; real latency on
# loopback is ~1 ms.
PROMPT_S = 1.0
# How long a write may take to wake a parked blocking query.
WAKE_S = 5.0


def b64(data):
    if isinstance(data, str):
        data = data.encode()
    return base64.b64encode(data).decode()


class ServerTestCase(unittest.TestCase):
    """One `tenure server -dev` per class; health-checked at the end of the class."""

    server = None
    extra_args = ()

    @classmethod
    def setUpClass(cls):
        cls.server = DevServer(extra_args=cls.extra_args)
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        try:
            cls.server.check_healthy("at the end of " + cls.__name__)
        finally:
            cls.server.close()

    # --- request helpers ---------------------------------------------------------------

    def parked(self):
        """Blocking queries the server holds parked right now."""
        r = self.req("GET", "/v1/agent/self")
        return int(r.json()["Stats"]["tenure"]["blocking_queries"])

    def wait_parked(self, at_least):
        """Polls until the server holds at least `at_least` parked queries."""
        poll_until(lambda: self.parked() >= at_least, timeout=10,
                   message="blocking queries never parked")

    def req(self, method, path, body=None, headers=None, timeout_s=10.0):
        return self.server.request(method, path, body, headers, timeout_s)

    def put(self, key, value=b"", query=""):
        r = self.req("PUT", "/v1/kv/" + quote_key(key) + ("?" + query if query else ""), value)
        return r

    def put_ok(self, key, value=b"", query=""):
        r = self.put(key, value, query)
        self.assertEqual((r.status, r.body), (200, b"true"), "PUT %s?%s" % (key, query))
        return r

    def entry(self, key):
        return self.server.kv_entry(key)

    def session(self, body=None):
        return self.server.create_session(body)

    def destroy(self, sid):
        r = self.req("PUT", "/v1/session/destroy/" + sid)
        self.assertEqual((r.status, r.body), (200, b"true"))

    def assert_meta(self, r, what=""):
        """The blocking-read meta headers (§3.2): X-Consul-Index present and never 0,
        KnownLeader true (single node is its own leader), LastContact 0 on the leader."""
        index = r.header("X-Consul-Index")
        self.assertIsNotNone(index, "no X-Consul-Index %s: %r" % (what, r))
        self.assertRegex(index, r"^[0-9]+$")
        self.assertNotEqual(int(index), 0, "X-Consul-Index: 0 %s (§10 item 3)" % what)
        self.assertEqual(r.header("X-Consul-KnownLeader"), "true", what)
        self.assertEqual(r.header("X-Consul-LastContact"), "0", what)
        return int(index)

    def assert_error(self, r, status, text, what=""):
        self.assertEqual(r.status, status, "%s: %r" % (what, r))
        self.assertEqual(r.text, text, what)
        content_type = r.header("Content-Type")
        self.assertTrue(content_type is None or content_type.startswith("text/plain"), r)

    # --- "changes nothing" ------------------------------------------------------------

    def state_snapshot(self):
        kv = self.req("GET", "/v1/kv/?recurse")
        sessions = self.req("GET", "/v1/session/list")
        self.assertIn(kv.status, (200, 404))
        self.assertEqual(sessions.status, 200)
        return {"kv": kv.body, "kv_index": kv.header("X-Consul-Index"),
                "sessions": sessions.body, "sessions_index": sessions.header("X-Consul-Index")}

    @contextlib.contextmanager
    def assert_unchanged(self, what=""):
        before = self.state_snapshot()
        yield
        after = self.state_snapshot()
        self.assertEqual(before, after, "state changed by a rejected request: %s" % what)


# =======================================================================================

class TestEndpoints(ServerTestCase):
    """What needs a real process: raft addresses, binary bodies, blocking with timing."""

    # --- status (§5) ---------------------------------------------------------------------

    def test_status_leader_and_peers(self):
        r = self.req("GET", "/v1/status/leader")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.header("Content-Type"), "application/json")
        self.assertEqual(r.json(), self.server.raft_addr)
        r = self.req("GET", "/v1/status/peers")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json(), [self.server.raft_addr])

    # --- KV (§2) -----------------------------------------------------------------------

    def test_blocking_query_on_missing_key_woken_by_creation(self):
        r = self.req("GET", "/v1/kv/born/k")
        self.assertEqual(r.status, 404)
        index = self.assert_meta(r)
        results = []
        before = self.parked()
        t = self.blocking_get("/v1/kv/born/k?index=%d&wait=20s" % index, results)
        self.wait_parked(before + 1)
        self.assertEqual(results, [], "returned before anything changed")
        self.put_ok("born/k", b"here")
        t.join(WAKE_S)
        self.assertFalse(t.is_alive(), "creation did not wake the watcher")
        r = results[0][0]
        self.assertEqual(r.status, 200, r)
        self.assertEqual(base64.b64decode(r.json()[0]["Value"]), b"here")
        self.assertEqual(self.assert_meta(r), r.json()[0]["ModifyIndex"])

    def test_kv_binary_value_and_any_content_type(self):
        value = bytes(range(256)) + b"a=b&c=d"
        r = self.req("PUT", "/v1/kv/bin/k", value,
                     {"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual((r.status, r.body), (200, b"true"))
        self.assertEqual(base64.b64decode(self.entry("bin/k")["Value"]), value,
                         "body stored verbatim, never form-decoded (§2.4, §10.14)")

    def test_kv_raw(self):
        value = b"raw \x00\xff bytes"
        self.put_ok("raw/k", value)
        r = self.req("GET", "/v1/kv/raw/k?raw")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.body, value)
        self.assertEqual(r.header("Content-Type"), "text/plain")
        self.assertEqual(r.header("X-Content-Type-Options"), "nosniff")
        self.assertEqual(r.header("Content-Security-Policy"), "sandbox")
        self.assertEqual(r.header("Content-Length"), str(len(value)))
        self.assertEqual(self.assert_meta(r), self.entry("raw/k")["ModifyIndex"])
        r = self.req("GET", "/v1/kv/raw/missing?raw")
        self.assertEqual((r.status, r.body), (404, b""))
        self.assert_meta(r)

    # --- blocking queries (§3) ---------------------------------------------------------

    def blocking_get(self, path, results, timeout_s=30.0):
        def run():
            start = time.monotonic()
            try:
                r = self.req("GET", path, timeout_s=timeout_s)
                results.append((r, time.monotonic() - start))
            except Exception as e:  # noqa: BLE001 - reported by the test
                results.append((e, time.monotonic() - start))
        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t

    def test_blocking_query_woken_by_write(self):
        self.put_ok("block/k", b"v1")
        mi = self.entry("block/k")["ModifyIndex"]
        results = []
        before = self.parked()
        t = self.blocking_get("/v1/kv/block/k?index=%d&wait=20s" % mi, results)
        self.wait_parked(before + 1)
        self.assertEqual(results, [], "returned before any change")
        self.put_ok("block/other", b"unrelated")  # another key must not wake it
        # Absence cannot be polled for: give a wrong wake-up a bounded chance to show.
        time.sleep(0.3)
        self.assertEqual(results, [], "woken by a write to another key")
        written = time.monotonic()
        self.put_ok("block/k", b"v2")
        t.join(WAKE_S)
        self.assertFalse(t.is_alive(), "not woken within %.1f s" % WAKE_S)
        r, _ = results[0]
        self.assertNotIsInstance(r, Exception)
        self.assertEqual(r.status, 200, r)
        self.assertLess(time.monotonic() - written, WAKE_S)
        e = r.json()[0]
        self.assertEqual(base64.b64decode(e["Value"]), b"v2")
        self.assertEqual(self.assert_meta(r), e["ModifyIndex"])
        self.assertGreater(e["ModifyIndex"], mi)

    def test_blocking_query_on_sessions_and_recurse(self):
        r = self.req("GET", "/v1/session/list")
        idx = self.assert_meta(r)
        results = []
        before = self.parked()
        t = self.blocking_get("/v1/session/list?index=%d&wait=20s" % idx, results)
        self.put_ok("blockrec/a", b"1")
        ridx = self.assert_meta(self.req("GET", "/v1/kv/blockrec/?recurse"))
        rresults = []
        t2 = self.blocking_get("/v1/kv/blockrec/?recurse&index=%d&wait=20s" % ridx, rresults)
        self.wait_parked(before + 2)
        self.assertEqual(results, [], "session list returned before a session change")
        self.assertEqual(rresults, [], "recurse returned before a change under the prefix")
        sid = self.session({"Name": "wakes the list"})
        t.join(WAKE_S)
        self.assertFalse(t.is_alive())
        self.assertIn(sid, [s["ID"] for s in results[0][0].json()])
        self.put_ok("blockrec/b", b"2")
        t2.join(WAKE_S)
        self.assertFalse(t2.is_alive())
        self.assertEqual([e["Key"] for e in rresults[0][0].json()], ["blockrec/a", "blockrec/b"])
        self.destroy(sid)

    def test_blocking_query_times_out_with_same_index(self):
        self.put_ok("blockto/k", b"v")
        mi = self.entry("blockto/k")["ModifyIndex"]
        start = time.monotonic()
        r = self.req("GET", "/v1/kv/blockto/k?index=%d&wait=1s" % mi)
        elapsed = time.monotonic() - start
        self.assertEqual(r.status, 200)
        self.assertEqual(self.assert_meta(r), mi)
        self.assertGreaterEqual(elapsed, 1.0, "returned before wait elapsed")
        self.assertLess(elapsed, 1.0 + 1.0 / 16 + PROMPT_S, "wait + jitter (< wait/16) exceeded")
        # Fractional Go durations work for wait (Patroni sends 9.9s-style floats, §9.3).
        start = time.monotonic()
        r = self.req("GET", "/v1/kv/blockto/k?index=%d&wait=0.5s" % mi)
        self.assertEqual(r.status, 200)
        self.assertGreaterEqual(time.monotonic() - start, 0.5)
        # 404 on a missing key also blocks and times out with headers.
        start = time.monotonic()
        kv_index = self.assert_meta(self.req("GET", "/v1/kv/blockto/missing"))
        r = self.req("GET", "/v1/kv/blockto/missing?index=%d&wait=500ms" % kv_index)
        self.assertEqual(r.status, 404)
        self.assert_meta(r)
        self.assertGreaterEqual(time.monotonic() - start, 0.5)

    def test_absurd_index_returns_after_wait(self):
        self.put_ok("absurd/k", b"v")
        mi = self.entry("absurd/k")["ModifyIndex"]
        start = time.monotonic()
        r = self.req("GET", "/v1/kv/absurd/k?index=%d&wait=1s" % U64_MAX)
        elapsed = time.monotonic() - start
        self.assertEqual(r.status, 200, "index beyond the current one: wait, then 200 (§3.1)")
        self.assertEqual(self.assert_meta(r), mi)
        self.assertGreaterEqual(elapsed, 1.0)
        self.assertLess(elapsed, 1.0 + 1.0 / 16 + PROMPT_S)

    def test_absurd_wait_is_clamped_and_returns_at_once_when_index_is_old(self):
        self.put_ok("absurdwait/k", b"v")
        mi = self.entry("absurdwait/k")["ModifyIndex"]
        for wait in ["1000h", "2562047h", "9223372036854775807ns"]:
            start = time.monotonic()
            r = self.req("GET", "/v1/kv/absurdwait/k?index=%d&wait=%s" % (mi - 1, wait))
            self.assertEqual(r.status, 200, (wait, r))
            self.assertLess(time.monotonic() - start, PROMPT_S, wait)
            self.assertEqual(self.assert_meta(r), mi)
        # A parked query with an absurd wait can still be woken by a write (the clamp did
        # not overflow into "already expired" or "never").
        results = []
        before = self.parked()
        t = self.blocking_get("/v1/kv/absurdwait/k?index=%d&wait=1000h" % mi, results)
        self.wait_parked(before + 1)
        self.assertEqual(results, [], "wait=1000h returned at once: clamp overflowed")
        self.put_ok("absurdwait/k", b"v2")
        t.join(WAKE_S)
        self.assertFalse(t.is_alive())
        self.assertEqual(results[0][0].status, 200)

# =======================================================================================

class TestBadInput(ServerTestCase):
    """Bad input: Consul's status and text, nothing changes, no crash."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # Some state for "changes nothing" to protect: keys, a held lock, a session.
        srv = cls.server
        for k in ["bad/a", "bad/b", "bad/c/d"]:
            r = srv.request("PUT", "/v1/kv/" + k, k.encode())
            assert r.body == b"true", r
        cls.holder = srv.create_session({"Name": "holder", "LockDelay": "0s"})
        r = srv.request("PUT", "/v1/kv/bad/locked?acquire=" + cls.holder, b"mine")
        assert r.body == b"true", r

    # --- KV ----------------------------------------------------------------------------

    def test_oversized_value(self):
        with self.assert_unchanged("value > 512 KiB"):
            for size in [VALUE_MAX + 1, VALUE_MAX + 1000, 600 * KIB]:
                r = self.req("PUT", "/v1/kv/bad/big", b"x" * size)
                self.assert_error(r, 413, BODY_TOO_LARGE % size, size)
                r = self.req("PUT", "/v1/kv/bad/a?cas=0", b"x" * size)
                self.assertEqual(r.status, 413)
        value = bytes((i * 7 + 3) % 256 for i in range(VALUE_MAX))
        self.put_ok("bad/exactly-max", value)
        r = self.req("GET", "/v1/kv/bad/exactly-max?raw")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.body, value, "exactly 512 KiB accepted and stored verbatim")
        self.assertEqual(base64.b64decode(self.entry("bad/exactly-max")["Value"]), value)
        self.assertEqual(self.req("DELETE", "/v1/kv/bad/exactly-max").body, b"true")

    def test_oversized_body_refused_before_it_is_sent(self):
        # Expect: 100-continue with a 10 MiB Content-Length: the server answers 413 at once
        # instead of asking for the body (limits.h: "larger bodies get 413 before they are
        # read in full").
        size = 10 * 1024 * 1024
        with self.assert_unchanged("10 MiB declared"):
            with connect(self.server.http_addr, timeout=5) as s:
                s.sendall(b"PUT /v1/kv/bad/huge HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
                          b"Expect: 100-continue\r\n\r\n" % size)
                r = read_response(s, 5)
            self.assert_error(r, 413, BODY_TOO_LARGE % size)
            with connect(self.server.http_addr, timeout=5) as s:
                s.sendall(b"PUT /v1/txn HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n[" % size)
                r = read_response(s, 5)
            self.assertEqual(r.status, 413, r)

    def test_bad_percent_encoding(self):
        # Consul's Go server refuses a bad escape in the path with a bare "400 Bad Request"
        # and silently drops a malformed query pair (url.ParseQuery), ignoring the parameter.
        # Where Consul has no clear answer tenure gives one: 400 with Go's url error text
        # for both, and must not act on the request.
        with self.assert_unchanged("bad escapes"):
            for target, esc in [("/v1/kv/bad%zz", "%zz"), ("/v1/kv/bad/a%2", "%2"),
                                ("/v1/kv/bad/a%", "%"), ("/v1/kv/bad/a%G0", "%G0"),
                                ("/v1/kv/bad/a?index=%zz", "%zz"), ("/v1/kv/bad/a?raw&%=1", "%"),
                                ("/v1/kv/bad/a?flags=1%", "%"), ("/v1/kv/bad/x?acquire=%0", "%0")]:
                for method in ["GET", "PUT", "DELETE"]:
                    req = ("%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nnew"
                           % (method, target)).encode()
                    r = raw_request(self.server.http_addr, req)
                    self.assertEqual(r.status, 400, (method, target, r))
                    self.assertIn('invalid URL escape "%s"' % esc, r.text, (method, target))

    def test_malformed_requests(self):
        with self.assert_unchanged("malformed HTTP"):
            for data in [b"GARBAGE\r\n\r\n", b"GET /v1/kv/bad/a HTTP/9.9\r\n\r\n",
                         b"GET /v1/kv/bad/a HTTP/1.1\r\nBad Header Line\r\n\r\n",
                         b"PUT /v1/kv/bad/a HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
                         b"PUT /v1/kv/bad/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                         b"\r\nzz\r\n", b"GET nothing HTTP/1.1\r\n\r\n"]:
                try:
                    r = raw_request(self.server.http_addr, data, timeout=5)
                except ConnectionError:
                    continue  # closing without an answer is acceptable for garbage
                self.assertGreaterEqual(r.status, 400, (data, r))
                self.assertLess(r.status, 600, (data, r))
            big = b"GET /v1/kv/bad/a HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (70 * KIB) + b"\r\n\r\n"
            r = raw_request(self.server.http_addr, big)
            self.assertEqual(r.status, 431, r)

    # --- txn ---------------------------------------------------------------------------

    def test_txn_oversized_body(self):
        # A body over 512 KiB (limits::kTxnBodyBytesMax); too large for a transcript.
        big = json.dumps([{"KV": {"Verb": "set", "Key": "bad/a",
                                  "Value": b64(b"x" * (400 * KIB))}}])
        with self.assert_unchanged("txn body > 512 KiB"):
            r = self.req("PUT", "/v1/txn", big)
            self.assertEqual(r.status, 413, r)
            self.assertTrue(r.text.startswith("Request body"), r.text)


# =======================================================================================

class TestConnections(ServerTestCase):
    """Slow, stalled, idle and vanishing clients never block the server."""

    def prompt_requests(self, n, what):
        """n requests, each on a new connection, each answered promptly."""
        worst = 0.0
        for i in range(n):
            start = time.monotonic()
            r = self.req("GET", "/v1/kv/conn/probe" if i % 2 else "/v1/status/leader",
                         timeout_s=5.0)
            worst = max(worst, time.monotonic() - start)
            self.assertIn(r.status, (200, 404))
        self.assertLess(worst, PROMPT_S, "slowest of %d requests %s took %.3f s" % (n, what, worst))
        return worst

    def test_half_request_stalls_do_not_block_others(self):
        stalls = [
            b"PUT /v1/kv/conn/stalled HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc",
            b"GET /v1/kv/conn/sta",
            b"GET /v1/status/leader HTTP/1.1\r\nHost: x\r\n",
            b"PUT /v1/txn HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n[{\"KV\"",
        ]
        socks = []
        stop_trickle = threading.Event()
        trickle_closed = []
        try:
            for data in stalls:
                s = connect(self.server.http_addr, timeout=5)
                s.sendall(data)
                socks.append(s)
            stalled_at = time.monotonic()

            # A client that trickles one byte every second never completes a request either.
            def trickle():
                with connect(self.server.http_addr, timeout=5) as t:
                    req = b"PUT /v1/kv/conn/trickle HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n"
                    try:
                        t.sendall(req)
                        while not stop_trickle.is_set():
                            t.sendall(b"x")
                            stop_trickle.wait(1.0)
                    except OSError:
                        trickle_closed.append(time.monotonic())
            trickler = threading.Thread(target=trickle, daemon=True)
            trickler.start()

            worst = self.prompt_requests(100, "while 4 clients stall mid-request")
            print("\n  100 requests beside 5 stalled clients: slowest %.1f ms" % (worst * 1000))
            self.assertIsNone(self.entry("conn/stalled"), "half a PUT must not be applied")
            self.assertIsNone(self.entry("conn/trickle"))

            # The server closes each stalled connection after the request read timeout
            # (limits::kHttpRequestReadTimeoutMs = 30 s), trickling or not.
            deadline = stalled_at + 30.0 + 10.0
            for i, s in enumerate(socks):
                s.settimeout(max(0.1, deadline - time.monotonic()))
                try:
                    while s.recv(65536):
                        pass
                except ConnectionResetError:
                    pass
                except socket.timeout:
                    self.fail("stalled client %d still open %.0f s after it stalled"
                              % (i, time.monotonic() - stalled_at))
            closed_after = time.monotonic() - stalled_at
            print("  stalled clients closed by the server after %.1f s" % closed_after)
            self.assertGreaterEqual(closed_after, 25.0, "closed long before the 30 s timeout")
            trickler.join(max(0.1, deadline + 2 - time.monotonic()))
            self.assertTrue(trickle_closed, "the trickling client was never cut off")
            self.assertIsNone(self.entry("conn/stalled"))
            self.assertIsNone(self.entry("conn/trickle"))
        finally:
            stop_trickle.set()
            for s in socks:
                s.close()

    def test_two_thousand_idle_connections(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = 2000 + 512
        if soft < want:
            if hard != resource.RLIM_INFINITY and hard < want:
                self.fail("RLIMIT_NOFILE hard limit %d is below the %d this test needs" % (hard, want))
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        idle = []
        try:
            start = time.monotonic()
            host, port = self.server.http_addr.rsplit(":", 1)
            for i in range(2000):
                # From 20 loopback addresses: one address may hold 200 (docs/limits.md).
                s = socket.create_connection((host, int(port)), timeout=10,
                                             source_address=(f"127.0.0.{10 + i % 20}", 0))
                if i % 2 == 0:  # half have served a request and sit in keep-alive
                    s.sendall(b"GET /v1/status/leader HTTP/1.1\r\nHost: x\r\n\r\n")
                    r = read_response(s, 10)
                    self.assertEqual(r.status, 200)
                idle.append(s)
            opened = time.monotonic() - start
            worst = self.prompt_requests(50, "beside 2,000 idle connections")
            print("\n  2,000 connections opened in %.2f s; 50 new requests, slowest %.1f ms"
                  % (opened, worst * 1000))
            for s in idle[::200]:  # idle keep-alive connections still work
                s.sendall(b"GET /v1/status/leader HTTP/1.1\r\nHost: x\r\n\r\n")
                self.assertEqual(read_response(s, 5).status, 200)
            stats = self.req("GET", "/v1/agent/self").json()
            self.assertEqual(stats["Stats"]["raft"]["state"], "Leader")
        finally:
            for s in idle:
                s.close()
        self.prompt_requests(10, "after closing 2,000 connections")

    def test_blocking_query_clients_that_disconnect(self):
        r = self.req("PUT", "/v1/kv/conn/watched", b"v")
        self.assertEqual(r.body, b"true")
        mi = self.entry("conn/watched")["ModifyIndex"]
        path = "/v1/kv/conn/watched?index=%d&wait=60s" % mi
        socks = []
        for i in range(60):
            s = connect(self.server.http_addr, timeout=5)
            s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path).encode())
            socks.append(s)

        poll_until(lambda: self.parked() >= 60, timeout=5, message="60 parked blocking queries")
        for i, s in enumerate(socks):
            if i % 3 == 0:  # abortive close: RST
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            elif i % 3 == 1:  # half close: FIN, still reading
                s.shutdown(socket.SHUT_WR)
                continue
            s.close()
        poll_until(lambda: self.parked() == 0, timeout=5,
                   message="parked queries of vanished clients cancelled")
        for s in socks:
            s.close()
        # The server still serves, wakes nobody stale, and a fresh watcher works.
        results = []

        def watch():
            results.append(self.req("GET", path, timeout_s=20))
        t = threading.Thread(target=watch, daemon=True)
        t.start()
        self.wait_parked(1)
        self.assertEqual(self.req("PUT", "/v1/kv/conn/watched", b"v2").body, b"true")
        t.join(WAKE_S)
        self.assertFalse(t.is_alive())
        self.assertEqual(results[0].status, 200)
        self.assertEqual(base64.b64decode(results[0].json()[0]["Value"]), b"v2")

    def test_pipelined_requests(self):
        data = b"".join(b"GET /v1/status/leader HTTP/1.1\r\nHost: x\r\n\r\n" for _ in range(20))
        data += b"PUT /v1/kv/conn/pipe HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok"
        with connect(self.server.http_addr, timeout=5) as s:
            s.sendall(data)
            for _ in range(20):
                self.assertEqual(read_response(s, 5).status, 200)
            r = read_response(s, 5)
            self.assertEqual((r.status, r.body), (200, b"true"))
        self.assertEqual(base64.b64decode(self.entry("conn/pipe")["Value"]), b"ok")

    def test_pipelined_writes_each_get_their_answer(self):
        # A write is answered after raft commits it, on a later turn; the
        # requests sent behind it in the same packet are read already and
        # must be served then, not left waiting for more bytes.
        data = b"".join(b"PUT /v1/kv/conn/pw%d HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n%d"
                        % (i, i) for i in range(3))
        data += b"GET /v1/kv/conn/pw2?raw HTTP/1.1\r\nHost: x\r\n\r\n"
        with connect(self.server.http_addr, timeout=5) as s:
            s.sendall(data)
            for _ in range(3):
                r = read_response(s, 5)
                self.assertEqual((r.status, r.body), (200, b"true"))
            r = read_response(s, 5)
            self.assertEqual((r.status, r.body), (200, b"2"))

    def test_keep_alive_client_reuses_connection(self):
        client = self.server.client()
        try:
            for i in range(200):
                r = client.request("PUT", "/v1/kv/conn/ka", str(i))
                self.assertEqual(r.body, b"true")
            self.assertEqual(base64.b64decode(self.entry("conn/ka")["Value"]), b"199")
        finally:
            client.close()


if __name__ == "__main__":
    unittest.main()
