"""What a restore accepts (docs/snapshots.md): snapshot files that are whole
and well-formed but carry a field past one of the live API's limits are
refused through a real server, by `tenure snapshot restore` (exit 1) and by
PUT /v1/snapshot (400), with the sentence that names the field, and nothing
changes. The files are written by the real encoder (tests/fuzz/
forge_snapshots.cc, from unit/state/forged_states.h): the state they start
from restores; each forged one breaks one field of it. Among them the
reproductions of the finding they guard against: an applied index of
2^62 - 1 (restored with 200, it broke every later restore and, some 16,400
writes later, the restart), sessions with TTL INT64_MAX and INT64_MIN (kept
as never expiring), a lock-delay window ending at INT64_MAX (never opened),
and a key and a value past the size limits.
"""
import glob
import os
import shutil
import subprocess
import tempfile
import unittest

from tenure_testlib import DevServer, write_secret

REPRODUCTIONS = ["applied-index-2p62-1", "ttl-int64-max", "ttl-int64-min",
                 "lock-delay-int64-max", "key-too-long", "value-too-large"]


def forge(directory):
    """Runs forge_snapshots from the build tree ($TENURE_BUILD_DIR, set by ctest)."""
    build = os.environ.get("TENURE_BUILD_DIR")
    if not build:
        raise RuntimeError("TENURE_BUILD_DIR is not set; run the tests through ctest or export it")
    tool = os.path.join(build, "tests", "fuzz", "forge_snapshots")
    subprocess.run([tool, directory], check=True, capture_output=True, timeout=60)


class SnapshotLimitsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tenure-snapshot-limits-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.token = "op-" + os.urandom(16).hex()
        token_file = write_secret(self.dir, "operator.token", self.token)
        self.server = DevServer(extra_args=["-operator-token-file", token_file])
        self.addCleanup(self.server.close)
        self.server.start()
        self.files = os.path.join(self.dir, "forged")
        forge(self.files)

    def state(self):
        """Everything a restore would replace, as a client reads it."""
        kv = self.server.request("GET", "/v1/kv/?recurse")
        sessions = self.server.request("GET", "/v1/session/list")
        self.assertEqual((kv.status, sessions.status), (200, 200), kv.text + sessions.text)
        return kv.json(), sorted(s["ID"] for s in sessions.json())

    def test_forged_files_are_refused_naming_the_field_and_change_nothing(self):
        self.server.request("PUT", "/v1/kv/keep", b"1")
        self.server.create_session({"Name": "live"})
        before = self.state()
        cases = sorted(os.path.basename(p)[:-len(".snap")]
                       for p in glob.glob(os.path.join(self.files, "*.snap")))
        self.assertTrue(set(REPRODUCTIONS) <= set(cases), cases)
        env = {"CONSUL_HTTP_TOKEN": self.token}
        for name in cases:
            if name == "valid":
                continue
            with self.subTest(name):
                path = os.path.join(self.files, name + ".snap")
                with open(os.path.join(self.files, name + ".refusal")) as f:
                    refusal = f.read()
                run = self.server.cli("snapshot", "restore", path, env=env)
                self.assertEqual(run.returncode, 1, run.stdout)
                self.assertIn("Error restoring snapshot: snapshot file: ", run.stderr)
                self.assertIn(refusal, run.stderr)
                with open(path, "rb") as f:
                    resp = self.server.request("PUT", "/v1/snapshot", f.read(),
                                               headers={"X-Consul-Token": self.token})
                self.assertEqual(resp.status, 400, resp.text)
                self.assertTrue(resp.text.startswith("snapshot file: "), resp.text)
                self.assertIn(refusal, resp.text)
                self.assertEqual(self.state(), before)
        self.server.check_healthy("after the refusals")
        # The state they were forged from restores: each refusal is its one field.
        run = self.server.cli("snapshot", "restore", os.path.join(self.files, "valid.snap"),
                              env=env)
        self.assertEqual((run.returncode, run.stdout.strip()), (0, "Restored snapshot"),
                         run.stderr)
        kv, _ = self.state()
        self.assertIn("service/leader", [e["Key"] for e in kv])
        self.server.check_healthy("after the restore")


if __name__ == "__main__":
    unittest.main()
