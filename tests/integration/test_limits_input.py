"""Bad input against a real server (docs/limits.md): durations that overflow int64
nanoseconds, and malformed or oversized request framing. Each gets a clear
error and changes nothing (docs/limits.md)."""

import json
import socket
import unittest

from tenure_testlib import SharedServerTestCase

# 2^63 ns twice: each component fits Go's parser, their sum wraps a uint64 to 0.
OVERFLOW = "9223372036854775808ns9223372036854775808ns"


class DurationOverflowTest(SharedServerTestCase):
    server_args = ()

    def sessions(self):
        return self.server.get_json("/v1/session/list")

    def test_session_ttl_that_overflows_is_refused_and_creates_nothing(self):
        before = self.sessions()
        resp = self.server.request("PUT", "/v1/session/create", json.dumps({"TTL": OVERFLOW}))
        self.assertEqual(resp.status, 500, resp)  # Consul's status for a bad TTL
        self.assertEqual(resp.text, "Session TTL '%s' invalid: time: invalid duration \"%s\""
                         % (OVERFLOW, OVERFLOW))
        self.assertEqual(self.sessions(), before, "a refused create made a session")

    def test_lock_delay_that_overflows_is_refused(self):
        before = self.sessions()
        resp = self.server.request("PUT", "/v1/session/create",
                                   json.dumps({"TTL": "15s", "LockDelay": OVERFLOW}))
        self.assertEqual(resp.status, 400, resp)
        self.assertEqual(resp.text, "Request decode failed: time: invalid duration \"%s\""
                         % OVERFLOW)
        self.assertEqual(self.sessions(), before)

    def test_service_checks_filling_the_body_are_answered_at_once(self):
        # 120,000 entries in one body under the 512 KiB limit: storing them
        # one at a time copied the list each time (quadratic; the server's
        # loop did not answer within 300 s).
        before = self.sessions()
        body = json.dumps({"Name": "many", "ServiceChecks": [{}] * 120_000},
                          separators=(",", ":"))
        self.assertLess(len(body), 512 * 1024)
        resp = self.server.request("PUT", "/v1/session/create", body, timeout=30.0)
        self.assertEqual((resp.status, resp.text), (500, "Missing check '' registration"))
        self.assertEqual(self.sessions(), before)

    def test_wait_that_overflows_is_refused(self):
        resp = self.server.request("GET", "/v1/kv/anything?index=1&wait=" + OVERFLOW)
        self.assertEqual((resp.status, resp.text), (400, "Invalid wait time"))


def exchange(addr, data, timeout=10.0):
    """Sends data, half-closes, and reads everything up to the server's close."""
    host, port = addr.split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


class OversizedFramingTest(SharedServerTestCase):
    server_args = ()

    def assert_refused_with_body(self, reply, what):
        head, _, body = reply.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 431 ") or head.startswith(b"HTTP/1.1 400 "),
                        "%s: %r" % (what, reply[:200]))
        self.assertIn(b"\r\nConnection: close", head, what)
        self.assertTrue(body, "%s: no body" % what)

    def test_chunked_body_with_a_70000_byte_trailer_gets_431_with_a_body(self):
        reply = exchange(self.server.http_addr,
                         b"PUT /v1/kv/limits/trailer HTTP/1.1\r\nHost: x\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n"
                         b"X-Trailer: " + b"t" * 70000 + b"\r\n\r\n")
        self.assert_refused_with_body(reply, "70,000-byte trailer")
        self.assertEqual(self.server.request("GET", "/v1/kv/limits/trailer").status, 404,
                         "the refused PUT wrote its key")

    def test_oversized_header_gets_431_with_a_body(self):
        reply = exchange(self.server.http_addr,
                         b"GET /v1/kv/x HTTP/1.1\r\nHost: x\r\nX-Huge: " + b"h" * 1000000 +
                         b"\r\n\r\n")
        self.assert_refused_with_body(reply, "1 MB header")


if __name__ == "__main__":
    unittest.main()
