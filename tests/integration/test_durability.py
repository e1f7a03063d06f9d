"""Durability: every acknowledged write survives a crash (kill -9) or a graceful stop
(SIGTERM) and a restart on the same data dir: a stream of acknowledged writes with
odd-sized values, kill -9, restart, and every acknowledged write is there.

Why odd sizes: libraft 0.15 silently loses entries whose payload is not a multiple of 8
bytes after a restart (docs/architecture.md, "libraft 0.15 pitfalls"). Values here are 1..2000
random bytes, so most entries are unpadded unless the server pads them.

The stream: client threads, each on its own keep-alive connection and its own keys (so the
"last acknowledged write per key" is well defined), write random values (seeded), delete
some keys, create sessions and acquire locks. A write counts only after its 200 `true`
(or the session id for creates). The server is killed while the threads are still
writing; a write in flight at that moment may or may not be there afterwards, nothing
else is uncertain. After the restart every key under the test's prefix must hold exactly
its last acknowledged value (or the in-flight one), deleted keys must stay deleted, no
unknown key may appear, sessions must exist with their fields, and locks must still be
held by their session with the same value and fencing token; a new grant after the
restart must get a larger token (docs/fencing.md).

Knobs (environment): TENURE_DURABILITY_SEED, TENURE_DURABILITY_WRITES (per stream,
default 3000).

Run (from tests/integration):
  TENURE_BIN=<path>/tenure PYTHONPATH=<repo>/tests/lib /usr/bin/python3 -m unittest -v test_durability
"""

import base64
import http.client
import json
import os
import random
import re
import shutil
import tempfile
import threading
import time
import unittest

from tenure_testlib import DevServer, poll_until, quote_key

SEED = int(os.environ.get("TENURE_DURABILITY_SEED", "20261122"))
WRITES = int(os.environ.get("TENURE_DURABILITY_WRITES", "3000"))
THREADS = 4
KEYS_PER_THREAD = 250  # so that many keys are overwritten several times
VALUE_BYTES_MAX = 2000
# raft::NodeOptions::snapshot_threshold (src/raft/node.h): one stream in the restart-twice
# case runs past it so that recovery goes through a snapshot plus the log after it.
SNAPSHOT_THRESHOLD = 16384
# How long the stream may take to reach its target before the test gives up.
STREAM_TIMEOUT_S = 120.0

ABSENT = object()  # "the key does not exist"


