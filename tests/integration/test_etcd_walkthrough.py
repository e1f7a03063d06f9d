"""docs/etcd.md's walkthrough, run as a new user would: the `sh` blocks of
its "Walkthrough" section, in order, as one bash script in an empty
directory with `tenure` on the PATH. Only the dev server's fixed addresses
change: `tenure server -dev` gets free ports for its HTTP, raft and etcd
listeners (so the test can share the machine), etcdctl is pointed at the
etcd one with ETCDCTL_ENDPOINTS, and the page's 127.0.0.1:8500 becomes the
HTTP one.

Then checks what the page says each step gives: the health line; the key's
value through etcd and Consul; the watch's replay of both puts; the lease's
key gone after the revoke; the command run under the lock; node-1 leading,
then node-2 after node-1 is killed and its lease revoked.
"""
import os
import shutil
import subprocess
import tempfile
import unittest

from tenure_testlib import free_port, walkthrough_script

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, "..", "..", "docs", "etcd.md")


class EtcdWalkthroughTest(unittest.TestCase):
    def setUp(self):
        self.bin = os.environ.get("TENURE_BIN")
        self.assertTrue(self.bin and os.access(self.bin, os.X_OK),
                        "TENURE_BIN must name the tenure binary")
        self.dir = tempfile.mkdtemp(prefix="tenure-etcd-walkthrough-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

    def test_the_page_runs_as_written(self):
        with open(DOC, encoding="utf-8") as f:
            script = walkthrough_script(f.read())
        http, raft, etcd = (f"127.0.0.1:{free_port()}" for _ in range(3))
        self.assertIn("tenure server -dev >", script)
        script = script.replace(
            "tenure server -dev >",
            f"tenure server -dev -http-addr {http} -raft-addr {raft} -grpc-addr {etcd} >")
        self.assertIn("127.0.0.1:8500", script)
        script = script.replace("127.0.0.1:8500", http)
        work = os.path.join(self.dir, "work")
        bindir = os.path.join(self.dir, "bin")
        os.mkdir(work)
        os.mkdir(bindir)
        os.symlink(self.bin, os.path.join(bindir, "tenure"))
        page = os.path.join(self.dir, "page.sh")
        with open(page, "w", encoding="utf-8") as f:
            f.write(script)
        runner = os.path.join(self.dir, "run.sh")
        with open(runner, "w", encoding="utf-8") as f:
            f.write(f"""set -euo pipefail
cd {work}
export PATH={bindir}:/usr/bin:/bin
export ETCDCTL_ENDPOINTS={etcd}
# Every process the page starts ends with this script, whatever happens
# (SIGKILL: an etcdctl elect that is asked to stop resigns first, which
# could wait on a server stopping beside it).
trap 'kill -9 $(jobs -p) 2>/dev/null || true' EXIT
source {page}
""")
        done = subprocess.run(["bash", runner], capture_output=True, text=True, timeout=180)
        out = done.stdout
        logs = ""
        if os.path.exists(os.path.join(work, "server.log")):
            with open(os.path.join(work, "server.log"), encoding="utf-8") as f:
                logs = "\n".join(f.read().splitlines()[-15:])
        self.assertEqual(done.returncode, 0, f"{out}\n{done.stderr}\n--- server.log\n{logs}")
        lines = out.splitlines()

        self.assertIn(f"{etcd} is healthy", done.stderr)  # etcdctl writes it there
        self.assertEqual(lines[lines.index("OK") + 1:lines.index("OK") + 3],
                         ["config/color", "blue"])
        self.assertIn("green", lines)  # Consul's ?raw read of the etcd key
        with open(os.path.join(work, "watch.out"), encoding="utf-8") as f:
            self.assertEqual(f.read().splitlines()[:6],
                             ["PUT", "config/color", "blue", "PUT", "config/color", "green"])
        self.assertRegex(out, r"lease [0-9a-f]+ granted with TTL\(30s\), remaining\(\d+s\), "
                              r"attached keys\(\[service/leader\]\)")
        revoked = out.index(" revoked\n")
        self.assertEqual(out[revoked:].splitlines()[1], "0")  # the leased key went with it
        self.assertIn("the backup runs under the lock", lines)
        # The leader before the kill (the sorted read), then node-2's own output.
        self.assertIn("node-1", lines)
        with open(os.path.join(work, "node2.out"), encoding="utf-8") as f:
            node2 = f.read().splitlines()
        self.assertEqual(len(node2), 2, node2)
        self.assertTrue(node2[0].startswith("election/web/"), node2)
        self.assertEqual(node2[1], "node-2")
        self.assertEqual(lines[-1], "0")  # node-2 resigned when interrupted


if __name__ == "__main__":
    unittest.main()
