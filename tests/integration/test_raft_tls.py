"""Raft over mutual TLS (docs/tls.md): a 3-server cluster whose members hold
certificates from one CA replicates, fails over and catches up with every
raft connection encrypted and both ends checked; strangers without a
certificate from that CA (in clear, over TLS without a certificate, over TLS
with another CA's) reach nothing: no member crashes, stalls, changes its
log or loses its leader, and a server with another CA's certificate cannot
join. The raw messages are those of test_raft_strangers.py
(tests/lib/raft_wire.py).
"""
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import unittest

from raft_wire import PURPOSE_JOIN, append_entries, hello_bytes, request_vote
from tenure_testlib import Cluster, DevServer, free_port, poll_until
from test_pki import Pki
from test_raft_strangers import (GARBAGE, TYPE_ZERO_ENTRY, StrangerChecks, Writer, counter,
                                 forged_write, huge_snapshot)


def tls_dial(address, ca_file, cert=None, key=None):
    """A TLS connection to a raft port, or None when the handshake is refused."""
    host, port = address.rsplit(":", 1)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.load_verify_locations(ca_file)
    if cert:
        context.load_cert_chain(cert, key)
    raw = socket.create_connection((host, int(port)), timeout=5)
    try:
        return context.wrap_socket(raw)
    except (ssl.SSLError, OSError):
        raw.close()
        return None


