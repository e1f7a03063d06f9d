"""libtenure rides out server restarts and transient 500s without false
leadership loss while its session is still valid, and gives leadership up
(stops `tenure run`'s child) before the server could expire the session when
the failures last too long (docs/leadership.md).

The client under test is the real `tenure run` (Session + Election of
libtenure) with a 10 s TTL against a `tenure server -session-ttl-multiplier 1`,
talking through tests/lib/fault_proxy.py, which injects HTTP 500s, dropped
connections and unanswered requests and records when each renewal went
upstream and how it ended.

  test_transient_500s_do_not_depose        3 s of 500s to everything, then 10 s
                                           of 50% 500s, then 4 s of 50% drops
  test_server_restart_keeps_leadership     SIGTERM + restart, ~1.6 s down
  test_server_kill_9_restart_keeps_leadership   kill -9 + restart, ~1.6 s down
  test_unanswered_renewal_is_retried_after_r    a renewal swallowed: the next
                                           attempt goes r later, not at its timeout
  test_long_outage_stops_child_before_expiry    500s for good: the child is
                                           stopped at s + P - G, before expiry
In the first four the child must keep running (same pid, no SIGTERM), the
supervisor must not report a loss, and the leader key must keep the same
session and fencing token; the last checks the other direction.

Arithmetic for T = 10 s (docs/leadership.md, rho = 1%):
  proven P = floor(T (1 - rho) / (1 + rho)) = 9.801 s after a renewal's send s
  R = G = T/3 = 3.333 s (renewals come up to 10% early), K = G/2 = 1.666 s
  the child is SIGTERMed at s + P - G = s + 6.468 s without a newer renewal;
  failed (or still unanswered) renewals are retried every r = 1 s.
So with renewals working, an outage that starts after a renewal s and ends
before about s + 5.4 s (the last 1 s retry before s + 6.468) must go
unnoticed. The fault windows below are placed relative to a renewal the
proxy saw succeed, so each one is inside that budget by about a second
whatever the renewal jitter, yet covers the next renewal and at least one of
its retries.

The child is a small Python program: it writes its pid and fencing token,
and on SIGTERM writes time.monotonic() (the clock the proxy stamps renewals
with; libtenure's lease clock, CLOCK_BOOTTIME, runs at the same rate) and
exits.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from fault_proxy import FaultProxy
from tenure_testlib import Cli, DevServer, pid_alive, poll_until

TTL_S = 10.0
RHO = 0.01
PROVEN_S = int(TTL_S * 1000 * (1 - RHO) / (1 + RHO)) / 1000.0  # 9.801
GUARANTEE_S = int(TTL_S * 1000 / 3) / 1000.0  # G = R = 3.333
TERMINATE_AFTER_S = PROVEN_S - GUARANTEE_S  # 6.468 after the last renewal's send

CHILD = r"""
import os, signal, sys, time
d = sys.argv[1]
def publish(name, text):
    tmp = os.path.join(d, name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, os.path.join(d, name))
def on_term(signo, frame):
    publish("terminated", "%.6f" % time.monotonic())
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
publish("child", "%d %s %s" % (os.getpid(), os.environ["TENURE_FENCING_TOKEN"],
                                os.environ["TENURE_SESSION"]))
while True:
    time.sleep(3600)
