"""`tenure lock PREFIX CMD` (consul lock's command) against a real server with
real processes: children of one prefix never overlap (a checker log written
with O_APPEND by every child), `-n 3` lets at most three run at once and all
eight contenders run, a lock lost (session destroyed) kills the child, a
child's exit releases the lock, -timeout gives up with Consul's text, the
keys, flags and holders document are Consul's, and bad flags get clear
errors."""

import base64
import json
import os
import signal
import sys
import time
import unittest
import uuid

from tenure_testlib import DevServer, SharedServerTestCase, pid_alive, poll_until

LOCK_FLAG = 3304740253564472344
SEMAPHORE_FLAG = 16210313421097356768

# The child: appends "enter ID T" and, after sleeping, "exit ID T" to LOG
# (one write each, O_APPEND, so the file's order is the order of the writes).
CHECKER = r"""
import os, sys, time
log, ident, pause = sys.argv[1], sys.argv[2], float(sys.argv[3])
fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
os.write(fd, f"enter {ident} {time.monotonic_ns()}\n".encode())
time.sleep(pause)
os.write(fd, f"exit {ident} {time.monotonic_ns()}\n".encode())
"""


def read(path):
    with open(path) as fh:
        return fh.read()


def max_concurrency(path):
    """(most children inside at once, set of ids that entered); fails on an
    exit without its enter."""
    inside, most, entered = set(), 0, set()
    with open(path) as fh:
        for line in fh:
            what, ident, _ = line.split()
            if what == "enter":
                inside.add(ident)
                entered.add(ident)
                most = max(most, len(inside))
            else:
                if ident not in inside:
                    raise AssertionError(f"exit of {ident} without its enter:\n" + read(path))
                inside.remove(ident)
    return most, entered


def intervals_overlap_at_most(path, limit):
    """The same check on the timestamps: at no instant more than `limit`
    [enter, exit] intervals are open."""
    events = []
    with open(path) as fh:
        for line in fh:
            what, _, t = line.split()
            events.append((int(t), 0 if what == "exit" else 1))
    events.sort()
    inside = most = 0
    for _, kind in events:
        inside += 1 if kind else -1
        most = max(most, inside)
    return most <= limit