def closed_by_peer(sock, timeout=5.0):
    """True once the peer ends the connection (EOF, reset or a TLS alert)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            if not sock.recv(65536):
                return True
        except socket.timeout:
            return False
        except (ConnectionError, ssl.SSLError, OSError):
            return True
    return False


def send_quietly(sock, data):
    try:
        sock.sendall(data)
    except (OSError, ssl.SSLError):
        pass


class RaftTlsTest(unittest.TestCase, StrangerChecks):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="tenure-raft-tls-")
        cls.pki = Pki(cls.dir)
        # The files the members load, replaced in place by the rotation test.
        cls.live_cert = os.path.join(cls.dir, "live.pem")
        cls.live_key = os.path.join(cls.dir, "live-key.pem")
        shutil.copy(cls.pki.server_cert, cls.live_cert)
        shutil.copy(cls.pki.server_key, cls.live_key)
        cls.tls_args = ["-tls-cert-file", cls.live_cert, "-tls-key-file", cls.live_key,
                        "-tls-ca-file", cls.pki.ca_cert]
        cluster = Cluster(3, keyed=False, extra_args=["-session-ttl-multiplier", "1",
                                                      *cls.tls_args, "-tls-verify-incoming"])
        for member in cluster.members:  # and HTTPS, each on its own port
            member.https_port = free_port()
            member.extra_args += ["-https-addr", f"127.0.0.1:{member.https_port}"]
        cls.cluster = cluster.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.__exit__(None, None, None)
        shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        self.leader = self.cluster.leader()

    def claim(self, member):
        other = self.leader if member is not self.leader else \
            next(m for m in self.cluster.members if m is not member)
        return self.cluster.id_of(other), other.raft_addr

    def test_1_the_cluster_replicates_and_fails_over_over_mutual_tls(self):
        for member in self.cluster.members:
            self.assertIn("raft over mutual TLS: peers need a certificate signed by",
                          member.log())
        resp = self.leader.request("PUT", "/v1/kv/tls/before", "1")
        self.assertEqual((resp.status, resp.json()), (200, True))
        for member in self.cluster.members:
            poll_until(lambda m=member: m.request("GET", "/v1/kv/tls/before?stale").status == 200,
                       timeout=10, message=f"{member.http_addr} has the write")
        old = self.leader
        old.kill()
        new = self.cluster.wait_leader(exclude=old)
        resp = new.request("PUT", "/v1/kv/tls/after", "2")
        self.assertEqual((resp.status, resp.json()), (200, True))
        old.start()
        poll_until(lambda: old.request("GET", "/v1/kv/tls/after?stale").status == 200,
                   timeout=20, message="the restarted member catches up over TLS")

    def test_2_strangers_without_a_certificate_from_the_ca_reach_nothing(self):
        applied = int(self.leader.request("GET", "/v1/kv/?keys").header("X-Consul-Index"))
        before = {m.http_addr: counter(m, "transport_handshakes_refused")
                  for m in self.cluster.members}
        attempts = 0
        with Writer(self.leader) as writer:
            for member in self.cluster.members:
                node_id, address = self.claim(member)
                hello = hello_bytes(node_id, address)
                vote = request_vote(term=1 << 20, candidate=node_id, last_index=1 << 30,
                                    last_term=1 << 20, disrupt_leader=True)
                payloads = [TYPE_ZERO_ENTRY, forged_write(applied), huge_snapshot(self.cluster),
                            GARBAGE, vote * 8, hello_bytes(node_id, address, purpose=PURPOSE_JOIN)]
                for payload in payloads:
                    # In clear, as test_raft_strangers.py's stranger does.
                    host, port = member.raft_addr.rsplit(":", 1)
                    with socket.create_connection((host, int(port)), timeout=5) as raw:
                        send_quietly(raw, hello + payload)
                        self.assertTrue(closed_by_peer(raw), "clear text was not cut")
                    attempts += 1
                    # Over TLS without a certificate, and with another CA's.
                    for cert, key in ((None, None), (self.pki.stranger_cert,
                                                     self.pki.stranger_key)):
                        tls = tls_dial(member.raft_addr, self.pki.ca_cert, cert, key)
                        attempts += 1
                        if tls is None:
                            continue  # refused in the handshake itself (TLS 1.2)
                        with tls:
                            send_quietly(tls, hello + payload)
                            self.assertTrue(closed_by_peer(tls), "a TLS stranger was not cut")
        writer.check(self, "writes during the TLS strangers")
        for member in self.cluster.members:
            refused = counter(member, "transport_handshakes_refused") - before[member.http_addr]
            self.assertGreaterEqual(refused, attempts // 3, member.http_addr)
            self.assertTrue(any("refused a raft connection" in line and ": TLS: " in line
                                for line in member.log().splitlines()), member.log_tail())
        self.assert_cluster_unharmed(self.cluster, self.leader)

    def test_3_a_server_with_another_cas_certificate_cannot_join(self):
        outsider = DevServer(dev=False, extra_args=[
            "-node-id", "9", "-node", "outsider", "-join", self.leader.raft_addr,
            "-tls-cert-file", self.pki.stranger_cert, "-tls-key-file", self.pki.stranger_key,
            "-tls-ca-file", self.pki.other_ca_cert])
        outsider.http_addr = f"127.0.0.1:{free_port()}"
        outsider.raft_addr = f"127.0.0.1:{free_port()}"
        try:
            outsider._spawn()
            poll_until(lambda: "TLS" in outsider.log() or outsider.process.poll() is not None,
                       timeout=15, message="the outsider's join fails on TLS")
            configuration = self.leader.get_json("/v1/operator/raft/configuration")
            self.assertEqual(len(configuration["Servers"]), 3, configuration)
            self.assertTrue(any("refused a raft connection" in line and "TLS" in line
                                for line in self.leader.log().splitlines()))
        finally:
            outsider.close()
        self.assert_cluster_unharmed(self.cluster, self.leader)


    def test_4_rotating_every_certificate_under_writes_loses_nothing(self):
        acked = []
        stop = threading.Event()

        def write():
            i = 0
            while not stop.is_set():
                i += 1
                try:
                    resp = self.leader.request("PUT", f"/v1/kv/rotation/{i}", str(i), timeout=5)
                    if resp.status == 200 and resp.json() is True:
                        acked.append(i)
                except OSError:
                    pass

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        try:
            renewed_cert, renewed_key = self.pki.issue("rotated", "rotated.dc1.tenure",
                                                       "DNS:localhost,IP:127.0.0.1")
            shutil.copy(renewed_cert, self.live_cert)
            shutil.copy(renewed_key, self.live_key)
            for member in self.cluster.members:
                member.process.send_signal(signal.SIGHUP)
            for member in self.cluster.members:
                poll_until(lambda m=member: "SIGHUP: reloaded TLS certificate" in m.log(),
                           timeout=10, message=f"{member.http_addr} reloads")
            # New raft connections now carry the new certificate: a follower
            # killed and restarted dials and is dialled afresh.
            follower = next(m for m in self.cluster.members if m is not self.leader)
            follower.kill()
            follower.start()
            count = len(acked)
            poll_until(lambda: len(acked) > count + 50, timeout=20,
                       message="writes go on after the rotation")
        finally:
            stop.set()
            writer.join(timeout=10)
        self.assertIs(self.cluster.wait_leader(timeout=5), self.leader, "the leader changed")
        self.assertGreater(len(acked), 100)
        keys = self.leader.get_json("/v1/kv/rotation/?keys")
        missing = {f"rotation/{i}" for i in acked} - set(keys)
        self.assertEqual(missing, set(), "acknowledged writes lost")
        last = f"rotation/{acked[-1]}"
        poll_until(lambda: follower.request("GET", f"/v1/kv/{last}?stale").status == 200,
                   timeout=20, message="the restarted follower catches up")

    def test_5_a_follower_forwards_over_tls_checking_the_leader(self):
        follower = next(m for m in self.cluster.members if m is not self.leader)
        auth = ["--cacert", self.pki.ca_cert, "--cert", self.pki.client_cert, "--key",
                self.pki.client_key]
        put = subprocess.run(["curl", "-sS", "--max-time", "10", *auth, "-X", "PUT", "--data",
                              "forwarded", f"https://localhost:{follower.https_port}/v1/kv/fwd"],
                             capture_output=True, text=True, timeout=30)
        # The leader requires client certificates and speaks only TLS on the
        # address it advertises: this worked only if the follower forwarded
        # over TLS with its own certificate.
        self.assertEqual(put.stdout, "true", put.stderr + follower.log_tail())
        got = self.leader.request("GET", "/v1/kv/fwd?raw")
        self.assertEqual(got.body, b"forwarded")


class RaftTrafficCaptureTest(unittest.TestCase):
    """What an eavesdropper on the raft port sees: every byte between the
    members, recorded by the proxy they talk through. In clear it holds the
    handshake's magic and the values written; with certificates, neither."""

    MARKER = "eavesdropped-" + os.urandom(8).hex()

    def capture(self, args):
        from raft_proxy import PartitionProxy
        proxy = PartitionProxy(record=True)
        with Cluster(3, proxy=proxy, keyed=False,
                     extra_args=["-session-ttl-multiplier", "1", *args]) as cluster:
            leader = cluster.leader()
            for i in range(20):
                resp = leader.request("PUT", f"/v1/kv/capture/{i}", self.MARKER)
                self.assertEqual(resp.status, 200)
            for member in cluster.members:
                poll_until(lambda m=member: m.request("GET", "/v1/kv/capture/19?stale").status
                           == 200, timeout=10, message="replicated through the proxy")
            return bytes(proxy.recorded)

    def test_no_raft_byte_is_in_clear_with_certificates(self):
        directory = tempfile.mkdtemp(prefix="tenure-capture-")
        try:
            pki = Pki(directory)
            clear = self.capture([])
            encrypted = self.capture(["-tls-cert-file", pki.server_cert, "-tls-key-file",
                                      pki.server_key, "-tls-ca-file", pki.ca_cert])
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        # The check can fail: in clear, the eavesdropper reads it all.
        self.assertIn(self.MARKER.encode(), clear)
        self.assertIn(b"TNRAFT1\n", clear)
        print(f"recorded {len(clear)} bytes in clear, {len(encrypted)} with TLS", flush=True)
        self.assertGreater(len(encrypted), 20 * len(self.MARKER))
        self.assertNotIn(self.MARKER.encode(), encrypted)
        self.assertNotIn(b"TNRAFT1", encrypted)
        self.assertNotIn(b"capture/", encrypted)


if __name__ == "__main__":
    unittest.main()
