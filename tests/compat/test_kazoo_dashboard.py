"""kazoo's election on the dashboard (docs/dashboard.md): the contenders'
ephemeral sequential nodes under the election's path are one row,
`<path> (ZooKeeper)`, the contender with the lowest node leading, shown by
the identifier kazoo stores in its node, the others waiting in line order;
when the leader's client goes, the next one is shown leading and the
timeline has both leaderships, from the election's succession
(docs/history.md). The page in headless Chromium against a real server,
the contenders kazoo from Debian (python3-kazoo), unmodified."""

import threading
import unittest

from kazoo.client import KazooClient

from headless_browser import Browser, chromium_binary
from tenure_testlib import DevServer, free_port, poll_until, stop_quietly


@unittest.skipIf(chromium_binary() is None, "chromium is not installed (scripts/setup)")
class KazooDashboardTest(unittest.TestCase):
    def contender(self, zk_addr, path, name, held):
        """A kazoo client running for election at `path` as `name` in a
        thread; `held` is set once it leads, and it leads until `stop` is set."""
        client = KazooClient(hosts=zk_addr, timeout=10)
        client.start(timeout=15)
        self.addCleanup(stop_quietly, client)
        election = client.Election(path, name)
        stop = threading.Event()

        def lead():
            held.set()
            stop.wait(60)

        thread = threading.Thread(target=election.run, args=(lead,), daemon=True)
        thread.start()
        return client, stop, thread

    def test_a_kazoo_election_is_one_row_with_its_succession(self):
        zk_addr = f"127.0.0.1:{free_port()}"
        path = "/dash/election"
        with DevServer(extra_args=["-zk-addr", zk_addr]) as server, \
                Browser(width=1100) as browser:
            alice_leads, bob_leads = threading.Event(), threading.Event()
            alice, alice_stop, alice_thread = self.contender(zk_addr, path, "alice", alice_leads)
            self.assertTrue(alice_leads.wait(20), "alice never led")
            _bob, bob_stop, bob_thread = self.contender(zk_addr, path, "bob", bob_leads)
            poll_until(lambda: len(server.get_json(f"/v1/kv/{path}/?keys")) == 2, timeout=20,
                       message="two contenders' nodes")
            node = server.get_json("/v1/agent/self")["Config"]["NodeName"]
            row = f'tr.election[data-key="{path}/"]'
            browser.navigate(f"http://{server.http_addr}/ui/")
            browser.wait_for(f"document.querySelector('{row}')", message="no ZooKeeper row")
            browser.wait_for(f"document.querySelector('{row} td.holder').textContent === "
                             f"'alice @ {node}'", message="alice not shown leading")
            self.assertEqual(browser.text(f"{row} td.key"), f"{path} (ZooKeeper)")
            self.assertEqual(browser.text(f"{row} td.waiting"), f"bob @ {node}")
            self.assertEqual(browser.evaluate(f"document.querySelector('{row}').dataset.recipe"),
                             "ZooKeeper")
            # One row, none for the contenders' own nodes.
            self.assertEqual(browser.evaluate(
                f"[...document.querySelectorAll('tr.election')].filter(r => "
                f"r.dataset.key.startsWith('{path}')).length"), 1)
            # alice steps down (kazoo deletes her node) and her client goes.
            alice_stop.set()
            alice_thread.join(20)
            alice.stop()
            self.assertTrue(bob_leads.wait(20), "bob never led")
            browser.wait_for(f"document.querySelector('{row} td.holder').textContent === "
                             f"'bob @ {node}'", message="bob never shown leading")
            self.assertEqual(browser.text(f"{row} td.waiting"), "none")
            timeline = f'.timeline[data-key="{path}/"]'
            browser.wait_for(f"document.querySelectorAll('{timeline} li').length === 2",
                             message="no two-leader timeline")
            self.assertEqual(browser.text(f"{timeline} h3"), f"{path} (ZooKeeper)")
            items = browser.evaluate(f"[...document.querySelectorAll('{timeline} li')]"
                                     ".map(e => e.textContent)")
            self.assertRegex(items[0], rf"^fence \d+ · {path}/.+\d{{10}} \(zookeeper\) @ .+ → .+ "
                                       r"\((delete|destroy)\)$")
            self.assertRegex(items[1], r"→ now \(held\)$")
            bob_stop.set()
            bob_thread.join(20)


if __name__ == "__main__":
    unittest.main()
