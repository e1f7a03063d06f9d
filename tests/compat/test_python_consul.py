"""Real-client compatibility: python-consul 0.7.1 (Debian's python3-consul), unmodified,
against a `tenure server -dev`, and again through a follower of a 3-server cluster.

What the client sends and how it parses answers: docs/consul-api.md section 9.1.
What the server must answer: consul-api.md sections 1 (sessions), 2 (KV), 3 (blocking),
4 (txn), 5 (status/agent) and the state table in section 11; tenure's fencing extension
is docs/fencing.md.

python-consul 0.7.1 has no txn API, so transactions (and the X-Tenure-Fence header, which
the client does not expose) are driven with plain HTTP (tenure_testlib's DevServer.request).

Run (from tests/compat, with Debian's interpreter, which can see python3-consul):
  TENURE_BIN=<path>/tenure PYTHONPATH=<repo>/tests/lib \
      /usr/bin/python3 -m unittest -v test_python_consul
"""

import base64
import json
import os
import threading
import time
import unittest
import uuid

import consul

from tenure_testlib import Cluster, DevServer, poll_until

# Flags used by the Go client's api.Lock and api.Semaphore (consul-api.md section 7).
LOCK_FLAG_VALUE = 3304740253564472344  # > 2^53: breaks any float64 path
SEMAPHORE_FLAG_VALUE = 16210313421097356768  # > 2^63: needs unsigned 64-bit storage

# How long a change may take to wake a blocked reader. Generous: the server wakes watchers
# on commit, which takes milliseconds on loopback.
WAKE_DEADLINE_S = 5.0
# How long a blocked reader must stay blocked before we believe it is really blocking.
STILL_BLOCKED_S = 0.5


def _b64(text):
    return base64.b64encode(text.encode()).decode()


