"""The client side of the fair acquire (docs/leadership.md, "The queue"):
`tenure elect`, `tenure run` and `tenure lock` wait in the key's FIFO queue,
so candidates lead and contenders run in the order they arrived; `tenure
leader NAME` lists the line of succession; `tenure resign` hands the key to
the next in line, `tenure resign -to C` to any candidate in the line; a
contender that gives up leaves the queue. The same tests
run against a server started with -fair-queue=false, which ignores `queue`
as Consul does: the clients fall back to blocking reads (no overlap, everyone
runs, the line is empty)."""

import json
import os
import signal
import sys
import threading
import time
import unittest
import urllib.parse

import consul

from test_elect import Agent
from tenure_testlib import SharedServerTestCase, poll_until, stop_process

LOCK_FLAG = 3304740253564472344  # Consul's api.Lock flag, as tenure lock -n 1 uses it

# The child: waits for GATE (so that all contenders are lined up first),
# then appends "enter ID T", sleeps, appends "exit ID T" to LOG (O_APPEND:
# the file's order is the order of the writes).
CHECKER = r"""
import os, sys, time
log, ident, pause, gate = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
deadline = time.monotonic() + 60
while not os.path.exists(gate) and time.monotonic() < deadline:
    time.sleep(0.02)
fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
os.write(fd, f"enter {ident} {time.monotonic_ns()}\n".encode())
time.sleep(pause)
os.write(fd, f"exit {ident} {time.monotonic_ns()}\n".encode())
"""


def read(path):
    with open(path) as fh:
        return fh.read()


def runs(path):
    """The ids in the order they entered; fails when two were inside at once
    or an exit has no enter."""
    order, inside = [], None
    with open(path) as fh:
        for line in fh:
            what, ident, _ = line.split()
            if what == "enter":
                if inside is not None:
                    raise AssertionError(f"{ident} entered while {inside} was inside:\n"
                                         + read(path))
                inside = ident
                order.append(ident)
            else:
                if inside != ident:
                    raise AssertionError(f"exit of {ident} without its enter:\n" + read(path))
                inside = None
    return order


