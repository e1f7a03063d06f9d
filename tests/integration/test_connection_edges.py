"""Connection edge cases found in review (issue 2): a client that half-closes
after sending a write still gets the write's answer; a parked blocking query
whose client pipelined bytes and then left is freed at once."""

import os
import socket
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

    def waiters(self):
        stats = self.server.get_json("/v1/agent/self")["Stats"]["tenure"]
        return int(stats["blocking_queries"])


if __name__ == "__main__":
    unittest.main()
