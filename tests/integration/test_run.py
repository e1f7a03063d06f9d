"""`tenure run` against a real server with real child processes: the child
gets its fencing token and exits with its code, the key is released after,
two candidates never run their commands at the same time, a supervisor
killed with SIGKILL takes its child with it, and no candidate registration
outlives its candidate."""

import os
import signal
import time
import unittest

from tenure_testlib import SharedServerTestCase, pid_alive, poll_until


def read(path):
    with open(path) as fh:
        return fh.read()



class RunTest(SharedServerTestCase):
    def leader_session(self, name):
        r = self.server.request("GET", f"/v1/kv/service/{name}/leader")
        if r.status == 404:
            return ""
        return r.json()[0].get("Session", "") or ""

    def registrations(self, name):
        """{key: Session or ""} under service/NAME/candidates/."""
        r = self.server.request("GET", f"/v1/kv/service/{name}/candidates/?recurse")
        if r.status == 404:
            return {}
        return {e["Key"]: e.get("Session", "") or "" for e in r.json()}

    def test_child_gets_token_and_exit_code_and_key_is_released(self):
        f = os.path.join(self.dir, "token")
        out = self.server.cli("run", "job", "--", "sh", "-c",
                              f'echo "$TENURE_FENCING_TOKEN $TENURE_LEADER_KEY" > {f}; exit 3')
        self.assertEqual(out.returncode, 3, out.stderr)
        token, key = read(f).split()
        self.assertGreater(int(token), 0)
        self.assertEqual(key, "service/job/leader")
        self.assertIn("tenure run: elected with fencing token " + token, out.stderr)
        self.assertIn("tenure run: child exited with code 3", out.stderr)
        self.assertEqual(self.leader_session("job"), "")
        # Its registration (default name hostname-pid) went with it.
        self.assertEqual(self.registrations("job"), {})

    def start_leading_child(self, name, *flags):
        """Starts `tenure run NAME FLAGS -- sleep 300` and waits until the child
        runs (it writes its pid once elected); returns the Popen and the child's pid."""
        pidfile = os.path.join(self.dir, f"{name}.pid")
        p = self.server.popen_cli("run", name, *flags, "--", "sh", "-c",
                                  f"echo $$ > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; "
                                  "exec sleep 300")
        try:
            poll_until(lambda: os.path.exists(pidfile), timeout=30,
                       message="child never started")
        except Exception:
            p.kill()
            p.communicate()
            raise
        return p, int(read(pidfile))

    def test_bad_usage_exits_2(self):
        self.assertEqual(self.server.cli("run", "--", "true").returncode, 2)
        self.assertEqual(self.server.cli("run", "job").returncode, 2)
        self.assertEqual(self.server.cli("run", "job", "-ttl", "bogus", "--", "true").returncode, 2)

    def test_two_candidates_never_overlap(self):
        log = os.path.join(self.dir, "log")
        script = f"echo start >> {log}; sleep 1; echo stop >> {log}"
        procs = [self.server.popen_cli("run", "same", "--", "sh", "-c", script) for _ in range(2)]
        for p in procs:
            try:
                _, err = p.communicate(timeout=60)
            except Exception:
                p.kill()
                p.communicate()
                raise
            self.assertEqual(p.returncode, 0, err)
        with open(log) as fh:
            self.assertEqual(fh.read().split(), ["start", "stop", "start", "stop"])
        self.assertEqual(self.leader_session("same"), "")

    def test_kill_9_of_supervisor_kills_child(self):
        p, child = self.start_leading_child("killme")
        try:
            self.assertTrue(pid_alive(child))
            p.kill()
            p.wait(timeout=10)
            start = time.monotonic()
            poll_until(lambda: not pid_alive(child), timeout=5,
                       message="child outlived its SIGKILLed supervisor")
            print(f"child gone {time.monotonic() - start:.3f}s after kill -9", flush=True)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            p.communicate()

    def test_sigterm_stops_child_and_exits_143(self):
        p, child = self.start_leading_child("termme")
        try:
            p.send_signal(signal.SIGTERM)
            _, err = p.communicate(timeout=20)
            self.assertEqual(p.returncode, 143, err)
            self.assertFalse(pid_alive(child))
            self.assertEqual(self.leader_session("termme"), "")
            self.assertEqual(self.registrations("termme"), {})
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()

    def test_lost_leadership_stops_child_and_exits_1(self):
        p, child = self.start_leading_child("loseme")
        try:
            sid = self.leader_session("loseme")
            self.assertTrue(sid)
            # Someone else destroys the session: the key is released.
            self.server.request("PUT", f"/v1/session/destroy/{sid}")
            _, err = p.communicate(timeout=20)
            self.assertEqual(p.returncode, 1, err)
            self.assertIn("tenure run: lost leadership", err)
            self.assertFalse(pid_alive(child))
            # Its session is gone, so its registration was unlocked: deleted too.
            self.assertEqual(self.registrations("loseme"), {})
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()

    def test_a_killed_candidate_s_registration_goes_after_its_session(self):
        # No lock-delay, so that the next candidate leads at once.
        p, _ = self.start_leading_child("abandoned", "-lock-delay", "0s")
        try:
            ((key, sid),) = self.registrations("abandoned").items()
            self.assertEqual(sid, self.leader_session("abandoned"))
            p.kill()  # kill -9: nothing is cleaned up
            p.wait(timeout=10)
        finally:
            if p.poll() is None:
                p.kill()
            p.communicate()
        self.assertEqual(self.registrations("abandoned"), {key: sid})
        # The session ends as its TTL would end it (without waiting for the TTL).
        self.assertEqual(self.server.request("PUT", f"/v1/session/destroy/{sid}").status, 200)
        self.assertEqual(self.registrations("abandoned"), {key: ""})
        # The next candidate of the election deletes the dead registration, then its own.
        out = self.server.cli("run", "abandoned", "--", "true")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(self.registrations("abandoned"), {})

    def test_a_registration_taken_by_a_live_candidate_is_left_alone(self):
        # -candidate names a registration another live session holds: the
        # campaign fails, and the exit deletes nothing of the other's.
        sid = self.server.request("PUT", "/v1/session/create", b"{}").json()["ID"]
        key = "service/shared/candidates/c1"
        self.assertEqual(self.server.request("PUT", f"/v1/kv/{key}?acquire={sid}").text, "true")
        out = self.server.cli("run", "shared", "-candidate", "c1", "--", "true")
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("is registered by another session", out.stderr)
        self.assertEqual(self.registrations("shared"), {key: sid})
        self.server.request("PUT", f"/v1/session/destroy/{sid}")


if __name__ == "__main__":
    unittest.main()