class FairClientsTest(SharedServerTestCase):
    server_args = ("-session-ttl-multiplier", "1")
    fair = True  # the server serves the queue

    def setUp(self):
        super().setUp()
        self.checker = os.path.join(self.dir, "checker.py")
        with open(self.checker, "w") as fh:
            fh.write(CHECKER)
        self.log = os.path.join(self.dir, "log")
        self.gate = os.path.join(self.dir, "gate")
        self.agents = []
        self.addCleanup(self.stop_agents)

    def stop_agents(self):
        for agent in self.agents:
            if agent.process.poll() is None:
                agent.process.send_signal(signal.SIGTERM)
        for agent in self.agents:
            agent.stop()

    # --- reading the server ------------------------------------------------------

    def queue(self, key):
        r = self.server.request("GET", "/v1/tenure/queue/" + urllib.parse.quote(key))
        self.assertEqual(r.status, 200, r.text)
        return [row["Session"] for row in r.json()]

    def holder(self, key):
        r = self.server.request("GET", "/v1/kv/" + urllib.parse.quote(key))
        if r.status == 404:
            return ""
        return r.json()[0].get("Session", "") or ""

    def grants(self, key):
        """The sessions of the key's lock history, oldest grant first."""
        r = self.server.request("GET", "/v1/tenure/history/" + urllib.parse.quote(key))
        self.assertEqual(r.status, 200, r.text)
        return [g["Session"] for g in r.json()]

    def line_up(self, key, count, registered=None):
        """Waits until the `count`-th contender is lined up: in the queue
        (count - 1 waiters behind the holder) when the server queues; else
        until `registered()` says it started its wait."""
        if self.fair:
            poll_until(lambda: self.holder(key) and len(self.queue(key)) == count - 1,
                       timeout=20, message=f"contender {count} never lined up on {key}")
        elif registered is not None:
            poll_until(registered, timeout=20, message=f"contender {count} never started")
        if not self.fair:
            self.assertEqual(self.queue(key), [], "a server with -fair-queue=false queues nobody")

    def child(self, ident, pause):
        return [sys.executable, self.checker, self.log, str(ident), str(pause), self.gate]

    def sessions_named(self, text):
        return [s for s in self.server.get_json("/v1/session/list") if text in s.get("Name", "")]

    def open_gate_and_wait(self, procs):
        """Lets the lined-up children run and waits for every contender to exit 0."""
        open(self.gate, "w").close()
        for p in procs:
            _, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err)

    def assert_ran_in_order(self):
        """Children 0-3 each ran once without overlap (runs() checks that); in
        arrival order when the server queues."""
        order = runs(self.log)
        if self.fair:
            self.assertEqual(order, ["0", "1", "2", "3"])
        else:
            self.assertEqual(sorted(order), ["0", "1", "2", "3"])

    def start_candidates(self, name, key, count, prefix):
        """`count` tenure elect agents started one after another, each once the
        one before it leads or waits in line: (agents, their sessions)."""
        agents = []
        for i in range(count):
            agent = Agent(self, name, f"{prefix}{i}")
            self.agents.append(agent)
            agent.wait_ready()
            if i == 0:
                agent.wait_leader()
            else:
                self.line_up(key, i + 1, registered=lambda a=agent: a.status()["LeaderSession"])
            agents.append(agent)
        return agents, [a.status()["Session"] for a in agents]

    # --- tenure elect --------------------------------------------------------------

    def test_elect_candidates_lead_in_arrival_order_and_leader_lists_the_line(self):
        name = "fifo-elect"
        key = f"service/{name}/leader"
        agents, sessions = self.start_candidates(name, key, 5, "c")

        out = self.server.cli("leader", name)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertIn(f"(session {sessions[0]}, fencing token", lines[0])
        out_json = self.server.cli("leader", "-format=json", name)
        self.assertEqual(out_json.returncode, 0, out_json.stderr)
        queue = json.loads(out_json.stdout)["Queue"]
        if self.fair:
            self.assertEqual(lines[1:], [f"  next {i}: c{i}\t(session {sessions[i]})"
                                         for i in range(1, 5)], out.stdout)
            self.assertEqual([(q["Position"], q["Candidate"], q["Session"]) for q in queue],
                             [(i, f"c{i}", sessions[i]) for i in range(1, 5)])
        else:
            self.assertEqual(lines[1:], [], out.stdout)
            self.assertEqual(queue, [])

        # Each leader exits (SIGTERM: it resigns); the next one leads.
        order = []
        for i in range(5):
            now = poll_until(lambda: self.holder(key), timeout=20,
                             message=f"nobody leads after {i} exits")
            order.append(now)
            leader = agents[sessions.index(now)]
            self.assertEqual(leader.stop(), 0, leader.describe())
        poll_until(lambda: self.holder(key) == "", timeout=10)
        if self.fair:
            self.assertEqual(order, sessions, "not in arrival order")
            self.assertEqual(self.grants(key)[-5:], sessions)
        else:
            self.assertEqual(sorted(order), sorted(sessions), "everyone leads once")
            self.assertEqual(sorted(self.grants(key)[-5:]), sorted(sessions))

    def test_resign_hands_the_key_to_the_next_in_line(self):
        name = "fifo-resign"
        key = f"service/{name}/leader"
        agents, sessions = self.start_candidates(name, key, 3, "r")
        # r0 resigns: r1 (next in line) leads; r0 rests, then joins the end.
        out = agents[0].cli("resign", name)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn(f"Resigned the leadership of {name}", out.stdout)
        new = poll_until(lambda: self.holder(key), timeout=10)
        if not self.fair:
            self.assertIn(new, sessions[1:])
            return
        self.assertEqual(new, sessions[1])
        self.assertEqual(out.stdout, f"Resigned the leadership of {name}; now led by r1\n")
        poll_until(lambda: self.queue(key) == [sessions[2], sessions[0]], timeout=10,
                   message="r0 did not join the end of the line after resting")
        # r1 resigns: r2, then r0.
        self.assertEqual(agents[1].cli("resign", name).returncode, 0)
        poll_until(lambda: self.holder(key) == sessions[2], timeout=10)
        poll_until(lambda: self.queue(key) == [sessions[0], sessions[1]], timeout=10)
        self.assertEqual(agents[2].cli("resign", name).returncode, 0)
        poll_until(lambda: self.holder(key) == sessions[0], timeout=10)
        self.assertEqual(self.grants(key)[-4:], [sessions[0], sessions[1], sessions[2],
                                                 sessions[0]])

    def test_resign_to_a_candidate_further_back_keeps_the_others_in_order(self):
        name = "fifo-resign-to"
        key = f"service/{name}/leader"
        agents = []
        for i in range(4):
            # The leader rests long after handing over, so it does not rejoin
            # the line while the test reads it.
            extra = ("-resign-backoff", "60s") if i == 0 else ()
            agent = Agent(self, name, f"t{i}", extra=extra)
            self.agents.append(agent)
            agent.wait_ready()
            if i == 0:
                agent.wait_leader()
            else:
                self.line_up(key, i + 1, registered=lambda a=agent: a.status()["LeaderSession"])
            agents.append(agent)
        sessions = [a.status()["Session"] for a in agents]
        if self.fair:
            self.assertEqual(self.queue(key), sessions[1:])
        # t0 hands the key to t3, third in line: t3 leads, t1 and t2 keep
        # their places (with the queue and without it alike).
        out = agents[0].cli("resign", name, "-to", "t3")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout, f"Handed the leadership of {name} to t3\n")
        poll_until(lambda: agents[3].is_leader(), timeout=10,
                   message="t3 never led\n" + agents[3].describe())
        self.assertEqual(self.holder(key), sessions[3])
        for other in agents[:3]:
            self.assertIs(other.is_leader(), False, other.candidate)
        out = self.server.cli("leader", name)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertIn(f"(session {sessions[3]}, fencing token", lines[0])
        if not self.fair:
            self.assertEqual(lines[1:], [], out.stdout)
            return
        self.assertEqual(self.queue(key), sessions[1:3])
        self.assertEqual(lines[1:], [f"  next {i}: t{i}\t(session {sessions[i]})"
                                     for i in (1, 2)], out.stdout)
        self.assertEqual(self.grants(key)[-2:], [sessions[0], sessions[3]])
        # The line goes on in order: t3 resigns, t1 leads.
        self.assertEqual(agents[3].cli("resign", name).returncode, 0)
        poll_until(lambda: self.holder(key) == sessions[1], timeout=10,
                   message="t1 did not follow t3")

    def test_a_stopped_queued_candidate_leaves_the_queue(self):
        name = "fifo-leave"
        key = f"service/{name}/leader"
        first = Agent(self, name, "l0")
        self.agents.append(first)
        first.wait_ready().wait_leader()
        second = Agent(self, name, "l1")
        self.agents.append(second)
        second.wait_ready()
        self.line_up(key, 2, registered=lambda: second.status()["LeaderSession"])
        self.assertEqual(second.stop(), 0, second.describe())
        poll_until(lambda: self.queue(key) == [], timeout=10,
                   message="the stopped candidate is still in the queue")
        self.assertEqual(self.holder(key), first.status()["Session"])

    # --- tenure run ----------------------------------------------------------------

    def test_run_candidates_lead_in_arrival_order_without_overlap(self):
        name = "fifo-run"
        key = f"service/{name}/leader"
        procs = []
        try:
            for i in range(4):
                procs.append(self.server.popen_cli("run", name, "-candidate", f"run{i}", "--",
                                                   *self.child(i, 0.3)))
                self.line_up(key, i + 1,
                             registered=lambda i=i: self.holder(
                                 f"service/{name}/candidates/run{i}"))
            self.open_gate_and_wait(procs)
        finally:
            for p in procs:
                stop_process(p)
        self.assert_ran_in_order()

    # --- tenure lock -----------------------------------------------------------------

    def test_lock_contenders_run_in_arrival_order_without_overlap(self):
        prefix = "fifo-lock"
        key = prefix + "/.lock"
        procs = []
        try:
            for i in range(4):
                procs.append(self.server.popen_cli("lock", "-shell=false", prefix,
                                                   *self.child(i, 0.3)))
                self.line_up(key, i + 1,
                             registered=lambda i=i: self.sessions_named(f" {i} 0.3 "))
            if not self.fair:
                poll_until(lambda: self.holder(key), timeout=20)
            self.open_gate_and_wait(procs)
        finally:
            for p in procs:
                stop_process(p)
        self.assert_ran_in_order()
        self.assertEqual(self.holder(key), "")

    def test_lock_timeout_while_queued_leaves_the_queue(self):
        prefix = "fifo-timeout"
        key = prefix + "/.lock"
        holder = self.server.popen_cli("lock", "-shell=false", prefix, *self.child("h", 0.1))
        try:
            poll_until(lambda: self.holder(key), timeout=20)
            holding = self.holder(key)
            start = time.monotonic()
            out = self.server.cli("lock", "-timeout", "2s", prefix, "true", timeout=60)
            self.assertEqual(out.returncode, 1, out.stderr)
            self.assertIn("Shutdown triggered or timeout during lock acquisition", out.stderr)
            self.assertLess(time.monotonic() - start, 20)
            self.assertEqual(self.queue(key), [])
            self.assertEqual(self.holder(key), holding)
        finally:
            open(self.gate, "w").close()
            holder.communicate(timeout=60)
        self.assertEqual(holder.returncode, 0)

    def test_a_queued_lock_contender_killed_leaves_the_line(self):
        """kill -9 of a `tenure lock` waiting in the queue: its connection
        closes, so it leaves the queue at once (its session lives on until its
        TTL, and is never granted the key); the one behind it runs next.
        Without the server's queue the killed contender was only polling:
        then this checks that the others still run in turn."""
        prefix = "fifo-killed"
        key = prefix + "/.lock"
        procs = {}
        try:
            for i, ident in enumerate(("h", "k", "n")):
                procs[ident] = self.server.popen_cli("lock", "-shell=false", prefix,
                                                     *self.child(ident, 0.1))
                self.line_up(key, i + 1,
                             registered=lambda ident=ident: self.sessions_named(f" {ident} 0.1 "))
            killed = self.sessions_named(" k 0.1 ")[0]["ID"]
            procs["k"].kill()
            procs["k"].wait(timeout=10)
            if self.fair:
                behind = self.sessions_named(" n 0.1 ")[0]["ID"]
                poll_until(lambda: self.queue(key) == [behind], timeout=10,
                           message="the killed contender is still in the queue")
            self.assertIn(killed, [s["ID"] for s in self.server.get_json("/v1/session/list")])
            open(self.gate, "w").close()
            for ident in ("h", "n"):
                _, err = procs[ident].communicate(timeout=60)
                self.assertEqual(procs[ident].returncode, 0, err)
        finally:
            for p in procs.values():
                stop_process(p)
        self.assertEqual(runs(self.log), ["h", "n"])
        self.assertNotIn(killed, self.grants(key))
        self.assertEqual(self.holder(key), "")

    def test_lock_without_fair_waits_with_blocking_reads(self):
        prefix = "fifo-unfair"
        key = prefix + "/.lock"
        first = self.server.popen_cli("lock", "-shell=false", prefix, *self.child("a", 0.2))
        second = None
        try:
            poll_until(lambda: self.holder(key), timeout=20)
            second = self.server.popen_cli("lock", "-fair=false", "-shell=false", prefix,
                                           *self.child("b", 0.2))
            poll_until(lambda: self.sessions_named(" b 0.2 "), timeout=20)
            time.sleep(0.5)  # give a queued acquire the time to show (it must not)
            self.assertEqual(self.queue(key), [])
            open(self.gate, "w").close()
            for p in (first, second):
                _, err = p.communicate(timeout=60)
                self.assertEqual(p.returncode, 0, err)
        finally:
            stop_process(first)
            if second is not None:
                stop_process(second)
        self.assertEqual(runs(self.log), ["a", "b"])

    # --- a Consul client on the same key ------------------------------------------------

    def test_python_consul_waiter_shares_the_lock_key_without_overlap(self):
        """python-consul waiting Consul's way (blocking read, then a plain
        acquire with the lock flag, as api.Lock) on the key queued `tenure
        lock` contenders wait for: it cannot jump the queue, so it runs after
        them, and never while one of them runs."""
        prefix = "fifo-mixed"
        key = prefix + "/.lock"
        procs = []
        c = consul.Consul(host="127.0.0.1", port=int(self.server.http_addr.rsplit(":", 1)[1]))
        sid = c.session.create(name="python-consul", lock_delay=0, ttl=30)
        outcome = {}

        def python_consul_lock():
            deadline = time.monotonic() + 90
            index = None
            while time.monotonic() < deadline:
                index, entry = c.kv.get(key, index=index, wait="2s")
                if entry is not None and entry.get("Session"):
                    continue
                if c.kv.put(key, "", acquire=sid, flags=LOCK_FLAG):
                    fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                    os.write(fd, f"enter py {time.monotonic_ns()}\n".encode())
                    time.sleep(0.3)
                    os.write(fd, f"exit py {time.monotonic_ns()}\n".encode())
                    os.close(fd)
                    outcome["released"] = c.kv.put(key, None, release=sid, flags=LOCK_FLAG)
                    return
                index = None  # refused: look again at once
            outcome["timeout"] = True

        waiter = threading.Thread(target=python_consul_lock, daemon=True)
        try:
            for i in range(3):
                procs.append(self.server.popen_cli("lock", "-shell=false", prefix,
                                                   *self.child(i, 0.3)))
                self.line_up(key, i + 1,
                             registered=lambda i=i: self.sessions_named(f" {i} 0.3 "))
            if not self.fair:
                poll_until(lambda: self.holder(key), timeout=20)
            waiter.start()
            time.sleep(0.3)  # it reads the key, finds it held and blocks
            open(self.gate, "w").close()
            for p in procs:
                _, err = p.communicate(timeout=60)
                self.assertEqual(p.returncode, 0, err)
            waiter.join(timeout=90)
        finally:
            for p in procs:
                stop_process(p)
            c.session.destroy(sid)
        self.assertEqual(outcome, {"released": True})
        order = runs(self.log)
        if self.fair:
            self.assertEqual(order, ["0", "1", "2", "py"])
        else:
            self.assertEqual(sorted(order), ["0", "1", "2", "py"])

    # --- the server's switch ----------------------------------------------------------

    def test_a_queued_acquire_parks_only_when_the_server_queues(self):
        key = "fifo-switch/k"
        holder = self.server.create_session({"Name": "holder", "LockDelay": "0s"})
        waiter = self.server.create_session({"Name": "waiter", "LockDelay": "0s"})
        r = self.server.request("PUT", f"/v1/kv/{key}?acquire={holder}", b"h")
        self.assertEqual(r.json(), True)
        start = time.monotonic()
        r = self.server.request("PUT", f"/v1/kv/{key}?acquire={waiter}&queue&wait=1s", b"w")
        took = time.monotonic() - start
        self.assertEqual((r.status, r.json()), (200, False), r)
        if self.fair:
            self.assertGreaterEqual(took, 0.9, "the request waited in the queue")
        else:
            self.assertLess(took, 0.5, "answered at once, as Consul")
            self.assertIsNone(r.header("X-Tenure-Queue-Position"))
            # ?queue alone is ignored too: a plain write, not Consul's 400.
            r = self.server.request("PUT", "/v1/kv/fifo-switch/plain?queue", b"v")
            self.assertEqual((r.status, r.json()), (200, True), r)
        self.server.request("PUT", f"/v1/session/destroy/{holder}")
        self.server.request("PUT", f"/v1/session/destroy/{waiter}")


class FairClientsAgainstConsulBehaviourTest(FairClientsTest):
    """The same clients against a server that ignores `queue` as Consul does."""

    server_args = ("-session-ttl-multiplier", "1", "-fair-queue=false")
    fair = False


if __name__ == "__main__":
    unittest.main()
