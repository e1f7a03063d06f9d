"""etcd's API over TLS (`-grpc-tls-addr`, docs/tls.md): etcdctl 3.4 (gRPC
over HTTP/2, ALPN h2) and curl (the JSON gateway over HTTP/1.1) with the
cluster's CA; client certificates when -tls-verify-incoming requires them;
clear text and unknown CAs refused; the flag's refusals; SIGHUP reloading
the certificate; and a 3-server cluster whose members serve etcd only over
TLS, a follower relaying writes to the leader over TLS (decision 0055) and
`member list` naming https client URLs.
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import unittest

from tenure_testlib import Cluster, DevServer, free_port, poll_until, tenure_bin
from test_pki import Pki, peer_common_name

ETCDCTL = "/usr/bin/etcdctl"


class EtcdTlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="tenure-etcd-tls-")
        cls.pki = Pki(cls.dir)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def tls_args(self, cert=None, key=None):
        return ["-tls-cert-file", cert or self.pki.server_cert,
                "-tls-key-file", key or self.pki.server_key, "-tls-ca-file", self.pki.ca_cert]

    def server(self, *more, cert=None, key=None):
        self.port = free_port()
        return DevServer(extra_args=["-grpc-tls-addr", f"127.0.0.1:{self.port}",
                                     *self.tls_args(cert, key), *more])

    def etcdctl(self, endpoint, *args, tls=("--cacert",), check=True):
        flags = []
        if "--cacert" in tls:
            flags += ["--cacert", self.pki.ca_cert]
        if "--cert" in tls:
            flags += ["--cert", self.pki.client_cert, "--key", self.pki.client_key]
        done = subprocess.run([ETCDCTL, "--endpoints", endpoint, "--dial-timeout", "3s",
                               "--command-timeout", "10s", *flags, *args],
                              capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, ETCDCTL_API="3"))
        if check:
            self.assertEqual(done.returncode, 0, f"etcdctl {' '.join(args)}: {done.stderr}")
        return done

    def test_etcdctl_and_the_gateway_over_tls(self):
        with self.server():
            url = f"https://127.0.0.1:{self.port}"
            self.etcdctl(url, "put", "tls/k", "v")
            self.assertEqual(self.etcdctl(url, "get", "--print-value-only", "tls/k").stdout, "v\n")
            members = json.loads(self.etcdctl(url, "-w", "json", "member", "list").stdout)
            self.assertEqual(members["members"][0]["clientURLs"], [url])
            status = self.etcdctl(url, "endpoint", "status")
            self.assertIn("3.4.23", status.stdout)
            # The gateway over HTTP/1.1 on the same port.
            got = subprocess.run(["curl", "-sS", "--http1.1", "--max-time", "10", "--cacert",
                                  self.pki.ca_cert, f"https://localhost:{self.port}/v3/kv/range",
                                  "-d", '{"key": "dGxzL2s="}'],
                                 capture_output=True, text=True, timeout=30)
            self.assertEqual(got.returncode, 0, got.stderr)
            self.assertEqual(json.loads(got.stdout)["kvs"][0]["value"], "dg==")
            # Clear text to the TLS port, and a CA the client does not trust.
            refused = self.etcdctl(f"http://127.0.0.1:{self.port}", "get", "tls/k", tls=(),
                                   check=False)
            self.assertNotEqual(refused.returncode, 0)
            unknown = self.etcdctl(url, "put", "tls/unknown-ca", "x", tls=(), check=False)
            self.assertNotEqual(unknown.returncode, 0)
            self.assertEqual(self.etcdctl(url, "get", "tls/unknown-ca").stdout, "")

    def test_verify_incoming_needs_a_client_certificate_from_the_ca(self):
        with self.server("-tls-verify-incoming") as server:
            url = f"https://127.0.0.1:{self.port}"
            refused = self.etcdctl(url, "put", "tls/nocert", "x", check=False)
            self.assertNotEqual(refused.returncode, 0)
            self.etcdctl(url, "put", "tls/cert", "x", tls=("--cacert", "--cert"))
            self.assertEqual(server.request("GET", "/v1/kv/tls/nocert").status, 404)
            self.assertIn("(client certificates required)", server.log())

    def test_the_flag_needs_tls_files(self):
        for args, text in [
                (["-grpc-tls-addr", f"127.0.0.1:{free_port()}"],
                 "-grpc-tls-addr needs -tls-cert-file and -tls-key-file")]:
            done = subprocess.run([tenure_bin(), "server", "-dev", "-http-addr",
                                   f"127.0.0.1:{free_port()}", "-raft-addr",
                                   f"127.0.0.1:{free_port()}", "-grpc-addr", "off", *args],
                                  capture_output=True, text=True, timeout=30)
            self.assertNotEqual(done.returncode, 0)
            self.assertIn(text, done.stderr)

    def test_sighup_reloads_the_certificate(self):
        cert = os.path.join(self.dir, "etcd-live.pem")
        key = os.path.join(self.dir, "etcd-live-key.pem")
        shutil.copy(self.pki.server_cert, cert)
        shutil.copy(self.pki.server_key, key)
        with self.server(cert=cert, key=key) as server:
            self.assertEqual(peer_common_name(self.port, self.pki.ca_cert), "server.dc1.tenure")
            renewed_cert, renewed_key = self.pki.issue("etcd-renewed", "renewed.dc1.tenure",
                                                       "DNS:localhost,IP:127.0.0.1")
            shutil.copy(renewed_cert, cert)
            shutil.copy(renewed_key, key)
            server.process.send_signal(signal.SIGHUP)
            poll_until(lambda: peer_common_name(self.port, self.pki.ca_cert)
                       == "renewed.dc1.tenure", timeout=10,
                       message="new connections to the etcd port get the reloaded certificate")
            self.etcdctl(f"https://127.0.0.1:{self.port}", "put", "tls/after", "x")

    def test_a_follower_relays_over_tls(self):
        cluster = Cluster(3, extra_args=("-session-ttl-multiplier", "1", *self.tls_args(),
                                         "-grpc-tls-addr", "x"))
        for member in cluster.members:
            member.etcd_url = f"https://127.0.0.1:{free_port()}"
            at = member.extra_args.index("-grpc-tls-addr")
            member.extra_args[at + 1] = member.etcd_url[len("https://"):]
        with cluster:
            leader = cluster.leader()
            follower = next(m for m in cluster.members if m is not leader)
            put = self.etcdctl(follower.etcd_url, "put", "tls/relayed", "v")
            self.assertIn("OK", put.stdout)
            self.assertEqual(leader.request("GET", "/v1/kv/tls/relayed?raw").text, "v")
            want = sorted(m.etcd_url for m in cluster.members)

            def client_urls():
                members = json.loads(self.etcdctl(follower.etcd_url, "-w", "json", "member",
                                                  "list").stdout)["members"]
                return sorted(url for m in members for url in m.get("clientURLs", []))

            poll_until(lambda: client_urls() == want, timeout=20,
                       message=f"member list naming {want}")


if __name__ == "__main__":
    unittest.main()
