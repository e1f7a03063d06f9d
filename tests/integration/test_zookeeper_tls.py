"""ZooKeeper's secure client port (`-zk-tls-addr`, docs/zookeeper-compat.md):
kazoo from Debian with `use_ssl` and the cluster's CA, and frame by frame
over Python's ssl; client certificates when -tls-verify-incoming requires
them; clear text, an unknown CA and no certificate refused with nothing
changed; a session opened on the clear-text port reopened over TLS with its
password; the flag's refusals; SIGHUP reloading the certificate."""

import os
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import tempfile
import unittest

from kazoo.client import KazooClient

import zk_wire
from tenure_testlib import Cluster, DevServer, free_port, poll_until, stop_quietly, tenure_bin
from test_pki import Pki, peer_common_name

ZKCLI = "/usr/share/zookeeper/bin/zkCli.sh"


def tls_context(ca_file, cert=None, key=None):
    context = ssl.create_default_context(cafile=ca_file)
    if cert is not None:
        context.load_cert_chain(cert, key)
    return context


def keys(server):
    """Every key in the store, through Consul's API."""
    answer = server.request("GET", "/v1/kv/?keys")
    return answer.json() if answer.status == 200 else []


class ZooKeeperTlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="tenure-zk-tls-")
        cls.pki = Pki(cls.dir)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def server(self, *more, cert=None, key=None):
        self.tls_port = free_port()
        self.clear_port = free_port()
        return DevServer(extra_args=[
            "-zk-addr", f"127.0.0.1:{self.clear_port}", "-zk-tls-addr",
            f"127.0.0.1:{self.tls_port}", "-tls-cert-file", cert or self.pki.server_cert,
            "-tls-key-file", key or self.pki.server_key, "-tls-ca-file", self.pki.ca_cert, *more])

    def kazoo(self, port, **tls):
        client = KazooClient(hosts=f"localhost:{port}", timeout=10, **tls)
        self.addCleanup(stop_quietly, client)
        client.start(timeout=15)
        return client

    def test_kazoo_and_frames_over_tls(self):
        with self.server() as server:
            zk = self.kazoo(self.tls_port, use_ssl=True, verify_certs=True, ca=self.pki.ca_cert)
            zk.create("/tls/n", b"over tls", makepath=True)
            self.assertEqual(zk.get("/tls/n")[0], b"over tls")
            election = zk.Election("/tls/election", "one")
            won = []
            election.run(lambda: won.append(True))
            self.assertEqual(won, [True])
            # Seen through the clear-text port and Consul's API alike.
            clear = zk_wire.Session(f"127.0.0.1:{self.clear_port}")
            self.assertEqual(clear.call("getData", zk_wire.path_watch("/tls/n"))[2], 0)
            clear.close()
            self.assertEqual(server.request("GET", "/v1/kv//tls/n?raw").body, b"over tls")
            self.assertIn(f"serving ZooKeeper's client protocol over TLS on 127.0.0.1:"
                          f"{self.tls_port}", server.log())

    def test_requests_sent_with_the_connect_request_are_answered(self):
        """A Java client's reconnect sends its ConnectRequest, setWatches
        and auth back to back: over TLS they can arrive in one read, which
        OpenSSL holds (it reads ahead) while the session is being opened.
        They are answered without waiting for the client's next bytes."""
        with self.server():
            # Whether both records arrive before the server's first read is
            # a race: ten connections, so that it is won at least once.
            for _ in range(10):
                self.connect_and_pipeline()

    def connect_and_pipeline(self):
        raw = socket.create_connection(("127.0.0.1", self.tls_port), timeout=10)
        tls = tls_context(self.pki.ca_cert).wrap_socket(raw, server_hostname="localhost")
        requests = b"".join(
            zk_wire.frame(struct.pack(">ii", xid, zk_wire.OP["exists"])
                          + zk_wire.path_watch("/nothing-here"))
            for xid in range(1, 8))
        # Two TLS records, as two writes of the client: OpenSSL hands out
        # one record per read and keeps the other.
        tls.sendall(zk_wire.frame(zk_wire.connect_request()))
        tls.sendall(requests)
        session = zk_wire.Session.__new__(zk_wire.Session)
        session.sock, session.xid = tls, 7
        self.assertIsNotNone(session.read_frame(), "no ConnectResponse")
        tls.settimeout(5)  # the client sends nothing more: answers must come
        for xid in range(1, 8):
            reply = session.reply()
            self.assertIsNotNone(reply)
            self.assertEqual((reply[0], reply[2]), (xid, -101))
        session.call("close")
        tls.close()

    def test_clear_text_and_unknown_cas_are_refused(self):
        with self.server() as server:
            # A ConnectRequest in clear text to the TLS port: no answer, the end.
            plain = zk_wire.Session(f"127.0.0.1:{self.tls_port}")
            self.assertIsNone(plain.connect_answer)
            plain.close()
            # A CA the client does not trust: the handshake fails there.
            with self.assertRaises(ssl.SSLError):
                zk_wire.Session(f"127.0.0.1:{self.tls_port}",
                                tls=tls_context(self.pki.other_ca_cert))
            self.assertTrue(server.alive())
            self.assertEqual(keys(server), [])

    def test_verify_incoming_needs_a_client_certificate_from_the_ca(self):
        with self.server("-tls-verify-incoming") as server:
            address = f"127.0.0.1:{self.tls_port}"
            # Without a certificate TLS 1.3 completes the client's half; the
            # server's refusal ends the connection before any answer.
            try:
                refused = zk_wire.Session(address, tls=tls_context(self.pki.ca_cert))
                self.assertIsNone(refused.connect_answer)
            except (ssl.SSLError, ConnectionResetError):
                pass
            # A certificate from another CA is refused too.
            try:
                stranger = zk_wire.Session(address, tls=tls_context(
                    self.pki.ca_cert, self.pki.stranger_cert, self.pki.stranger_key))
                self.assertIsNone(stranger.connect_answer)
            except (ssl.SSLError, ConnectionResetError):
                pass
            self.assertEqual(keys(server), [])
            zk = self.kazoo(self.tls_port, use_ssl=True, verify_certs=True, ca=self.pki.ca_cert,
                            certfile=self.pki.client_cert, keyfile=self.pki.client_key)
            zk.create("/with-cert", b"x")
            self.assertEqual(server.request("GET", "/v1/kv//with-cert?raw").body, b"x")
            self.assertIn("(client certificates required)", server.log())
            poll_until(lambda: "TLS with 127.0.0.1 failed" in server.log(), timeout=10,
                       message="the refused handshake logged")

    def test_a_session_moves_from_clear_text_to_tls_with_its_password(self):
        with self.server():
            clear = zk_wire.Session(f"127.0.0.1:{self.clear_port}", timeout_ms=10000)
            self.assertEqual(clear.call("create", zk_wire.create_body("/moved", b"e", flags=1))[2],
                             0)
            secure = zk_wire.Session(f"127.0.0.1:{self.tls_port}", session_id=clear.session_id,
                                     password=clear.password, timeout_ms=10000,
                                     tls=tls_context(self.pki.ca_cert))
            self.assertEqual(secure.session_id, clear.session_id)
            self.assertTrue(clear.at_eof(), "the older connection of the session is closed")
            _xid, _zxid, err, body = secure.call("exists", zk_wire.path_watch("/moved"))
            self.assertEqual(err, 0)
            stat, _ = zk_wire.read_stat(body)
            self.assertEqual(stat["ephemeralOwner"], clear.session_id, "the ephemeral is still the session's")
            # A wrong password over TLS is refused as in clear text.
            wrong = zk_wire.Session(f"127.0.0.1:{self.tls_port}", session_id=clear.session_id,
                                    password=b"\1" * 16, tls=tls_context(self.pki.ca_cert))
            self.assertEqual(wrong.session_id, 0)
            self.assertTrue(wrong.at_eof())
            secure.close()

    def test_zkcli_over_tls(self):
        """ZooKeeper's Java CLI with its Netty socket and client.secure, the
        CA as a PEM trust store, as ZooKeeper's TLS guide configures it."""
        with self.server("-tls-verify-incoming") as server:
            key_store = os.path.join(self.dir, "client-store.pem")
            with open(key_store, "w") as out:
                for part in (self.pki.client_key, self.pki.client_cert):
                    with open(part) as f:
                        out.write(f.read())
            # Debian's zookeeper.jar names netty's handler and transport
            # in its class path but not the codec and resolver they need,
            # so zkCli.sh's Netty socket fails unless they are added.
            flags = " ".join([
                "-cp", ":".join(f"/usr/share/java/{jar}.jar" for jar in
                                ("zookeeper", "netty-codec", "netty-resolver")),
                "-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
                "-Dzookeeper.client.secure=true",
                f"-Dzookeeper.ssl.trustStore.location={self.pki.ca_cert}",
                "-Dzookeeper.ssl.trustStore.type=PEM",
                f"-Dzookeeper.ssl.keyStore.location={key_store}",
                "-Dzookeeper.ssl.keyStore.type=PEM"])
            proc = subprocess.Popen(
                [ZKCLI, "-waitforconnection", "-timeout", "20000", "-server",
                 f"localhost:{self.tls_port}"], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                env=dict(os.environ, CLIENT_JVMFLAGS=flags), start_new_session=True)
            try:
                out, _ = proc.communicate("create /cli-tls hello\nget /cli-tls\nquit\n",
                                          timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, _ = proc.communicate()
                self.fail(f"zkCli.sh did not end within 60 s:\n{out}")
            self.assertIn("Created /cli-tls", out)
            self.assertIn("\nhello\n", out)
            self.assertEqual(server.request("GET", "/v1/kv//cli-tls?raw").body, b"hello")

    def test_the_flag_needs_tls_files(self):
        done = subprocess.run([tenure_bin(), "server", "-dev", "-http-addr",
                               f"127.0.0.1:{free_port()}", "-raft-addr",
                               f"127.0.0.1:{free_port()}", "-grpc-addr", "off", "-zk-addr", "off",
                               "-zk-tls-addr", f"127.0.0.1:{free_port()}"],
                              capture_output=True, text=True, timeout=30)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("-zk-tls-addr needs -tls-cert-file and -tls-key-file", done.stderr)

    def test_sighup_reloads_the_certificate(self):
        cert = os.path.join(self.dir, "zk-live.pem")
        key = os.path.join(self.dir, "zk-live-key.pem")
        shutil.copy(self.pki.server_cert, cert)
        shutil.copy(self.pki.server_key, key)
        with self.server(cert=cert, key=key) as server:
            zk = self.kazoo(self.tls_port, use_ssl=True, verify_certs=True, ca=self.pki.ca_cert)
            states = []
            zk.add_listener(states.append)
            self.assertEqual(peer_common_name(self.tls_port, self.pki.ca_cert), "server.dc1.tenure")
            renewed_cert, renewed_key = self.pki.issue("zk-renewed", "renewed.dc1.tenure",
                                                       "DNS:localhost,IP:127.0.0.1")
            shutil.copy(renewed_cert, cert)
            shutil.copy(renewed_key, key)
            os.kill(server.process.pid, signal.SIGHUP)
            poll_until(lambda: peer_common_name(self.tls_port, self.pki.ca_cert) ==
                       "renewed.dc1.tenure", timeout=10, message="the renewed certificate served")
            # The connection made before the reload goes on.
            zk.create("/after-reload", b"y")
            self.assertEqual(zk.get("/after-reload")[0], b"y")
            self.assertEqual(states, [], "the connection was lost at the reload")

    def test_a_follower_splices_over_tls(self):
        """Servers with only a TLS port that requires client certificates:
        a follower dials the leader's with its own certificate (decision
        0056, "Followers"), and a kazoo client given the follower alone
        works as against the leader."""
        tls_args = ["-tls-cert-file", self.pki.server_cert, "-tls-key-file", self.pki.server_key,
                    "-tls-ca-file", self.pki.ca_cert, "-tls-verify-incoming"]
        cluster = Cluster(3, extra_args=("-session-ttl-multiplier", "1", *tls_args,
                                         "-zk-tls-addr", "x"))
        for member in cluster.members:
            member.zk_tls_port = free_port()
            at = member.extra_args.index("-zk-tls-addr")
            member.extra_args[at + 1] = f"127.0.0.1:{member.zk_tls_port}"
        with cluster:
            leader = cluster.leader()
            follower = next(m for m in cluster.members if m is not leader)
            certs = dict(use_ssl=True, verify_certs=True, ca=self.pki.ca_cert,
                         certfile=self.pki.client_cert, keyfile=self.pki.client_key)

            def kazoo_through_follower():
                client = KazooClient(hosts=f"localhost:{follower.zk_tls_port}", timeout=10,
                                     **certs)
                try:
                    client.start(timeout=10)
                except Exception:  # the follower knows no leader's port yet
                    stop_quietly(client)
                    return None
                self.addCleanup(stop_quietly, client)
                return client

            zk = poll_until(kazoo_through_follower, timeout=30,
                            message="kazoo connected through the follower")
            zk.create("/tls/spliced", b"through a follower", makepath=True)
            self.assertEqual(zk.get("/tls/spliced")[0], b"through a follower")
            self.assertEqual(leader.request("GET", "/v1/kv//tls/spliced?raw").body,
                             b"through a follower")


if __name__ == "__main__":
    unittest.main()
