"""One client address cannot lock the others out of the HTTP API
(docs/limits.md, docs/security.md). The connection cap is the server's in
all; each address also has its own limit, Consul's
limits.http_max_conns_per_client (-http-max-conns-per-client, 200 by
default, both listeners together). A client over it gets Consul's 429 at
once. Clients come from several loopback source addresses (127.0.0.0/8):
127.0.0.2 floods, 127.0.0.3 and the management token must still be served.
Parked blocking queries hold their address's connections, so they are
bounded the same way; a cluster member's forwarded requests are not."""

import json
import os
import shutil
import socket
import ssl
import tempfile
import time
import unittest

from tenure_testlib import Cli, Cluster, DevServer, free_port, poll_until, read_response
from test_pki import Pki

CONSULS_TEXT = b"Your IP is issuing too many concurrent connections, please rate limit your calls\n"
MANAGEMENT = "6a1f1c1e-8f3b-4c8e-9b3e-2d7c1b9e4a01"
AT_ONCE_S = 2.0  # a refusal is written on accept; anything near the 30 s read timeout is a hang


def connect_from(http_addr, source, timeout=10.0):
    host, port = http_addr.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=timeout, source_address=(source, 0))


def get(sock, path, token=None):
    token_line = f"X-Consul-Token: {token}\r\n" if token else ""
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n{token_line}\r\n".encode())


