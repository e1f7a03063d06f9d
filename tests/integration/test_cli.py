"""The tenure CLI (kv, session, watch) against a real `tenure server -dev`.

Covers Consul's "Application leader election" walkthrough verbatim:
the messages and exit codes of `kv put -acquire/-release` are Consul's
(docs/consul-api.md section 8), as is `watch`'s output and handler contract.
"""

import base64
import json
import os
import re
import signal
import tempfile
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tenure_testlib import Cli, DevServer, poll_until

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
KV_FIELDS = ["Key", "CreateIndex", "ModifyIndex", "LockIndex", "Flags", "Value", "Session"]


class CliTestCase(unittest.TestCase):
    """One dev server for the class; tests use distinct keys."""

    @classmethod
    def setUpClass(cls):
        cls.server = DevServer()
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def run_cli(self, *args, **kwargs):
        return self.server.cli(*args, **kwargs)

    def assertOutput(self, proc, code, stdout="", stderr=""):
        self.assertEqual((proc.returncode, proc.stdout, proc.stderr), (code, stdout, stderr))

    def create_session(self, *flags):
        proc = self.run_cli("session", "create", *flags)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        session = proc.stdout.strip()
        self.assertRegex(session, UUID_RE)
        return session


class LeaderElectionWalkthroughTest(CliTestCase):
    """The walkthrough's steps, in order, through the CLI."""

    def test_walkthrough(self):
        # Create a session and verify it in the list.
        first = self.create_session("-name=hashicups-db-0")
        listed = self.server.get_json("/v1/session/list")
        self.assertIn(first, [s["ID"] for s in listed])

        # Acquire: the key is given with a leading '/', the message drops it.
        value = '{"Node": "hashicups-db-0"}'
        proc = self.run_cli("kv", "put", "-acquire", f"-session={first}", "/service/leader", value)
        self.assertOutput(proc, 0, stdout="Success! Lock acquired on: service/leader\n")

        # A second contender fails with Consul's text and exit code 1.
        second = self.create_session("-name=hashicups-db-1")
        proc = self.run_cli("kv", "put", "-acquire", f"-session={second}", "/service/leader",
                            '{"Node": "hashicups-db-1"}')
        self.assertOutput(proc, 1, stderr="Error! Did not acquire lock\n")

        # The blocking-query view shows the holder.
        entry = self.server.get_json("/v1/kv/service/leader?index=1")[0]
        self.assertEqual(entry["Session"], first)
        self.assertEqual(entry["Value"], "eyJOb2RlIjogImhhc2hpY3Vwcy1kYi0wIn0=")

        # `watch` without a handler prints the entry in api.KVPair order and exits.
        proc = self.run_cli("watch", "-type=key", "-key=service/leader", timeout=30)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        printed = json.loads(proc.stdout)
        self.assertEqual(list(printed)[:7], KV_FIELDS)
        self.assertEqual(printed["Session"], first)
        self.assertEqual(printed["Value"], entry["Value"])
        self.assertIn('\n    "Key": "service/leader",\n', proc.stdout)

        # Renew prints the session as JSON.
        proc = self.run_cli("session", "renew", first)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(json.loads(proc.stdout)["ID"], first)

        # Release: Consul's message; afterwards the key has no Session.
        proc = self.run_cli("kv", "put", "-release", f"-session={first}", "service/leader", value)
        self.assertOutput(proc, 0, stdout="Success! Lock released on: service/leader\n")
        entry = self.server.get_json("/v1/kv/service/leader")[0]
        self.assertNotIn("Session", entry)
        proc = self.run_cli("kv", "put", "-release", f"-session={first}", "service/leader", value)
        self.assertOutput(proc, 1, stderr="Error! Did not release lock\n")

        # Now the other contender gets it.
        proc = self.run_cli("kv", "put", "-acquire", f"-session={second}", "service/leader", "x")
        self.assertOutput(proc, 0, stdout="Success! Lock acquired on: service/leader\n")

        for session in (first, second):
            self.assertEqual(self.run_cli("session", "destroy", session).returncode, 0)
        self.assertOutput(self.run_cli("kv", "delete", "service/leader"), 0,
                          stdout="Success! Deleted key: service/leader\n")


