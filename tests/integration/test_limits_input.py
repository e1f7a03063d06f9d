"""Bad input against a real server (issue 11): durations that overflow int64
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

    def test_wait_that_overflows_is_refused(self):
        resp = self.server.request("GET", "/v1/kv/anything?index=1&wait=" + OVERFLOW)
        self.assertEqual((resp.status, resp.text), (400, "Invalid wait time"))


if __name__ == "__main__":
    unittest.main()
