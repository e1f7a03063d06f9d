"""etcd's JSON gateway on `tenure server -grpc-addr` (decision 0048 section 5).

A real server, plain HTTP requests as etcd's gateway clients send them
(Patroni, etcd3gw, curl): `/version` and `/health` as etcd answers them;
KV calls with base64 keys, 64-bit integers as strings and zero values left
out; errors with grpc-gateway's statuses and bodies (`error`, `message`,
`code`); the mux's 404 and 405; refusals that change nothing; writes that
cross over to Consul's KV API on the same store (decision 0048 section 2);
the flag's checks (an address in use, ACLs on). Streamed answers: a watch
and an election's Observe as chunked `{"result": ...}` lines; Campaign and
Lock, and a waiting Lock whose client goes away giving its key back.
"""

import base64
import json
import socket
import subprocess
import time
import unittest
import urllib.parse

from etcd_testlib import EtcdDevServerCase
from tenure_testlib import DevServer, free_port, http_request, poll_until, tenure_bin


def b64(data):
    if isinstance(data, str):
        data = data.encode()
    return base64.b64encode(data).decode()


def unb64(text):
    return base64.b64decode(text)


class EtcdGatewayTest(EtcdDevServerCase):

    def call(self, path, body=None, method="POST", raw=None):
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        return http_request(self.etcd_addr, method, path, data,
                            {"Content-Type": "application/json"})

    def ok(self, path, body=None):
        resp = self.call(path, body)
        self.assertEqual(resp.status, 200, resp.text)
        self.assertEqual(resp.header("content-type"), "application/json")
        return resp.json()

    def error(self, path, body, status, code, message, raw=None):
        resp = self.call(path, body, raw=raw)
        self.assertEqual(resp.status, status, resp.text)
        answer = resp.json()
        self.assertEqual(answer["code"], code, answer)
        self.assertEqual(answer["error"], message)
        self.assertEqual(answer["message"], message)
        return answer

    def revision(self):
        return int(self.ok("/v3/kv/range", {"key": b64("tenure-probe")})["header"]["revision"])

    def everything(self):
        # Every key with its revisions: what "changes nothing" compares. (The
        # header's revision is the applied raft index, which reads through
        # the leader's barrier move too: decision 0048 section 1.)
        return self.ok("/v3/kv/range", {"key": b64("\0"), "range_end": b64("\0")}).get("kvs")

    def test_version_and_health_as_etcd_answers_them(self):
        resp = self.call("/version", method="GET")
        self.assertEqual(resp.status, 200)
        self.assertEqual(resp.json(), {"etcdserver": "3.4.23", "etcdcluster": "3.4.0"})
        resp = self.call("/health", method="GET")
        self.assertEqual((resp.status, resp.json()), (200, {"health": "true"}))
        for path in ("/version", "/health"):
            resp = self.call(path, method="POST")
            self.assertEqual((resp.status, resp.text), (405, "Method Not Allowed\n"))
            self.assertEqual(resp.header("allow"), "GET")

    def test_put_range_and_delete_with_etcds_json(self):
        put = self.ok("/v3/kv/put", {"key": b64("gw/a"), "value": b64("one")})
        header = put["header"]
        # 64-bit integers are strings; the cluster and member ids are set.
        self.assertIsInstance(header["revision"], str)
        self.assertIsInstance(header["cluster_id"], str)
        self.assertEqual(header["member_id"], "1")
        rev_a = int(header["revision"])
        self.ok("/v3/kv/put", {"key": b64("gw/b"), "value": b64("two")})
        # prev_kv on a Put; version counts writes to the key.
        again = self.ok("/v3/kv/put", {"key": b64("gw/a"), "value": b64("uno"), "prev_kv": True})
        self.assertEqual(unb64(again["prev_kv"]["value"]), b"one")
        self.assertEqual(int(again["prev_kv"]["create_revision"]), rev_a)

        got = self.ok("/v3/kv/range", {"key": b64("gw/"), "range_end": b64("gw0")})
        self.assertEqual([unb64(kv["key"]) for kv in got["kvs"]], [b"gw/a", b"gw/b"])
        self.assertEqual(got["count"], "2")
        first = got["kvs"][0]
        self.assertEqual(unb64(first["value"]), b"uno")
        self.assertEqual(first["version"], "2")
        self.assertEqual(int(first["create_revision"]), rev_a)
        self.assertGreater(int(first["mod_revision"]), rev_a)
        self.assertNotIn("lease", first)  # zero values are left out
        self.assertNotIn("more", got)

        # The other name style, integers as numbers, enums by name: all read.
        sorted_desc = self.ok("/v3/kv/range", {"key": b64("gw/"), "rangeEnd": b64("gw0"),
                                               "sortOrder": "DESCEND", "limit": 1})
        self.assertEqual([unb64(kv["key"]) for kv in sorted_desc["kvs"]], [b"gw/b"])
        self.assertTrue(sorted_desc["more"])
        counted = self.ok("/v3/kv/range", {"key": b64("gw/"), "range_end": b64("gw0"),
                                           "count_only": True})
        self.assertNotIn("kvs", counted)
        self.assertEqual(counted["count"], "2")

        deleted = self.ok("/v3/kv/deleterange", {"key": b64("gw/"), "range_end": b64("gw0"),
                                                 "prev_kv": True})
        self.assertEqual(deleted["deleted"], "2")
        self.assertEqual(sorted(unb64(kv["key"]) for kv in deleted["prev_kvs"]),
                         [b"gw/a", b"gw/b"])
        self.assertNotIn("kvs", self.ok("/v3/kv/range", {"key": b64("gw/a")}))

    def test_reads_of_a_past_revision_and_compaction(self):
        first = int(self.ok("/v3/kv/put", {"key": b64("past/k"), "value": b64("v1")})
                    ["header"]["revision"])
        self.ok("/v3/kv/put", {"key": b64("past/k"), "value": b64("v2")})
        then = self.ok("/v3/kv/range", {"key": b64("past/k"), "revision": str(first)})
        self.assertEqual(unb64(then["kvs"][0]["value"]), b"v1")
        now = self.revision()
        self.error("/v3/kv/compaction", {"revision": str(now + 1000)}, 400, 11,
                   "etcdserver: mvcc: required revision is a future revision")
        self.ok("/v3/kv/compaction", {"revision": str(first)})
        self.error("/v3/kv/range", {"key": b64("past/k"), "revision": str(first - 1)}, 400, 11,
                   "etcdserver: mvcc: required revision has been compacted")

    def test_txn_compares_and_branches(self):
        create = {
            "compare": [{"key": b64("txn/lock"), "result": "EQUAL", "target": "CREATE",
                         "create_revision": "0"}],
            "success": [{"request_put": {"key": b64("txn/lock"), "value": b64("me")}}],
            "failure": [{"request_range": {"key": b64("txn/lock")}}],
        }
        won = self.ok("/v3/kv/txn", create)
        self.assertTrue(won["succeeded"])
        self.assertIn("response_put", won["responses"][0])
        lost = self.ok("/v3/kv/txn", create)
        self.assertNotIn("succeeded", lost)  # false is left out
        held = lost["responses"][0]["response_range"]["kvs"][0]
        self.assertEqual(unb64(held["value"]), b"me")
        # A fenced write: compare the lock key's create revision.
        fenced = {
            "compare": [{"key": b64("txn/lock"), "target": "CREATE",
                         "create_revision": held["create_revision"]}],
            "success": [{"request_put": {"key": b64("txn/data"), "value": b64("fenced")}}],
        }
        self.assertTrue(self.ok("/v3/kv/txn", fenced)["succeeded"])
        fenced["compare"][0]["create_revision"] = str(int(held["create_revision"]) + 1)
        self.assertNotIn("succeeded", self.ok("/v3/kv/txn", fenced))

    def test_bad_input_gets_etcds_error_and_changes_nothing(self):
        before = self.everything()
        self.error("/v3/kv/put", {"key": "", "value": b64("v")}, 400, 3,
                   "etcdserver: key is not provided")
        self.error("/v3/kv/put", {"key": b64("k"), "ignore_value": True, "value": b64("v")}, 400,
                   3, "etcdserver: value is provided")
        dup = {"success": [{"request_put": {"key": b64("dup"), "value": b64("1")}},
                           {"request_put": {"key": b64("dup"), "value": b64("2")}}]}
        self.error("/v3/kv/txn", dup, 400, 3, "etcdserver: duplicate key given in txn request")
        many = {"success": [{"request_put": {"key": b64(f"many/{i}")}} for i in range(129)]}
        self.error("/v3/kv/txn", many, 400, 3, "etcdserver: too many operations in txn request")
        self.error("/v3/kv/put", {"key": b64("k"), "lease": "12345"}, 404, 5,
                   "etcdserver: requested lease not found")
        # Malformed JSON and a field of the wrong kind: InvalidArgument.
        for raw in ("{", "[1,2]", '{"key": 5}', '{"key": "%%%"}'):
            resp = self.call("/v3/kv/put", raw=raw)
            self.assertEqual(resp.status, 400, raw)
            self.assertEqual(resp.json()["code"], 3, raw)
        self.assertEqual(self.everything(), before)

    def test_bodies_past_consuls_limit_up_to_etcds(self):
        # A value past Consul's 512 KiB is etcd's to take (decision 0065) and
        # reads back whole through both APIs.
        value = bytes(range(256)) * 4000  # 1,024,000 bytes
        self.ok("/v3/kv/put", {"key": b64("gateway-big"), "value": b64(value)})
        got = self.ok("/v3/kv/range", {"key": b64("gateway-big")})
        self.assertEqual(unb64(got["kvs"][0]["value"]), value)
        resp = self.server.request("GET", "/v1/kv/gateway-big?raw")
        self.assertEqual((resp.status, resp.body), (200, value))
        # Consul's own API keeps Consul's limit.
        resp = self.server.request("PUT", "/v1/kv/consul-big", value)
        self.assertEqual(resp.status, 413, resp.text)
        self.assertIn("max size: 524288 bytes", resp.text)
        before = self.everything()
        # Past etcd's request limit, and past gRPC's message limit once decoded.
        self.error("/v3/kv/put", {"key": b64("gateway-big"), "value": b64(b"p" * 1600000)}, 400,
                   3, "etcdserver: request is too large")
        self.error("/v3/kv/put", {"key": b64("gateway-big"), "value": b64(b"p" * 2100000)}, 429,
                   8, "grpc: received message larger than max (2100018 vs. 2097152)")
        # A body past the gateway's 4 MiB is answered from its header alone.
        host, port = self.etcd_addr.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(f"POST /v3/kv/put HTTP/1.1\r\nHost: {self.etcd_addr}\r\n"
                         f"Content-Type: application/json\r\nContent-Length: {5 << 20}\r\n\r\n"
                         .encode())
            answer = b""
            while b"}" not in answer:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 429 "), head)
        self.assertEqual(json.loads(body)["code"], 8, body)
        self.assertIn("larger than max (5242880 bytes of JSON vs. 2097152)", json.loads(body)["error"])
        self.assertEqual(self.everything(), before)

    def test_leases_as_etcd_grants_renews_and_revokes_them(self):
        grant = self.ok("/v3/lease/grant", {"TTL": "0"})
        self.assertEqual(grant["TTL"], "2")  # raised to the minimum, as etcd
        lease = grant["ID"]
        self.assertGreater(int(lease), 0)
        # A client's own id; taken twice: etcd's FailedPrecondition.
        own = self.ok("/v3/lease/grant", {"TTL": 60, "ID": "777"})
        self.assertEqual((own["ID"], own["TTL"]), ("777", "60"))
        self.error("/v3/lease/grant", {"TTL": 60, "ID": "777"}, 412, 9,
                   "etcdserver: lease already exists")
        self.error("/v3/lease/grant", {"TTL": "9000000001"}, 400, 11,
                   "etcdserver: too large lease TTL")
        listed = [entry["ID"] for entry in self.ok("/v3/lease/leases", {})["leases"]]
        self.assertIn("777", listed)
        self.ok("/v3/kv/put", {"key": b64("lease/k"), "value": b64("v"), "lease": "777"})
        ttl = self.ok("/v3/kv/lease/timetolive", {"ID": "777", "keys": True})
        self.assertEqual(ttl["grantedTTL"], "60")
        self.assertTrue(0 < int(ttl["TTL"]) <= 60)
        self.assertEqual([unb64(k) for k in ttl["keys"]], [b"lease/k"])
        # A keep-alive body of two requests: two result lines, in order; a
        # lease that never existed answers without a TTL and the stream goes on.
        resp = self.call("/v3/lease/keepalive", raw='{"ID": "777"}\n{"ID": "4242"}')
        self.assertEqual(resp.status, 200, resp.text)
        lines = [json.loads(line)["result"] for line in resp.text.splitlines()]
        self.assertEqual([(r["ID"], r.get("TTL")) for r in lines], [("777", "60"), ("4242", None)])
        resp = self.call("/v3/lease/keepalive", raw='{"ID": "777"} [')
        self.assertEqual((resp.status, resp.json()["code"]), (400, 3))
        # Revoke takes the keys; a second revoke finds nothing.
        self.ok("/v3/kv/lease/revoke", {"ID": "777"})
        self.assertNotIn("kvs", self.ok("/v3/kv/range", {"key": b64("lease/k")}))
        self.error("/v3/lease/revoke", {"ID": "777"}, 404, 5,
                   "etcdserver: requested lease not found")
        gone = self.ok("/v3/lease/timetolive", {"ID": "777"})
        self.assertEqual(gone["TTL"], "-1")
        self.ok("/v3/lease/revoke", {"ID": lease})

    def test_a_lease_cannot_take_a_key_a_consul_session_holds(self):
        session = self.server.request("PUT", "/v1/session/create", "{}").json()["ID"]
        self.assertEqual(self.server.request("PUT", f"/v1/kv/held/k?acquire={session}",
                                             b"consul").body, b"true")
        lease = self.ok("/v3/lease/grant", {"TTL": 60})["ID"]
        before = self.everything()
        # FailedPrecondition is grpc-gateway's 412.
        answer = self.error("/v3/kv/put", {"key": b64("held/k"), "value": b64("etcd"),
                                           "lease": lease}, 412, 9,
                            self.call("/v3/kv/put", {"key": b64("held/k"), "lease": lease})
                            .json()["message"])
        self.assertIn("held by Consul session", answer["message"])
        self.assertEqual(self.everything(), before)
        entry = self.server.request("GET", "/v1/kv/held/k").json()[0]
        self.assertEqual(entry["Session"], session)
        self.ok("/v3/lease/revoke", {"ID": lease})

    def relay(self, method_path, body, method="POST"):
        return http_request(self.etcd_addr, method, "/tenure/relay" + method_path, body,
                            {"Content-Type": "application/x-protobuf",
                             "X-Tenure-Forwarded-By": "2"})

    def test_a_relayed_call_is_a_grpc_call_and_nothing_more(self):
        # What a follower sends its leader (decision 0055): the protobuf
        # request, the protobuf answer with its grpc-status. A Put of
        # key "relay/k" (field 1) and value "v" (field 2).
        put = b"\x0a\x07relay/k\x12\x01v"
        resp = self.relay("/etcdserverpb.KV/Put", put)
        self.assertEqual(resp.status, 200, resp.text)
        self.assertEqual(resp.header("grpc-status"), "0")
        self.assertEqual(resp.header("content-type"), "application/x-protobuf")
        got = self.ok("/v3/kv/range", {"key": b64("relay/k")})
        self.assertEqual(unb64(got["kvs"][0]["value"]), b"v")
        before = self.everything()
        # Refusals, each with etcd's code and text, changing nothing.
        for path, body, code, text in [
                ("/etcdserverpb.KV/Put", b"\xff\xff", "3", "grpc: error unmarshalling request"),
                ("/etcdserverpb.KV/Put", b"", "3", "etcdserver: key is not provided"),
                ("/etcdserverpb.KV/Nope", b"", "12", "unknown method Nope"),
                # Only the calls a follower relays: never a wait, never auth.
                ("/v3lockpb.Lock/Lock", b"", "12", "is not relayed"),
                ("/etcdserverpb.Auth/Authenticate", b"", "12", "")]:
            resp = self.relay(path, body)
            self.assertEqual(resp.status, 200, resp.text)
            self.assertEqual(resp.header("grpc-status"), code, (path, resp.headers))
            self.assertIn(text, urllib.parse.unquote(resp.header("grpc-message")), path)
        resp = self.relay("/etcdserverpb.KV/Put", put, method="GET")
        self.assertEqual(resp.status, 405)
        self.assertEqual(self.everything(), before)

    def test_the_mux_answers_what_it_does_not_route(self):
        resp = self.call("/v3/kv/nothing", {})
        self.assertEqual((resp.status, resp.text), (404, "Not Found\n"))
        resp = self.call("/v3/kv/range", method="GET")
        self.assertEqual((resp.status, resp.text), (405, "Method Not Allowed\n"))
        # The v3beta and v3alpha paths (etcd3gw's default) are the same calls.
        for prefix in ("/v3beta", "/v3alpha"):
            got = self.ok(prefix + "/kv/range", {"key": b64("nothing-here")})
            self.assertIn("header", got)
        # A method etcd has and tenure does not serve: Unimplemented, named.
        answer = self.error("/v3/cluster/member/add", {"peerURLs": ["http://x:1"]}, 501, 12,
                            self.call("/v3/cluster/member/add", {}).json()["message"])
        self.assertIn("tenure:", answer["message"])

    def test_status_member_list_and_authenticate(self):
        status = self.ok("/v3/maintenance/status", {})
        self.assertEqual(status["version"], "3.4.23")
        self.assertEqual(status["leader"], "1")
        # etcd's .proto names these fields in camel case already.
        self.assertGreater(int(status["raftIndex"]), 0)
        self.assertGreater(int(status["raftAppliedIndex"]), 0)
        members = self.ok("/v3/cluster/member/list", {})["members"]
        self.assertEqual(len(members), 1)
        self.assertEqual(members[0]["ID"], "1")
        self.assertEqual(members[0]["clientURLs"], ["http://" + self.etcd_addr])
        self.assertEqual(members[0]["peerURLs"], ["tcp://" + self.server.raft_addr])
        self.error("/v3/auth/authenticate", {"name": "root", "password": "x"}, 412, 9,
                   "etcdserver: authentication is not enabled")

    def test_writes_cross_over_to_consuls_kv(self):
        self.ok("/v3/kv/put", {"key": b64("/service/x/leader"), "value": b64("node-a")})
        resp = self.server.request("GET", "/v1/kv//service/x/leader?raw")
        self.assertEqual((resp.status, resp.body), (200, b"node-a"))
        self.assertEqual(self.server.request("PUT", "/v1/kv/from/consul", b"hello").body, b"true")
        got = self.ok("/v3/kv/range", {"key": b64("from/consul")})
        self.assertEqual(unb64(got["kvs"][0]["value"]), b"hello")


    def open_stream(self, path, body):
        """Sends a POST whose answer is streamed; returns the socket and a
        reader of its {"result": ...} lines (chunked framing undone)."""
        host, port = self.etcd_addr.rsplit(":", 1)
        sock = socket.create_connection((host, int(port)), timeout=10)
        self.addCleanup(sock.close)
        data = json.dumps(body).encode()
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: {self.etcd_addr}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
                     .encode() + data)
        state = {"raw": b"", "body": b"", "head": None}

        def lines(count, timeout=10.0):
            deadline = time.monotonic() + timeout
            while True:
                if state["head"] is None and b"\r\n\r\n" in state["raw"]:
                    state["head"], state["raw"] = state["raw"].split(b"\r\n\r\n", 1)
                while state["head"] is not None and b"\r\n" in state["raw"]:
                    size_text, rest = state["raw"].split(b"\r\n", 1)
                    size = int(size_text, 16)
                    if len(rest) < size + 2:
                        break
                    state["body"] += rest[:size]
                    state["raw"] = rest[size + 2:]
                got = [json.loads(line) for line in state["body"].decode().splitlines()]
                if len(got) >= count:
                    return state["head"].decode(), got
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{count} lines not streamed in time: {got}")
                sock.settimeout(left)
                chunk = sock.recv(65536)
                if not chunk:
                    raise AssertionError(f"stream closed after {got}")
                state["raw"] += chunk
        return sock, lines

    def test_a_watch_is_a_stream_of_result_lines(self):
        start = self.revision() + 1
        _, lines = self.open_stream("/v3/watch", {"create_request": {
            "key": b64("gw-watch/"), "range_end": b64("gw-watch0"), "start_revision": str(start),
            "prev_kv": True}})
        head, got = lines(1)
        self.assertIn("Transfer-Encoding: chunked", head)
        self.assertTrue(got[0]["result"]["created"])
        self.ok("/v3/kv/put", {"key": b64("gw-watch/a"), "value": b64("1")})
        self.ok("/v3/kv/put", {"key": b64("gw-watch/a"), "value": b64("2")})
        _, got = lines(3)
        events = [e for line in got[1:] for e in line["result"]["events"]]
        self.assertEqual([unb64(e["kv"]["value"]) for e in events], [b"1", b"2"])
        self.assertNotIn("prev_kv", events[0])
        self.assertEqual(unb64(events[1]["prev_kv"]["value"]), b"1")

    def test_an_election_through_the_gateway(self):
        lease = self.ok("/v3/lease/grant", {"TTL": 30})["ID"]
        won = self.ok("/v3/election/campaign", {"name": b64("gw-el"), "lease": lease,
                                                 "value": b64("one")})
        self.assertEqual(won["leader"]["key"], b64(f"gw-el/{int(lease):x}"))
        self.assertEqual(won["leader"]["rev"], won["header"]["revision"])
        _, lines = self.open_stream("/v3/election/observe", {"name": b64("gw-el")})
        _, got = lines(1)
        self.assertEqual(unb64(got[0]["result"]["kv"]["value"]), b"one")
        self.ok("/v3/election/proclaim", {"leader": won["leader"], "value": b64("two")})
        _, got = lines(2)
        self.assertEqual(unb64(got[1]["result"]["kv"]["value"]), b"two")
        leader = self.ok("/v3/election/leader", {"name": b64("gw-el")})
        self.assertEqual(unb64(leader["kv"]["value"]), b"two")
        self.ok("/v3/election/resign", {"leader": won["leader"]})
        self.error("/v3/election/leader", {"name": b64("gw-el")}, 500, 2, "election: no leader")
        self.error("/v3/lock/lock", {"name": b64("gw-lk"), "lease": "0"}, 400, 3,
                   "tenure: a campaign or lock needs a lease (lease 0 would never end)")

    def test_a_waiting_lock_whose_client_goes_gives_its_key_back(self):
        holder = self.ok("/v3/lease/grant", {"TTL": 30})["ID"]
        waiter = self.ok("/v3/lease/grant", {"TTL": 30})["ID"]
        held = self.ok("/v3/lock/lock", {"name": b64("gw-lk"), "lease": holder})
        sock, _ = self.open_stream("/v3/lock/lock", {"name": b64("gw-lk"), "lease": waiter})
        waiting_key = b64(f"gw-lk/{int(waiter):x}")
        poll_until(lambda: self.ok("/v3/kv/range", {"key": waiting_key}).get("kvs"),
                   message="the waiter's key")
        sock.close()
        poll_until(lambda: not self.ok("/v3/kv/range", {"key": waiting_key}).get("kvs"),
                   message="the abandoned key deleted")
        self.ok("/v3/lock/unlock", {"key": held["key"]})


