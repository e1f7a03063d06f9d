"""The HA tier's fault run with raft over mutual TLS (docs/tls.md): three
servers whose every raft connection is TLS with certificates from one CA,
made with the openssl command for this run; kill -9 of the leader, SIGSTOP
of the leader, a partition and a one-way cut through the proxy (which
carries the TLS bytes without reading them), and a stranger sending raft
traffic in clear. The histories are checked as in test_cluster_faults_crash
and test_cluster_faults_partition.
"""
import shutil
import tempfile
import unittest

from cluster_workload import run_and_check
from test_pki import Pki


class TlsFaultsTest(unittest.TestCase):
    def test_faults_over_mutual_tls_keep_histories_linearizable_and_locks_exclusive(self):
        directory = tempfile.mkdtemp(prefix="tenure-faults-tls-")
        try:
            pki = Pki(directory)
            run_and_check(self, ["kill-leader", "pause-leader", "isolate-leader", "one-way",
                                 "stranger"],
                          server_args=["-tls-cert-file", pki.server_cert, "-tls-key-file",
                                       pki.server_key, "-tls-ca-file", pki.ca_cert])
        finally:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
