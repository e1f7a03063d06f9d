"""docs/operations.md's walkthrough, run as a new user would: the `sh` blocks of its "Walkthrough" section, in order, as one
bash script in an empty directory with `tenure` on the PATH. The page's
fixed ports (8500, 8300, 8510, 8310) are the only text changed: each becomes
a free_port(), so that the test can share the machine (and the CLI's
default address, 127.0.0.1:8500, is given as TENURE_HTTP_ADDR). The script then
waits, its servers still up, while the test opens the dashboard in headless
Chromium; closing its stdin ends it, and its EXIT trap ends every process it
started.

Then checks what the page says each step gives: the config file validates
and the server it configures answers; promtool accepts the metrics; the
election changed hands (alice, then bob with a larger fencing token, in
`tenure leader` and `tenure history`); the snapshot inspects and restores
into a fresh server holding the same keys and history; the JSON log has
each transition once, with key, session, node, fencing token and cause; the
dashboard shows bob holding the election.

Nothing is skipped: without promtool (Debian `prometheus`) or chromium the
test fails and says to run scripts/setup.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

from headless_browser import Browser, chromium_binary
from tenure_testlib import free_port, walkthrough_script

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, "..", "..", "docs", "operations.md")
PROMTOOL = "/usr/bin/promtool"
KEY = "service/web/leader"
DONE = "== the page ran to its end"


def json_lines(path):
    lines = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("{"):
                lines.append(json.loads(line))
    return lines


class OperationsWalkthroughTest(unittest.TestCase):
    def setUp(self):
        self.bin = os.environ.get("TENURE_BIN")
        self.assertTrue(self.bin and os.access(self.bin, os.X_OK),
                        "TENURE_BIN must name the tenure binary")
        self.assertTrue(os.access(PROMTOOL, os.X_OK),
                        f"{PROMTOOL} is missing: install Debian's prometheus (scripts/setup)")
        self.assertIsNotNone(chromium_binary(), "chromium is missing (scripts/setup)")
        self.dir = tempfile.mkdtemp(prefix="tenure-ops-walkthrough-")
        self.process = None

    def tearDown(self):
        if self.process is not None and self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def read(self, name):
        with open(self.path(name), encoding="utf-8", errors="replace") as f:
            return f.read()

    def run_page(self):
        with open(DOC, encoding="utf-8") as f:
            script = walkthrough_script(f.read())
        self.assertIn("tenure server -config-file server.hcl", script)
        self.ports = {}
        for fixed in ("8500", "8300", "8510", "8310"):
            self.assertIn(fixed, script)
            self.ports[fixed] = str(free_port())
        script = re.sub(r"\b(8500|8300|8510|8310)\b", lambda m: self.ports[m.group(1)], script)
        work = self.path("work")
        os.mkdir(work)
        bindir = self.path("bin")
        os.mkdir(bindir)
        os.symlink(self.bin, os.path.join(bindir, "tenure"))
        with open(self.path("page.sh"), "w", encoding="utf-8") as f:
            f.write(script)
        with open(self.path("run.sh"), "w", encoding="utf-8") as f:
            f.write(f"""set -euo pipefail
