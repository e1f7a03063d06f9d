"""The history and the dashboard of etcd elections (docs/history.md, "etcd
elections and locks"; docs/dashboard.md): two `etcdctl elect` contenders
on a dev server with its etcd port, the leader interrupted (etcdctl
resigns and revokes its lease), and

  - GET /v1/tenure/history/<name>?succession: both leaders in order, the
    second leading from the first's end, each with its key, the first
    ended by its resignation (etcdctl deletes its key, then revokes); a contender that never led is not listed; 404 for
    an election nobody led;
  - `tenure history -etcd NAME`: the same, as a table;
  - the dashboard in headless Chromium: one row for the election (not one
    per contender key), its leader by the value it proclaimed, the others
    waiting in line order, the holder changing on screen, and the
    succession's timeline.
"""

import os
import signal
import unittest

from etcd_testlib import EtcdDevServerCase
from headless_browser import Browser, chromium_binary
from tenure_testlib import poll_until

ETCDCTL = "/usr/bin/etcdctl"


class EtcdHistoryTest(EtcdDevServerCase):
    def elect(self, name, value):
        return self.start_lines([ETCDCTL, "--endpoints", self.endpoint, "elect", name, value],
                                env=dict(os.environ, ETCDCTL_API="3"))

    def succession(self, name):
        resp = self.server.request("GET", f"/v1/tenure/history/{name}?succession")
        return resp.status, (resp.json() if resp.status == 200 else None)

    def test_the_succession_of_an_etcd_election(self):
        name = "hist-elect"
        self.assertEqual(self.succession(name)[0], 404)
        alice = self.elect(name, "alice")
        poll_until(lambda: "alice" in alice.snapshot(), timeout=20, message="alice leads")
        bob = self.elect(name, "bob")
        carol = self.elect(name, "carol")
        # Both wait in line behind alice: only alice has led.
        poll_until(lambda: self.server.request("GET", f"/v1/kv/{name}/?keys").status == 200
                   and len(self.server.get_json(f"/v1/kv/{name}/?keys")) == 3, timeout=20,
                   message="three contenders' keys")
        status, records = self.succession(name)
        self.assertEqual(status, 200)
        self.assertEqual(len(records), 1)
        self.assertIsNone(records[0]["EndedAt"])
        first_key = records[0]["Key"]
        self.assertTrue(first_key.startswith(name + "/"))
        self.assertEqual(records[0]["GrantIndex"], records[0]["Fence"])
        # carol gives up before her turn: she never leads.
        carol.process.send_signal(signal.SIGINT)
        carol.process.wait(timeout=20)
        # alice is interrupted: etcdctl resigns (deletes her key) and
        # revokes her lease; bob leads.
        alice.process.send_signal(signal.SIGINT)
        alice.process.wait(timeout=20)
        poll_until(lambda: "bob" in bob.snapshot(), timeout=20, message="bob leads")
        status, records = self.succession(name)
        self.assertEqual([r["EndCause"] for r in records], ["delete", ""], records)
        self.assertEqual(records[0]["Key"], first_key)
        self.assertNotEqual(records[1]["Key"], first_key)
        self.assertGreater(records[1]["Fence"], records[0]["Fence"])
        self.assertEqual(records[1]["GrantIndex"], records[0]["EndIndex"])
        self.assertEqual(records[1]["GrantedAt"], records[0]["EndedAt"])
        # The CLI shows the same.
        done = self.server.cli("history", "-etcd", name)
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = done.stdout.splitlines()
        self.assertEqual(lines[0].split("\t"),
                         ["FENCE", "KEY", "NODE", "SESSION NAME", "LED FROM", "LED FOR", "ENDED"])
        self.assertEqual([line.split("\t")[1] for line in lines[1:]],
                         [records[0]["Key"], records[1]["Key"]])
        self.assertEqual([line.split("\t")[-1] for line in lines[1:]], ["delete", "(held)"])
        done = self.server.cli("history", "-etcd", "nobody-led-this")
        self.assertEqual(done.returncode, 1)
        self.assertIn("no history for etcd election", done.stderr)
        done = self.server.cli("history", "-etcd", name, "-key", "x")
        self.assertEqual(done.returncode, 2)

    @unittest.skipIf(chromium_binary() is None, "chromium is not installed (scripts/setup)")
    def test_the_dashboard_shows_an_etcd_election_as_one_row(self):
        name = "dash-elect"
        alice = self.elect(name, "alice")
        poll_until(lambda: "alice" in alice.snapshot(), timeout=20, message="alice leads")
        self.elect(name, "bob")
        poll_until(lambda: len(self.server.get_json(f"/v1/kv/{name}/?keys")) == 2, timeout=20,
                   message="two contenders' keys")
        row = f'tr.election[data-key="{name}/"]'
        with Browser(width=1100) as browser:
            browser.navigate(f"http://{self.server.http_addr}/ui/")
            browser.wait_for(f"document.querySelector('{row}')", message="no etcd row")
            browser.wait_for(f"document.querySelector('{row} td.holder').textContent"
                             ".startsWith('alice @ ')", message="alice not shown as leader")
            self.assertEqual(browser.text(f"{row} td.key"), f"{name} (etcd)")
            self.assertTrue(browser.text(f"{row} td.waiting").startswith("bob @ "))
            # One row, none for the contenders' own keys.
            self.assertEqual(browser.evaluate(
                f"[...document.querySelectorAll('tr.election')].filter(r => "
                f"r.dataset.key.startsWith('{name}')).length"), 1)
            alice.process.send_signal(signal.SIGINT)
            alice.process.wait(timeout=20)
            browser.wait_for(f"document.querySelector('{row} td.holder').textContent"
                             ".startsWith('bob @ ')", message="bob never shown as leader")
            self.assertEqual(browser.text(f"{row} td.waiting"), "none")
            timeline = f'.timeline[data-key="{name}/"]'
            browser.wait_for(f"document.querySelectorAll('{timeline} li').length === 2",
                             message="no two-leader timeline")
            self.assertEqual(browser.text(f"{timeline} h3"), f"{name} (etcd)")
            items = browser.evaluate(f"[...document.querySelectorAll('{timeline} li')]"
                                     ".map(e => e.textContent)")
            self.assertRegex(items[0], rf"^fence \d+ · {name}/[0-9a-f]+ \(etcd lease\) @ .+"
                                       r" → .+ \(delete\)$")
            self.assertRegex(items[1], r"→ now \(held\)$")


if __name__ == "__main__":
    unittest.main()