class LockCommandTest(SharedServerTestCase):
    def setUp(self):
        super().setUp()
        self.checker = os.path.join(self.dir, "checker.py")
        with open(self.checker, "w") as fh:
            fh.write(CHECKER)
        self.log = os.path.join(self.dir, "log")

    def child(self, ident, pause):
        return [sys.executable, self.checker, self.log, str(ident), str(pause)]

    def entry(self, key):
        r = self.server.request("GET", "/v1/kv/" + key)
        return None if r.status == 404 else r.json()[0]

    def wait_all(self, procs, timeout=120):
        results = []
        deadline = time.monotonic() + timeout
        for p in procs:
            try:
                out, err = p.communicate(timeout=max(1, deadline - time.monotonic()))
            except Exception:
                for q in procs:
                    q.kill()
                    q.communicate()
                raise
            results.append((p.returncode, out, err))
        return results

    def start_holder(self, prefix, *flags):
        """Starts `tenure lock [flags] PREFIX` whose child writes its pid and
        sleeps; returns (Popen, child pid) once the child runs."""
        pidfile = os.path.join(self.dir, prefix.replace("/", "_") + ".pid")
        p = self.server.popen_cli("lock", *flags, prefix,
                                  f"echo $$ > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; "
                                  "exec sleep 300")
        try:
            poll_until(lambda: os.path.exists(pidfile), timeout=30, message="child never started")
        except Exception:
            p.kill()
            p.communicate()
            raise
        with open(pidfile) as fh:
            return p, int(fh.read())

    def stop(self, p):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        return p.communicate(timeout=30)

    # --- Mutual exclusion and the semaphore ---

    def test_children_of_one_prefix_never_overlap(self):
        procs = [self.server.popen_cli("lock", "-shell=false", "mx", *self.child(i, 0.3))
                 for i in range(4)]
        for code, _, err in self.wait_all(procs):
            self.assertEqual(code, 0, err)
        most, entered = max_concurrency(self.log)
        self.assertEqual(most, 1, read(self.log))
        self.assertEqual(entered, {"0", "1", "2", "3"})
        self.assertTrue(intervals_overlap_at_most(self.log, 1), read(self.log))
        self.assertIsNone(self.entry("mx/.lock"), "the lock key is cleaned up at the end")

    def test_semaphore_of_three_with_eight_contenders(self):
        procs = [self.server.popen_cli("lock", "-n", "3", "-shell=false", "sem3",
                                       *self.child(i, 1.0)) for i in range(8)]
        # While they run: the holders document is Consul's, under Consul's flag.
        def lock_doc():
            e = self.entry("sem3/.lock")
            return e if e and e.get("Value") else None
        doc = poll_until(lock_doc, timeout=30, message="no semaphore document")
        self.assertEqual(doc["Flags"], SEMAPHORE_FLAG)
        value = json.loads(base64.b64decode(doc["Value"]))
        self.assertEqual(list(value), ["Limit", "Holders"])
        self.assertEqual(value["Limit"], 3)
        self.assertLessEqual(len(value["Holders"]), 3)
        for code, _, err in self.wait_all(procs):
            self.assertEqual(code, 0, err)
        most, entered = max_concurrency(self.log)
        self.assertLessEqual(most, 3, read(self.log))
        self.assertGreaterEqual(most, 2, "a semaphore of 3 let only one run at a time")
        self.assertEqual(entered, {str(i) for i in range(8)})
        self.assertTrue(intervals_overlap_at_most(self.log, 3), read(self.log))
        r = self.server.request("GET", "/v1/kv/sem3?recurse")
        self.assertEqual(r.status, 404, r.text if r.status == 200 else "")

    def test_child_exit_releases_the_lock_for_the_next(self):
        holder = self.server.popen_cli("lock", "-shell=false", "rel", *self.child("a", 1.0))
        poll_until(lambda: os.path.exists(self.log), timeout=30, message="first child never ran")
        waiter = self.server.popen_cli("lock", "-timeout", "20s", "-shell=false", "rel",
                                       *self.child("b", 0))
        for code, _, err in self.wait_all([holder, waiter]):
            self.assertEqual(code, 0, err)
        with open(self.log) as fh:
            self.assertEqual([line.split()[:2] for line in fh],
                             [["enter", "a"], ["exit", "a"], ["enter", "b"], ["exit", "b"]])

    # --- What the child sees, and the keys ---

    def test_child_environment_fence_and_lock_key(self):
        out = os.path.join(self.dir, "env")
        r = self.server.cli("lock", "envp",
                            f"echo $CONSUL_LOCK_HELD $TENURE_LOCK_KEY $TENURE_FENCING_TOKEN "
                            f"$TENURE_SESSION > {out}; "
                            f"curl -s http://{self.server.http_addr}/v1/kv/envp/.lock >> {out}")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as fh:
            first, entry = fh.read().split("\n", 1)
        held, key, fence, session = first.split()
        self.assertEqual((held, key), ("true", "envp/.lock"))
        e = json.loads(entry)[0]
        self.assertEqual(e["Flags"], LOCK_FLAG)
        self.assertEqual(e["Session"], session)
        self.assertEqual(e["Fence"], int(fence))
        info = self.server.get_json("/v1/session/list")
        self.assertNotIn(session, [s["ID"] for s in info], "the session is destroyed at the end")

    def test_child_exit_code(self):
        self.assertEqual(self.server.cli("lock", "ec", "exit 3").returncode, 0)
        r = self.server.cli("lock", "-child-exit-code", "ec", "exit 3")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(self.server.cli("lock", "-child-exit-code", "ec", "true").returncode, 0)

    def test_a_command_that_cannot_start(self):
        r = self.server.cli("lock", "-shell=false", "-child-exit-code", "nx",
                            "/nonexistent/tenure-no-such-cmd")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("tenure lock: cannot start /nonexistent/tenure-no-such-cmd: "
                      "No such file or directory", r.stderr)
        self.assertIsNone(self.entry("nx/.lock"))

    def test_shell_and_no_stdin(self):
        r = self.server.cli("lock", "sh1", "echo", "a", "b", "|", "tr", "a", "x")
        self.assertEqual((r.returncode, r.stdout), (0, "x b\n"), r.stderr)
        r = self.server.cli("lock", "-shell=false", "sh1", "echo", "a", "|", "b")
        self.assertEqual((r.returncode, r.stdout), (0, "a | b\n"), r.stderr)
        r = self.server.cli("lock", "sh1", "cat", input="hidden\n")
        self.assertEqual((r.returncode, r.stdout), (0, ""), r.stderr)
        r = self.server.cli("lock", "-pass-stdin", "sh1", "cat", input="passed\n")
        self.assertEqual((r.returncode, r.stdout), (0, "passed\n"), r.stderr)

    def test_verbose_lines(self):
        r = self.server.cli("lock", "-verbose", "verb", "true")
        self.assertEqual(r.returncode, 0, r.stderr)
        for line in ("Attempting lock acquisition", "Setting up lock at path: verb/.lock",
                     "Starting handler", "Child terminated, releasing lock", "Cleanup succeeded"):
            self.assertIn(line, r.stdout)

    # --- Losing the lock, signals, timeouts ---

    def test_lock_loss_kills_the_child(self):
        p, child = self.start_holder("lost")
        session = self.entry("lost/.lock")["Session"]
        self.assertEqual(self.server.request("PUT", f"/v1/session/destroy/{session}").status, 200)
        poll_until(lambda: not pid_alive(child), timeout=10, message="child survived the loss")
        out, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 0, err)  # consul lock's code once released
        self.assertIn("tenure lock: lock lost: lost/.lock was released", err)

    def test_lock_loss_kills_a_semaphore_child(self):
        p, child = self.start_holder("lostsem", "-n", "2")
        doc = json.loads(base64.b64decode(self.entry("lostsem/.lock")["Value"]))
        (session,) = doc["Holders"]
        self.assertEqual(self.server.request("PUT", f"/v1/session/destroy/{session}").status, 200)
        poll_until(lambda: not pid_alive(child), timeout=10, message="child survived the loss")
        out, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn("tenure lock: lock lost", err)

    def test_sigterm_stops_the_child_and_releases(self):
        p, child = self.start_holder("term")
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 0, err)
        self.assertFalse(pid_alive(child))
        self.assertIsNone(self.entry("term/.lock"))

    def test_sigkill_of_tenure_lock_kills_the_child(self):
        p, child = self.start_holder("k9")
        p.kill()
        p.communicate()
        poll_until(lambda: not pid_alive(child), timeout=10, message="child outlived tenure lock")

    def test_timeout_gives_up_with_consuls_text(self):
        holder, _ = self.start_holder("to")
        try:
            marker = os.path.join(self.dir, "ran")
            started = time.monotonic()
            r = self.server.cli("lock", "-timeout", "1s", "to", f"touch {marker}")
            took = time.monotonic() - started
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("Shutdown triggered or timeout during lock acquisition", r.stderr)
            self.assertGreaterEqual(took, 0.9)
            self.assertLess(took, 10)
            self.assertFalse(os.path.exists(marker), "the child ran without the lock")
            holder_session = self.entry("to/.lock")["Session"]
            names = [s["Name"] for s in self.server.get_json("/v1/session/list")
                     if s["ID"] != holder_session]
            self.assertNotIn(f"Consul lock for 'touch {marker}' at 'to'", names,
                             "the session of a lock that gave up is destroyed")
        finally:
            self.stop(holder)

    def test_sigterm_while_waiting(self):
        holder, _ = self.start_holder("wt")
        try:
            waiter = self.server.popen_cli("lock", "-verbose", "wt", "true")
            name = "Consul lock for 'true' at 'wt'"
            poll_until(lambda: name in [s["Name"] for s in
                                        self.server.get_json("/v1/session/list")],
                       timeout=20, message="the waiter never made its session")
            waiter.send_signal(signal.SIGTERM)
            out, err = waiter.communicate(timeout=30)
            self.assertEqual(waiter.returncode, 1, err)
            self.assertIn("Shutdown triggered or timeout during lock acquisition", err)
            self.assertNotIn("Starting handler", out)
        finally:
            self.stop(holder)

    # --- Mixing a lock and a semaphore, bad flags ---

    def test_lock_and_semaphore_on_one_prefix_conflict(self):
        holder, _ = self.start_holder("mix")
        try:
            r = self.server.cli("lock", "-n", "2", "mix", "true")
            self.assertEqual(r.returncode, 1)
            self.assertIn("Lock acquisition failed: Existing key does not match semaphore use",
                          r.stderr)
        finally:
            self.stop(holder)
        holder, _ = self.start_holder("mix2", "-n", "3")
        try:
            r = self.server.cli("lock", "mix2", "true")
            self.assertEqual(r.returncode, 1)
            self.assertIn("Lock acquisition failed: Existing key does not match lock use",
                          r.stderr)
            r = self.server.cli("lock", "-n", "2", "mix2", "true")
            self.assertEqual(r.returncode, 1)
            self.assertIn("semaphore limit conflict (lock: 3, local: 2)", r.stderr)
        finally:
            self.stop(holder)

    # --- Interoperation with Consul's clients, replayed as raw requests ---

    def foreign_session(self, behavior):
        """A session as Consul's api.Lock/api.Semaphore create it."""
        return self.server.put_json("/v1/session/create", {
            "Name": "Consul API Lock", "TTL": "15s", "Behavior": behavior})["ID"]

    def test_waits_for_a_consul_api_lock_holder(self):
        sid = self.foreign_session("release")
        r = self.server.request("PUT", f"/v1/kv/apil/.lock?flags={LOCK_FLAG}&acquire={sid}")
        self.assertEqual(r.json(), True)
        waiter = self.server.popen_cli("lock", "-timeout", "30s", "-shell=false", "apil",
                                       *self.child("tenure", 0))
        self.wait_for_waiter("apil")
        self.assertFalse(os.path.exists(self.log), "ran while Consul's client held the lock")
        # api.Lock's Unlock: release with the flag, then destroy the session.
        r = self.server.request("PUT", f"/v1/kv/apil/.lock?flags={LOCK_FLAG}&release={sid}")
        self.assertEqual(r.json(), True)
        self.server.request("PUT", f"/v1/session/destroy/{sid}")
        (code, _, err), = self.wait_all([waiter], timeout=60)
        self.assertEqual(code, 0, err)
        self.assertEqual(max_concurrency(self.log), (1, {"tenure"}))

    def wait_for_waiter(self, prefix):
        """Until tenure lock's session on prefix exists, then a second more in
        which its child must not start."""
        poll_until(lambda: any(s["Name"].startswith("Consul lock for ") and
                               s["Name"].endswith(f" at '{prefix}'")
                               for s in self.server.get_json("/v1/session/list")),
                   timeout=20, message="tenure lock never made its session")
        time.sleep(1.0)

    def semaphore_doc(self, prefix):
        e = self.entry(prefix + "/.lock")
        return e, json.loads(base64.b64decode(e["Value"])) if e and e.get("Value") else None

    def test_shares_a_semaphore_with_consul_api_semaphore_holders(self):
        # Two holders as api.Semaphore makes them, limit 2: the semaphore is full.
        foreign = []
        for _ in range(2):
            sid = self.foreign_session("delete")
            r = self.server.request(
                "PUT", f"/v1/kv/apis/{sid}?flags={SEMAPHORE_FLAG}&acquire={sid}")
            self.assertEqual(r.json(), True)
            foreign.append(sid)
        doc = json.dumps({"Limit": 2, "Holders": {sid: True for sid in foreign}})
        r = self.server.request("PUT", f"/v1/kv/apis/.lock?cas=0&flags={SEMAPHORE_FLAG}", doc)
        self.assertEqual(r.json(), True)
        waiter = self.server.popen_cli("lock", "-n", "2", "-timeout", "30s", "-shell=false",
                                       "apis", *self.child("tenure", 0.5))
        self.wait_for_waiter("apis")
        self.assertFalse(os.path.exists(self.log), "ran in a full semaphore")
        # One foreign holder's session dies (behaviour delete: its contender key
        # goes); tenure lock prunes it from the holders and takes its slot.
        self.server.request("PUT", f"/v1/session/destroy/{foreign[0]}")
        poll_until(lambda: os.path.exists(self.log), timeout=20,
                   message="tenure lock never took the freed slot")
        _, held = self.semaphore_doc("apis")
        self.assertEqual(held["Limit"], 2)
        self.assertIn(foreign[1], held["Holders"])
        self.assertNotIn(foreign[0], held["Holders"])
        self.assertEqual(len(held["Holders"]), 2)
        (code, _, err), = self.wait_all([waiter], timeout=60)
        self.assertEqual(code, 0, err)
        # Released: only the remaining foreign holder is left, and .lock stays
        # (it is in use), as api.Semaphore's Destroy leaves it.
        _, after = self.semaphore_doc("apis")
        self.assertEqual(after, {"Limit": 2, "Holders": {foreign[1]: True}})
        self.server.request("PUT", f"/v1/session/destroy/{foreign[1]}")

    def test_bad_flags_and_arguments(self):
        cases = [
            ((), "Key prefix and child command must be specified"),
            (("onlyprefix",), "Key prefix and child command must be specified"),
            (("/", "true"), "Key prefix and child command must be specified"),
            (("-n", "0", "p", "true"), "Lock holder limit must be positive"),
            (("-n", "-2", "p", "true"), "Lock holder limit must be positive"),
            (("-n", "x", "p", "true"), 'invalid value "x" for flag -n: parse error'),
            (("-timeout", "-1s", "p", "true"), "Timeout must be positive"),
            (("-timeout", "soon", "p", "true"), 'invalid value "soon" for flag -timeout'),
            (("-monitor-retry", "-1", "p", "true"),
             "Number for 'monitor-retry' must be >= 0"),
            (("-name", "x" * 1025, "p", "true"), "-name is longer than 1024 bytes"),
            (("-bogus", "p", "true"), "-bogus"),
        ]
        for args, text in cases:
            with self.subTest(args=args[:3]):
                r = self.server.cli("lock", *args)
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn(text, r.stderr)
        r = self.server.cli("lock", "-h")
        self.assertEqual(r.returncode, 0)
        self.assertIn("Usage: tenure lock [options] PREFIX CMD...", r.stdout)

    def test_unreachable_agent(self):
        from tenure_testlib import free_port
        r = self.server.cli("lock", "-http-addr", f"127.0.0.1:{free_port()}", "p", "true",
                            timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn("Error querying Consul agent: ", r.stderr)


class LockCommandServerLossTest(unittest.TestCase):
    """-monitor-retry: failed monitor reads (the server is down) are retried a
    second apart; past the retries the lock counts as lost."""

    def setUp(self):
        self.server = DevServer(extra_args=("-session-ttl-multiplier", "1")).__enter__()
        self.addCleanup(self.server.__exit__, None, None, None)
        self.pidfile = os.path.join(self.server.base_dir, "child.pid")

    def start_holder(self, *flags):
        p = self.server.popen_cli("lock", *flags, "down",
                                  f"echo $$ > {self.pidfile}.tmp; "
                                  f"mv {self.pidfile}.tmp {self.pidfile}; exec sleep 300")
        self.addCleanup(lambda: p.poll() is None and (p.kill(), p.communicate()))
        poll_until(lambda: os.path.exists(self.pidfile), timeout=30,
                   message="child never started")
        with open(self.pidfile) as fh:
            return p, int(fh.read())

    def test_no_retries_a_dead_server_kills_the_child(self):
        p, child = self.start_holder("-monitor-retry", "0")
        self.server.kill()
        poll_until(lambda: not pid_alive(child), timeout=10,
                   message="child kept running with no server to monitor the lock")
        out, err = p.communicate(timeout=60)
        self.assertIn("tenure lock: lock lost: monitoring the lock failed", err)
        self.assertIn("Lock release failed: ", err)
        self.assertEqual(p.returncode, 1, err)

    def test_retries_ride_out_a_server_restart(self):
        p, child = self.start_holder("-monitor-retry", "30")
        session = self.server.kv_entry("down/.lock")["Session"]
        self.server.kill()
        self.server.start()
        # The monitor is back on the key (the session survived the restart)
        # and the child never stopped.
        poll_until(lambda: self.server.kv_entry("down/.lock") is not None, timeout=30)
        self.assertEqual(self.server.kv_entry("down/.lock")["Session"], session)
        time.sleep(3.0)  # a few monitor retry periods
        self.assertTrue(pid_alive(child), p.stderr.read() if p.poll() is not None else "")
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 0, err)
        self.assertNotIn("lock lost", err)
        self.assertIsNone(self.server.kv_entry("down/.lock"))


