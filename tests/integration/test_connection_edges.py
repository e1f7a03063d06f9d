"""Connection edge cases found in review: a client that half-closes
after sending a write still gets the write's answer; a parked blocking query
whose client pipelined bytes and then left is freed at once. And a TLS client
that dials the clear-text port gets the 400 docs/tls.md promises at once,
not an EOF after the 30 s request read timeout."""

import os
import socket
import ssl
import subprocess
import time
import unittest

from tenure_testlib import SharedServerTestCase, poll_until


def raw_exchange(addr, data, half_close=False, timeout=10.0):
    host, port = addr.split(":")
    s = socket.create_connection((host, int(port)), timeout=timeout)
    s.sendall(data)
    if half_close:
        s.shutdown(socket.SHUT_WR)
    chunks = []
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
    s.close()
    return b"".join(chunks)


class ConnectionEdgeTest(SharedServerTestCase):
    server_args = ()

    def test_half_closed_write_gets_its_answer(self):
        reply = raw_exchange(
            self.server.http_addr,
            b"PUT /v1/kv/edge/hc HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nz",
            half_close=True)
        self.assertTrue(reply.startswith(b"HTTP/1.1 200"), reply[:200])
        self.assertTrue(reply.endswith(b"true"), reply[-50:])
        self.assertEqual(self.server.request("GET", "/v1/kv/edge/hc?raw").body, b"z")

    def test_pipelined_then_gone_blocking_query_is_freed(self):
        self.server.request("PUT", "/v1/kv/edge/quiet", b"v")
        index = self.server.request("GET", "/v1/kv/edge/quiet").header("X-Consul-Index")
        before = self.waiters()
        host, port = self.server.http_addr.split(":")
        sockets = []
        for _ in range(50):
            s = socket.create_connection((host, int(port)), timeout=10)
            # A blocking query plus one byte of a next request, then leave.
            s.sendall(b"GET /v1/kv/edge/quiet?index=%s&wait=10m HTTP/1.1\r\nHost: x\r\n\r\nG"
                      % index.encode())
            sockets.append(s)
        poll_until(lambda: self.waiters() >= before + 50, timeout=10,
                   message="the 50 blocking queries never parked")
        for s in sockets:
            s.close()
        poll_until(lambda: self.waiters() <= before, timeout=10,
                   message="parked queries of departed clients were not freed")

    def test_tls_to_the_clear_text_port_gets_400_at_once(self):
        host, port = self.server.http_addr.split(":")
        # A real ClientHello, made by Python's TLS client in memory.
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        client = ssl.create_default_context().wrap_bio(incoming, outgoing,
                                                       server_hostname="localhost")
        with self.assertRaises(ssl.SSLWantReadError):
            client.do_handshake()
        hello = outgoing.read()
        self.assertEqual(hello[0], 0x16)
        started = time.monotonic()
        reply = raw_exchange(self.server.http_addr, hello, timeout=10)
        self.assertLess(time.monotonic() - started, 2.0, "the 400 was not sent at once")
        self.assertTrue(reply.startswith(b"HTTP/1.1 400 Bad Request\r\n"), reply[:200])
        self.assertTrue(reply.endswith(b"400 Bad Request: TLS handshake sent to the clear-text "
                                       b"HTTP port (use https:// and the HTTPS port)"), reply)
        # Python's TLS client: a protocol error at once, not a timeout.
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        started = time.monotonic()
        with socket.create_connection((host, int(port)), timeout=10) as raw:
            with self.assertRaises(ssl.SSLError):
                context.wrap_socket(raw, server_hostname="localhost")
        self.assertLess(time.monotonic() - started, 2.0)
        # openssl s_client, as an operator would try it: it fails at once.
        started = time.monotonic()
        result = subprocess.run(["openssl", "s_client", "-connect", self.server.http_addr],
                                input=b"", capture_output=True, timeout=10)
        self.assertNotEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertLess(time.monotonic() - started, 5.0)
        # The server still serves.
        self.assertEqual(self.server.request("GET", "/v1/status/leader").status, 200)

    def waiters(self):
        stats = self.server.get_json("/v1/agent/self")["Stats"]["tenure"]
        return int(stats["blocking_queries"])


if __name__ == "__main__":
    unittest.main()
