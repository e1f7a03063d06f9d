"""Connections that cost descriptors without doing anything: a connection
that never sends a byte is closed after the first-byte timeout
(shortened here through TENURE_TEST_HTTP_FIRST_BYTE_TIMEOUT_MS), while one
that was served stays open for the keep-alive idle time (docs/limits.md)."""

import socket
import time
import unittest

from tenure_testlib import DevServer, poll_until

FIRST_BYTE_TIMEOUT_MS = 500


def closed_by_server(sock):
    """True once the server closed sock (EOF or reset); False while it is open."""
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


class FirstByteTimeoutTest(unittest.TestCase):
    def setUp(self):
        self.server = DevServer(env={"TENURE_TEST_HTTP_FIRST_BYTE_TIMEOUT_MS":
                                     str(FIRST_BYTE_TIMEOUT_MS)}).__enter__()
        self.addCleanup(self.server.__exit__, None, None, None)
        self.sockets = []
        self.addCleanup(lambda: [s.close() for s in self.sockets])

    def connect(self):
        host, port = self.server.http_addr.split(":")
        s = socket.create_connection((host, int(port)), timeout=10)
        self.sockets.append(s)
        return s

    def test_silent_connections_are_closed_and_served_ones_stay(self):
        served = self.connect()
        served.sendall(b"GET /v1/status/leader HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertTrue(served.recv(65536).startswith(b"HTTP/1.1 200"))
        started = time.monotonic()
        silent = [self.connect() for _ in range(50)]
        poll_until(lambda: all(closed_by_server(s) for s in silent), timeout=15,
                   message="connections that never sent a byte were not closed")
        self.assertGreaterEqual(time.monotonic() - started, FIRST_BYTE_TIMEOUT_MS / 1000 * 0.9)
        self.assertFalse(closed_by_server(served), "a served keep-alive connection was cut")
        served.setblocking(True)
        served.sendall(b"GET /v1/status/leader HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertTrue(served.recv(65536).startswith(b"HTTP/1.1 200"))


if __name__ == "__main__":
    unittest.main()
