"""Certificates for TLS tests, made with the `openssl` command as docs/tls.md
shows an operator: a CA, a server certificate for localhost and 127.0.0.1,
a client certificate, and a second CA nobody trusts with a client
certificate of its own. Each method returns paths in the directory given.
"""
import os
import socket
import ssl
import subprocess


def _run(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


class Pki:
    def __init__(self, directory):
        self.dir = directory
        self.ca_cert, self.ca_key = self.make_ca("ca", "tenure test CA")
        self.other_ca_cert, self.other_ca_key = self.make_ca("other-ca", "another CA")
        self.server_cert, self.server_key = self.issue("server", "server.dc1.tenure",
                                                       "DNS:localhost,DNS:server.dc1.tenure,"
                                                       "IP:127.0.0.1")
        self.client_cert, self.client_key = self.issue("client", "client.dc1.tenure", None)
        self.stranger_cert, self.stranger_key = self.issue("stranger", "stranger", None,
                                                           ca=("other-ca.pem", "other-ca-key.pem"))

    def path(self, name):
        return os.path.join(self.dir, name)

    def make_ca(self, name, common_name):
        _run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", f"{name}-key.pem", "-out", f"{name}.pem", "-days", "2",
             "-subj", f"/CN={common_name}", cwd=self.dir)
        return self.path(f"{name}.pem"), self.path(f"{name}-key.pem")

    def issue(self, name, common_name, san, ca=("ca.pem", "ca-key.pem"), days=2):
        """A certificate signed by `ca` (cert, key file names in the directory)."""
        _run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", f"{name}-key.pem", "-out", f"{name}.csr", "-subj", f"/CN={common_name}",
             cwd=self.dir)
        extensions = "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth,clientAuth\n"
        if san:
            extensions += f"subjectAltName={san}\n"
        with open(self.path(f"{name}.ext"), "w") as f:
            f.write(extensions)
        _run("x509", "-req", "-in", f"{name}.csr", "-CA", ca[0], "-CAkey", ca[1],
             "-CAcreateserial", "-out", f"{name}.pem", "-days", str(days),
             "-extfile", f"{name}.ext", cwd=self.dir)
        os.chmod(self.path(f"{name}-key.pem"), 0o600)
        return self.path(f"{name}.pem"), self.path(f"{name}-key.pem")


def peer_common_name(port, ca_file):
    """The common name of the certificate a TLS server on 127.0.0.1:port
    shows, checked against ca_file for the name localhost."""
    context = ssl.create_default_context(cafile=ca_file)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            return dict(field[0] for field in tls.getpeercert()["subject"])["commonName"]