class KvCommandTest(CliTestCase):

    def test_put_get_delete(self):
        self.assertOutput(self.run_cli("kv", "put", "kvt/a", "hello"), 0,
                          stdout="Success! Data written to: kvt/a\n")
        self.assertOutput(self.run_cli("kv", "get", "kvt/a"), 0, stdout="hello\n")
        self.assertOutput(self.run_cli("kv", "get", "/kvt/a"), 0, stdout="hello\n")
        self.assertOutput(self.run_cli("kv", "get", "-base64", "kvt/a"), 0, stdout="aGVsbG8=\n")
        self.assertOutput(self.run_cli("kv", "delete", "kvt/a"), 0,
                          stdout="Success! Deleted key: kvt/a\n")
        self.assertOutput(self.run_cli("kv", "get", "kvt/a"), 1,
                          stderr="Error! No key exists at: kvt/a\n")
        # Deleting a missing key succeeds, as in Consul.
        self.assertOutput(self.run_cli("kv", "delete", "kvt/a"), 0,
                          stdout="Success! Deleted key: kvt/a\n")

    def test_data_sources(self):
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write("from a file")
        try:
            self.assertEqual(self.run_cli("kv", "put", "kvt/file", "@" + f.name).returncode, 0)
        finally:
            os.unlink(f.name)
        self.assertEqual(self.run_cli("kv", "get", "kvt/file").stdout, "from a file\n")
        self.assertEqual(self.run_cli("kv", "put", "kvt/stdin", "-", input="piped").returncode, 0)
        self.assertEqual(self.run_cli("kv", "get", "kvt/stdin").stdout, "piped\n")
        self.assertEqual(self.run_cli("kv", "put", "-base64", "kvt/b64", "aGk=").returncode, 0)
        self.assertEqual(self.run_cli("kv", "get", "kvt/b64").stdout, "hi\n")
        self.assertEqual(self.run_cli("kv", "put", "kvt/empty").returncode, 0)
        self.assertIsNone(self.server.get_json("/v1/kv/kvt/empty")[0]["Value"])
        proc = self.run_cli("kv", "put", "kvt/x", "@/nonexistent/file")
        self.assertEqual(proc.returncode, 1)
        self.assertTrue(proc.stderr.startswith("Error! Failed to read file: "), proc.stderr)

    def test_detailed_and_flags(self):
        self.assertEqual(self.run_cli("kv", "put", "-flags=3304740253564472344", "kvt/d", "v")
                         .returncode, 0)
        entry = self.server.get_json("/v1/kv/kvt/d")[0]
        proc = self.run_cli("kv", "get", "-detailed", "kvt/d")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout,
                         f"CreateIndex      {entry['CreateIndex']}\n"
                         "Flags            3304740253564472344\n"
                         "Key              kvt/d\n"
                         "LockIndex        0\n"
                         f"ModifyIndex      {entry['ModifyIndex']}\n"
                         "Session          -\n"
                         "Value            v\n")

    def test_detailed_shows_fence_while_locked(self):
        session = self.create_session()
        proc = self.run_cli("kv", "put", "-acquire", "-fence", f"-session={session}", "kvt/f", "v")
        self.assertEqual(proc.stdout, "Success! Lock acquired on: kvt/f\n")
        fence = re.fullmatch(r"Fencing token: (\d+)\n", proc.stderr)
        self.assertIsNotNone(fence, proc.stderr)
        lines = self.run_cli("kv", "get", "-detailed", "kvt/f").stdout.splitlines()
        self.assertIn(f"Session          {session}", lines)
        self.assertIn(f"Fence            {fence.group(1)}", lines)
        self.run_cli("session", "destroy", session)

    def test_recurse_and_keys(self):
        for key, value in [("kvt/r/a", "1"), ("kvt/r/b", "2"), ("kvt/r/sub/c", "3")]:
            self.assertEqual(self.run_cli("kv", "put", key, value).returncode, 0)
        self.assertOutput(self.run_cli("kv", "get", "-recurse", "kvt/r/"), 0,
                          stdout="kvt/r/a:1\nkvt/r/b:2\nkvt/r/sub/c:3\n")
        self.assertOutput(self.run_cli("kv", "get", "-keys", "kvt/r/"), 0,
                          stdout="kvt/r/a\nkvt/r/b\nkvt/r/sub/\n")
        self.assertOutput(self.run_cli("kv", "delete", "-recurse", "kvt/r/"), 0,
                          stdout="Success! Deleted keys with prefix: kvt/r/\n")
        self.assertOutput(self.run_cli("kv", "get", "-recurse", "kvt/r/"), 0)

    def test_cas(self):
        self.assertOutput(self.run_cli("kv", "put", "-cas", "-modify-index=0", "kvt/c", "v1"), 0,
                          stdout="Success! Data written to: kvt/c\n")
        self.assertOutput(
            self.run_cli("kv", "put", "-cas", "-modify-index=0", "kvt/c", "v2"), 1,
            stderr="Error! Did not write to kvt/c: CAS performed with index=0 and key already "
                   "exists.\n")
        index = self.server.get_json("/v1/kv/kvt/c")[0]["ModifyIndex"]
        self.assertOutput(self.run_cli("kv", "put", "-cas", f"-modify-index={index + 100}",
                                       "kvt/c", "v2"), 1,
                          stderr="Error! Did not write to kvt/c: CAS failed\n")
        self.assertOutput(self.run_cli("kv", "put", "-cas", f"-modify-index={index}", "kvt/c",
                                       "v2"), 0, stdout="Success! Data written to: kvt/c\n")
        index = self.server.get_json("/v1/kv/kvt/c")[0]["ModifyIndex"]
        self.assertOutput(self.run_cli("kv", "delete", "-cas", f"-modify-index={index + 100}",
                                       "kvt/c"), 1,
                          stderr="Error! Did not delete key kvt/c: CAS failed\n")
        self.assertOutput(self.run_cli("kv", "delete", "-cas", f"-modify-index={index}", "kvt/c"),
                          0, stdout="Success! Deleted key: kvt/c\n")

    def test_acquire_with_unknown_session(self):
        proc = self.run_cli("kv", "put", "-acquire", "-session=no-such-session", "kvt/l", "v")
        self.assertOutput(proc, 1, stderr="Error! Failed writing data: Unexpected response code: "
                                          "500 (invalid session \"no-such-session\")\n")

    def test_usage_errors(self):
        self.assertOutput(self.run_cli("kv", "put"), 1, stderr="Error! Missing KEY argument\n")
        self.assertOutput(self.run_cli("kv", "put", "a", "b", "c"), 1,
                          stderr="Error! Too many arguments (expected 1 or 2, got 3)\n")
        for flag in ("-acquire", "-release"):
            self.assertOutput(self.run_cli("kv", "put", flag, "kvt/u", "v"), 1,
                              stderr="Error! Missing -session (required with -acquire and "
                                     "-release)\n")
        self.assertOutput(self.run_cli("kv", "get"), 1, stderr="Error! Missing KEY argument\n")
        self.assertOutput(self.run_cli("kv", "delete"), 1, stderr="Error! Missing KEY argument\n")
        proc = self.run_cli("kv", "put", "-bogus", "k")
        self.assertEqual(proc.returncode, 1)
        self.assertTrue(proc.stderr.startswith("flag provided but not defined: -bogus"))
        self.assertEqual(self.run_cli("kv").returncode, 1)
        self.assertEqual(self.run_cli("kv", "frobnicate").returncode, 1)
        proc = self.run_cli("kv", "put", "-h")
        self.assertEqual(proc.returncode, 0)
        self.assertIn("Usage: tenure kv put", proc.stdout)

    def test_unreachable_agent(self):
        proc = self.run_cli("kv", "get", "-http-addr=127.0.0.1:1", "kvt/x")
        self.assertOutput(proc, 1, stderr="Error querying Consul agent: cannot reach tenure at "
                                          "127.0.0.1:1: connection refused\n")
        proc = self.run_cli("kv", "put", "kvt/x", "v", env={"TENURE_HTTP_ADDR": "127.0.0.1:1"})
        self.assertOutput(proc, 1, stderr="Error! Failed writing data: cannot reach tenure at "
                                          "127.0.0.1:1: connection refused\n")


