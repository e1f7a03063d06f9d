"""A server whose wall clock is a day off, for real (decision 0037).

The real `tenure` binary runs under libfaketime (LD_PRELOAD, Debian's
libfaketime), its wall clock a day ahead or behind and its monotonic clock
untouched, as when an operator or a broken time source sets the date wrong.
It makes writes that way (a lock granted, a lock-delay window started), then
restarts on the same data dir with the right clock, and the other way round.
What must hold afterwards, measured against the real clock:

  - a lock-delay window of 1 s ends no earlier than 1 s after the destroy and
    no later than 1 s + LATE_S after it, whatever clock the data dir saw
    (before decision 0037 a day-ahead write left every later window a day
    long, and a day-behind leader froze them for a day);
  - the lock history's times are the stamping server's wall clock for the
    entries it stamped, and right again from the first entry after the fix.

Skipped nowhere: libfaketime is installed by scripts/setup; the test fails if
it is missing, and checks that the clock really moved under it.

Run (from tests/integration):
  TENURE_BIN=<path>/tenure PYTHONPATH=<repo>/tests/lib /usr/bin/python3 -m unittest -v test_clock_jump
"""

import os
import time
import unittest

from tenure_testlib import DevServer, quote_key

FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
DAY_S = 86400.0
LOCK_DELAY_S = 1.0
LATE_S = 1.0  # a window may end this much after its length, on a loaded 2-core machine
CLOCK_SLACK_S = 0.02  # windows are whole milliseconds


def faked(offset):
    """The environment that runs the server with its wall clock `offset` off
    ("+1d", "-1d"); the monotonic clock is left alone (it is what a jumped
    wall clock leaves alone too)."""
    return {"LD_PRELOAD": FAKETIME_LIB, "FAKETIME": offset,
            "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_NO_CACHE": "1"}


def rfc3339_to_unix(text):
    """'2026-11-28T21:00:01.234Z' -> seconds since the epoch (UTC)."""
    import datetime
    text = text.replace("Z", "+00:00")
    return datetime.datetime.fromisoformat(text).timestamp()


class ClockJumpTest(unittest.TestCase):
    def setUp(self):
        self.assertTrue(os.path.exists(FAKETIME_LIB),
                        FAKETIME_LIB + " is missing: scripts/setup installs libfaketime")
        self.server = DevServer(dev=False, keep_data=False)
        self.addCleanup(self.server.close)

    def restart(self, env):
        self.server.stop()
        self.server.env = env
        self.server.start()

    def acquire(self, key, session, value=b"v"):
        r = self.server.request("PUT", "/v1/kv/%s?acquire=%s" % (quote_key(key), session), value)
        self.assertEqual(r.status, 200, r)
        return r.body == b"true"

    def server_wall_clock(self):
        """The server's wall clock, read from a lock it grants now."""
        session = self.server.create_session({"LockDelay": "0s"})
        key = "clock/probe/%d" % time.monotonic_ns()
        self.assertTrue(self.acquire(key, session))
        granted = self.history(key)[-1]["GrantedAt"]
        self.server.request("PUT", "/v1/session/destroy/" + session)
        return rfc3339_to_unix(granted)

    def history(self, key):
        r = self.server.request("GET", "/v1/tenure/history/" + quote_key(key))
        self.assertEqual(r.status, 200, r)
        return r.json()

    def measure_lock_delay(self, key):
        """Holder with a 1 s lock-delay destroyed; a waiter tries until granted.
        Returns (destroy sent, destroy answered, first granted attempt's send)."""
        holder = self.server.create_session({"LockDelay": "%ds" % LOCK_DELAY_S})
        waiter = self.server.create_session({"LockDelay": "0s"})
        self.assertTrue(self.acquire(key, holder))
        sent = time.monotonic()
        r = self.server.request("PUT", "/v1/session/destroy/" + holder)
        answered = time.monotonic()
        self.assertEqual(r.status, 200, r)
        deadline = answered + LOCK_DELAY_S + LATE_S + 5.0
        while time.monotonic() < deadline:
            attempt = time.monotonic()
            if self.acquire(key, waiter):
                return sent, answered, attempt, time.monotonic()
            time.sleep(0.02)
        self.fail("%s: still lock-delayed %.1f s after the destroy (a %.0f s window)"
                  % (key, time.monotonic() - answered, LOCK_DELAY_S))

    def check_window(self, key):
        sent, answered, attempt, granted = self.measure_lock_delay(key)
        self.assertGreaterEqual(granted, sent + LOCK_DELAY_S - CLOCK_SLACK_S,
                                "%s: granted before its lock-delay ended" % key)
        self.assertLessEqual(attempt, answered + LOCK_DELAY_S + LATE_S,
                             "%s: still refused %.2f s after its destroy"
                             % (key, attempt - answered))

    def check_a_day_off_then_fixed(self, offset, sign):
        # First start with the wrong clock: the data dir gets its stamps.
        self.server.env = faked(offset)
        self.server.start()
        skew = self.server_wall_clock() - time.time()
        self.assertAlmostEqual(skew, sign * DAY_S, delta=60,
                               msg="libfaketime did not move the server's wall clock")
        self.check_window("clock/wrong/window")
        holder = self.server.create_session({"LockDelay": "%ds" % LOCK_DELAY_S})
        self.assertTrue(self.acquire("clock/held", holder))
        # Fixed: the same data dir, the right clock.
        self.restart({})
        self.assertAlmostEqual(self.server_wall_clock(), time.time(), delta=60,
                               msg="the history's times did not recover with the clock")
        self.check_window("clock/fixed/window")
        # The lock granted under the wrong clock: its end is stamped right.
        self.server.request("PUT", "/v1/session/destroy/" + holder)
        grants = self.history("clock/held")
        self.assertAlmostEqual(rfc3339_to_unix(grants[0]["GrantedAt"]) - time.time(), sign * DAY_S,
                               delta=60)
        self.assertAlmostEqual(rfc3339_to_unix(grants[0]["EndedAt"]), time.time(), delta=60)

    def test_a_day_ahead_then_fixed(self):
        self.check_a_day_off_then_fixed("+1d", +1)

    def test_a_day_behind_then_fixed(self):
        self.check_a_day_off_then_fixed("-1d", -1)

    def test_right_then_a_day_behind(self):
        # The reverse: the data dir's clock is right, the restarted server's a
        # day behind. Its windows must still end on time.
        self.server.start()
        self.check_window("clock/right/window")
        self.restart(faked("-1d"))
        self.check_window("clock/behind/window")
        self.restart(faked("+1d"))
        self.check_window("clock/ahead/window")


if __name__ == "__main__":
    unittest.main()
