"""Session TTL expiry and lock-delay against real servers, with stated tolerances.

Rules (docs/consul-api.md):
  §1.7  TTL is a lower bound: the leader arms a timer of TTL x multiplier (Consul: 2) at
        create and at every renew, so a session is gone between TTL and multiplier x TTL
        after its last renewal. tenure's `-session-ttl-multiplier` (default 2, "as Consul")
        makes the upper end configurable.
  §1.5  Renew of an expired session: 404 `Session id '<id>' not found`.
  §2.6  Invalidation (destroy or expiry): behavior release clears Session (watchers woken),
        behavior delete deletes the keys; then lock-delay min(LockDelay, 60 s) on exactly
        those keys, blocking only acquires (KV `false`, txn 409 `failed to lock key "<k>"
        due to lock delay`); keys released before the destroy get none.
  §1.1  LockDelay is stored and echoed unclamped; the 60 s cap applies when used.

Tolerances (2-core CI machine, loopback):
  TTL 10 s, multiplier 2: never gone before 10 s after the last renewal (decision 0004) and, as
  Consul arms 2 x TTL, not before 20 s either; gone by 20 s + 1.5 s.
  Multiplier 1: gone between 10 s and 11.5 s.
  Lock-delay 2 s: acquire is `false` until >= 2 s after the destroy was sent, `true` by
  2 s + 0.5 s after the destroy was acknowledged.
Lower bounds are measured from just before the request that armed the timer was sent
(the server cannot have started earlier), upper bounds from just after it was answered,
so neither direction can fail because of request latency.

Wall time: the long TTL scenarios run in background threads started by setUpModule, on
two servers (multiplier 2 and 1); the lock-delay tests run meanwhile. About 50 s in all.

Run (from tests/integration):
  TENURE_BIN=<path>/tenure PYTHONPATH=<repo>/tests/lib /usr/bin/python3 -m unittest -v test_ttl_lockdelay
"""

import base64
import concurrent.futures
import json
import threading
import time
import unittest

from tenure_testlib import DevServer, quote_key

TTL_S = 10.0  # the minimum TTL (limits::kSessionTtlMinNs)
POLL_S = 0.1  # how often session/info is polled
LATE_S = 1.5  # allowed lateness of an expiry
CLOCK_SLACK_S = 0.02  # server timers are in whole milliseconds
LOCK_DELAY_S = 2.0
LOCK_DELAY_LATE_S = 0.5
RENEW_EVERY_S = 3.0
RENEW_FOR_S = 25.0

SERVERS = {}  # "mult2" (default multiplier), "mult1" (-session-ttl-multiplier 1)
SCENARIOS = {}  # name -> Future of the scenario's measurements
EXECUTOR = None


def setUpModule():
    global EXECUTOR
    for name, args in [("mult2", []), ("mult1", ["-session-ttl-multiplier", "1"])]:
        server = DevServer(extra_args=args)
        unittest.addModuleCleanup(server.close)
        server.start()
        SERVERS[name] = server
    EXECUTOR = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="ttl")
    unittest.addModuleCleanup(EXECUTOR.shutdown, wait=True, cancel_futures=True)
    SCENARIOS["mult2_expiry"] = EXECUTOR.submit(expiry_scenario, SERVERS["mult2"])
    SCENARIOS["mult1_expiry"] = EXECUTOR.submit(expiry_scenario, SERVERS["mult1"])
    SCENARIOS["renewal"] = EXECUTOR.submit(renewal_scenario, SERVERS["mult2"])
    SCENARIOS["release"] = EXECUTOR.submit(release_scenario, SERVERS["mult1"])
    SCENARIOS["delete"] = EXECUTOR.submit(delete_scenario, SERVERS["mult1"])


def check_all_servers(where):
    for name, server in SERVERS.items():
        server.check_healthy("(%s server) %s" % (name, where))


def fail(message):
    raise AssertionError(message)


def expect(condition, message):
    if not condition:
        fail(message)


