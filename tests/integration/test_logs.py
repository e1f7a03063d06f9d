"""Structured logs (docs/logs.md), with the real binary: -log-json
writes one JSON object a line with time, level, component and message, the
leadership and session events carry their fields, -log-level drops what is
below it, and a bad level starts nothing.

Run (from tests/integration):
  TENURE_BIN=<path>/tenure PYTHONPATH=<repo>/tests/lib /usr/bin/python3 -m unittest -v test_logs
"""

import json
import subprocess
import unittest

from tenure_testlib import DevServer, poll_until, tenure_bin


def log_lines(server):
    """The server's lines (DevServer's log starts with the command line, "$ ...")."""
    with open(server.log_path, encoding="utf-8") as f:
        return [line for line in f.read().splitlines() if line and not line.startswith("$ ")]


def json_lines(server):
    return [json.loads(line) for line in log_lines(server)]


class JsonLogTest(unittest.TestCase):
    def test_every_line_is_an_event_and_leadership_has_its_fields(self):
        with DevServer(extra_args=["-log-json"]) as server:
            leader = poll_until(
                lambda: [e for e in json_lines(server) if "is leader of term" in e["message"]],
                timeout=15, message="the leadership event")
            event = leader[0]
            self.assertEqual(event["component"], "raft")
            self.assertEqual(event["level"], "info")
            self.assertIsInstance(event["term"], int)
            self.assertIsInstance(event["node_id"], int)
            self.assertRegex(event["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")

            # A session whose TTL runs out: the expiry is logged once with its id.
            created = server.request("PUT", "/v1/session/create", json.dumps({"TTL": "10s"}))
            self.assertEqual(created.status, 200, created.body)
            sid = created.json()["ID"]
            expired = poll_until(
                lambda: [e for e in json_lines(server) if e.get("session") == sid],
                timeout=60, interval=0.5, message="the session's expiry event")
            self.assertEqual(expired[0]["cause"], "ttl")
            self.assertEqual(len(expired), 1)
            # Every line parsed above; each has the four fields.
            for event in json_lines(server):
                for field in ("time", "level", "component", "message"):
                    self.assertIn(field, event)

    def test_text_stays_the_default(self):
        with DevServer() as server:
            poll_until(lambda: any(line.startswith("tenure raft: ") and "is leader of term" in line
                                   for line in log_lines(server)),
                       timeout=15, message="the text leadership line")
            self.assertFalse(any(line.startswith("{") for line in log_lines(server)))


class LevelTest(unittest.TestCase):
    def test_warn_drops_info(self):
        with DevServer(extra_args=["-log-json", "-log-level", "warn"]) as server:
            # Wait for the server to lead (it then has logged its info lines, if any).
            poll_until(lambda: server.get_json("/v1/status/leader") != "",
                       timeout=15, message="a leader")
            levels = {event["level"] for event in json_lines(server)}
            self.assertTrue(levels <= {"warn", "error"}, levels)

    def test_bad_level_starts_nothing(self):
        run = subprocess.run([tenure_bin(), "server", "-dev", "-log-level", "loud"],
                             capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        self.assertEqual(run.returncode, 1)
        self.assertIn('-log-level: unknown log level "loud" (trace, debug, info, warn or error)',
                      run.stderr)


if __name__ == "__main__":
    unittest.main()