"""



def is_renew_ok(event):
    return event.is_renew and event.outcome == "forwarded" and event.status == 200


class ClientResilienceTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tenure-resilience-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.server = DevServer(extra_args=("-session-ttl-multiplier", "1"))
        self.server.start()
        self.addCleanup(self.server.close)
        self.proxy = FaultProxy(self.server.http_addr).start()
        self.addCleanup(self.proxy.close)

    # --- helpers -----------------------------------------------------------

    def path(self, name):
        return os.path.join(self.dir, name)

    def read(self, name):
        with open(self.path(name)) as f:
            return f.read()

    def start_run(self, name):
        """`tenure run NAME -ttl 10s` through the proxy; waits for the child.
        Returns (Popen, child pid, fencing token, session id)."""
        self.stderr_path = self.path("run.stderr")
        stderr = open(self.stderr_path, "w")
        self.addCleanup(stderr.close)
        p = Cli(self.proxy.http_addr).popen(
            "run", name, "-http-addr", self.proxy.http_addr, "-ttl", "10s", "--",
            sys.executable, "-c", CHILD, self.dir, stdout=subprocess.DEVNULL, stderr=stderr)
        self.addCleanup(self.stop_run, p)
        self.run_proc = p
        poll_until(lambda: os.path.exists(self.path("child")) or p.poll() is not None,
                   timeout=30, message="the child started")
        self.assertIsNone(p.poll(), self.run_log())
        pid, token, session = self.read("child").split()
        self.addCleanup(self.kill_child, int(pid))
        self.child_started = time.monotonic()
        return p, int(pid), int(token), session

    def stop_run(self, p):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    @staticmethod
    def kill_child(pid):
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)

    def run_log(self):
        try:
            with open(self.stderr_path) as f:
                return f.read()
        except OSError:
            return ""

    def leader(self, name):
        """(session, fence) of service/NAME/leader, read from the server directly."""
        resp = self.server.request("GET", f"/v1/kv/service/{name}/leader")
        self.assertEqual(resp.status, 200, resp.text)
        entry = resp.json()[0]
        return entry.get("Session", ""), entry.get("Fence", 0)

    def session_exists(self, session):
        resp = self.server.request("GET", f"/v1/session/info/{session}")
        return resp.status == 200 and bool(resp.json())

    def next_renewal(self, after, timeout=15):
        """The first renewal forwarded after `after` that got a 200; fails
        at once if the supervisor exited or stopped its child meanwhile."""
        def found():
            if self.run_proc.poll() is not None or os.path.exists(self.path("terminated")):
                return "gave up"
            return next((e for e in self.proxy.events(is_renew_ok)
                         if e.forwarded > after and e.finished is not None), None)
        event = poll_until(found, timeout=timeout, message="a renewal went through")
        if event == "gave up":
            self.fail("tenure run stopped its child:\n" + self.run_log())
        return event

    def sleep_until(self, t):
        delay = t - time.monotonic()
        if delay > 0:
            time.sleep(delay)

    def renewal_gaps(self, since):
        """Longest time between the sends of consecutive successful renewals since `since`."""
        sends = [e.forwarded for e in self.proxy.events(is_renew_ok) if e.forwarded >= since]
        return max((b - a for a, b in zip(sends, sends[1:])), default=0.0), len(sends)

    def assert_still_leading(self, name, p, child, token, session):
        log = self.run_log()
        self.assertIsNone(p.poll(), "tenure run exited:\n" + log)
        self.assertTrue(pid_alive(child), "the child died:\n" + log)
        self.assertFalse(os.path.exists(self.path("terminated")),
                         "the child got SIGTERM:\n" + log)
        self.assertEqual(self.read("child").split()[0], str(child))
        self.assertNotIn("lost leadership", log)
        self.assertEqual(self.leader(name), (session, token))
        self.assertTrue(self.session_exists(session), "the session is gone")

    def finish_run(self, p, child):
        """SIGTERM the supervisor: it stops the child, releases, exits 143."""
        p.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(timeout=30), 143, self.run_log())
        self.assertFalse(pid_alive(child))
        self.assertNotIn("lost leadership", self.run_log())

    # --- tests -------------------------------------------------------------

    def test_transient_500s_do_not_depose(self):
        p, child, token, session = self.start_run("job")
        self.assertEqual(self.leader("job"), (session, token))

        # Phase 1: every request gets a 500 for 3 s, from 1.5 s after a
        # renewal s: the next renewal (s + 3.0..3.33) and its first retry fail,
        # the one at s + 5.0..5.33 gets through, before the cut-off s + 6.47.
        s = self.next_renewal(time.monotonic()).forwarded
        self.sleep_until(s + 1.5)
        w1_start = time.monotonic()
        w1_end = self.proxy.fail_all(3.0)
        time.sleep(3.0)
        # Each later phase starts once a renewal got through again (a phase
        # starts by failing each kind of request once, so back-to-back phases
        # would add up to a longer outage than either).
        self.next_renewal(w1_end)
        # Phase 2: every second request of each kind gets a 500, for 10 s.
        w2_start = time.monotonic()
        w2_end = self.proxy.set_faults(error_fraction=0.5, duration=10.0)
        time.sleep(10.0)
        self.next_renewal(w2_end)
        # Phase 3: every second request of each kind is dropped (connection
        # closed unanswered), for 4 s.
        w3_start = time.monotonic()
        w3_end = self.proxy.set_faults(drop_fraction=0.5, duration=4.0)
        time.sleep(4.0)
        self.proxy.clear_faults()

        # Renewals resumed after the faults.
        after = self.next_renewal(w3_end)
        self.assert_still_leading("job", p, child, token, session)

        def renews(start, end, outcome):
            return [e for e in self.proxy.events(lambda e: e.is_renew and e.outcome == outcome)
                    if start <= e.arrived < end]
        failed1 = renews(w1_start, w1_end, "error500")
        failed2 = renews(w2_start, w2_end, "error500")
        dropped3 = renews(w3_start, w3_end, "dropped")
        gap, count = self.renewal_gaps(s)
        print(f"\n  phase 1 (all 500, {w1_end - w1_start:.1f}s from s+1.5s): "
              f"{len(failed1)} renewals refused; phase 2 (50% 500, 10 s): {len(failed2)} refused; "
              f"phase 3 (50% dropped, 4 s): {len(dropped3)} dropped; {count} renewals went "
              f"through, longest gap between their sends {gap:.3f}s (cut-off "
              f"{TERMINATE_AFTER_S:.3f}s); first renewal after the faults "
              f"{after.forwarded - w3_end:+.3f}s", flush=True)
        # The faults were exercised: phase 1 hit the renewal and a retry.
        self.assertGreaterEqual(len(failed1), 2, self.proxy.events(lambda e: e.is_renew))
        self.assertGreaterEqual(len(failed2), 1)
        self.assertGreaterEqual(len(dropped3), 1)
        self.assertLess(gap, TERMINATE_AFTER_S)
        self.finish_run(p, child)

    def check_server_restart(self, crash):
        p, child, token, session = self.start_run("job")
        self.assertEqual(self.leader("job"), (session, token))
        # Take the server down 2.3 s after a renewal s, i.e. before the next
        # one (s + 3.0..3.33), and start it again 1.5 s later (it is back
        # after its start-up, ~0.1 s): the renewal (and its retry at
        # s + 4.0..4.33 unless the server is back by then) fails, the retry
        # at s + 5.0..5.33 reaches the restarted server.
        s = self.next_renewal(time.monotonic()).forwarded
        self.sleep_until(s + 2.3)
        down = time.monotonic()
        if crash:
            self.server.kill()
        else:
            self.assertEqual(self.server.stop(), 0, self.server.log())
        self.sleep_until(down + 1.5)
        self.server.start()
        up = time.monotonic()
        after = self.next_renewal(up)
        # The election's watch of the leader key got an answer from the
        # restarted server (a blocking GET parks until its wait, 15 s, ends),
        # so the library has seen the key as the restarted server has it.
        leader_path = "/v1/kv/service/job/leader"
        poll_until(lambda: self.proxy.events(
                       lambda e: e.path == leader_path and e.method == "GET" and e.arrived > up
                       and e.outcome == "forwarded" and e.status == 200),
                   timeout=30, message="the leader-key watch was answered after the restart")
        self.assert_still_leading("job", p, child, token, session)
        failed = self.proxy.events(lambda e: e.is_renew and e.outcome == "upstream-error"
                                   and down <= e.arrived < up)
        gap, count = self.renewal_gaps(s)
        print(f"\n  server {'killed -9' if crash else 'stopped'} {down - s:.2f}s after renewal s,"
              f" back {up - down:.2f}s later; {len(failed)} renewal attempts failed meanwhile; "
              f"first renewal after it at s+{after.forwarded - s:.3f}s "
              f"(cut-off s+{TERMINATE_AFTER_S:.3f}s); longest gap {gap:.3f}s", flush=True)
        self.assertGreaterEqual(len(failed), 1)
        self.assertLess(gap, TERMINATE_AFTER_S)
        self.finish_run(p, child)

    def test_server_restart_keeps_leadership(self):
        self.check_server_restart(crash=False)

    def test_server_kill_9_restart_keeps_leadership(self):
        self.check_server_restart(crash=True)

    def test_unanswered_renewal_is_retried_after_r(self):
        # Renewals get no answer at all (a black hole, not an error) for
        # 0.7 s around the next renewal (s + 3.0..3.33). The next attempt must
        # go r = 1 s later, not when the swallowed one times out (3 s, which
        # would leave 0.13..0.47 s before the cut-off s + 6.47).
        p, child, token, session = self.start_run("job")
        s = self.next_renewal(time.monotonic()).forwarded
        self.sleep_until(s + 2.8)
        start = time.monotonic()
        end = self.proxy.set_faults(hang_fraction=1.0, duration=0.7,
                                    match=lambda method, path: path.startswith(
                                        "/v1/session/renew/"))
        after = self.next_renewal(end)
        hung = self.proxy.events(lambda e: e.is_renew and e.outcome == "hung"
                                 and start <= e.arrived < end)
        print(f"\n  {len(hung)} renewal(s) unanswered from s+{start - s:.2f}s to "
              f"s+{end - s:.2f}s (first at s+{hung[0].arrived - s:.3f}s); next one through "
              f"at s+{after.forwarded - s:.3f}s (cut-off s+{TERMINATE_AFTER_S:.3f}s)"
              if hung else "\n  no renewal was hung", flush=True)
        self.assertEqual(len(hung), 1, self.proxy.events(lambda e: e.is_renew))
        # r after the swallowed attempt, with a little slack for timers.
        self.assertLess(after.forwarded - hung[0].arrived, 1.5)
        # The swallowed attempt was abandoned once the retry succeeded.
        poll_until(lambda: hung[0].finished is not None, timeout=5,
                   message="the unanswered renewal was closed by the client")
        self.assertLess(hung[0].finished - hung[0].arrived, 2.5)
        self.assert_still_leading("job", p, child, token, session)
        self.finish_run(p, child)

    def test_long_outage_stops_child_before_expiry(self):
        p, child, token, session = self.start_run("job")
        s = self.next_renewal(time.monotonic()).forwarded
        fault_start = time.monotonic()
        self.proxy.fail_all()  # until the end: longer than the lease
        poll_until(lambda: os.path.exists(self.path("terminated")) or p.poll() is not None,
                   timeout=TTL_S + 10, message="the child was stopped")
        # The server must still hold the session (it expires T = 10 s after
        # the last renewal it received, multiplier 1).
        still_there = self.session_exists(session)
        stopped = float(self.read("terminated"))
        last_ok = self.proxy.last_event(is_renew_ok)
        earliest_expiry = last_ok.forwarded + TTL_S * (1 - RHO) / (1 + RHO)
        refused = self.proxy.events(lambda e: e.is_renew and e.outcome == "error500")
        print(f"\n  last renewal through at s{last_ok.forwarded - s:+.3f}s; child SIGTERMed "
              f"{stopped - last_ok.forwarded:.3f}s after it (expected {TERMINATE_AFTER_S:.3f}s),"
              f" {earliest_expiry - stopped:.3f}s before the earliest possible expiry; "
              f"{len(refused)} renewal attempts refused", flush=True)
        self.assertLess(stopped, earliest_expiry)
        self.assertTrue(still_there, "the server expired the session before the check")
        # ...and not before it had to: the renewal and its retries were tried.
        self.assertGreater(stopped, last_ok.forwarded + TERMINATE_AFTER_S - 1.0)
        self.assertGreaterEqual(len(refused), 3)
        self.assertGreater(stopped, fault_start)

        self.assertEqual(p.wait(timeout=30), 1, self.run_log())
        log = self.run_log()
        self.assertIn("tenure run: lost leadership: leadership can no longer be proven", log)
        self.assertFalse(pid_alive(child))


if __name__ == "__main__":
    unittest.main()