# --- background scenarios (run in threads; return measurements, raise on failure) --------

def watch_until_gone(server, sid, deadline_s):
    """Polls session/info every POLL_S until the session is gone. Returns
    (last_present_sent, first_gone_sent, first_gone_received) in time.monotonic()."""
    last_present = None
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        sent = time.monotonic()
        r = server.request("GET", "/v1/session/info/" + sid, timeout=5.0)
        received = time.monotonic()
        expect(r.status == 200, "session info: %r" % r)
        if r.json() == []:
            return last_present, sent, received
        expect(r.json()[0]["ID"] == sid, r)
        last_present = sent
        time.sleep(max(0.0, POLL_S - (time.monotonic() - sent)))
    fail("session %s still present %.0f s later" % (sid, deadline_s))


def renew_after_expiry(server, sid):
    r = server.request("PUT", "/v1/session/renew/" + sid)
    return r.status, r.text


def expiry_scenario(server):
    """A TTL 10 s session, never renewed: when is it gone?"""
    sent = time.monotonic()
    sid = server.create_session({"Name": "expiry", "TTL": "10s"})
    acked = time.monotonic()
    last_present, gone_sent, gone_received = watch_until_gone(server, sid, 40.0)
    return {"sid": sid, "sent": sent, "acked": acked, "last_present": last_present,
            "gone_sent": gone_sent, "gone_received": gone_received,
            "renew_after": renew_after_expiry(server, sid)}


def renewal_scenario(server):
    """Renew every 3 s for 25 s: still there; then stop renewing and time the expiry from
    the last renewal."""
    sid = server.create_session({"Name": "renewed", "TTL": "10s"})
    start = time.monotonic()
    renewals = []  # (sent, acked)
    checks = 0
    next_renew = start + RENEW_EVERY_S
    while True:
        now = time.monotonic()
        if now - start >= RENEW_FOR_S:
            break
        if now >= next_renew:
            sent = time.monotonic()
            r = server.request("PUT", "/v1/session/renew/" + sid)
            acked = time.monotonic()
            expect(r.status == 200, "renew %d failed: %r" % (len(renewals) + 1, r))
            body = r.json()
            expect(len(body) == 1 and body[0]["ID"] == sid and body[0]["TTL"] == "10s",
                   "renew answer %r" % body)
            renewals.append((sent, acked))
            next_renew += RENEW_EVERY_S
        r = server.request("GET", "/v1/session/info/" + sid)
        expect(r.status == 200 and len(r.json()) == 1,
               "session gone %.1f s after create despite renewals every %.0f s"
               % (time.monotonic() - start, RENEW_EVERY_S))
        checks += 1
        time.sleep(POLL_S)
    alive_at = time.monotonic() - start
    r = server.request("GET", "/v1/session/info/" + sid)
    expect(len(r.json()) == 1, "session gone at %.1f s despite renewals" % alive_at)
    last_present, gone_sent, gone_received = watch_until_gone(server, sid, 40.0)
    return {"sid": sid, "renewals": renewals, "alive_at": alive_at, "checks": checks,
            "last_renew_sent": renewals[-1][0], "last_renew_acked": renewals[-1][1],
            "gone_sent": gone_sent, "gone_received": gone_received}


def blocking_get(server, path, timeout_s=60.0):
    sent = time.monotonic()
    r = server.request("GET", path, timeout=timeout_s)
    return r, sent, time.monotonic()


