"""Connections against the descriptor limit (docs/limits.md): ~20,000 idle
connections reached RLIMIT_NOFILE, after which new clients hung instead of
getting 429 and raft could not open files. The connection cap is now
min(20,000, (RLIMIT_NOFILE - 256) / 2), so raft keeps its descriptors, and if
accept still runs out of descriptors a spare one is given up to answer 429.
The server runs under a lowered `ulimit -n` (a wrapper script)."""

import os
import shutil
import socket
import stat
import tempfile
import unittest

from tenure_testlib import DevServer, one_address_load_args, poll_until, tenure_bin

GET = b"GET /v1/status/leader HTTP/1.1\r\nHost: x\r\n\r\n"


def limited_binary(nofile):
    """A wrapper that runs tenure with soft and hard RLIMIT_NOFILE = nofile."""
    directory = tempfile.mkdtemp(prefix="tenure-nofile-")
    path = os.path.join(directory, "tenure")
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\nulimit -n {nofile} || exit 99\nexec '{tenure_bin()}' \"$@\"\n")
    os.chmod(path, stat.S_IRWXU)
    return path


def read_status(sock, timeout=5.0):
    """The status of the next answer on sock; 'timeout' or 'closed' otherwise."""
    sock.settimeout(timeout)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return "closed" if not data else int(data[9:12])
            data += chunk
    except socket.timeout:
        return "timeout"
    except OSError:
        return "closed"
    return int(data[9:12])


class DescriptorTest(unittest.TestCase):
    nofile = 1024
    env = {}

    def setUp(self):
        binary = limited_binary(self.nofile)
        self.addCleanup(shutil.rmtree, os.path.dirname(binary), True)
        # All from 127.0.0.1, past one address's 200: the per-client limit is off.
        self.server = DevServer(binary=binary, env=self.env,
                                extra_args=one_address_load_args()).__enter__()
        self.addCleanup(self.server.__exit__, None, None, None)
        self.sockets = []
        self.addCleanup(lambda: [s.close() for s in self.sockets])
        host, port = self.server.http_addr.split(":")
        self.address = (host, int(port))

    def connect_and_get(self):
        s = socket.create_connection(self.address, timeout=5)
        self.sockets.append(s)
        s.sendall(GET)
        return s, read_status(s)

    def statuses(self, count):
        """Opens count connections, one GET each, kept open; stops at the
        first client left without an answer."""
        statuses = []
        for _ in range(count):
            statuses.append(self.connect_and_get()[1])
            if statuses[-1] == "timeout":
                break
        return statuses


class ConnectionCapTest(DescriptorTest):
    nofile = 1024  # cap (1024 - 256) / 2 = 384

    def test_cap_leaves_descriptors_for_raft_and_beyond_it_clients_get_429(self):
        statuses = self.statuses(1100)
        served = statuses.count(200)
        self.assertEqual(served, 384, {s: statuses.count(s) for s in set(statuses)})
        self.assertEqual(statuses[:384], [200] * 384)
        self.assertEqual(set(statuses[384:]), {429},
                         "beyond the cap every client must get 429, not hang")
        # Raft still has descriptors: writes on served connections commit.
        kept = self.sockets[0]
        for i in range(20):
            body = b"v" * 1000
            kept.sendall(b"PUT /v1/kv/after/%d HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                         % (i, len(body)) + body)
            self.assertEqual(read_status(kept), 200)
        self.assertIn("serving at most 384 connections", self.server.log())


class SpareDescriptorTest(DescriptorTest):
    # No reserve and a cap far above the limit: accept runs out of descriptors.
    nofile = 256
    env = {"TENURE_TEST_HTTP_DESCRIPTOR_RESERVE": "0",
           "TENURE_TEST_HTTP_CONNECTIONS_MAX": "5000"}

    def test_out_of_descriptors_a_client_gets_429_instead_of_hanging(self):
        statuses = self.statuses(400)
        counts = {s: statuses.count(s) for s in set(statuses)}
        self.assertNotIn("timeout", counts, counts)
        self.assertGreater(counts.get(200, 0), 100, counts)
        self.assertGreater(counts.get(429, 0), 100, counts)
        self.assertIn("out of descriptors; refused a connection with 429", self.server.log())
        # Once clients leave, new ones are served again.
        for s in self.sockets:
            s.close()
        self.sockets.clear()
        poll_until(lambda: self.connect_and_get()[1] == 200, timeout=10,
                   message="no client served after the others left")


if __name__ == "__main__":
    unittest.main()