class PythonConsulTest(unittest.TestCase):
    """One dev server for the class; every test uses its own key prefix and sessions."""

    @classmethod
    def setUpClass(cls):
        # python-consul 0.7.1 lets CONSUL_HTTP_ADDR/TOKEN/SSL override the constructor
        # arguments; keep the developer's environment from pointing us at another agent.
        for var in ("CONSUL_HTTP_ADDR", "CONSUL_HTTP_TOKEN", "CONSUL_HTTP_SSL",
                    "CONSUL_HTTP_SSL_VERIFY"):
            os.environ.pop(var, None)
        cls.server = DevServer()
        try:
            cls.server.start()
        except BaseException:
            cls.server.close()  # removes its temporary directory
            raise
        cls.host, port = cls.server.http_addr.split(":")
        cls.port = int(port)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def setUp(self):
        self.clients = []
        self.c = self.client()
        self.prefix = "compat/%s/" % self._testMethodName
        self.sessions = []

    def tearDown(self):
        for sid in self.sessions:
            self.c.session.destroy(sid)
        for client in self.clients:
            client.http.session.close()  # the client never closes its requests.Session

    def client(self):
        client = consul.Consul(host=self.host, port=self.port)
        self.clients.append(client)
        return client

    def session(self, **kwargs):
        sid = self.c.session.create(**kwargs)
        self.sessions.append(sid)
        return sid

    def node_name(self):
        return self.c.agent.self()["Config"]["NodeName"]

    def txn(self, ops):
        resp = self.server.request("PUT", "/v1/txn", json.dumps(ops))
        return resp.status, resp.json() if resp.body else None

    def acquire_http(self, key, session, value):
        """Acquire with plain HTTP, to see the X-Tenure-Fence header; returns the token."""
        resp = self.server.request("PUT", "/v1/kv/%s?acquire=%s" % (key, session), value)
        self.assertEqual((resp.status, resp.body), (200, b"true"), resp)
        return int(resp.header("X-Tenure-Fence"))

    def start_blocking(self, fn):
        """Runs fn() in a thread with its own client; returns (thread, result dict)."""
        result = {}

        def run():
            try:
                result["value"] = fn(self.client())
            except BaseException as err:  # reported by the test thread
                result["error"] = err

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread, result

    def assert_still_blocked(self, thread, result, what):
        thread.join(STILL_BLOCKED_S)
        self.assertTrue(thread.is_alive(),
                        "%s returned before any change was made: %r" % (what, result))

    def assert_woken(self, thread, result, what):
        thread.join(WAKE_DEADLINE_S)
        self.assertFalse(thread.is_alive(),
                         "%s was not woken within %.1f s of the change"
                         % (what, WAKE_DEADLINE_S))
        if "error" in result:
            raise result["error"]
        return result["value"]

    # --- status / agent (consul-api.md section 5) -------------------------------------

    def test_agent_self_has_string_config_node_name(self):
        info = self.c.agent.self()
        self.assertIsInstance(info["Config"]["NodeName"], str)
        self.assertNotEqual(info["Config"]["NodeName"], "")
        for key, value in info.items():
            self.assertIsInstance(value, dict, "agent/self top-level %r must be an object" % key)

    def test_status_leader_is_one_of_the_peers(self):
        leader = self.c.status.leader()
        peers = self.c.status.peers()
        self.assertRegex(leader, r"^[0-9.]+:\d+$")
        self.assertIsInstance(peers, list)
        self.assertIn(leader, peers)

    # --- sessions (section 1) ---------------------------------------------------------

    def test_session_create_patroni_style_is_stored_as_sent(self):
        # Patroni: checks=[], lock_delay=0.001 (python-consul sends "0.001s"), delete, ttl.
        sid = self.session(name="batman-pg0", checks=[], lock_delay=0.001,
                           behavior="delete", ttl=10)
        self.assertRegex(sid, r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
        index, info = self.c.session.info(sid)
        self.assertEqual(info["ID"], sid)
        self.assertEqual(info["Name"], "batman-pg0")
        self.assertEqual(info["Node"], self.node_name())
        self.assertEqual(info["LockDelay"], 1000000, "lockdelay \"0.001s\" is 1 ms in ns")
        self.assertEqual(info["Behavior"], "delete")
        self.assertEqual(info["TTL"], "10s")
        self.assertEqual(info["NodeChecks"], [], "checks=[] means no checks (section 1.1)")
        self.assertFalse(info.get("Checks"), "Checks is omitted when empty (section 1.6)")
        self.assertEqual(info["CreateIndex"], info["ModifyIndex"])
        self.assertGreaterEqual(int(index), info["CreateIndex"])

    def test_session_ttl_is_echoed_exactly_as_supplied(self):
        # python-consul formats '%ss' % ttl, so a float ttl gives Patroni's "15.0s".
        sid = self.session(ttl=15.0, checks=[])
        _, info = self.c.session.info(sid)
        self.assertEqual(info["TTL"], "15.0s")

    def test_session_create_with_empty_body_gets_consul_defaults(self):
        sid = self.session()  # python-consul sends an empty body
        _, info = self.c.session.info(sid)
        self.assertEqual(info["LockDelay"], 15000000000)
        self.assertEqual(info["Behavior"], "release")
        self.assertEqual(info["TTL"], "")
        self.assertEqual(info["NodeChecks"], ["serfHealth"])
        self.assertEqual(info["Name"], "")

    def test_session_info_list_node(self):
        sid = self.session(name="lister", ttl=10, checks=[])
        node = self.node_name()
        index, sessions = self.c.session.list()
        self.assertGreaterEqual(int(index), 1)
        self.assertIn(sid, [s["ID"] for s in sessions])
        index, on_node = self.c.session.node(node)
        self.assertGreaterEqual(int(index), 1)
        self.assertIn(sid, [s["ID"] for s in on_node])
        self.assertTrue(all(s["Node"] == node for s in on_node))
        index, nothing = self.c.session.node("no-such-node-" + uuid.uuid4().hex[:8])
        self.assertEqual(nothing, [], "session/node of an unknown node is [] (section 1.4)")
        index, info = self.c.session.info(sid)
        self.assertEqual(info["ID"], sid)
        index, missing = self.c.session.info(str(uuid.uuid4()))
        self.assertIsNone(missing, "info of an unknown session is [] (section 1.3)")
        self.assertGreaterEqual(int(index), 1)

    def test_session_renew_returns_session_then_not_found_after_destroy(self):
        sid = self.c.session.create(name="renewer", ttl=10, checks=[], behavior="delete")
        renewed = self.c.session.renew(sid)
        self.assertEqual(renewed["ID"], sid)
        self.assertEqual(renewed["TTL"], "10s", "renew returns the session with its TTL (1.5)")
        self.assertEqual(renewed["Behavior"], "delete")
        self.assertTrue(self.c.session.destroy(sid))
        with self.assertRaises(consul.NotFound) as ctx:
            self.c.session.renew(sid)
        self.assertIn("Session id '%s' not found" % sid, str(ctx.exception))
        self.assertTrue(self.c.session.destroy(sid), "destroy is idempotent (section 1.2)")
        _, info = self.c.session.info(sid)
        self.assertIsNone(info)

    # --- KV (section 2) ---------------------------------------------------------------

    def test_kv_put_get_values(self):
        key = self.prefix + "k"
        index, entry = self.c.kv.get(key)
        self.assertIsNone(entry)
        self.assertGreaterEqual(int(index), 1, "missing key still carries X-Consul-Index >= 1")
        self.assertTrue(self.c.kv.put(key, "hello"))
        index, entry = self.c.kv.get(key)
        self.assertEqual(entry["Key"], key)
        self.assertEqual(entry["Value"], b"hello")
        self.assertEqual(entry["Flags"], 0)
        self.assertEqual(entry["LockIndex"], 0)
        self.assertNotIn("Session", entry, "Session is omitted when unlocked (2.3)")
        self.assertEqual(entry["CreateIndex"], entry["ModifyIndex"])
        self.assertEqual(index, str(entry["ModifyIndex"]),
                         "single-key X-Consul-Index must be the key's ModifyIndex (3.1)")
        binary = bytes(range(256))
        self.assertTrue(self.c.kv.put(key, binary))
        _, entry = self.c.kv.get(key)
        self.assertEqual(entry["Value"], binary)
        self.assertTrue(self.c.kv.put(key, None))
        _, entry = self.c.kv.get(key)
        self.assertIsNone(entry["Value"], "an empty PUT body stores null (2.3)")

    def test_kv_body_is_never_form_decoded_and_keys_are_percent_decoded(self):
        # python-consul quotes the path (safe "/:") and sends str bodies without a
        # Content-Type; section 2.1 (key path) and trap 14 (raw body).
        key = self.prefix + "sp ace/ü?&=#%"
        body = "a=b&c=d%20+e"
        self.assertTrue(self.c.kv.put(key, body))
        _, entry = self.c.kv.get(key)
        self.assertEqual(entry["Key"], key)
        self.assertEqual(entry["Value"], body.encode())
        _, keys = self.c.kv.get(self.prefix, keys=True)
        self.assertEqual(keys, [key])

    def test_consistency_modes_are_accepted(self):
        # python-consul sends consistent=1 / stale=1 (presence-tested flags, section 0.4).
        key = self.prefix + "k"
        self.assertTrue(self.c.kv.put(key, "v"))
        sid = self.session(name="c", checks=[], ttl=10)
        for mode in ("consistent", "stale"):
            client = consul.Consul(host=self.host, port=self.port, consistency=mode)
            self.clients.append(client)
            index, entry = client.kv.get(key)
            self.assertEqual(entry["Value"], b"v", mode)
            self.assertEqual(index, str(entry["ModifyIndex"]), mode)
            _, listed = client.kv.get(self.prefix, recurse=True)
            self.assertEqual([e["Key"] for e in listed], [key], mode)
            _, sessions = client.session.list()
            self.assertIn(sid, [s["ID"] for s in sessions], mode)
            _, info = client.session.info(sid)
            self.assertEqual(info["ID"], sid, mode)

    def test_kv_cas_zero_creates_only_and_cas_n_matches_modify_index(self):
        key = self.prefix + "k"
        self.assertTrue(self.c.kv.put(key, "one", cas=0))
        self.assertFalse(self.c.kv.put(key, "two", cas=0), "cas=0 on an existing key")
        _, entry = self.c.kv.get(key)
        self.assertEqual(entry["Value"], b"one")
        first = entry["ModifyIndex"]
        self.assertFalse(self.c.kv.put(key, "stale", cas=first + 1000))
        self.assertTrue(self.c.kv.put(key, "three", cas=first))
        _, entry = self.c.kv.get(key)
        self.assertEqual(entry["Value"], b"three")
        self.assertGreater(entry["ModifyIndex"], first)
        self.assertEqual(entry["CreateIndex"], first)
        self.assertFalse(self.c.kv.put(key, "again", cas=first), "old ModifyIndex is stale")
        self.assertFalse(self.c.kv.put(self.prefix + "absent", "x", cas=5),
                         "cas=N>0 on a missing key")

    def test_kv_flags_round_trip_full_uint64(self):
        key = self.prefix + "k"
        for flags in (SEMAPHORE_FLAG_VALUE, LOCK_FLAG_VALUE, 2 ** 64 - 1, 1, 0):
            self.assertTrue(self.c.kv.put(key, "v", flags=flags))
            _, entry = self.c.kv.get(key)
            self.assertEqual(entry["Flags"], flags, "flags %d did not round-trip" % flags)
            _, listed = self.c.kv.get(self.prefix, recurse=True)
            self.assertEqual([e["Flags"] for e in listed], [flags])
        self.assertTrue(self.c.kv.put(key, "v", flags=SEMAPHORE_FLAG_VALUE))
        self.assertTrue(self.c.kv.put(key, "w"))
        _, entry = self.c.kv.get(key)
        self.assertEqual(entry["Flags"], 0, "a PUT without flags resets Flags to 0 (2.4)")

    def test_kv_recurse_lists_prefix_sorted(self):
        for key in ("b", "a/x", "a", "c"):
            self.assertTrue(self.c.kv.put(self.prefix + key, key))
        self.assertTrue(self.c.kv.put(self.prefix.rstrip("/") + "z", "outside"))
        index, entries = self.c.kv.get(self.prefix, recurse=True)
        self.assertEqual([e["Key"] for e in entries],
                         [self.prefix + k for k in ("a", "a/x", "b", "c")])
        self.assertEqual([e["Value"] for e in entries], [b"a", b"a/x", b"b", b"c"])
        self.assertEqual(int(index), max(e["ModifyIndex"] for e in entries))
        index, none = self.c.kv.get(self.prefix + "nothing/", recurse=True)
        self.assertIsNone(none)

    def test_kv_keys_with_separator(self):
        for key in ("a", "b/c", "b/d", "e/f/g"):
            self.assertTrue(self.c.kv.put(self.prefix + key, "v"))
        _, keys = self.c.kv.get(self.prefix, keys=True, separator="/")
        self.assertEqual(keys, [self.prefix + k for k in ("a", "b/", "e/")])
        _, keys = self.c.kv.get(self.prefix, keys=True)
        self.assertEqual(keys, [self.prefix + k for k in ("a", "b/c", "b/d", "e/f/g")])
        _, keys = self.c.kv.get(self.prefix + "b/", keys=True, separator="/")
        self.assertEqual(keys, [self.prefix + "b/c", self.prefix + "b/d"])

    def test_kv_delete_cas_and_recurse(self):
        key = self.prefix + "k"
        self.assertTrue(self.c.kv.put(key, "v"))
        _, entry = self.c.kv.get(key)
        self.assertFalse(self.c.kv.delete(key, cas=entry["ModifyIndex"] + 1000))
        self.assertIsNotNone(self.c.kv.get(key)[1], "failed cas delete must keep the key")
        self.assertFalse(self.c.kv.delete(key, cas=0), "cas=0 never deletes (2.7)")
        self.assertTrue(self.c.kv.delete(key, cas=entry["ModifyIndex"]))
        self.assertIsNone(self.c.kv.get(key)[1])
        self.assertTrue(self.c.kv.delete(key), "deleting a missing key answers true")

        for sub in ("t/a", "t/b/c", "t/d"):
            self.assertTrue(self.c.kv.put(self.prefix + sub, "v"))
        self.assertTrue(self.c.kv.put(self.prefix + "u", "keep"))
        self.assertTrue(self.c.kv.delete(self.prefix + "t/", recurse=True))
        self.assertIsNone(self.c.kv.get(self.prefix + "t/", recurse=True)[1])
        _, kept = self.c.kv.get(self.prefix, recurse=True)
        self.assertEqual([e["Key"] for e in kept], [self.prefix + "u"])

    # --- locks (sections 2.5, 2.6, 11) -------------------------------------------------

    def test_acquire_release_and_lock_index_rules(self):
        key = self.prefix + "leader"
        a = self.session(name="a", lock_delay=0, ttl=10, checks=[])
        b = self.session(name="b", lock_delay=0, ttl=10, checks=[])

        self.assertTrue(self.c.kv.put(key, "a1", acquire=a, flags=LOCK_FLAG_VALUE))
        _, entry = self.c.kv.get(key)
        self.assertEqual(entry["Session"], a)
        self.assertEqual(entry["LockIndex"], 1, "row 1: first acquire gives LockIndex 1")
        self.assertEqual(entry["Flags"], LOCK_FLAG_VALUE)
        self.assertEqual(entry["CreateIndex"], entry["ModifyIndex"])
        held_at = entry["ModifyIndex"]

        self.assertFalse(self.c.kv.put(key, "b1", acquire=b), "row 5: held by another")
        self.assertFalse(self.c.kv.put(key, "b1", release=b), "row 9: release by non-holder")
        _, entry = self.c.kv.get(key)
        self.assertEqual((entry["Session"], entry["Value"], entry["ModifyIndex"]),
                         (a, b"a1", held_at), "failed acquire/release must change nothing")

        self.assertTrue(self.c.kv.put(key, "a2", acquire=a), "row 3: holder re-acquires")
        _, entry = self.c.kv.get(key)
        self.assertEqual(entry["LockIndex"], 1, "row 3: same-session acquire keeps LockIndex")
        self.assertEqual(entry["Value"], b"a2")
        self.assertEqual(entry["Flags"], 0, "acquire without flags sets Flags 0 (trap 9)")

        self.assertTrue(self.c.kv.put(key, "a3", release=a), "row 8: holder releases")
        _, entry = self.c.kv.get(key)
        self.assertIsNone(entry.get("Session"), "Session cleared (omitted) after release")
        self.assertNotIn("Session", entry)
        self.assertEqual(entry["LockIndex"], 1, "release keeps LockIndex")
        self.assertEqual(entry["Value"], b"a3", "release replaces the value with its body")
        self.assertFalse(self.c.kv.put(key, "a4", release=a), "row 9: release of an unlocked key")
        self.assertFalse(self.c.kv.put(self.prefix + "absent", None, release=a),
                         "row 9: release of a missing key")

        self.assertTrue(self.c.kv.put(key, "b2", acquire=b), "row 2: acquire an unlocked key")
        _, entry = self.c.kv.get(key)
        self.assertEqual(entry["Session"], b)
        self.assertEqual(entry["LockIndex"], 2, "row 2: a new holder bumps LockIndex")

    def test_acquire_with_unknown_session_is_500_invalid_session(self):
        bogus = str(uuid.uuid4())
        with self.assertRaises(consul.ConsulException) as ctx:
            self.c.kv.put(self.prefix + "k", "v", acquire=bogus)
        self.assertEqual(str(ctx.exception), '500 invalid session "%s"' % bogus,
                         "row 6 / section 2.5 step 2")
        self.assertIsNone(self.c.kv.get(self.prefix + "k")[1])

    def test_destroy_of_delete_session_removes_held_key(self):
        key = self.prefix + "member"
        sid = self.c.session.create(name="eph", behavior="delete", checks=[], ttl=10,
                                    lock_delay=0)
        self.assertTrue(self.c.kv.put(key, "pg0", acquire=sid))
        other = self.prefix + "plain"
        self.assertTrue(self.c.kv.put(other, "not locked"))
        self.assertTrue(self.c.session.destroy(sid))
        index, entry = self.c.kv.get(key)
        self.assertIsNone(entry, "behavior=delete: the held key is deleted (row 14)")
        self.assertIsNotNone(self.c.kv.get(other)[1], "keys not held by the session stay")

    def test_destroy_of_release_session_unlocks_held_key(self):
        key = self.prefix + "leader"
        sid = self.c.session.create(name="rel", checks=[], ttl=10, lock_delay=0)
        self.assertTrue(self.c.kv.put(key, "v", acquire=sid))
        _, before = self.c.kv.get(key)
        self.assertTrue(self.c.session.destroy(sid))
        _, entry = self.c.kv.get(key)
        self.assertNotIn("Session", entry, "behavior=release: Session cleared (row 13)")
        self.assertEqual(entry["Value"], b"v", "row 13: value unchanged")
        self.assertEqual(entry["LockIndex"], 1, "row 13: LockIndex unchanged")
        self.assertGreater(entry["ModifyIndex"], before["ModifyIndex"])

    def test_lock_delay_blocks_acquire_for_about_one_second(self):
        key = self.prefix + "leader"
        tolerance_early_s, tolerance_late_s = 0.05, 2.0
        a = self.c.session.create(name="a", lock_delay=1, checks=[], ttl=10)  # sends "1s"
        b = self.session(name="b", lock_delay=0, checks=[], ttl=10)
        self.assertEqual(self.c.session.info(a)[1]["LockDelay"], 1000000000)
        self.assertTrue(self.c.kv.put(key, "a", acquire=a))

        t0 = time.monotonic()
        self.assertTrue(self.c.session.destroy(a))
        first = self.c.kv.put(key, "b", acquire=b)
        first_at = time.monotonic() - t0
        _, entry = self.c.kv.get(key)
        self.assertNotIn("Session", entry, "the destroyed session's lock is released")
        if first_at < 1.0 - tolerance_early_s:
            self.assertFalse(first, "acquire %.3f s after destroy, inside the 1 s lock-delay, "
                             "must answer false (section 2.6)" % first_at)
            status, body = self.txn([{"KV": {"Verb": "lock", "Key": key, "Session": b}}])
            if time.monotonic() - t0 < 1.0 - tolerance_early_s:
                self.assertEqual(status, 409, body)
                self.assertEqual(body["Errors"][0]["What"],
                                 'failed to lock key "%s" due to lock delay' % key)

        acquired_at = [None]

        def try_acquire():
            if self.c.kv.put(key, "b", acquire=b):
                acquired_at[0] = time.monotonic() - t0
                return True
            return False

        poll_until(try_acquire, timeout=1.0 + tolerance_late_s, interval=0.05,
                   message="acquire after a 1 s lock-delay (tolerance +%.1f s)" % tolerance_late_s)
        self.assertGreaterEqual(
            acquired_at[0], 1.0 - tolerance_early_s,
            "acquire succeeded %.3f s after destroy; lock-delay is 1 s (tolerance -%.2f s)"
            % (acquired_at[0], tolerance_early_s))
        _, entry = self.c.kv.get(key)
        self.assertEqual(entry["Session"], b)
        self.assertEqual(entry["LockIndex"], 2)

    # --- blocking queries (section 3) ------------------------------------------------

    def test_blocking_kv_get_is_woken_by_another_writer(self):
        key = self.prefix + "watched"
        self.assertTrue(self.c.kv.put(key, "v1"))
        index, entry = self.c.kv.get(key)
        self.assertEqual(index, str(entry["ModifyIndex"]))

        thread, result = self.start_blocking(
            lambda c: c.kv.get(key, index=index, wait="30s"))
        self.assert_still_blocked(thread, result, "kv.get(index=%s)" % index)
        self.assertTrue(self.client().kv.put(key, "v2"))
        new_index, new_entry = self.assert_woken(thread, result, "kv.get(index=%s)" % index)
        _, now = self.c.kv.get(key)
        self.assertEqual(new_entry["Value"], b"v2")
        self.assertEqual(new_index, str(now["ModifyIndex"]),
                         "woken read's X-Consul-Index must be the new ModifyIndex")
        self.assertGreater(int(new_index), int(index))

    def test_blocking_kv_get_on_missing_key_is_woken_by_create(self):
        key = self.prefix + "later"
        index, entry = self.c.kv.get(key)
        self.assertIsNone(entry)
        thread, result = self.start_blocking(
            lambda c: c.kv.get(key, index=index, wait="30s"))
        self.assert_still_blocked(thread, result, "kv.get(missing, index=%s)" % index)
        self.assertTrue(self.client().kv.put(key, "born"))
        new_index, new_entry = self.assert_woken(thread, result, "kv.get(missing)")
        self.assertEqual(new_entry["Value"], b"born")
        self.assertEqual(new_index, str(new_entry["ModifyIndex"]))

    def test_blocking_kv_get_times_out_with_unchanged_index(self):
        key = self.prefix + "quiet"
        self.assertTrue(self.c.kv.put(key, "v"))
        index, _ = self.c.kv.get(key)
        started = time.monotonic()
        new_index, entry = self.c.kv.get(key, index=index, wait="1s")
        elapsed = time.monotonic() - started
        self.assertEqual(new_index, index)
        self.assertEqual(entry["Value"], b"v")
        self.assertGreaterEqual(elapsed, 0.95, "wait=1s returned after %.3f s" % elapsed)
        self.assertLess(elapsed, 1.0 + 1.0 / 16 + 1.0,
                        "wait=1s (jitter < wait/16) returned after %.3f s (tolerance 1 s)"
                        % elapsed)

    def test_blocking_session_list_is_woken_by_session_create(self):
        index, _ = self.c.session.list()
        thread, result = self.start_blocking(
            lambda c: c.session.list(index=index, wait="30s"))
        self.assert_still_blocked(thread, result, "session.list(index=%s)" % index)
        sid = self.session(name="waker", checks=[], ttl=10)
        new_index, sessions = self.assert_woken(thread, result, "session.list")
        self.assertGreater(int(new_index), int(index))
        self.assertIn(sid, [s["ID"] for s in sessions])

    # --- transactions (section 4) and fencing (docs/fencing.md) -----------------------

    def test_txn_through_the_client(self):
        if not hasattr(self.c, "txn"):
            self.skipTest("python-consul %s has no txn API (no Consul.txn attribute); "
                          "/v1/txn is covered with plain HTTP in the test_txn_http_* and "
                          "test_check_fence_* tests" % consul.__version__)
        key = self.prefix + "k"
        result = self.c.txn.put([{"KV": {"Verb": "set", "Key": key, "Value": _b64("v")}}])
        self.assertIsNone(result["Errors"])
        self.assertEqual(self.c.kv.get(key)[1]["Value"], b"v")

    def test_txn_http_commit(self):
        a, b = self.prefix + "a", self.prefix + "b"
        status, body = self.txn([
            {"KV": {"Verb": "set", "Key": a, "Value": _b64("one"), "Flags": LOCK_FLAG_VALUE}},
            {"KV": {"Verb": "cas", "Key": b, "Value": _b64("two"), "Index": 0}},
            {"KV": {"Verb": "get", "Key": a}},
        ])
        self.assertEqual(status, 200, body)
        self.assertIsNone(body["Errors"])
        self.assertEqual(len(body["Results"]), 3)
        self.assertIsNone(body["Results"][0]["KV"]["Value"], "set results carry no Value (4.3)")
        got = body["Results"][2]["KV"]
        self.assertEqual(base64.b64decode(got["Value"]), b"one")
        self.assertEqual(got["Flags"], LOCK_FLAG_VALUE)
        self.assertEqual(self.c.kv.get(b)[1]["Value"], b"two")
        self.assertEqual(self.c.kv.get(a)[1]["ModifyIndex"], self.c.kv.get(b)[1]["ModifyIndex"],
                         "one transaction is one raft index")

    def test_txn_http_rollback_is_409_with_errors_and_writes_nothing(self):
        new, missing = self.prefix + "new", self.prefix + "missing"
        status, body = self.txn([
            {"KV": {"Verb": "set", "Key": new, "Value": _b64("x")}},
            {"KV": {"Verb": "check-index", "Key": missing, "Index": 5}},
        ])
        self.assertEqual(status, 409, body)
        self.assertIsNone(body["Results"])
        self.assertEqual(body["Errors"], [
            {"OpIndex": 1, "What": 'failed to check index, key "%s" doesn\'t exist' % missing}])
        self.assertIsNone(self.c.kv.get(new)[1], "a rolled-back txn must write nothing")

    def test_txn_http_rollback_reports_every_failing_op(self):
        existing, missing = self.prefix + "existing", self.prefix + "missing"
        self.assertTrue(self.c.kv.put(existing, "v"))
        status, body = self.txn([
            {"KV": {"Verb": "check-index", "Key": missing, "Index": 5}},
            {"KV": {"Verb": "set", "Key": self.prefix + "new", "Value": _b64("x")}},
            {"KV": {"Verb": "cas", "Key": existing, "Value": _b64("y"), "Index": 0}},
        ])
        self.assertEqual(status, 409, body)
        self.assertEqual([e["OpIndex"] for e in body["Errors"]], [0, 2],
                         "all failing ops are reported (section 4.3): %r" % body)
        self.assertEqual(body["Errors"][1]["What"],
                         'failed to set key "%s", index is stale' % existing)
        self.assertEqual(self.c.kv.get(existing)[1]["Value"], b"v")

    def test_check_fence_passes_only_for_the_current_grant(self):
        key, data = self.prefix + "leader", self.prefix + "data"
        a = self.session(name="a", lock_delay=0, checks=[], ttl=10)
        b = self.session(name="b", lock_delay=0, checks=[], ttl=10)

        fence = self.acquire_http(key, a, "a")
        _, entry = self.c.kv.get(key)
        self.assertEqual(entry["Fence"], fence, "X-Tenure-Fence equals the key's Fence")
        self.assertEqual(fence, entry["ModifyIndex"], "token = raft index of the grant")

        status, result = self.txn([
            {"KV": {"Verb": "check-fence", "Key": key, "Index": fence}},
            {"KV": {"Verb": "set", "Key": data, "Value": _b64("by a")}}])
        self.assertEqual(status, 200, result)
        self.assertEqual(self.c.kv.get(data)[1]["Value"], b"by a")

        self.assertEqual(self.acquire_http(key, a, "a2"), fence,
                         "a re-acquire by the holder keeps the token (header)")
        self.assertEqual(self.c.kv.get(key)[1]["Fence"], fence,
                         "a re-acquire by the holder keeps the token")

        self.assertTrue(self.c.kv.put(key, None, release=a))
        _, entry = self.c.kv.get(key)
        self.assertFalse(entry.get("Fence"), "no token while unlocked")
        status, result = self.txn([
            {"KV": {"Verb": "check-fence", "Key": key, "Index": fence}},
            {"KV": {"Verb": "set", "Key": data, "Value": _b64("late a")}}])
        self.assertEqual(status, 409, result)
        self.assertEqual(result["Errors"][0]["OpIndex"], 0)

        fence_b = self.acquire_http(key, b, "b")
        self.assertGreater(fence_b, fence, "every new grant has a larger token")
        status, result = self.txn([
            {"KV": {"Verb": "check-fence", "Key": key, "Index": fence}},
            {"KV": {"Verb": "set", "Key": data, "Value": _b64("late a")}}])
        self.assertEqual(status, 409, result)
        self.assertEqual(result["Errors"], [{
            "OpIndex": 0,
            "What": 'failed fence check for key "%s", current fence %d != %d'
                    % (key, fence_b, fence)}])
        self.assertEqual(self.c.kv.get(data)[1]["Value"], b"by a",
                         "the ex-holder's late write must be rejected")
        status, result = self.txn([
            {"KV": {"Verb": "check-fence", "Key": key, "Index": fence_b}},
            {"KV": {"Verb": "set", "Key": data, "Value": _b64("by b")}}])
        self.assertEqual(status, 200, result)
        self.assertEqual(self.c.kv.get(data)[1]["Value"], b"by b")

    def test_check_fence_survives_delete_and_recreate(self):
        key = self.prefix + "leader"
        a = self.session(name="a", lock_delay=0, checks=[], ttl=10)
        first = self.acquire_http(key, a, "1")
        self.assertTrue(self.c.kv.delete(key))
        second = self.acquire_http(key, a, "2")
        self.assertEqual(self.c.kv.get(key)[1]["LockIndex"], 1,
                         "LockIndex restarts at 1 on a re-created key (Consul)")
        self.assertGreater(second, first, "the fence does not restart (docs/fencing.md)")
        status, result = self.txn([{"KV": {"Verb": "check-fence", "Key": key, "Index": first}}])
        self.assertEqual(status, 409, result)


class PythonConsulThroughAFollowerTest(PythonConsulTest):
    """Every test above again, with the client talking to a follower of a
    3-server cluster: the follower forwards to the leader (decision 0008), so
    an unmodified Consul client pointed at any member sees the same API."""

    @classmethod
    def setUpClass(cls):
        for var in ("CONSUL_HTTP_ADDR", "CONSUL_HTTP_TOKEN", "CONSUL_HTTP_SSL",
                    "CONSUL_HTTP_SSL_VERIFY"):
            os.environ.pop(var, None)
        cls.cluster = Cluster(3, extra_args=())
        cls.cluster.__enter__()
        try:
            leader = cls.cluster.leader()
            cls.server = next(m for m in cls.cluster.members if m is not leader)
            # Forwarding starts once the leader's member record is known.
            poll_until(lambda: cls.server.request("PUT", "/v1/kv/compat-probe", b"").status == 200,
                       timeout=15, message="the follower never forwarded a write")
        except BaseException:
            cls.cluster.close()
            raise
        cls.host, port = cls.server.http_addr.split(":")
        cls.port = int(port)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.close()


if __name__ == "__main__":
    unittest.main()
