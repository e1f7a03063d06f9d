"""Chaos tests of `tenure run`: real supervisors, a real `tenure server -dev`
(-session-ttl-multiplier 1) and real child processes, under SIGTERM, session
destruction, kill -9 and SIGSTOP/SIGCONT.

Every child appends to one shared log, stamped with time.monotonic()
(CLOCK_MONOTONIC, one clock for all processes on Linux):

    start T PID TOKEN CANDIDATE SESSION     once elected, SIGTERM trap installed
    stop T PID                               from its SIGTERM trap, then it exits
    write T0 T1 PID TOKEN SEQ STATUS         a fenced /v1/txn sent at T0, answered at T1

A child killed with SIGKILL cannot log "stop". A watcher thread therefore
polls every child pid and records when it first saw it dead: an upper bound of
the moment that child stopped acting. A child's interval is [start, stop], or
[start, observed death] without a "stop" line.

The arithmetic (docs/leadership.md), T = 10 s, m = 1, D = 1 s: a session whose
holder stops renewing expires at most T*m after its last renewal, and another
candidate may acquire D later; so failover after kill -9 is at most
T*m + D (+1 s of slack for the campaign's back-off and the child's start).
"""

import base64
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import unittest

from tenure_testlib import DevServer, pid_alive, poll_until

TTL_S = 10
MULTIPLIER = 1
LOCK_DELAY_S = 1
NAME = "job"
LEADER_KEY = f"service/{NAME}/leader"
# The failover bound after kill -9, measured from the kill.
FAILOVER_BOUND_S = TTL_S * MULTIPLIER + LOCK_DELAY_S + 1
# Generous deadlines for waits whose length is not what a test checks (the
# machine may be loaded): they only bound a hang.
ELECTION_TIMEOUT_S = 40
EXIT_TIMEOUT_S = 30

CHILD_SCRIPT = r'''
import base64, http.client, json, os, signal, sys, time

log_path, candidate, mode, http_addr = sys.argv[1:5]
pid = os.getpid()
token = int(os.environ["TENURE_FENCING_TOKEN"])
session = os.environ.get("TENURE_SESSION") or "-"
leader_key = os.environ["TENURE_LEADER_KEY"]
name = leader_key.split("/")[1]


def log(line):
    # One write(2) with O_APPEND per line: lines of concurrent processes never mix.
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def on_term(signo, frame):
    log(f"stop {time.monotonic():.6f} {pid}")
    os._exit(0)


signal.signal(signal.SIGTERM, on_term)  # before "start": a SIGTERM after it is always logged
log(f"start {time.monotonic():.6f} {pid} {token} {candidate} {session}")

if mode == "idle":
    while True:
        time.sleep(3600)


def b64(text):
    return base64.b64encode(text.encode()).decode()


host, port = http_addr.rsplit(":", 1)
seq = 0
while True:
    seq += 1
    value = f"{token} {seq}"
    ops = [{"KV": {"Verb": "check-fence", "Key": leader_key, "Index": token}},
           {"KV": {"Verb": "set", "Key": f"service/{name}/data", "Value": b64(value)}},
           {"KV": {"Verb": "set", "Key": f"service/{name}/writes/{token}/{seq}", "Value": b64(value)}}]
    t0 = time.monotonic()
    try:
        conn = http.client.HTTPConnection(host, int(port), timeout=5)
        try:
            conn.request("PUT", "/v1/txn", body=json.dumps(ops),
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            resp.read()
            status = str(resp.status)
        finally:
            conn.close()
    except OSError:
        status = "error"
    log(f"write {t0:.6f} {time.monotonic():.6f} {pid} {token} {seq} {status}")
    time.sleep(0.1)
'''



def proc_state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


class Child:
    def __init__(self, pid, start, token, candidate, session):
        self.pid = pid
        self.start = start
        self.token = token
        self.candidate = candidate
        self.session = session
        self.stop = None      # logged by its SIGTERM trap
        self.dead_at = None   # first time the watcher saw it dead (upper bound)
        self.pgid = None

    @property
    def end(self):
        """Upper bound of the moment it stopped acting; None while it may still act."""
        return self.stop if self.stop is not None else self.dead_at

    def __repr__(self):
        return (f"Child(pid={self.pid} {self.candidate} token={self.token} start={self.start:.3f} "
                f"stop={self.stop} dead_at={self.dead_at})")