def release_scenario(server):
    """Behavior release, LockDelay 2 s, TTL 10 s on the multiplier-1 server: expiry clears
    Session on the held key (value, LockIndex kept) and wakes a blocking query on it; the
    key then has lock-delay."""
    key = "ttl/release/k"
    other = server.create_session({"Name": "waiting", "LockDelay": "0s"})
    sent = time.monotonic()
    sid = server.create_session({"Name": "expiring", "TTL": "10s", "Behavior": "release",
                                  "LockDelay": "2s"})
    acked = time.monotonic()
    r = server.request("PUT", "/v1/kv/%s?acquire=%s" % (key, sid), b"held value")
    expect(r.body == b"true", r)
    before = server.kv_entry(key)
    r, _, woke = blocking_get(server, "/v1/kv/%s?index=%d&wait=60s" % (key, before["ModifyIndex"]))
    expect(r.status == 200, "blocking query after expiry: %r" % r)
    after = r.json()[0]
    index = int(r.header("X-Consul-Index"))
    # Lock-delay right after the wake-up: acquire by another session is refused.
    r2 = server.request("PUT", "/v1/kv/%s?acquire=%s" % (key, other), b"taker")
    refused_at = time.monotonic()
    first_true = None
    deadline = woke + LOCK_DELAY_S + LOCK_DELAY_LATE_S + 2.0
    while time.monotonic() < deadline:
        s = time.monotonic()
        r3 = server.request("PUT", "/v1/kv/%s?acquire=%s" % (key, other), b"taker")
        if r3.body == b"true":
            first_true = (s, time.monotonic())
            break
        expect((r3.status, r3.body) == (200, b"false"), "acquire during lock-delay: %r" % r3)
        time.sleep(0.05)
    info = server.request("GET", "/v1/session/info/" + sid).json()
    server.request("PUT", "/v1/session/destroy/" + other)
    return {"sid": sid, "sent": sent, "acked": acked, "woke": woke, "before": before,
            "after": after,
            "index": index, "acquire_after_wake": (r2.status, r2.body, refused_at - woke),
            "first_true": first_true, "info": info, "renew_after": renew_after_expiry(server, sid)}


def delete_scenario(server):
    """Behavior delete: expiry deletes the held keys (and only those) and wakes a blocking
    query on one of them with a 404 carrying a higher X-Consul-Index."""
    prefix = "ttl/delete/"
    sent = time.monotonic()
    sid = server.create_session({"Name": "expiring-delete", "TTL": "10s", "Behavior": "delete",
                                  "LockDelay": "0s"})
    acked = time.monotonic()
    for k in ["a", "b"]:
        r = server.request("PUT", "/v1/kv/%s%s?acquire=%s" % (prefix, k, sid), k.encode())
        expect(r.body == b"true", r)
    r = server.request("PUT", "/v1/kv/%sc" % prefix, b"not held")
    expect(r.body == b"true", r)
    held = server.kv_entry(prefix + "a")
    r, _, woke = blocking_get(server, "/v1/kv/%sa?index=%d&wait=60s" % (prefix, held["ModifyIndex"]))
    remaining = server.request("GET", "/v1/kv/%s?recurse" % prefix)
    return {"sid": sid, "sent": sent, "acked": acked, "woke": woke, "status": r.status,
            "body": r.body,
            "index": int(r.header("X-Consul-Index") or 0), "held_index": held["ModifyIndex"],
            "remaining": [e["Key"] for e in remaining.json()] if remaining.status == 200 else [],
            "renew_after": renew_after_expiry(server, sid)}


# --- lock-delay tests (run while the TTL scenarios wait) ---------------------------------

