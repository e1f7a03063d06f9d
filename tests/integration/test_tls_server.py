"""The HTTPS listener of a real `tenure server`, tried with curl, the
openssl command and python3-consul (docs/tls.md): requests over TLS, client
certificates when -tls-verify-incoming requires them, clear text to the TLS
port, -http-addr off, bad files at startup, and SIGHUP reloading the
certificate without dropping an established connection or leadership.
"""
import http.client
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tenure_testlib import DevServer, free_port, poll_until, tenure_bin  # noqa: E402
from test_pki import Pki  # noqa: E402

import consul  # noqa: E402  (python3-consul)


def curl(*args):
    return subprocess.run(["curl", "-sS", "--max-time", "10", *args], capture_output=True,
                          text=True, timeout=30)


def log_line(path, text):
    """The first line of the file at `path` that holds `text`, else None."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return next((line for line in f if text in line), None)


def peer_common_name(port, ca_file):
    context = ssl.create_default_context(cafile=ca_file)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            subject = dict(field[0] for field in tls.getpeercert()["subject"])
            return subject["commonName"]


class RecordingRelay:
    """A TCP relay that keeps every byte it carries: an eavesdropper's view."""

    def __init__(self, target_port):
        self.target_port = target_port
        self.recorded = bytearray()
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=10)
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                with self.lock:
                    self.recorded += data
                sink.sendall(data)
        except OSError:
            pass
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        self.listener.close()


class TlsServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="tenure-tls-")
        cls.pki = Pki(cls.dir)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def server(self, *more, cert=None, key=None):
        self.https_port = free_port()
        args = ["-https-addr", f"127.0.0.1:{self.https_port}",
                "-tls-cert-file", cert or self.pki.server_cert,
                "-tls-key-file", key or self.pki.server_key,
                "-tls-ca-file", self.pki.ca_cert, *more]
        return DevServer(extra_args=args)

    def url(self, path):
        return f"https://localhost:{self.https_port}{path}"

    def test_curl_and_python_consul_over_https(self):
        with self.server() as server:
            put = curl("--cacert", self.pki.ca_cert, "-X", "PUT", "--data", "over tls",
                       self.url("/v1/kv/tls/x"))
            self.assertEqual((put.returncode, put.stdout), (0, "true"), put.stderr)
            got = curl("--cacert", self.pki.ca_cert, self.url("/v1/kv/tls/x?raw"))
            self.assertEqual(got.stdout, "over tls")

            client = consul.Consul(host="localhost", port=self.https_port, scheme="https",
                                   verify=self.pki.ca_cert)
            self.assertTrue(client.kv.put("tls/y", "from python-consul"))
            _, entry = client.kv.get("tls/y")
            self.assertEqual(entry["Value"], b"from python-consul")

            # No CA: curl refuses the server (exit 60), and nothing falls back to clear text.
            untrusting = curl(self.url("/v1/kv/tls/x"))
            self.assertEqual(untrusting.returncode, 60, untrusting.stderr)
            # Clear text to the TLS port: Go's answer, in clear.
            plain = curl("-w", "%{http_code}", f"http://127.0.0.1:{self.https_port}/v1/kv/tls/x")
            self.assertEqual(plain.stdout,
                             "Client sent an HTTP request to an HTTPS server.\n400")
            # TLS to the plain port: refused, and the plain port still serves.
            wrong_port = curl("--cacert", self.pki.ca_cert, f"https://{server.http_addr}/")
            self.assertNotEqual(wrong_port.returncode, 0)
            self.assertEqual(curl(f"{server.url}/v1/kv/tls/x?raw").stdout, "over tls")

    def test_no_client_byte_is_in_clear_over_https(self):
        marker = "eavesdropped-" + os.urandom(8).hex()
        with self.server() as server:
            plain = RecordingRelay(int(server.http_addr.rsplit(":", 1)[1]))
            tls = RecordingRelay(self.https_port)
            try:
                put = curl("-X", "PUT", "--data", marker,
                           f"http://127.0.0.1:{plain.port}/v1/kv/capture/plain")
                self.assertEqual(put.stdout, "true")
                # The name checked is localhost's; the relay is on another port.
                put = curl("--cacert", self.pki.ca_cert, "--connect-to",
                           f"localhost:{tls.port}:127.0.0.1:{tls.port}", "-X", "PUT",
                           "--data", marker, f"https://localhost:{tls.port}/v1/kv/capture/tls")
                self.assertEqual(put.stdout, "true", put.stderr)
                got = curl("--cacert", self.pki.ca_cert,
                           f"https://localhost:{tls.port}/v1/kv/capture/tls?raw")
                self.assertEqual(got.stdout, marker)
            finally:
                plain.close()
                tls.close()
            self.assertIn(marker.encode(), bytes(plain.recorded))  # the check can fail
            self.assertIn(b"PUT /v1/kv/capture/plain", bytes(plain.recorded))
            recorded = bytes(tls.recorded)
            self.assertGreater(len(recorded), 1000)
            self.assertNotIn(marker.encode(), recorded)
            self.assertNotIn(b"/v1/kv/capture", recorded)
            self.assertNotIn(b"HTTP/1.1", recorded)

    def test_verify_incoming_needs_a_certificate_from_the_ca(self):
        with self.server("-tls-verify-incoming"):
            good = curl("--cacert", self.pki.ca_cert, "--cert", self.pki.client_cert,
                        "--key", self.pki.client_key, self.url("/v1/status/leader"))
            self.assertEqual(good.returncode, 0, good.stderr)
            self.assertTrue(good.stdout.startswith('"127.0.0.1:'), good.stdout)
            without = curl("--cacert", self.pki.ca_cert, self.url("/v1/status/leader"))
            self.assertNotEqual(without.returncode, 0)
            self.assertEqual(without.stdout, "")
            stranger = curl("--cacert", self.pki.ca_cert, "--cert", self.pki.stranger_cert,
                            "--key", self.pki.stranger_key, self.url("/v1/status/leader"))
            self.assertNotEqual(stranger.returncode, 0)
            self.assertEqual(stranger.stdout, "")
            client = consul.Consul(host="localhost", port=self.https_port, scheme="https",
                                   verify=self.pki.ca_cert,
                                   cert=(self.pki.client_cert, self.pki.client_key))
            self.assertTrue(client.kv.put("mtls", "yes"))

    def test_http_off_leaves_only_the_tls_listener(self):
        https_port = free_port()
        raft_port = free_port()
        process = subprocess.Popen(
            [tenure_bin(), "server", "-dev", "-http-addr", "off", "-raft-addr",
             f"127.0.0.1:{raft_port}", "-https-addr", f"127.0.0.1:{https_port}",
             "-tls-cert-file", self.pki.server_cert, "-tls-key-file", self.pki.server_key],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            poll_until(lambda: curl("--cacert", self.pki.ca_cert,
                                    f"https://localhost:{https_port}/v1/status/leader"
                                    ).stdout.startswith('"127.0.0.1'),
                       timeout=30, message="the TLS listener answers with a leader")
            # The process listens on the TLS and raft ports and nowhere else.
            listening = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True,
                                       timeout=10).stdout
            ports = sorted(int(line.split()[3].rsplit(":", 1)[1])
                           for line in listening.splitlines() if f"pid={process.pid}," in line)
            self.assertEqual(ports, sorted([https_port, raft_port]))
        finally:
            process.send_signal(signal.SIGTERM)
            _, err = process.communicate(timeout=20)
        self.assertIn(f"serving the Consul API on https://127.0.0.1:{https_port}", err)

    def test_acls_off_warning_names_the_https_address(self):
        """Without ACLs a server (not -dev) warns who may write every key. With
        -http-addr off that is whoever reaches the HTTPS address, and with
        -tls-verify-incoming whoever also holds a client certificate from the CA."""
        for verify in (False, True):
            with self.subTest(verify_incoming=verify):
                https_port = free_port()
                data_dir = tempfile.mkdtemp(dir=self.dir)
                log_path = os.path.join(data_dir, "server.log")
                args = [tenure_bin(), "server", "-data-dir", data_dir, "-http-addr", "off",
                        "-raft-addr", f"127.0.0.1:{free_port()}",
                        "-https-addr", f"127.0.0.1:{https_port}",
                        "-tls-cert-file", self.pki.server_cert,
                        "-tls-key-file", self.pki.server_key, "-tls-ca-file", self.pki.ca_cert]
                if verify:
                    args.append("-tls-verify-incoming")
                with open(log_path, "wb") as log:
                    process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log,
                                               stderr=subprocess.STDOUT)
                try:
                    line = poll_until(lambda: log_line(log_path, "WARNING: ACLs are off"),
                                      timeout=30, message="the ACLs-off warning is logged")
                finally:
                    process.send_signal(signal.SIGTERM)
                    process.wait(timeout=20)
                who = f"https://127.0.0.1:{https_port}"
                if verify:
                    who += f" with a client certificate from {self.pki.ca_cert}"
                self.assertIn(f"anyone who can reach {who} can read and write every key", line)
                self.assertNotIn("reach off", line)

    def test_bad_files_stop_the_start_with_their_names(self):
        cases = [
            (["-tls-cert-file", self.pki.server_cert, "-tls-key-file", self.pki.client_key],
             f"tenure server: TLS: key {self.pki.client_key} does not match certificate "
             f"{self.pki.server_cert}"),
            (["-tls-cert-file", "/nonexistent/cert.pem", "-tls-key-file", self.pki.server_key],
             "tenure server: TLS: certificate /nonexistent/cert.pem: No such file or directory"),
            (["-tls-cert-file", self.pki.server_cert],
             "tenure server: -tls-cert-file and -tls-key-file go together"),
            ([], "tenure server: -https-addr needs -tls-cert-file and -tls-key-file"),
        ]
        for flags, expected in cases:
            run = subprocess.run([tenure_bin(), "server", "-dev", "-https-addr",
                                  f"127.0.0.1:{free_port()}", *flags],
                                 capture_output=True, text=True, timeout=30)
            self.assertEqual(run.returncode, 1, run.stderr)
            self.assertEqual(run.stderr.strip(), expected)
        run = subprocess.run([tenure_bin(), "server", "-dev", "-http-addr", "off"],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(run.stderr.strip(), "tenure server: -http-addr off needs -https-addr: "
                                             "the API must listen somewhere")

    def test_sighup_reloads_the_certificate_and_keeps_connections_and_leadership(self):
        cert = os.path.join(self.dir, "live.pem")
        key = os.path.join(self.dir, "live-key.pem")
        shutil.copy(self.pki.server_cert, cert)
        shutil.copy(self.pki.server_key, key)
        with self.server(cert=cert, key=key) as server:
            self.assertEqual(peer_common_name(self.https_port, self.pki.ca_cert),
                             "server.dc1.tenure")
            kept = http.client.HTTPSConnection(
                "localhost", self.https_port, timeout=10,
                context=ssl.create_default_context(cafile=self.pki.ca_cert))
            kept.request("PUT", "/v1/kv/before", body=b"1")
            self.assertEqual(kept.getresponse().read(), b"true")
            leader = curl(f"{server.url}/v1/status/leader").stdout

            # Broken new files: the old certificate keeps serving, and the log says why.
            with open(cert, "w") as f:
                f.write("not a certificate\n")
            server.process.send_signal(signal.SIGHUP)
            poll_until(lambda: "SIGHUP: keeping the old TLS certificates: certificate "
                       + cert in server.log(), timeout=10, message="the refusal is logged")
            self.assertEqual(peer_common_name(self.https_port, self.pki.ca_cert),
                             "server.dc1.tenure")

            renewed_cert, renewed_key = self.pki.issue("renewed", "renewed.dc1.tenure",
                                                       "DNS:localhost,IP:127.0.0.1")
            shutil.copy(renewed_cert, cert)
            shutil.copy(renewed_key, key)
            server.process.send_signal(signal.SIGHUP)
            poll_until(lambda: peer_common_name(self.https_port, self.pki.ca_cert)
                       == "renewed.dc1.tenure", timeout=10,
                       message="new connections get the reloaded certificate")
            kept.request("GET", "/v1/kv/before?raw")
            self.assertEqual(kept.getresponse().read(), b"1")  # the old connection lives on
            kept.close()
            self.assertEqual(curl(f"{server.url}/v1/status/leader").stdout, leader)
            self.assertIn("SIGHUP: reloaded TLS certificate", server.log())
            self.assertTrue(server.alive())


if __name__ == "__main__":
    unittest.main()