def request_from(http_addr, source, method, path, body=b"", token=None, timeout=10.0):
    with connect_from(http_addr, source, timeout) as sock:
        token_line = f"X-Consul-Token: {token}\r\n" if token else ""
        sock.sendall(f"{method} {path} HTTP/1.1\r\nHost: x\r\n{token_line}"
                     f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        return read_response(sock, timeout)


def value_of(response):
    return json.loads(response.body)[0]["Value"]


def assert_refused_at_once(test, sock, what):
    """sock (just connected) is answered Consul's 429 and closed, at once."""
    started = time.monotonic()
    r = read_response(sock, AT_ONCE_S)
    test.assertEqual(r.status, 429, what)
    test.assertEqual(r.body, CONSULS_TEXT, what)
    test.assertEqual(r.header("Content-Type"), "text/plain", what)
    test.assertLess(time.monotonic() - started, AT_ONCE_S, what)


class Sockets:
    """Sockets a test opened, closed at its end."""

    def __init__(self, test):
        self.all = []
        test.addCleanup(self.close)

    def add(self, sock):
        self.all.append(sock)
        return sock

    def close(self):
        for s in self.all:
            s.close()
        self.all.clear()


class DefaultLimitTest(unittest.TestCase):
    """The lock-out as it was reproduced: ACLs on with default deny, an anonymous
    client fills the connections with denied requests and keeps them idle.
    The server's cap is shortened to 260 (TENURE_TEST_HTTP_CONNECTIONS_MAX) so
    the flood is quick; the per-client limit is the default."""

    CAP = 260

    def setUp(self):
        self.server = DevServer(
            extra_args=["-acl-enabled", "-acl-default-policy", "deny",
                        "-acl-initial-management", MANAGEMENT],
            env={"TENURE_TEST_HTTP_CONNECTIONS_MAX": str(self.CAP)}).__enter__()
        self.addCleanup(self.server.__exit__, None, None, None)
        self.sockets = Sockets(self)
        poll_until(lambda: self.server.request("GET", "/v1/acl/token/self", headers={
            "X-Consul-Token": MANAGEMENT}).status == 200, timeout=15,
            message="the initial management token never appeared")

    def test_one_address_cannot_lock_out_the_management_token(self):
        r = request_from(self.server.http_addr, "127.0.0.1", "PUT", "/v1/kv/held", b"v",
                         token=MANAGEMENT)
        self.assertEqual(r.status, 200, r.body)
        statuses = []
        for _ in range(self.CAP):
            s = self.sockets.add(connect_from(self.server.http_addr, "127.0.0.2"))
            get(s, "/v1/kv/held")  # anonymous: denied, then left idle
            statuses.append(read_response(s, AT_ONCE_S).status)
        self.assertEqual(statuses[:200], [403] * 200)
        self.assertEqual(statuses[200:], [429] * (self.CAP - 200),
                         "the flooding address was not limited to 200 connections")
        # Its next connection is refused at once with Consul's answer.
        assert_refused_at_once(self, self.sockets.add(
            connect_from(self.server.http_addr, "127.0.0.2")), "201st from 127.0.0.2")
        # Another address, with the management token, is served.
        r = request_from(self.server.http_addr, "127.0.0.3", "GET", "/v1/kv/held?raw",
                         token=MANAGEMENT)
        self.assertEqual((r.status, r.body), (200, b"v"))
        self.assertIn("refused a connection from 127.0.0.2: 200 connections open from that "
                      "address", self.server.log())


class ConfiguredLimitTest(unittest.TestCase):
    """A small configured limit: parked blocking queries, a connection given
    back, both listeners counted together."""

    LIMIT = 5

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tenure-per-client-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        pki = Pki(self.dir)
        self.https_addr = f"127.0.0.1:{free_port()}"
        self.server = DevServer(extra_args=[
            "-http-max-conns-per-client", str(self.LIMIT), "-https-addr", self.https_addr,
            "-tls-cert-file", pki.server_cert, "-tls-key-file", pki.server_key]).__enter__()
        self.addCleanup(self.server.__exit__, None, None, None)
        self.tls = ssl.create_default_context(cafile=pki.ca_cert)
        self.sockets = Sockets(self)

    def parked(self):
        r = self.server.request("GET", "/v1/agent/self")
        return int(r.json()["Stats"]["tenure"]["blocking_queries"])

    def test_parked_queries_of_one_address_leave_room_for_another(self):
        addr = self.server.http_addr
        r = request_from(addr, "127.0.0.1", "PUT", "/v1/kv/watched", b"v1")
        self.assertEqual(r.status, 200)
        index = int(request_from(addr, "127.0.0.1", "GET", "/v1/kv/watched").header(
            "X-Consul-Index"))
        path = f"/v1/kv/watched?index={index}&wait=60s"
        flood = [self.sockets.add(connect_from(addr, "127.0.0.2")) for _ in range(self.LIMIT)]
        for s in flood:
            get(s, path)
        poll_until(lambda: self.parked() >= self.LIMIT, timeout=10,
                   message="127.0.0.2's blocking queries never parked")
        assert_refused_at_once(self, self.sockets.add(connect_from(addr, "127.0.0.2")),
                               "a 6th blocking query from 127.0.0.2")
        # 127.0.0.3 parks too, and every parked query is woken by a write.
        other = self.sockets.add(connect_from(addr, "127.0.0.3"))
        get(other, path)
        poll_until(lambda: self.parked() >= self.LIMIT + 1, timeout=10,
                   message="127.0.0.3's blocking query never parked")
        self.assertEqual(request_from(addr, "127.0.0.4", "PUT", "/v1/kv/watched", b"v2").status,
                         200)
        for s in flood + [other]:
            r = read_response(s, 10)
            self.assertEqual(r.status, 200)
            self.assertEqual(value_of(r), "djI=")  # base64 of v2
        # Answered, they stay open (keep-alive) and still count; one closed
        # gives its place back.
        assert_refused_at_once(self, self.sockets.add(connect_from(addr, "127.0.0.2")),
                               "127.0.0.2 with 5 keep-alive connections")
        flood[0].close()

        def served():
            try:
                return request_from(addr, "127.0.0.2", "GET", "/v1/kv/watched").status == 200
            except (ConnectionError, OSError):
                return False
        poll_until(served, timeout=10, message="a closed connection did not give its place back")

    def test_http_and_https_count_together(self):
        for _ in range(self.LIMIT - 1):
            s = self.sockets.add(connect_from(self.server.http_addr, "127.0.0.2"))
            get(s, "/v1/status/leader")
            self.assertEqual(read_response(s, 5).status, 200)
        host, port = self.https_addr.rsplit(":", 1)
        raw = socket.create_connection((host, int(port)), timeout=5,
                                       source_address=("127.0.0.2", 0))
        tls = self.sockets.add(self.tls.wrap_socket(raw, server_hostname="localhost"))
        get(tls, "/v1/status/leader")
        self.assertEqual(read_response(tls, 5).status, 200)  # the 5th, over TLS
        raw = socket.create_connection((host, int(port)), timeout=5,
                                       source_address=("127.0.0.2", 0))
        sixth = self.sockets.add(self.tls.wrap_socket(raw, server_hostname="localhost"))
        assert_refused_at_once(self, sixth, "a 6th from 127.0.0.2, over TLS")
        assert_refused_at_once(self, self.sockets.add(
            connect_from(self.server.http_addr, "127.0.0.2")), "a 6th from 127.0.0.2, in clear")
        r = request_from(self.server.http_addr, "127.0.0.3", "GET", "/v1/status/leader")
        self.assertEqual(r.status, 200)



class ConfigTest(unittest.TestCase):
    """The setting as a flag's value and as Consul's limits block in a file."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tenure-per-client-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.cli = Cli("127.0.0.1:1")

    def validate(self, text):
        path = os.path.join(self.dir, "c.hcl")
        with open(path, "w") as f:
            f.write("dev = true\n" + text)
        result = self.cli.run("validate", path)
        return result.returncode, result.stdout + result.stderr

    def test_consuls_block_zero_and_bad_values(self):
        self.assertEqual(self.validate("limits {\n  http_max_conns_per_client = 0\n}\n")[0], 0)
        self.assertEqual(self.validate("http_max_conns_per_client = 20000\n")[0], 0)
        code, out = self.validate("limits {\n  http_max_conns_per_client = 20001\n}\n")
        self.assertEqual(code, 1, out)
        self.assertIn("-http-max-conns-per-client: 20001 is more than the 20000", out)
        for bad in ("-1", '"200"', "1.5"):
            code, out = self.validate(f"http_max_conns_per_client = {bad}\n")
            self.assertEqual(code, 1, out)
            self.assertIn("http_max_conns_per_client", out)


class MembersAreNotLimitedTest(unittest.TestCase):
    """A follower forwards its clients' blocking queries to the leader, one
    connection each, from its own address: the leader does not hold them to
    the per-client limit, while a client of its own from another address is."""

    LIMIT = 3
    WATCHERS = 8

    def test_forwarded_queries_pass_the_leaders_limit(self):
        with Cluster(3, extra_args=("-http-max-conns-per-client", str(self.LIMIT))) as cluster:
            leader = cluster.leader()
            follower = next(m for m in cluster.members if m is not leader)
            r = leader.request("PUT", "/v1/kv/fwd", b"v1")
            self.assertEqual(r.status, 200)
            index = int(leader.request("GET", "/v1/kv/fwd").header("X-Consul-Index"))
            path = f"/v1/kv/fwd?index={index}&wait=60s"
            sockets = Sockets(self)
            watchers = []
            for i in range(self.WATCHERS):  # one per address: under the follower's limit
                s = sockets.add(connect_from(follower.http_addr, f"127.0.0.{10 + i}"))
                get(s, path)
                watchers.append(s)

            def parked_on_leader():
                stats = leader.request("GET", "/v1/agent/self").json()["Stats"]["tenure"]
                return int(stats["blocking_queries"])
            poll_until(lambda: parked_on_leader() >= self.WATCHERS, timeout=15,
                       message="the forwarded blocking queries never all parked on the leader")
            # The leader still limits a client of its own.
            own = [sockets.add(connect_from(leader.http_addr, "127.0.0.2"))
                   for _ in range(self.LIMIT)]
            for s in own:
                get(s, "/v1/status/leader")
                self.assertEqual(read_response(s, 5).status, 200)
            assert_refused_at_once(self, sockets.add(connect_from(leader.http_addr, "127.0.0.2")),
                                   "the leader's own client over its limit")
            self.assertEqual(leader.request("PUT", "/v1/kv/fwd", b"v2").status, 200)
            for s in watchers:
                r = read_response(s, 15)
                self.assertEqual(r.status, 200, r.body)
                self.assertEqual(value_of(r), "djI=")


if __name__ == "__main__":
    unittest.main()