class TestLockDelay(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.server = SERVERS["mult2"]

    @classmethod
    def tearDownClass(cls):
        check_all_servers("at the end of TestLockDelay")

    def put(self, key, value=b"", query=""):
        return self.server.request("PUT", "/v1/kv/" + quote_key(key) + ("?" + query if query else ""),
                                   value)

    def acquire(self, key, sid, value=b"v"):
        r = self.put(key, value, "acquire=" + sid)
        self.assertEqual(r.status, 200, r)
        self.assertIn(r.body, (b"true", b"false"))
        return r.body == b"true"

    def destroy(self, sid):
        r = self.server.request("PUT", "/v1/session/destroy/" + sid)
        self.assertEqual((r.status, r.body), (200, b"true"))

    def txn(self, ops):
        return self.server.request("PUT", "/v1/txn", json.dumps(ops))

    def measure_lock_delay(self, key, behavior):
        holder = self.server.create_session({"LockDelay": "2s", "Behavior": behavior})
        waiter = self.server.create_session({"LockDelay": "0s"})
        self.assertTrue(self.acquire(key, holder, b"holder's"))
        destroy_sent = time.monotonic()
        self.destroy(holder)
        destroy_acked = time.monotonic()
        attempts = []  # (sent, received, granted)
        deadline = destroy_acked + LOCK_DELAY_S + LOCK_DELAY_LATE_S + 1.0
        while time.monotonic() < deadline:
            sent = time.monotonic()
            granted = self.acquire(key, waiter, b"waiter's")
            attempts.append((sent, time.monotonic(), granted))
            if granted:
                break
            if behavior == "release":
                e = self.server.kv_entry(key)
                self.assertNotIn("Session", e)
                self.assertEqual(base64.b64decode(e["Value"]), b"holder's",
                                 "a refused acquire must not write")
            else:
                self.assertIsNone(self.server.kv_entry(key), "behavior delete deletes the key")
            time.sleep(0.05)
        self.destroy(waiter)
        return destroy_sent, destroy_acked, attempts

    def test_lock_delay_blocks_acquire_until_it_passes(self):
        # Both behaviors at once (their own keys): the waits overlap.
        results = {}
        errors = []

        def run(behavior):
            try:
                results[behavior] = self.measure_lock_delay("ld/measure/" + behavior, behavior)
            except BaseException as e:  # noqa: BLE001 - re-raised below
                errors.append(e)
        threads = [threading.Thread(target=run, args=(b,)) for b in ("release", "delete")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        if errors:
            raise errors[0]
        for behavior, (destroy_sent, destroy_acked, attempts) in sorted(results.items()):
            self.assertGreater(len(attempts), 5)
            self.assertFalse(attempts[0][2], "acquire right after the destroy must be refused")
            granted = [a for a in attempts if a[2]]
            self.assertTrue(granted, "%s: acquire still refused %.1f s after the destroy"
                            % (behavior, attempts[-1][0] - destroy_acked))
            sent, received, _ = granted[0]
            last_refused = [a for a in attempts if not a[2]][-1]
            print("\n  lock-delay 2 s (%s): last refused %.3f s, first granted %.3f s after "
                  "the destroy" % (behavior, last_refused[0] - destroy_sent, sent - destroy_sent))
            self.assertGreaterEqual(received, destroy_sent + LOCK_DELAY_S - CLOCK_SLACK_S,
                                    "%s: granted before the 2 s lock-delay ended" % behavior)
            self.assertLessEqual(sent, destroy_acked + LOCK_DELAY_S + LOCK_DELAY_LATE_S,
                                 "%s: still refused after 2 s + %.1f s" % (behavior, LOCK_DELAY_LATE_S))

    def test_lock_delay_only_blocks_acquire(self):
        key = "ld/others/k"
        holder = self.server.create_session({"LockDelay": "5s"})
        waiter = self.server.create_session({"LockDelay": "0s"})
        self.assertTrue(self.acquire(key, holder, b"held"))
        self.destroy(holder)
        destroyed = time.monotonic()
        self.assertFalse(self.acquire(key, waiter), "acquire during lock-delay")
        # Plain PUT, cas, release, reads and delete are unaffected (§2.6).
        r = self.put(key, b"plain")
        self.assertEqual((r.status, r.body), (200, b"true"), "plain PUT during lock-delay")
        e = self.server.kv_entry(key)
        self.assertEqual(base64.b64decode(e["Value"]), b"plain")
        r = self.put(key, b"cas", "cas=%d" % e["ModifyIndex"])
        self.assertEqual((r.status, r.body), (200, b"true"), "cas during lock-delay")
        self.assertEqual(self.put(key, b"x", "cas=0").body, b"false")
        r = self.put(key, b"rel", "release=" + waiter)
        self.assertEqual((r.status, r.body), (200, b"false"), "release: normal answer, no error")
        r = self.txn([{"KV": {"Verb": "unlock", "Key": key, "Session": waiter}}])
        self.assertEqual(r.status, 409)
        self.assertEqual(r.json()["Errors"][0]["What"],
                         'failed to unlock key "%s", lock isn\'t held, or is held by another '
                         'session' % key)
        r = self.txn([{"KV": {"Verb": "set", "Key": key, "Value": base64.b64encode(b"txn").decode()}},
                      {"KV": {"Verb": "cas", "Key": key + "2", "Index": 0}}])
        self.assertEqual(r.status, 200, "txn set/cas during lock-delay: %r" % r)
        self.assertEqual(self.server.request("GET", "/v1/kv/" + key).status, 200)
        r = self.server.request("DELETE", "/v1/kv/" + key)
        self.assertEqual((r.status, r.body), (200, b"true"), "delete during lock-delay")
        self.assertIsNone(self.server.kv_entry(key))
        self.assertEqual(self.put(key, b"again", "cas=0").body, b"true", "re-create during delay")
        # The delay belongs to the key: it outlives delete and re-create.
        self.assertFalse(self.acquire(key, waiter), "acquire after delete+re-create in the window")
        elapsed = time.monotonic() - destroyed
        self.assertLess(elapsed, 4.5, "too slow (%.1f s) to have stayed inside the 5 s window" % elapsed)
        # After the window: granted.
        deadline = destroyed + 5.0 + LOCK_DELAY_LATE_S + 1.0
        while not self.acquire(key, waiter):
            self.assertLess(time.monotonic(), deadline, "still refused after the 5 s lock-delay")
            time.sleep(0.05)
        self.destroy(waiter)

    def test_txn_lock_during_lock_delay_is_409(self):
        key = "ld/txn/k"
        holder = self.server.create_session({"LockDelay": "3s"})
        waiter = self.server.create_session({"LockDelay": "0s"})
        self.assertTrue(self.acquire(key, holder))
        self.destroy(holder)
        before = self.server.kv_entry(key)
        r = self.txn([{"KV": {"Verb": "lock", "Key": key, "Session": waiter}}])
        self.assertEqual(r.status, 409, r)
        self.assertEqual(r.json(), {"Results": None, "Errors": [
            {"OpIndex": 0, "What": 'failed to lock key "%s" due to lock delay' % key}]})
        r = self.txn([{"KV": {"Verb": "set", "Key": "ld/txn/other", "Value": None}},
                      {"KV": {"Verb": "lock", "Key": key, "Session": waiter}}])
        self.assertEqual(r.status, 409, r)
        self.assertEqual(r.json()["Errors"], [
            {"OpIndex": 1, "What": 'failed to lock key "%s" due to lock delay' % key}])
        self.assertIsNone(self.server.kv_entry("ld/txn/other"), "rolled back")
        self.assertEqual(self.server.kv_entry(key), before)
        # The KV endpoint answers the same situation with 200 false (§2.5).
        r = self.put(key, b"v", "acquire=" + waiter)
        self.assertEqual((r.status, r.body), (200, b"false"))
        self.destroy(waiter)

    def test_keys_released_before_destroy_get_no_lock_delay(self):
        holder = self.server.create_session({"LockDelay": "10s"})
        waiter = self.server.create_session({"LockDelay": "0s"})
        self.assertTrue(self.acquire("ld/rel/released", holder))
        self.assertTrue(self.acquire("ld/rel/kept", holder))
        self.assertEqual(self.put("ld/rel/released", b"v", "release=" + holder).body, b"true")
        self.destroy(holder)
        self.assertTrue(self.acquire("ld/rel/released", waiter),
                        "a key released before the destroy must get no lock-delay (§2.6)")
        self.assertFalse(self.acquire("ld/rel/kept", waiter), "a key held at the destroy gets it")
        self.assertTrue(self.acquire("ld/rel/never-held", waiter), "unrelated keys are free")
        self.destroy(waiter)

    def test_zero_tiny_and_default_lock_delay(self):
        waiter = self.server.create_session({"LockDelay": "0s"})
        for delay, key in [("0s", "ld/zero"), (0, "ld/zero-number"), ("0.001s", "ld/tiny")]:
            holder = self.server.create_session({"LockDelay": delay})
            self.assertTrue(self.acquire(key, holder))
            self.destroy(holder)
            start = time.monotonic()
            while not self.acquire(key, waiter):
                self.assertLess(time.monotonic() - start, 0.5,
                                "LockDelay %r still blocks after 0.5 s" % (delay,))
                time.sleep(0.01)
        holder = self.server.create_session()  # default LockDelay 15 s (§1.1)
        self.assertTrue(self.acquire("ld/default", holder))
        self.destroy(holder)
        self.assertFalse(self.acquire("ld/default", waiter), "default 15 s lock-delay not applied")
        self.destroy(waiter)

    def test_long_lock_delay_is_stored_unclamped(self):
        # Capped at 60 s when applied (limits::kLockDelayMaxNs); not waited for here.
        for delay, ns in [("120s", 120 * 10 ** 9), ("1h", 3600 * 10 ** 9), (90, 90 * 10 ** 9),
                          ("61s", 61 * 10 ** 9)]:
            sid = self.server.create_session({"LockDelay": delay})
            info = self.server.request("GET", "/v1/session/info/" + sid).json()[0]
            self.assertEqual(info["LockDelay"], ns, "LockDelay %r echoed unclamped" % (delay,))
            r = self.server.request("PUT", "/v1/session/renew/" + sid)
            self.assertEqual(r.json()[0]["LockDelay"], ns)
            self.assertTrue(self.acquire("ld/long/%s" % delay, sid))
            self.destroy(sid)
            waiter = self.server.create_session({"LockDelay": "0s"})
            self.assertFalse(self.acquire("ld/long/%s" % delay, waiter))
            self.destroy(waiter)


# --- TTL expiry (collects the background scenarios) -------------------------------------

class TestTtlExpiry(unittest.TestCase):

    @classmethod
    def tearDownClass(cls):
        check_all_servers("at the end of TestTtlExpiry")

    def result(self, name):
        return SCENARIOS[name].result(timeout=90)

    def check_renew_after_expiry(self, m):
        status, text = m["renew_after"]
        self.assertEqual((status, text), (404, "Session id '%s' not found" % m["sid"]),
                         "renew after expiry (§1.5)")

    def test_ttl_10s_default_multiplier(self):
        m = self.result("mult2_expiry")
        gone_after = m["gone_received"] - m["sent"]
        print("\n  TTL 10 s, multiplier 2: gone %.2f s after create (last seen %.2f s, "
              "first missing poll sent %.2f s)" % (gone_after, m["last_present"] - m["sent"],
                                                  m["gone_sent"] - m["sent"]))
        self.assertGreaterEqual(m["gone_received"], m["sent"] + TTL_S - CLOCK_SLACK_S,
                                "gone before its TTL")
        self.assertGreaterEqual(m["gone_received"], m["sent"] + 2 * TTL_S - CLOCK_SLACK_S,
                                "gone before 2 x TTL: Consul's (and tenure's default) "
                                "multiplier is 2 (§1.7)")
        self.assertLessEqual(m["gone_sent"], m["acked"] + 2 * TTL_S + LATE_S,
                             "still there at 2 x TTL + %.1f s" % LATE_S)
        self.check_renew_after_expiry(m)

    def test_ttl_10s_multiplier_1(self):
        m = self.result("mult1_expiry")
        print("\n  TTL 10 s, multiplier 1: gone %.2f s after create"
              % (m["gone_received"] - m["sent"]))
        self.assertGreaterEqual(m["gone_received"], m["sent"] + TTL_S - CLOCK_SLACK_S,
                                "gone before its TTL")
        self.assertLessEqual(m["gone_sent"], m["acked"] + TTL_S + LATE_S,
                             "still there at TTL + %.1f s" % LATE_S)
        self.check_renew_after_expiry(m)

    def test_renewal_keeps_session_alive(self):
        m = self.result("renewal")
        gone_after = m["gone_received"] - m["last_renew_sent"]
        print("\n  renewed %d times over %.1f s (%d checks, all present); gone %.2f s after "
              "the last renewal" % (len(m["renewals"]), m["alive_at"], m["checks"], gone_after))
        self.assertGreaterEqual(m["alive_at"], RENEW_FOR_S)
        self.assertGreaterEqual(len(m["renewals"]), int(RENEW_FOR_S / RENEW_EVERY_S) - 1)
        self.assertGreaterEqual(m["gone_received"], m["last_renew_sent"] + TTL_S - CLOCK_SLACK_S,
                                "gone less than TTL after the last renewal")
        self.assertGreaterEqual(m["gone_received"],
                                m["last_renew_sent"] + 2 * TTL_S - CLOCK_SLACK_S,
                                "gone less than 2 x TTL after the last renewal (§1.7)")
        self.assertLessEqual(m["gone_sent"], m["last_renew_acked"] + 2 * TTL_S + LATE_S,
                             "still there 2 x TTL + %.1f s after the last renewal" % LATE_S)

    def test_expiry_with_behavior_release(self):
        m = self.result("release")
        print("\n  release: blocking query woken %.2f s after create; acquire granted %.2f s "
              "after the wake-up" % (m["woke"] - m["sent"],
                                     (m["first_true"] or [float("nan")])[0] - m["woke"]))
        self.assertGreaterEqual(m["woke"], m["sent"] + TTL_S - CLOCK_SLACK_S,
                                "released before the TTL")
        self.assertLessEqual(m["woke"], m["acked"] + TTL_S + LATE_S, "woken too late")
        before, after = m["before"], m["after"]
        self.assertNotIn("Session", after, "expiry must clear Session (§2.6)")
        self.assertEqual(after["LockIndex"], before["LockIndex"])
        self.assertEqual(after["Value"], before["Value"], "release keeps the value")
        self.assertEqual(after["CreateIndex"], before["CreateIndex"])
        self.assertGreater(after["ModifyIndex"], before["ModifyIndex"])
        self.assertEqual(m["index"], after["ModifyIndex"])
        self.assertEqual(m["info"], [])
        status, body, _ = m["acquire_after_wake"]
        self.assertEqual((status, body), (200, b"false"),
                         "lock-delay (2 s) after expiry must refuse an immediate acquire")
        self.assertIsNotNone(m["first_true"], "acquire never granted after the lock-delay")
        granted_sent, granted_received = m["first_true"]
        # The expiry cannot have happened before sent + TTL, so the lock-delay cannot end
        # before sent + TTL + 2 s; it must end within 2 s + tolerance of the wake-up.
        self.assertGreaterEqual(granted_received, m["sent"] + TTL_S + LOCK_DELAY_S - CLOCK_SLACK_S,
                                "granted before the 2 s lock-delay after expiry ended")
        self.assertLessEqual(granted_sent, m["woke"] + LOCK_DELAY_S + LOCK_DELAY_LATE_S,
                             "still refused 2 s + %.1f s after the expiry" % LOCK_DELAY_LATE_S)
        self.check_renew_after_expiry(m)

    def test_expiry_with_behavior_delete(self):
        m = self.result("delete")
        print("\n  delete: blocking query woken %.2f s after create" % (m["woke"] - m["sent"]))
        self.assertGreaterEqual(m["woke"], m["sent"] + TTL_S - CLOCK_SLACK_S)
        self.assertLessEqual(m["woke"], m["acked"] + TTL_S + LATE_S)
        self.assertEqual((m["status"], m["body"]), (404, b""),
                         "the held key is deleted, the blocking query answers 404")
        self.assertGreater(m["index"], m["held_index"], "404 must carry a higher X-Consul-Index")
        self.assertEqual(m["remaining"], ["ttl/delete/c"], "only the held keys are deleted")
        self.check_renew_after_expiry(m)


if __name__ == "__main__":
    unittest.main()