class EtcdFlagTest(unittest.TestCase):
    def run_server(self, *args):
        return subprocess.run([tenure_bin(), "server", "-dev", "-http-addr",
                               f"127.0.0.1:{free_port()}", "-raft-addr",
                               f"127.0.0.1:{free_port()}", *args],
                              capture_output=True, text=True, timeout=30)

    def test_a_bad_or_taken_address_is_refused(self):
        done = self.run_server("-grpc-addr", "nowhere")
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("grpc-addr", done.stderr)
        with DevServer() as other:
            done = self.run_server("-grpc-addr", other.http_addr)
            self.assertNotEqual(done.returncode, 0)
            self.assertIn(other.http_addr.split(":")[1], done.stderr)

    def test_dev_mode_skips_a_taken_default_port_with_a_note(self):
        # Whoever holds 2379 (another dev server, an etcd), a dev server
        # still starts; the log says why it serves no etcd API. Hold the port
        # for the test when it is free.
        import socket
        holder = socket.socket()
        try:
            holder.bind(("127.0.0.1", 2379))
            holder.listen(1)
        except OSError:
            holder.close()
            holder = None
        try:
            with DevServer(etcd_default=True) as server:
                poll_until(lambda: "no etcd API in this dev server" in server.log(), timeout=10,
                           message="no note of the skipped etcd port:\n" + server.log_tail())
        finally:
            if holder is not None:
                holder.close()


if __name__ == "__main__":
    unittest.main()