cd {work}
export PATH={bindir}:/usr/bin:/bin
unset CONSUL_HTTP_TOKEN CONSUL_HTTP_ADDR TENURE_HTTP_TOKEN
# The CLI's default agent address, 127.0.0.1:8500 on the page.
export TENURE_HTTP_ADDR=127.0.0.1:{self.ports["8500"]}
# Every process the page starts ends with this script, whatever happens.
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
source {self.path("page.sh")}
echo "{DONE}"
read -r _ || true
""")
        out = open(self.path("out.txt"), "wb")
        self.process = subprocess.Popen(["bash", self.path("run.sh")], stdin=subprocess.PIPE,
                                        stdout=out, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        out.close()
        deadline = time.monotonic() + 180
        while DONE not in self.read("out.txt"):
            if self.process.poll() is not None or time.monotonic() > deadline:
                logs = ""
                for name in ("server.log", "fresh.log", "alice.log", "bob.log"):
                    if os.path.exists(os.path.join(work, name)):
                        logs += f"\n--- {name}\n" + "\n".join(
                            self.read(os.path.join("work", name)).splitlines()[-15:])
                self.fail(f"the page's commands failed (exit {self.process.poll()}):\n"
                          + self.read("out.txt") + logs)
            time.sleep(0.1)
        return work

    def test_the_page_runs_as_written(self):
        work = self.run_page()
        out = self.read("out.txt")
        w = lambda name: os.path.join("work", name)  # noqa: E731

        # 1. The config file validates, and the server it configures answers.
        self.assertIn("Configuration is valid!\n", out)
        self.assertIn("ok", out.splitlines())
        self.assertTrue(os.path.isdir(os.path.join(work, "data")), "data_dir not used")

        # 2. promtool found nothing, on the text of a real scrape.
        self.assertIn("promtool: no problems\n", out)
        self.assertIn("tenure_raft_is_leader 1\n", out)
        metrics = self.read(w("metrics.txt"))
        self.assertIn("# TYPE tenure_http_requests_total counter", metrics)
        check = subprocess.run([PROMTOOL, "check", "metrics"], input=metrics, text=True,
                               capture_output=True, timeout=60)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)

        # 3. The election changed hands: bob leads with a larger token.
        leader = re.search(r'^\{"Candidate":"bob"\}\t\(session (\S+), fencing token (\d+)\)$',
                           out, re.M)
        self.assertIsNotNone(leader, out)
        bob_session, bob_fence = leader.group(1), int(leader.group(2))
        history = json.loads(self.read(w("history-" + self.ports["8500"] + ".json")))
        self.assertEqual(len(history), 2, history)
        alice, bob = history
        self.assertEqual(alice["EndCause"], "release")
        self.assertEqual((bob["Session"], bob["Fence"], bob["EndCause"]),
                         (bob_session, bob_fence, ""))
        self.assertLess(alice["Fence"], bob["Fence"])
        self.assertRegex(out, rf"(?m)^{alice['Fence']}\s+ops-1\s.*\srelease$")
        self.assertRegex(out, rf"(?m)^{bob_fence}\s+ops-1\s.*\(held\)$")

        # 4. The snapshot: inspected, and restored into a fresh server that
        # then holds the same keys and the same history.
        self.assertRegex(out, r"(?m)^Saved and verified snapshot to index \d+$")
        self.assertRegex(out, r"(?m)^ Locks\s+\d+$")
        self.assertRegex(out, r"(?m)^ SHA-256\s+[0-9a-f]{64}$")
        self.assertIn("Restored snapshot\n", out)
        self.assertIn("the fresh server holds the same keys and history\n", out)
        restored = json.loads(self.read(w("history-" + self.ports["8510"] + ".json")))
        self.assertEqual(restored, history)
        keys = [e["Key"] for e in json.loads(self.read(w("kv-" + self.ports["8510"] + ".json")))]
        self.assertIn(KEY, keys)

        # 5. The JSON log: each transition once, with its fields.
        lock_lines = [line for line in json_lines(os.path.join(work, "server.log"))
                      if line.get("component") == "lock" and line.get("key") == KEY]
        events = [(line["event"], line["session"], line["fence"], line.get("cause"))
                  for line in lock_lines]
        self.assertEqual(events, [
            ("granted", alice["Session"], alice["Fence"], None),
            ("ended", alice["Session"], alice["Fence"], "release"),
            ("granted", bob_session, bob_fence, None),
        ], lock_lines)
        for line in lock_lines:
            self.assertEqual(line["node"], "ops-1")
            self.assertEqual(line["level"], "info")
        self.assertGreaterEqual(out.count('"component":"lock"'), 3)  # the page's grep

        # 6. The dashboard: the page's curl, then a browser showing bob.
        self.assertIn("<title>tenure dashboard</title>", out)
        url = f"http://127.0.0.1:{self.ports['8500']}/ui/"
        with Browser(width=1100) as browser:
            browser.navigate(url)
            browser.wait_for(f"""(() => {{ const c = document.querySelector(
                'tr.election[data-key="{KEY}"] td.holder');
                return c && c.textContent === 'bob @ ops-1'; }})()""",
                             message="the dashboard does not show bob holding web")
            self.assertEqual(browser.text(f'tr.election[data-key="{KEY}"] td.fence'),
                             str(bob_fence))


if __name__ == "__main__":
    unittest.main()