class SessionCommandTest(CliTestCase):

    def test_lifecycle(self):
        session = self.create_session("-name=svc", "-ttl=30s", "-lock-delay=1s",
                                      "-behavior=delete")
        proc = self.run_cli("session", "info", session)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        info = json.loads(proc.stdout)
        self.assertEqual((info["ID"], info["Name"], info["TTL"], info["Behavior"],
                          info["LockDelay"]), (session, "svc", "30s", "delete", 1000000000))
        self.assertTrue(proc.stdout.startswith('{\n    "ID": '), proc.stdout)

        proc = self.run_cli("session", "list")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(session, [s["ID"] for s in json.loads(proc.stdout)])

        proc = self.run_cli("session", "renew", session)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(json.loads(proc.stdout)["TTL"], "30s")

        self.assertOutput(self.run_cli("session", "destroy", session), 0,
                          stdout=f"Success! Destroyed session: {session}\n")
        self.assertOutput(self.run_cli("session", "renew", session), 1,
                          stderr=f"Error! Session ID not found: {session}\n")
        self.assertOutput(self.run_cli("session", "info", session), 1,
                          stderr=f"Error! Session ID not found: {session}\n")

    def test_server_side_validation_error(self):
        proc = self.run_cli("session", "create", "-ttl=1s")
        self.assertEqual(proc.returncode, 1)
        self.assertTrue(proc.stderr.startswith(
            "Error! Failed to create session: Unexpected response code: 500 (Invalid Session TTL"),
            proc.stderr)

    def test_usage_errors(self):
        self.assertEqual(self.run_cli("session").returncode, 2)
        self.assertEqual(self.run_cli("session", "frobnicate").returncode, 2)
        self.assertOutput(self.run_cli("session", "info"), 2,
                          stderr="Error! Missing session ID argument\n")
        self.assertOutput(self.run_cli("session", "renew", "a", "b"), 2,
                          stderr="Error! Too many arguments (expected 1, got 2)\n")
        self.assertEqual(self.run_cli("session", "create", "-behavior=keep").returncode, 2)
        self.assertEqual(self.run_cli("session", "create", "-bogus").returncode, 2)