class Write:
    def __init__(self, t0, t1, pid, token, seq, status):
        self.t0, self.t1, self.pid, self.token, self.seq, self.status = t0, t1, pid, token, seq, status

    def __repr__(self):
        return f"Write(pid={self.pid} token={self.token} seq={self.seq} t0={self.t0:.3f} {self.status})"


class Watcher(threading.Thread):
    """Tails the shared log and polls every child pid it names (every 20 ms)."""

    def __init__(self, log_path):
        super().__init__(daemon=True)
        self.log_path = log_path
        self.lock = threading.Lock()
        self.children = {}  # pid -> Child, in order of their "start" lines
        self.writes = []
        self._offset = 0
        self._partial = ""
        self._stop_event = threading.Event()

    def run(self):
        while not self._stop_event.is_set():
            self.scan()
            self._stop_event.wait(0.02)

    def close(self):
        self._stop_event.set()
        self.join(timeout=5)

    def scan(self):
        with self.lock:
            self._read_lines()
            for child in self.children.values():
                if child.dead_at is None and not pid_alive(child.pid):
                    child.dead_at = time.monotonic()  # taken after the observation

    def _read_lines(self):
        try:
            with open(self.log_path) as f:
                f.seek(self._offset)
                data = f.read()
                self._offset = f.tell()
        except FileNotFoundError:
            return
        data = self._partial + data
        lines = data.split("\n")
        self._partial = lines.pop()
        for line in lines:
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "start":
                child = Child(int(parts[2]), float(parts[1]), int(parts[3]), parts[4], parts[5])
                try:
                    child.pgid = os.getpgid(child.pid)
                except OSError:
                    pass
                self.children[child.pid] = child
            elif parts[0] == "stop":
                self.children[int(parts[2])].stop = float(parts[1])
            elif parts[0] == "write":
                self.writes.append(Write(float(parts[1]), float(parts[2]), int(parts[3]),
                                         int(parts[4]), int(parts[5]), parts[6]))

    def snapshot(self):
        self.scan()
        with self.lock:
            return list(self.children.values()), list(self.writes)

    def wait_new_start(self, known, timeout=ELECTION_TIMEOUT_S, message="no new leader's child"):
        """Waits for a child whose pid is not in `known`; returns it."""
        def found():
            children, _ = self.snapshot()
            new = [c for c in children if c.pid not in known]
            return new[0] if new else None
        return poll_until(found, timeout=timeout, interval=0.02, message=message)


