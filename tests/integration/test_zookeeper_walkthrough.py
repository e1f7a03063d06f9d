"""docs/zookeeper.md's walkthrough, run as a new user would: the `sh`
blocks of its "Walkthrough" section, in order, as one bash script in an
empty directory with `tenure` on the PATH. Only the dev server's fixed
addresses change: `tenure server -dev` gets free ports for its HTTP, raft
and ZooKeeper listeners (so the test can share the machine), and the
page's 127.0.0.1:2181 and 127.0.0.1:8500 become them.

Then checks what the page says each step gives: imok; zkCli.sh's node and
its value; the same value through Consul's API; node-1 leading with two
contenders in line, then node-2 after node-1 is killed; the server's mode.
"""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from tenure_testlib import free_port, walkthrough_script

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, "..", "..", "docs", "zookeeper.md")


class ZooKeeperWalkthroughTest(unittest.TestCase):
    def setUp(self):
        self.bin = os.environ.get("TENURE_BIN")
        self.assertTrue(self.bin and os.access(self.bin, os.X_OK),
                        "TENURE_BIN must name the tenure binary")
        self.dir = tempfile.mkdtemp(prefix="tenure-zk-walkthrough-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

    def test_the_page_runs_as_written(self):
        with open(DOC, encoding="utf-8") as f:
            script = walkthrough_script(f.read())
        http, raft, zk = (f"127.0.0.1:{free_port()}" for _ in range(3))
        self.assertIn("tenure server -dev >", script)
        script = script.replace(
            "tenure server -dev >",
            f"tenure server -dev -http-addr {http} -raft-addr {raft} -grpc-addr off "
            f"-zk-addr {zk} >")
        for fixed, free in (("127.0.0.1:2181", zk), ("127.0.0.1:8500", http),
                            ("127.0.0.1/2181", zk.replace(":", "/"))):
            self.assertIn(fixed, script)
            script = script.replace(fixed, free)
        work = os.path.join(self.dir, "work")
        bindir = os.path.join(self.dir, "bin")
        os.mkdir(work)
        os.mkdir(bindir)
        os.symlink(self.bin, os.path.join(bindir, "tenure"))
        # The page's python3 is Debian's, which sees python3-kazoo.
        os.symlink("/usr/bin/python3", os.path.join(bindir, "python3"))
        page = os.path.join(self.dir, "page.sh")
        with open(page, "w", encoding="utf-8") as f:
            f.write(script)
        runner = os.path.join(self.dir, "run.sh")
        with open(runner, "w", encoding="utf-8") as f:
            f.write(f"""set -euo pipefail
cd {work}
export PATH={bindir}:/usr/bin:/bin
# Every process the page starts ends with this script, whatever happens.
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
        self.assertEqual(lines[0], "imok")
        self.assertIn("hello", lines)  # zkCli.sh's get, then Consul's ?raw read
        self.assertEqual(lines.count("hello"), 2, lines)
        self.assertIn("[app, zookeeper]", lines)
        self.assertIn("leading: node-1", lines)
        contenders = [line for line in lines if line.startswith("[") and "lock" in line]
        self.assertTrue(contenders and contenders[0].count("__lock__") == 2, lines)
        self.assertIn("leading: node-2", lines)
        self.assertIn("Mode: standalone", lines)
        self.assertTrue(any(re.fullmatch(r"Zxid: 0x[0-9a-f]+", line) for line in lines), lines)


if __name__ == "__main__":
    unittest.main()