class Stream:
    """N writer threads against one server; records what was acknowledged."""

    def __init__(self, server, prefix, seed, threads=THREADS):
        self.server = server
        self.prefix = prefix  # e.g. "dur/a/"; every key of this stream is under it
        self.seed = seed
        self.threads_n = threads
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.acked = 0  # every acknowledged operation
        self.counts = {"put": 0, "delete": 0, "session": 0, "acquire": 0}
        self.kv = {}  # key -> last acknowledged value (bytes) or ABSENT (acked delete)
        self.inflight = {}  # thread -> (kind, key, value) unacknowledged at the break
        self.sessions = {}  # sid -> the create body
        self.locks = {}  # key -> (sid, value, fence)
        self.errors = []  # unexpected answers (not transport errors) before the signal
        self.signalled = threading.Event()  # set just before the server is killed/stopped
        self.threads = []
        self.started_at = None

    def start(self):
        self.started_at = time.monotonic()
        for t in range(self.threads_n):
            th = threading.Thread(target=self._run, args=(t,), daemon=True,
                                  name="writer-%d" % t)
            th.start()
            self.threads.append(th)

    def join(self, timeout_s=30.0):
        self.stop.set()
        for th in self.threads:
            th.join(timeout_s)
            if th.is_alive():
                raise AssertionError("writer thread %s did not stop" % th.name)

    def _run(self, t):
        rnd = random.Random("%s/%d" % (self.seed, t))
        client = self.server.client(timeout=15.0)
        my_sessions = []
        lock_seq = 0
        base = "%st%d/" % (self.prefix, t)
        try:
            while not self.stop.is_set():
                roll = rnd.random()
                if roll < 0.02 or (roll < 0.06 and not my_sessions):
                    body = {"Name": "%s-%d" % (base, len(my_sessions)), "LockDelay": "0s",
                            "Checks": [], "Behavior": rnd.choice(["release", "delete"])}
                    if rnd.random() < 0.3:
                        body["TTL"] = "24h"  # survives the test; checks the TTL string
                    self.inflight[t] = ("session", None, None)
                    r = client.request("PUT", "/v1/session/create", json.dumps(body))
                    if r.status != 200:
                        return self._refused(t, "session create", body, r)
                    sid = r.json()["ID"]
                    my_sessions.append(sid)
                    self._ack(t, "session", lambda: self.sessions.__setitem__(sid, body))
                elif roll < 0.06:
                    key = "%slock/%d" % (base, lock_seq)
                    lock_seq += 1
                    sid = rnd.choice(my_sessions)
                    value = rnd.randbytes(rnd.randint(1, VALUE_BYTES_MAX))
                    self.inflight[t] = ("acquire", key, value)
                    r = client.request("PUT", "/v1/kv/%s?acquire=%s" % (quote_key(key), sid), value)
                    if (r.status, r.body) != (200, b"true"):
                        return self._refused(t, "acquire", key, r)
                    fence = int(r.header("X-Tenure-Fence"))
                    self._ack(t, "acquire", lambda: self.locks.__setitem__(key, (sid, value, fence)))
                elif roll < 0.09:
                    key = "%sk%d" % (base, rnd.randrange(KEYS_PER_THREAD))
                    self.inflight[t] = ("delete", key, ABSENT)
                    r = client.request("DELETE", "/v1/kv/" + quote_key(key))
                    if (r.status, r.body) != (200, b"true"):
                        return self._refused(t, "delete", key, r)
                    self._ack(t, "delete", lambda: self.kv.__setitem__(key, ABSENT))
                else:
                    key = "%sk%d" % (base, rnd.randrange(KEYS_PER_THREAD))
                    value = rnd.randbytes(rnd.randint(1, VALUE_BYTES_MAX))
                    self.inflight[t] = ("put", key, value)
                    r = client.request("PUT", "/v1/kv/" + quote_key(key), value)
                    if (r.status, r.body) != (200, b"true"):
                        return self._refused(t, "put", key, r)
                    self._ack(t, "put", lambda: self.kv.__setitem__(key, value))
        except OSError:
            pass  # the server went away: self.inflight[t] is the uncertain write
        except Exception as e:  # noqa: BLE001 - http.client's own errors (RemoteDisconnected...)
            if not _is_transport_error(e):
                self.errors.append(("exception", repr(e)))
        finally:
            client.close()

    def _refused(self, t, kind, what, r):
        """A non-success answer. While the server is being stopped it only means "not
        acknowledged" (the write stays in flight: it may or may not be there); before
        that it is a server error the test reports."""
        if not self.signalled.is_set():
            self.errors.append((kind, what, r))

    def _ack(self, t, kind, record):
        with self.lock:
            record()
            self.inflight.pop(t, None)
            self.acked += 1
            self.counts[kind] += 1

    def wait_for(self, predicate, what):
        deadline = time.monotonic() + STREAM_TIMEOUT_S
        while not predicate():
            if self.errors:
                raise AssertionError("unexpected answer during the stream: %r" % (self.errors,))
            if not any(th.is_alive() for th in self.threads):
                raise AssertionError("all writers stopped before %s" % what)
            if time.monotonic() > deadline:
                raise AssertionError("stream did not reach %s in %.0f s" % (what, STREAM_TIMEOUT_S))
            time.sleep(0.005)

    def summary(self):
        c = self.counts
        return ("%d acknowledged (%d puts, %d deletes, %d sessions, %d acquires), "
                "%d in flight at the break" % (self.acked, c["put"], c["delete"], c["session"],
                                               c["acquire"], len(self.inflight)))


def _is_transport_error(e):
    return isinstance(e, (OSError, http.client.HTTPException))


