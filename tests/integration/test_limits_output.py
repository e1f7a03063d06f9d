"""Clients that ask for large answers and never read them (docs/limits.md): 40 of
them, each a GET ?recurse of a 20 MiB prefix, pushed RSS from 47 MiB to
1.1 GiB. Unsent output is now budgeted across connections
(kHttpUnsentBytesMax, lowered here through TENURE_TEST_HTTP_UNSENT_BYTES_MAX):
a large answer that does not fit gets 429, small answers always go out, and
a writer that made no progress for kHttpStalledWriterMs (lowered through
TENURE_TEST_HTTP_STALLED_WRITER_MS) is closed when its room is needed.
Peak RSS is read from /proc/PID/status."""

import socket
import time
import unittest

from tenure_testlib import DevServer, poll_until, rss_mib

VALUE_BYTES = 512 * 1024
UNSENT_BYTES_MAX = 64 * 1024 * 1024
# 40 values of 512 KiB: a 20 MiB prefix whose ?recurse answer is ~27 MiB.
VALUES = 40
GREEDY_CLIENTS = 40
# The old code reached ~1.1 GiB; the budget allows two answers in flight.
PEAK_RSS_MAX_MIB = 400
REQUEST = b"GET /v1/kv/p/?recurse HTTP/1.1\r\nHost: x\r\n\r\n"


def status_line(sock):
    """The answer's status code once its first bytes arrived, without reading
    them (MSG_PEEK), so the server still holds the rest; None before that."""
    try:
        head = sock.recv(12, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return None
    return int(head[9:12]) if len(head) == 12 else None


def drain(sock, timeout=1.0):
    """Reads until the server closes or sends nothing for `timeout` seconds
    (a kept keep-alive connection); returns the bytes received."""
    sock.settimeout(timeout)
    chunks = []
    try:
        while True:
            chunk = sock.recv(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:  # reset by the server
        pass
    return b"".join(chunks)


class UnsentOutputTest(unittest.TestCase):
    stalled_writer_ms = 60_000

    def setUp(self):
        self.server = DevServer(env={
            "TENURE_TEST_HTTP_UNSENT_BYTES_MAX": str(UNSENT_BYTES_MAX),
            "TENURE_TEST_HTTP_STALLED_WRITER_MS": str(self.stalled_writer_ms),
        }).__enter__()
        self.addCleanup(self.server.__exit__, None, None, None)
        self.sockets = []
        self.addCleanup(lambda: [s.close() for s in self.sockets])
        for i in range(VALUES):
            resp = self.server.request("PUT", f"/v1/kv/p/{i:02}", b"v" * VALUE_BYTES)
            self.assertEqual(resp.status, 200, resp)

    def greedy(self):
        """A client that sends one large request and never reads."""
        host, port = self.server.http_addr.split(":")
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect((host, int(port)))
        s.sendall(REQUEST)
        self.sockets.append(s)
        return s


class BudgetTest(UnsentOutputTest):
    def test_clients_that_never_read_get_429_and_memory_stays_bounded(self):
        clients = [self.greedy() for _ in range(GREEDY_CLIENTS)]
        statuses = {}
        poll_until(lambda: statuses.update({i: status_line(s) for i, s in enumerate(clients)})
                   or None not in statuses.values(), timeout=20,
                   message="not every greedy client got the start of an answer")
        peak = rss_mib(self.server.process.pid, "VmHWM")
        counts = {code: list(statuses.values()).count(code) for code in set(statuses.values())}
        print(f"peak RSS {peak:.0f} MiB; answers {counts}")
        self.assertLess(peak, PEAK_RSS_MAX_MIB, f"peak RSS {peak:.0f} MiB; answers {counts}")
        self.assertEqual(set(counts), {200, 429}, counts)
        self.assertLessEqual(counts[200], 3, counts)  # ~27 MiB each in a 64 MiB budget
        # Small answers still go out meanwhile, and writes work.
        self.assertEqual(self.server.request("PUT", "/v1/kv/small", "x").status, 200)
        self.assertEqual(self.server.request("GET", "/v1/kv/small?raw").body, b"x")
        self.assertEqual(self.server.request("GET", "/v1/kv/p/?keys").status, 200)
        # A refused client reads its whole 429 and can retry on the same connection.
        refused = clients[next(i for i, code in statuses.items() if code == 429)]
        refused.settimeout(5)
        self.assertIn(b"Too many large responses are waiting for slow clients; retry later",
                      refused.recv(65536))


class StalledWriterTest(UnsentOutputTest):
    stalled_writer_ms = 500

    def test_a_stalled_writer_is_closed_when_its_room_is_needed(self):
        # The stall is counted from the greedy clients' last progress, which
        # is after they sent their requests: measure from before that.
        started = time.monotonic()
        first = [self.greedy(), self.greedy()]
        poll_until(lambda: all(status_line(s) == 200 for s in first), timeout=20,
                   message="the first two greedy clients were not answered")

        served = []

        def reader_served():
            resp = self.server.request("GET", "/v1/kv/p/?recurse", timeout=20)
            if resp.status != 200:
                return False
            served.append(resp.body)
            return True

        # Refused with 429 until the greedy ones have stalled for 500 ms.
        poll_until(reader_served, timeout=20, interval=0.1,
                   message="a reading client never got its answer")
        self.assertGreaterEqual(time.monotonic() - started, self.stalled_writer_ms / 1000 * 0.9)
        self.assertGreater(len(served[-1]), 27_000_000)
        # The one cut gets its answer only in part; a kept one is drained in full.
        received = [len(drain(s)) for s in first]
        self.assertTrue(any(n < len(served[-1]) for n in received),
                        f"no stalled writer was cut (bytes received: {received}, "
                        f"answer {len(served[-1])})")
        self.assertIn("made no progress for", self.server.log())


if __name__ == "__main__":
    unittest.main()