NODE = "lock-node"
# The least a `tenure lock` on jobs/ needs with default deny (docs/security.md).
LOCK_RULES = ('key_prefix "jobs/" { policy = "write" }\n'
              f'session "{NODE}" {{ policy = "write" }}\n'
              f'agent "{NODE}" {{ policy = "read" }}')


class LockCommandAclTest(SharedServerTestCase):
    MANAGEMENT = str(uuid.uuid4())
    server_args = ("-session-ttl-multiplier", "1", "-acl-enabled", "-acl-default-policy", "deny",
                   "-acl-initial-management", MANAGEMENT, "-node", NODE)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            poll_until(lambda: cls.server.request("GET", "/v1/acl/token/self", headers={
                "X-Consul-Token": cls.MANAGEMENT}).status == 200, timeout=15,
                message="the initial management token never worked")
            cls.tokens = {}
            without_agent = "\n".join(LOCK_RULES.split("\n")[:2])
            without_keys = "\n".join(LOCK_RULES.split("\n")[1:])
            for name, rules in (("lock", LOCK_RULES), ("no-agent", without_agent),
                                ("no-keys", without_keys)):
                cls.admin("PUT", "/v1/acl/policy", {"Name": name, "Rules": rules})
                cls.tokens[name] = cls.admin("PUT", "/v1/acl/token", {
                    "Description": name, "Policies": [{"Name": name}]})["SecretID"]
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def admin(cls, method, path, body=None):
        resp = cls.server.request(method, path, None if body is None else json.dumps(body),
                                  {"X-Consul-Token": cls.MANAGEMENT})
        if resp.status != 200:
            raise AssertionError(f"management {method} {path}: {resp!r}")
        return resp.json()

    def sessions(self):
        return self.server.request("GET", "/v1/session/list",
                                   headers={"X-Consul-Token": self.MANAGEMENT}).json()

    def test_the_least_token_runs_a_lock_and_a_semaphore(self):
        for flags in ((), ("-n", "2")):
            with self.subTest(flags=flags):
                marker = os.path.join(self.dir, "ran" + "".join(flags))
                r = self.server.cli("lock", "-token", self.tokens["lock"], *flags, "jobs/a",
                                    f"touch {marker}")
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertTrue(os.path.exists(marker))
        self.assertEqual(self.sessions(), [])

    def test_without_agent_read_it_stops_before_anything(self):
        r = self.server.cli("lock", "-token", self.tokens["no-agent"], "jobs/b", "true")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("Error querying Consul agent: Unexpected response code: 403", r.stderr)
        self.assertIn("agent:read", r.stderr)

    def test_without_the_key_rule_acquisition_fails_and_the_session_goes(self):
        for flags in ((), ("-n", "2")):
            with self.subTest(flags=flags):
                marker = os.path.join(self.dir, "ran")
                r = self.server.cli("lock", "-token", self.tokens["no-keys"], *flags, "jobs/c",
                                    f"touch {marker}")
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn("Lock acquisition failed: ", r.stderr)
                self.assertIn("403", r.stderr)
                self.assertFalse(os.path.exists(marker), "the child ran")
                self.assertEqual(self.sessions(), [])

    def test_without_a_token_nothing_runs(self):
        marker = os.path.join(self.dir, "ran")
        r = self.server.cli("lock", "jobs/d", f"touch {marker}")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("403", r.stderr)
        self.assertFalse(os.path.exists(marker), "the child ran")


if __name__ == "__main__":
    unittest.main()