class DurabilityTest(unittest.TestCase):

    def setUp(self):
        self.data_dir = tempfile.mkdtemp(prefix="tenure-durability-")
        self.addCleanup(shutil.rmtree, self.data_dir, True)
        # dev=False: the command line an operator uses; the data dir outlives restarts.
        self.server = DevServer(data_dir=self.data_dir, dev=False)
        self.addCleanup(self.server.close)
        self.server.start()

    # --- helpers ------------------------------------------------------------------------

    def metric(self, name):
        """One unlabelled sample of the server's Prometheus text."""
        return self.server.metric(name)

    def restart(self):
        start = time.monotonic()
        self.server.start()
        elapsed = time.monotonic() - start
        match = re.findall(r"snapshots restored (\d+)", self.server.log_tail(200))
        print("  restarted in %.2f s%s" % (elapsed, " (snapshots restored: %s)" % match[-1]
                                           if match else ""))
        return elapsed

    def run_stream(self, prefix, seed, until, what, threads=THREADS):
        stream = Stream(self.server, prefix, seed, threads)
        stream.start()
        try:
            stream.wait_for(until(stream), what)
        except BaseException:
            stream.join()
            raise
        return stream

    def crash(self, stream, how):
        """Stops the server under a running stream: "kill" (SIGKILL) or "term" (SIGTERM)."""
        acked_at_signal = stream.acked
        stream.signalled.set()
        if how == "kill":
            rc = self.server.kill()
            self.assertEqual(rc, -9, "kill -9 did not kill")
        else:
            rc = self.server.stop()
            self.assertEqual(rc, 0, "graceful SIGTERM should exit 0; log:\n" + self.server.log_tail())
        stream.join()
        self.assertEqual(stream.errors, [], "unexpected answers during the stream")
        print("  %s after %d acknowledged operations: %s (%.1f ops/s)"
              % ("kill -9" if how == "kill" else "SIGTERM", acked_at_signal, stream.summary(),
                 stream.acked / max(1e-9, time.monotonic() - stream.started_at)))

    def read_prefix(self, prefix):
        r = self.server.request("GET", "/v1/kv/%s?recurse" % quote_key(prefix), timeout=30.0)
        if r.status == 404:
            return {}
        self.assertEqual(r.status, 200, r)
        return {e["Key"]: e for e in r.json()}

    def verify(self, stream, prefix):
        """Everything `stream` had acknowledged is there; only in-flight writes are unsure."""
        entries = self.read_prefix(prefix)
        stored = {k: (base64.b64decode(e["Value"]) if e["Value"] is not None else b"")
                  for k, e in entries.items()}
        inflight = {}
        for kind, key, value in stream.inflight.values():
            if key is not None:
                inflight[key] = value
        expected_keys = set(stream.kv) | set(stream.locks) | set(inflight)
        unknown = sorted(set(stored) - expected_keys)
        self.assertEqual(unknown, [], "keys that were never written appeared after the restart")

        lost, wrong, present = [], [], 0
        for key, value in stream.kv.items():
            acceptable = [value] + ([inflight[key]] if key in inflight else [])
            actual = stored.get(key, ABSENT)
            if any(actual is a if a is ABSENT else actual == a for a in acceptable):
                present += value is not ABSENT
                continue
            (lost if actual is ABSENT else wrong).append(
                (key, "expected %s, got %s" % (_describe(value), _describe(actual))))
        self.assertEqual(lost, [], "%d acknowledged writes lost (e.g. %r)" % (len(lost), lost[:5]))
        self.assertEqual(wrong, [], "%d keys hold a value other than the last acknowledged one"
                         % len(wrong))

        # Keys written only by the in-flight write: either outcome is fine.
        for key, value in inflight.items():
            if key in stream.kv or key in stream.locks:
                continue
            actual = stored.get(key, ABSENT)
            self.assertTrue(actual is ABSENT or actual == value,
                            "in-flight key %s holds a value nobody wrote" % key)

        # Locks: still held, same value and fencing token.
        for key, (sid, value, fence) in stream.locks.items():
            self.assertIn(key, entries, "acknowledged lock %s lost" % key)
            e = entries[key]
            self.assertEqual((e.get("Session"), stored[key], e.get("Fence"), e["LockIndex"]),
                             (sid, value, fence, 1), "lock %s changed across the restart" % key)

        # Sessions: still there with their fields.
        for sid, body in stream.sessions.items():
            r = self.server.request("GET", "/v1/session/info/" + sid)
            self.assertEqual(r.status, 200)
            info = r.json()
            self.assertEqual(len(info), 1, "acknowledged session %s lost" % sid)
            s = info[0]
            self.assertEqual((s["Name"], s["Behavior"], s["LockDelay"], s["TTL"], s["NodeChecks"]),
                             (body["Name"], body["Behavior"], 0, body.get("TTL", ""), []),
                             "session %s changed across the restart" % sid)
        print("  verified %s: %d keys with values, %d deleted keys absent, %d locks, %d sessions"
              % (prefix, present, sum(1 for v in stream.kv.values() if v is ABSENT),
                 len(stream.locks), len(stream.sessions)))
        return entries

    def check_writable_and_fences_grow(self, streams):
        """After a restart: new writes work, and a new grant's fence beats every earlier one."""
        self.server.check_healthy("after the restart")
        fences = [f for s in streams for (_, _, f) in s.locks.values()]
        key = "after-restart/lock"
        sid = self.server.create_session({"LockDelay": "0s"})
        r = self.server.request("PUT", "/v1/kv/%s?acquire=%s" % (key, sid), b"new holder")
        self.assertEqual((r.status, r.body), (200, b"true"))
        fence = int(r.header("X-Tenure-Fence"))
        if fences:
            self.assertGreater(fence, max(fences), "a fencing token went backwards after restart")
        # An old lock changes hands: its new token beats its old one.
        for s in streams:
            if s.locks:
                old_key, (old_sid, _, old_fence) = sorted(s.locks.items())[0]
                r = self.server.request("PUT", "/v1/kv/%s?release=%s" % (quote_key(old_key), old_sid),
                                        b"released")
                self.assertEqual(r.body, b"true")
                r = self.server.request("PUT", "/v1/kv/%s?acquire=%s" % (quote_key(old_key), sid),
                                        b"taken over")
                self.assertEqual(r.body, b"true")
                self.assertGreater(int(r.header("X-Tenure-Fence")), old_fence)
                break
        r = self.server.request("PUT", "/v1/session/destroy/" + sid)
        self.assertEqual(r.body, b"true")

    # --- the cases ---------------------------------------------------------------------

    def test_kill9_mid_stream_then_restart(self):
        print("\n  seed %d, %d threads, target %d writes" % (SEED, THREADS, WRITES))
        stream = self.run_stream("dur/kill/", SEED, lambda s: lambda: s.acked >= WRITES,
                                 "%d acknowledged writes" % WRITES)
        self.crash(stream, "kill")
        self.restart()
        self.verify(stream, "dur/kill/")
        self.check_writable_and_fences_grow([stream])

    def test_sigterm_mid_stream_then_restart(self):
        print("\n  seed %d, %d threads, target %d writes" % (SEED + 1, THREADS, WRITES))
        stream = self.run_stream("dur/term/", SEED + 1, lambda s: lambda: s.acked >= WRITES,
                                 "%d acknowledged writes" % WRITES)
        self.crash(stream, "term")
        self.restart()
        self.verify(stream, "dur/term/")
        self.check_writable_and_fences_grow([stream])

    def test_restart_twice(self):
        """kill -9 and restart, more writes (past the snapshot threshold), kill -9 and
        restart, then a graceful restart with no writes: everything from both streams."""
        print("\n  seed %d" % (SEED + 2))
        first = self.run_stream("dur/twice/a/", SEED + 2, lambda s: lambda: s.acked >= WRITES,
                                "%d acknowledged writes" % WRITES)
        self.crash(first, "kill")
        self.restart()
        self.verify(first, "dur/twice/a/")

        # Second stream: more writers, until the log has passed the snapshot threshold, so
        # the next recovery restores a snapshot and replays the entries after it.
        def applied_index():
            r = self.server.request("GET", "/v1/agent/self")
            return int(r.json()["Stats"]["raft"]["applied_index"])
        target = SNAPSHOT_THRESHOLD + 2000
        checked = {"at": 0.0, "index": applied_index()}

        def past_threshold(s):
            def check():
                if s.acked < WRITES:
                    return False
                now = time.monotonic()
                if now - checked["at"] > 0.2:
                    checked["at"], checked["index"] = now, applied_index()
                return checked["index"] >= target
            return check
        second = self.run_stream("dur/twice/b/", SEED + 3, past_threshold,
                                 "raft index %d" % target, threads=16)
        # Past the threshold libraft takes a snapshot; the metrics say so
        # (docs/metrics.md), with its size.
        taken = poll_until(lambda: self.metric("tenure_raft_snapshots_taken_total") >= 1,
                           timeout=60, message="no raft snapshot counted past the threshold")
        self.assertTrue(taken)
        self.assertGreater(self.metric("tenure_raft_snapshot_last_size_bytes"), 0)
        self.assertGreaterEqual(self.metric("tenure_raft_snapshot_encode_duration_seconds_count"), 1)
        # The snapshot closed a log segment; libraft destroyed its AIO context
        # through the server binary's syscall, on the reaper (decision 0036).
        poll_until(lambda: self.metric("tenure_raft_aio_contexts_offloaded_total") >= 1,
                   timeout=30, message="no AIO context destroyed off the loop thread")
        self.crash(second, "kill")
        self.restart()
        # The restart restored from that snapshot.
        self.assertGreaterEqual(self.metric("tenure_raft_snapshots_installed_total"), 1)
        self.assertGreater(self.metric("tenure_raft_snapshot_installed_size_bytes"), 0)
        self.verify(first, "dur/twice/a/")
        self.verify(second, "dur/twice/b/")

        rc = self.server.stop()
        self.assertEqual(rc, 0)
        self.restart()
        self.verify(first, "dur/twice/a/")
        self.verify(second, "dur/twice/b/")
        self.check_writable_and_fences_grow([first, second])


def _describe(value):
    if value is ABSENT:
        return "<absent>"
    return "%d bytes %s..." % (len(value), value[:8].hex())


if __name__ == "__main__":
    unittest.main()