class Supervisor:
    def __init__(self, candidate, popen, err_path):
        self.candidate = candidate
        self.popen = popen
        self.err_path = err_path

    @property
    def pid(self):
        return self.popen.pid

    def stderr(self):
        try:
            with open(self.err_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def wait(self, timeout=EXIT_TIMEOUT_S):
        return self.popen.wait(timeout=timeout)


class RunChaosTest(unittest.TestCase):
    def setUp(self):
        self.t_begin = time.monotonic()
        self.dir = tempfile.mkdtemp(prefix="tenure-run-chaos-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.server = DevServer(extra_args=("-session-ttl-multiplier", str(MULTIPLIER)))
        self.server.start()
        self.addCleanup(self.server.close)
        self.child_path = os.path.join(self.dir, "child.py")
        with open(self.child_path, "w") as f:
            f.write(CHILD_SCRIPT)
        self.log_path = os.path.join(self.dir, "children.log")
        self.watcher = Watcher(self.log_path)
        self.watcher.start()
        self.supervisors = {}
        self.next_candidate = 1
        # Runs before the server stops (cleanups are LIFO).
        self.addCleanup(self.kill_everything)
        self.addCleanup(lambda: print(f"{self.id()}: {time.monotonic() - self.t_begin:.1f}s",
                                      flush=True))

    # --- processes -------------------------------------------------------

    def spawn(self, mode="idle"):
        candidate = f"c{self.next_candidate}"
        self.next_candidate += 1
        err_path = os.path.join(self.dir, f"{candidate}.stderr")
        with open(err_path, "w") as err:
            popen = self.server.popen_cli(
                "run", NAME, "-ttl", f"{TTL_S}s", "-lock-delay", f"{LOCK_DELAY_S}s",
                "-candidate", candidate, "--",
                sys.executable, self.child_path, self.log_path, candidate, mode,
                self.server.http_addr,
                stdout=err, stderr=err)
        sup = Supervisor(candidate, popen, err_path)
        self.supervisors[candidate] = sup
        return sup

    def alive_supervisors(self):
        return [s for s in self.supervisors.values() if s.popen.poll() is None]

    def kill_everything(self):
        """Only our own processes: the supervisors we started, then the process
        groups of children they started (pgid read from the child's pid)."""
        for sup in self.supervisors.values():
            if sup.popen.poll() is None:
                try:
                    sup.popen.send_signal(signal.SIGCONT)
                    sup.popen.kill()
                except OSError:
                    pass
            try:
                sup.popen.wait(timeout=10)
            except Exception:  # noqa: BLE001
                pass
        children, _ = self.watcher.snapshot()
        for child in children:
            if child.pgid and (pid_alive(child.pid) or pid_alive(child.pgid)):
                for sig in (signal.SIGCONT, signal.SIGKILL):
                    try:
                        os.killpg(child.pgid, sig)
                    except OSError:
                        pass
        self.watcher.close()

    def wait_dead(self, pid, timeout, message):
        poll_until(lambda: not pid_alive(pid), timeout=timeout, interval=0.01, message=message)
        return time.monotonic()

    def fenced_write(self, token, value):
        b64 = base64.b64encode(value.encode()).decode()
        ops = [{"KV": {"Verb": "check-fence", "Key": LEADER_KEY, "Index": token}},
               {"KV": {"Verb": "set", "Key": f"service/{NAME}/data", "Value": b64}}]
        return self.server.request("PUT", "/v1/txn", json.dumps(ops))

    def check_never_overlap(self, children):
        ordered = sorted(children, key=lambda c: c.start)
        for child in ordered:
            self.assertIsNotNone(child.end, f"child never seen stopping: {child}")
            self.assertLessEqual(child.start, child.end, child)
        for prev, nxt in zip(ordered, ordered[1:]):
            self.assertLess(prev.end, nxt.start,
                            f"two children acted at once:\n  {prev}\n  {nxt}")
            self.assertLess(prev.token, nxt.token, f"fencing token went backwards:\n  {prev}\n  {nxt}")

    def check_history(self, children, handoffs):
        """The election history (docs/history.md) shows every transition of
        the run, in order: one grant per child with the child's token,
        strictly increasing fences, one holder at a time, each ended the way
        the run ended it (SIGTERM: released and handed in that entry to the
        candidate waiting in the fair queue, a handoff; destroy: destroy,
        kill -9: the session's TTL ran out), the last one released on the
        way out."""
        resp = self.server.request("GET", f"/v1/tenure/history/{LEADER_KEY}")
        self.assertEqual(resp.status, 200, resp)
        grants = resp.json()
        ordered = sorted(children, key=lambda c: c.start)
        self.assertEqual([g["Fence"] for g in grants], [c.token for c in ordered], grants)
        self.assertEqual([g["Session"] for g in grants], [c.session for c in ordered])
        for prev, nxt in zip(grants, grants[1:]):
            self.assertLess(prev["Fence"], nxt["Fence"])
            self.assertLessEqual(prev["EndIndex"], nxt["GrantIndex"],
                                 f"two holders at once:\n  {prev}\n  {nxt}")
        want = {"sigterm": "handoff", "destroy": "destroy", "kill9": "ttl-expiry"}
        self.assertEqual([g["EndCause"] for g in grants],
                         [want[how] for how in handoffs] + ["release"], grants)
        for g in grants:
            self.assertIsNotNone(g["EndedAt"], g)
            self.assertLessEqual(g["GrantedAt"], g["EndedAt"], g)

    # --- tests -----------------------------------------------------------

    def test_three_candidates_never_overlap(self):
        for _ in range(3):
            self.spawn()
        known = set()
        leader = self.watcher.wait_new_start(known, message="no first leader")
        known.add(leader.pid)
        by_candidate = self.supervisors
        handoffs = ["sigterm", "destroy", "kill9", "sigterm", "destroy"]
        for how in handoffs:
            sup = by_candidate[leader.candidate]
            t0 = time.monotonic()
            if how == "sigterm":
                sup.popen.send_signal(signal.SIGTERM)
                code = sup.wait()
                self.assertEqual(code, 143, sup.stderr())
                self.assertIn("got SIGTERM", sup.stderr())
            elif how == "destroy":
                resp = self.server.request("PUT", f"/v1/session/destroy/{leader.session}")
                self.assertEqual(resp.status, 200, resp)
                code = sup.wait()
                self.assertEqual(code, 1, sup.stderr())
                self.assertIn("tenure run: lost leadership", sup.stderr())
            else:
                sup.popen.kill()
                sup.wait()
                self.wait_dead(leader.pid, 10, "child outlived its SIGKILLed supervisor")
            self.assertFalse(pid_alive(leader.pid), f"{how}: the old child still runs")
            # tenure run does not campaign again: keep three candidates.
            while len(self.alive_supervisors()) < 3:
                self.spawn()
            new = self.watcher.wait_new_start(known, message=f"no new leader after {how}")
            known.add(new.pid)
            print(f"handoff by {how}: {leader.candidate} -> {new.candidate}, "
                  f"token {leader.token} -> {new.token}, {new.start - t0:.2f}s", flush=True)
            leader = new

        # Followers first, then the leader, so no one is elected on the way out.
        followers = [s for s in self.alive_supervisors() if s.candidate != leader.candidate]
        for sup in followers:
            sup.popen.send_signal(signal.SIGTERM)
        for sup in followers:
            code = sup.wait()
            # A candidate stopped while campaigning exits 143 too (it once
            # exited 1: the cancelled campaign was reported as a failure).
            self.assertEqual(code, 143, sup.stderr())
            self.assertNotIn("elected", sup.stderr())
        last = by_candidate[leader.candidate]
        last.popen.send_signal(signal.SIGTERM)
        self.assertEqual(last.wait(), 143, last.stderr())

        def all_ended():
            children, _ = self.watcher.snapshot()
            return all(c.end is not None for c in children) and children
        children = poll_until(all_ended, timeout=15, message="every child stopped")
        self.assertEqual(len(children), len(handoffs) + 1, children)
        self.check_never_overlap(children)
        self.check_history(children, handoffs)
        self.assertEqual(self.server.request("GET", f"/v1/kv/{LEADER_KEY}").json()[0].get("Session", ""),
                         "")

    def test_kill_9_failover_within_bound(self):
        for _ in range(3):
            self.spawn()
        old = self.watcher.wait_new_start(set(), message="no first leader")
        sup = self.supervisors[old.candidate]
        t_kill = time.monotonic()  # before the kill: the measure can only be longer
        sup.popen.kill()
        sup.wait()
        t_dead = self.wait_dead(old.pid, 10, "child outlived its SIGKILLed supervisor")
        print(f"old child gone {t_dead - t_kill:.3f}s after kill -9", flush=True)
        new = self.watcher.wait_new_start({old.pid}, timeout=ELECTION_TIMEOUT_S,
                                          message="no failover after kill -9")
        failover = new.start - t_kill
        print(f"failover after kill -9: {failover:.3f}s (bound {FAILOVER_BOUND_S}s: "
              f"TTL {TTL_S}s * {MULTIPLIER} + lock-delay {LOCK_DELAY_S}s + 1s)", flush=True)
        self.assertLessEqual(failover, FAILOVER_BOUND_S)
        # The session had to expire, then the lock-delay had to pass.
        self.assertGreaterEqual(failover, LOCK_DELAY_S)
        self.assertGreater(new.token, old.token)
        children, _ = self.watcher.snapshot()
        self.assertEqual(len(children), 2, children)
        self.assertIsNotNone(old.end)
        self.assertLess(old.end, new.start, children)

    def test_pause_old_leader_is_fenced_and_stopped(self):
        for _ in range(2):
            self.spawn(mode="write")
        old = self.watcher.wait_new_start(set(), message="no first leader")
        sup = self.supervisors[old.candidate]
        self.assertIsNotNone(old.pgid)
        self.assertNotEqual(old.pgid, os.getpgid(0))

        def writes_ok(pid, status, after=0.0, count=1):
            _, writes = self.watcher.snapshot()
            return len([w for w in writes if w.pid == pid and w.status == status
                        and w.t0 > after]) >= count
        poll_until(lambda: writes_ok(old.pid, "200", count=3), timeout=20,
                   message="the leader's child made no fenced writes")

        # Freeze the supervisor and the child's whole group (keeper included).
        t_pause = time.monotonic()
        os.kill(sup.pid, signal.SIGSTOP)
        os.killpg(old.pgid, signal.SIGSTOP)
        poll_until(lambda: proc_state(sup.pid) == "T" and proc_state(old.pid) == "T", timeout=5,
                   message="processes not stopped")
        new = self.watcher.wait_new_start({old.pid}, message="no new leader while the old one sleeps")
        elected_after = new.start - t_pause
        # Stay frozen past the server-side expiry plus lock-delay, measured from
        # the freeze (the new election proves the expiry already; this is the
        # pause length the scenario asks for).
        pause_s = TTL_S * MULTIPLIER + LOCK_DELAY_S + 0.5
        poll_until(lambda: time.monotonic() >= t_pause + pause_s, timeout=pause_s + 1)
        self.assertGreater(new.token, old.token)

        # The old token is refused by the server.
        resp = self.fenced_write(old.token, f"{old.token} from-test")
        self.assertEqual(resp.status, 409, resp)
        self.assertIn("failed fence check", resp.text)

        # Wake the child first: with its supervisor still frozen, nothing stops
        # it, and its late writes must be fenced off.
        t_cont_child = time.monotonic()
        os.killpg(old.pgid, signal.SIGCONT)
        poll_until(lambda: writes_ok(old.pid, "409", after=t_cont_child), timeout=15,
                   message="the woken old child made no write")
        t_cont_sup = time.monotonic()
        os.kill(sup.pid, signal.SIGCONT)
        t_dead = self.wait_dead(old.pid, 10, "the old child kept running after its supervisor woke")
        code = sup.wait()
        print(f"new leader {elected_after:.2f}s after the freeze; old child gone "
              f"{t_dead - t_cont_sup:.3f}s after its supervisor woke", flush=True)
        self.assertEqual(code, 1, sup.stderr())
        self.assertIn("tenure run: lost leadership", sup.stderr())

        children, writes = self.watcher.snapshot()
        old_writes = [w for w in writes if w.pid == old.pid]
        late = [w for w in old_writes if w.t0 >= new.start]
        self.assertTrue(late, "the old child wrote nothing after the new election")
        for w in late:
            self.assertIn(w.status, ("409", "error"), f"late write of the old leader: {w}")
        self.assertIn("409", [w.status for w in late])
        print(f"old child: {len(old_writes)} writes, {len(late)} after the new election, all refused: "
              f"{sorted(set(w.status for w in late))}", flush=True)
        for w in old_writes:
            if w.status == "200":
                self.assertLess(w.t0, new.start, f"old leader's write accepted: {w}")

        # The server's view: every key the old token wrote was committed before
        # the new grant (a fence is the raft index of its grant).
        poll_until(lambda: writes_ok(new.pid, "200"), timeout=20,
                   message="the new leader's child could not write")
        resp = self.server.request("GET", f"/v1/kv/service/{NAME}/writes/?recurse")
        self.assertEqual(resp.status, 200, resp)
        by_token = {}
        for entry in resp.json():
            token = int(entry["Key"].split("/")[3])
            by_token.setdefault(token, []).append(entry)
            value = base64.b64decode(entry["Value"]).decode()
            self.assertEqual(int(value.split()[0]), token, entry)
        self.assertEqual(set(by_token) - {old.token, new.token}, set(), by_token.keys())
        self.assertTrue(by_token.get(old.token))
        for entry in by_token[old.token]:
            self.assertLess(entry["ModifyIndex"], new.token,
                            f"old token's write committed after the new grant: {entry}")
        # Sanity of the comparison: the new leader's writes come after its grant.
        for entry in by_token[new.token]:
            self.assertGreater(entry["ModifyIndex"], new.token, entry)
        accepted = {w.seq for w in old_writes if w.status == "200"}
        stored = {int(e["Key"].split("/")[4]) for e in by_token[old.token]}
        self.assertLessEqual(accepted, stored)
        self.assertEqual({w.seq for w in late} & stored, set(), "a late write was stored")
        data = self.server.get_json(f"/v1/kv/service/{NAME}/data")[0]
        data_token = int(base64.b64decode(data["Value"]).decode().split()[0])
        self.assertEqual(data_token, new.token, data)


if __name__ == "__main__":
    unittest.main()
