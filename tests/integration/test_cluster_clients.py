"""Clients across the loss of the server leader (docs/cluster.md).

A 3-server cluster; `tenure run` and `tenure elect` hold leadership of a
name while the server leader is killed with kill -9. As long as renewals
reach some server within the TTL, the holder keeps a valid leadership: the
same child keeps running with the same fencing token, `is-leader` never says
anything but True, and no hook reports a deposition. One client is given all
three addresses (it moves to the next one when its server dies); the other
only a follower's address (the follower forwards its renewals to whichever
server leads).

TTL 10 s, multiplier 1: a renewal every ~3.3 s, and the guarantee (G = T/3)
holds until ~6.5 s after the last acknowledged renewal, while a server
failover takes about 1 s (docs/benchmarks.md).
"""

import os
import subprocess
import sys
import tempfile
import shutil
import time
import unittest

from tenure_testlib import Cluster, pid_alive, poll_until, stop_process, tenure_bin

TTL = "10s"
# How long the holder must stay leader after the kill: three renewal periods.
HOLD_AFTER_KILL_S = 10.0

CHILD = r'''
import os, sys, time
with open(sys.argv[1], "w") as f:
    f.write(f"{os.getpid()} {os.environ['TENURE_FENCING_TOKEN']} {os.environ['TENURE_SESSION']}\n")
while True:
    time.sleep(3600)
'''


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def leader_key_state(member, name):
    resp = member.request("GET", f"/v1/kv/service/{name}/leader")  # the leader answers
    if resp.status != 200:
        return None
    entry = resp.json()[0]
    return entry.get("Session"), entry.get("Fence")


class ClientsAcrossServerFailoverTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tenure-cluster-clients-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.cluster = Cluster(3)
        self.cluster.__enter__()
        self.addCleanup(self.cluster.close)
        self.leader = self.cluster.leader()
        self.followers = [m for m in self.cluster.members if m is not self.leader]
        # Forwarding needs the leader's member record (one write after the election).
        poll_until(lambda: self.followers[0].request("PUT", "/v1/kv/probe", b"").status == 200,
                   timeout=15, message="the follower never forwarded")

    def spawn(self, args, log_name):
        log = open(os.path.join(self.dir, log_name), "ab")
        self.addCleanup(log.close)
        proc = subprocess.Popen([tenure_bin(), *args], stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT)

        self.addCleanup(stop_process, proc)
        return proc

    def log_text(self, log_name):
        with open(os.path.join(self.dir, log_name), errors="replace") as f:
            return f.read()

    def test_run_keeps_its_child_and_token_through_the_kill_of_the_server_leader(self):
        child_file = os.path.join(self.dir, "child")
        # The leader's address first: the server it talks to is the one killed.
        addrs = ",".join([self.leader.http_addr] + [f.http_addr for f in self.followers])
        run = self.spawn(["run", "billing", "-ttl", TTL, "-lock-delay", "1s", "-http-addr", addrs,
                          "--", sys.executable, "-c", CHILD, child_file], "run.log")
        poll_until(lambda: read(child_file).endswith("\n"),
                   timeout=30, message="the child never started\n" + self.log_text("run.log"))
        pid, token, session = read(child_file).split()
        pid = int(pid)
        self.assertEqual(leader_key_state(self.followers[0], "billing")[0], session)

        self.leader.kill()
        killed = time.monotonic()
        new_leader = self.cluster.wait_leader(exclude=self.leader, timeout=20)
        # The child must stay up, with its token, through several renewals.
        deadline = killed + HOLD_AFTER_KILL_S
        while time.monotonic() < deadline:
            self.assertTrue(pid_alive(pid), "the child was stopped\n" + self.log_text("run.log"))
            self.assertIsNone(run.poll(), "tenure run exited\n" + self.log_text("run.log"))
            time.sleep(0.1)
        self.assertEqual(leader_key_state(new_leader, "billing"), (session, int(token)))
        self.assertEqual(read(child_file).split(), [str(pid), token, session])
        self.assertNotIn("lost leadership", self.log_text("run.log"))
        # The session's TTL timer was re-armed at a full TTL by the new leader,
        # and renewals reach it: the session is alive well after one TTL.
        resp = new_leader.request("GET", f"/v1/session/info/{session}")
        self.assertEqual(resp.status, 200)
        self.assertEqual(resp.json()[0]["ID"], session)
        print(f"child {pid} kept token {token} for {HOLD_AFTER_KILL_S:.0f}s after kill -9 of "
              f"the server leader (new leader {new_leader.http_addr})", flush=True)

    def test_elect_through_one_follower_stays_leader(self):
        follower = self.followers[0]
        sock = os.path.join(self.dir, "agent.sock")
        hooks = os.path.join(self.dir, "hooks")
        agent = self.spawn(["elect", "billing2", "-ttl", TTL, "-lock-delay", "1s",
                            "-candidate", "c1", "-socket", sock, "-http-addr", follower.http_addr,
                            "-on-elected", f"echo elected $TENURE_FENCING_TOKEN >> {hooks}",
                            "-on-deposed", f"echo deposed $TENURE_REASON >> {hooks}"],
                           "elect.log")

        def is_leader():
            out = subprocess.run([tenure_bin(), "is-leader", "billing2", "-socket", sock,
                                  "-timeout", "2s"], capture_output=True, text=True, timeout=10)
            return out.stdout if out.returncode == 0 else None
        poll_until(lambda: is_leader() == "True\n", timeout=30,
                   message="the agent never led\n" + self.log_text("elect.log"))

        self.leader.kill()
        killed = time.monotonic()
        answers = []
        while time.monotonic() < killed + HOLD_AFTER_KILL_S:
            answers.append(is_leader())
            self.assertIsNone(agent.poll())
            time.sleep(0.1)
        self.assertEqual(set(answers), {"True\n"},
                         f"{len(answers)} answers: {sorted(set(map(str, answers)))}\n"
                         + self.log_text("elect.log"))
        lines = read(hooks).split("\n")[:-1]
        self.assertEqual(len(lines), 1, lines)
        self.assertTrue(lines[0].startswith("elected "), lines)
        print(f"is-leader answered True {len(answers)} times in the {HOLD_AFTER_KILL_S:.0f}s "
              f"after kill -9 of the server leader; hooks: {lines}", flush=True)


if __name__ == "__main__":
    unittest.main()