class WatchCommandTest(CliTestCase):

    def test_missing_key_prints_null(self):
        self.assertOutput(self.run_cli("watch", "-type=key", "-key=wt/missing"), 0,
                          stdout="null\n")

    def test_keyprefix(self):
        self.run_cli("kv", "put", "wt/p/a", "1")
        proc = self.run_cli("watch", "-type=keyprefix", "-prefix=wt/p/")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        entries = json.loads(proc.stdout)
        self.assertEqual([e["Key"] for e in entries], ["wt/p/a"])
        self.assertEqual(list(entries[0]), KV_FIELDS)

    def test_handler_runs_on_changes(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            handler = f'(cat; echo " index=$CONSUL_INDEX") >> {out}'
            watch = self.server.popen_cli("watch", "-type=key", "-key=wt/h", handler)
            try:
                def records():
                    if not os.path.exists(out):
                        return []
                    with open(out) as f:
                        return [line for line in f.read().splitlines() if line.strip()]

                # The first result (the key is missing) is delivered at once.
                poll_until(lambda: len(records()) >= 2, timeout=15, message="first delivery")
                self.assertEqual(records()[0], "null")
                self.assertRegex(records()[1], r"^ index=\d+$")

                self.run_cli("kv", "put", "wt/h", "one")
                poll_until(lambda: len(records()) >= 4, timeout=15, message="second delivery")
                entry = json.loads(records()[2])
                self.assertEqual(list(entry), KV_FIELDS)
                self.assertEqual(entry["Value"], "b25l")
                self.assertEqual(records()[3], f" index={entry['ModifyIndex']}")

                # A write to another key and an identical rewrite are not changes;
                # the next real change is the only further delivery.
                self.run_cli("kv", "put", "wt/other", "x")
                self.run_cli("kv", "put", "wt/h", "one")
                self.run_cli("kv", "put", "wt/h", "two")
                poll_until(lambda: len(records()) >= 6, timeout=15, message="third delivery")
                self.assertEqual(json.loads(records()[4])["Value"], "dHdv")
                self.assertEqual(len(records()), 6)
                self.assertIsNone(watch.poll())
            finally:
                watch.send_signal(signal.SIGTERM)
                _, stderr = watch.communicate(timeout=15)
            self.assertEqual(watch.returncode, 0, stderr)

    def test_handler_failure_stops_watch(self):
        proc = self.run_cli("watch", "-type=key", "-key=wt/f", "exit 3", timeout=30)
        self.assertOutput(proc, 1, stderr="Error executing handler: exit status 3\n")

    def test_sigint_stops_watch_and_handler(self):
        watch = self.server.popen_cli("watch", "-type=key", "-key=wt/s", "echo started; sleep 60")
        try:
            self.assertEqual(watch.stdout.readline(), "started\n")
        finally:
            watch.send_signal(signal.SIGINT)
            watch.communicate(timeout=15)
        self.assertEqual(watch.returncode, 0)

    def test_usage_and_unreachable(self):
        proc = self.run_cli("watch")
        self.assertEqual(proc.returncode, 1)
        self.assertTrue(proc.stderr.startswith("Watch type must be specified\n"))
        self.assertOutput(self.run_cli("watch", "-type=key"), 1,
                          stderr="Must specify a single key to watch\n")
        self.assertOutput(self.run_cli("watch", "-type=nodes"), 1,
                          stderr="Unsupported watch type: nodes\n")
        self.assertOutput(self.run_cli("watch", "-http-addr=127.0.0.1:1", "-type=key", "-key=k"),
                          1, stderr="Error querying Consul agent: cannot reach tenure at "
                                    "127.0.0.1:1: connection refused\n")


class _ClosingAgent(BaseHTTPRequestHandler):
    """A stub agent that answers one request per connection and then closes the
    connection when the next request arrives, without a word: what a server's
    idle timeout looks like to a keep-alive client that just sent a request."""

    protocol_version = "HTTP/1.1"
    index = 10
    lock = threading.Lock()
    dropped = 0

    def handle(self):
        self.close_connection = False
        self.handle_one_request()
        if self.close_connection:
            return
        # The client reuses the connection: read its request and hang up.
        if self.rfile.readline():
            with _ClosingAgent.lock:
                _ClosingAgent.dropped += 1

    def do_GET(self):
        if self.path == "/v1/status/leader":
            self._reply(b'"127.0.0.1:8300"', 1)
            return
        with _ClosingAgent.lock:
            _ClosingAgent.index += 1
            index = _ClosingAgent.index
        value = f"v{index}".encode()
        body = json.dumps([{"LockIndex": 0, "Key": "k", "Flags": 0,
                            "Value": base64.b64encode(value).decode(),
                            "CreateIndex": 1, "ModifyIndex": index}]).encode()
        self._reply(body, index)

    def _reply(self, body, index):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Consul-Index", str(index))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def log_message(self, *args):
        pass


class HttpClientReconnectTest(unittest.TestCase):
    """The client resends once on a fresh connection when the kept one was closed."""

    def test_watch_survives_dropped_keepalive_connections(self):
        stub = ThreadingHTTPServer(("127.0.0.1", 0), _ClosingAgent)
        thread = threading.Thread(target=stub.serve_forever, daemon=True)
        thread.start()
        try:
            addr = f"127.0.0.1:{stub.server_address[1]}"
            cli = Cli(addr)
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "out")
                watch = cli.popen("watch", "-type=key", "-key=k", f"cat >> {out}; echo >> {out}")
                try:
                    def deliveries():
                        if not os.path.exists(out):
                            return 0
                        with open(out) as f:
                            return sum(1 for line in f if line.startswith("{"))
                    poll_until(lambda: deliveries() >= 3, timeout=15, message="three deliveries")
                    self.assertIsNone(watch.poll())
                finally:
                    watch.send_signal(signal.SIGTERM)
                    _, stderr = watch.communicate(timeout=15)
                self.assertEqual(watch.returncode, 0, stderr)
                self.assertNotIn("errored", stderr)
            self.assertGreaterEqual(_ClosingAgent.dropped, 2)
        finally:
            stub.shutdown()
            stub.server_close()


if __name__ == "__main__":
    unittest.main()
