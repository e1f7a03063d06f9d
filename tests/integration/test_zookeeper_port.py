"""ZooKeeper's client protocol on `tenure server -zk-addr` (decision 0056,
docs/zookeeper-compat.md), driven by kazoo from Debian (python3-kazoo) as an
application uses it, and frame by frame (tests/lib/zk_wire.py) for what
kazoo never sends: sessions made, renewed, reopened with their password and
ended by their timeout; answers in request order; ZooKeeper's codes for
bad requests; frames past jute.maxbuffer, unknown op codes and garbage
refused with nothing changed; the four-letter words; a client that never
reads its answers held to a bounded buffer."""

import os
import shutil
import signal
import socket
import struct
import tempfile
import threading
import time
import unittest

from kazoo.client import KazooClient
from kazoo.security import OPEN_ACL_UNSAFE, make_digest_acl
from kazoo.exceptions import (BadVersionError, NoNodeError, NodeExistsError, NotEmptyError,
                              RolledBackError)

import zk_wire
from tenure_testlib import (DevServer, free_port, poll_until, rss_mib, stop_quietly,
                            write_secret)

BADARGUMENTS, NONODE, INVALIDACL, UNIMPLEMENTED = -8, -101, -114, -6
NOWATCHER, MARSHALLINGERROR = -121, -5
NODE_CREATED, NODE_DELETED, NODE_DATA_CHANGED, NODE_CHILDREN_CHANGED = 1, 2, 3, 4


def event_of(reply):
    """(type, path) of a notification (xid -1), else None."""
    if reply is None or reply[0] != -1:
        return None
    kind, _state = struct.unpack(">ii", reply[3][:8])
    return kind, zk_wire.read_ustring(reply[3], 8)[0].decode()


class ZooKeeperPortTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.zk_addr = f"127.0.0.1:{free_port()}"
        cls.secrets = tempfile.mkdtemp(prefix="tenure-zk-port-")
        cls.operator_token = "op-" + os.urandom(16).hex()  # for the snapshot endpoints
        token_file = write_secret(cls.secrets, "operator.token", cls.operator_token)
        # Containers are swept every 200 ms instead of ZooKeeper's 60 s.
        cls.server = DevServer(extra_args=["-zk-addr", cls.zk_addr,
                                           "-zk-session-timeout-min", "2s",
                                           "-zk-session-timeout-max", "30s",
                                           "-operator-token-file", token_file],
                               env={"TENURE_TEST_ZK_CONTAINER_SWEEP_MS": "200",
                                    # A session opened within 3 s of connecting, not 10.
                                    "TENURE_TEST_ZK_HANDSHAKE_MS": "3000"}).__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)
        shutil.rmtree(cls.secrets, ignore_errors=True)

    def tearDown(self):
        self.assertTrue(self.server.alive(), self.server.log_tail(60))

    def kazoo(self, **kwargs):
        client = KazooClient(hosts=self.zk_addr, timeout=kwargs.pop("timeout", 6), **kwargs)
        client.start(timeout=15)
        self.addCleanup(stop_quietly, client)
        return client

    def process_state(self):
        with open(f"/proc/{self.server.process.pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]

    def wire(self, **kwargs):
        session = zk_wire.Session(self.zk_addr, **kwargs)
        self.addCleanup(session.close)
        return session

    def test_kazoo_reads_and_writes_as_against_zookeeper(self):
        zk = self.kazoo()
        self.assertIn("zookeeper", zk.get_children("/"))
        zk.ensure_path("/port/app")
        first = zk.create("/port/app/n-", b"a", ephemeral=True, sequence=True)
        second = zk.create("/port/app/n-", b"b", ephemeral=True, sequence=True)
        self.assertEqual((first, second), ("/port/app/n-0000000000", "/port/app/n-0000000001"))
        self.assertEqual(sorted(zk.get_children("/port/app")), ["n-0000000000", "n-0000000001"])
        data, stat = zk.get(first)
        self.assertEqual(data, b"a")
        self.assertEqual(stat.ephemeralOwner, zk.client_id[0])
        self.assertEqual(stat.czxid, stat.mzxid)
        zk.set("/port/app", b"v1", version=0)
        with self.assertRaises(BadVersionError):
            zk.set("/port/app", b"v2", version=0)
        self.assertEqual(zk.get("/port/app")[1].version, 1)
        with self.assertRaises(NodeExistsError):
            zk.create("/port/app")
        with self.assertRaises(NotEmptyError):
            zk.delete("/port/app")
        with self.assertRaises(NoNodeError):
            zk.get("/port/none")
        self.assertIsNone(zk.exists("/port/none"))
        # A transaction is all or nothing: the failed one left no /port/t1.
        failed = zk.transaction()
        failed.create("/port/t1", b"1")
        failed.delete("/port/none")
        results = failed.commit()
        self.assertIsInstance(results[0], RolledBackError)
        self.assertIsInstance(results[1], NoNodeError)
        self.assertIsNone(zk.exists("/port/t1"))
        done = zk.transaction()
        done.create("/port/t2", b"1")
        done.set_data("/port/t2", b"2")
        self.assertEqual(done.commit()[0], "/port/t2")
        self.assertEqual(zk.get("/port/t2")[0], b"2")
        zk.sync("/port")
        # The same node through Consul's API: a key with the same bytes.
        entry = self.server.kv_entry("/port/t2")
        self.assertIsNotNone(entry)
        zk.delete("/port/t2")
        self.assertIsNone(self.server.kv_entry("/port/t2"))

    def test_set_acl_counts_the_aversion_and_checks_what_zookeeper_checks(self):
        """setACL (decision 0056 section 7): the list is checked for shape
        and not stored; the node's aversion counts the change, with
        ZooKeeper's version check; data, version and mzxid stay, and no
        watch fires."""
        zk = self.kazoo()
        zk.create("/acl-node", b"v", makepath=True)
        before = zk.get("/acl-node")[1]
        watcher = self.wire()
        self.assertEqual(watcher.call("getData", zk_wire.path_watch("/acl-node", True))[2], 0)
        stat = zk.set_acls("/acl-node", [make_digest_acl("app", "secret", all=True)])
        self.assertEqual(stat.aversion, 1)
        self.assertEqual((stat.version, stat.mzxid), (before.version, before.mzxid))
        stat = zk.set_acls("/acl-node", [OPEN_ACL_UNSAFE[0]], version=1)
        self.assertEqual(stat.aversion, 2)
        with self.assertRaises(BadVersionError):
            zk.set_acls("/acl-node", [OPEN_ACL_UNSAFE[0]], version=1)
        with self.assertRaises(NoNodeError):
            zk.set_acls("/acl-none", [OPEN_ACL_UNSAFE[0]])
        self.assertEqual(zk.get("/acl-node")[1].aversion, 2)
        self.assertEqual(zk.get("/")[1].aversion, 0)
        self.assertEqual(zk.set_acls("/", [OPEN_ACL_UNSAFE[0]]).aversion, 1)
        # Frames: an empty list and an unknown scheme INVALIDACL, a bad path
        # BADARGUMENTS, /zookeeper BADARGUMENTS; none changes the aversion.
        session = self.wire()
        for path, acls, code in (("/acl-node", [], INVALIDACL),
                                 ("/acl-node", [(31, "nope", "x")], INVALIDACL),
                                 ("/acl-node", [(31, "auth", "")], INVALIDACL),
                                 ("acl-node", zk_wire.OPEN_ACL, BADARGUMENTS),
                                 ("/zookeeper/config", zk_wire.OPEN_ACL, BADARGUMENTS)):
            body = zk_wire.ustring(path) + zk_wire.acl_list(acls) + struct.pack(">i", -1)
            self.assertEqual(session.call("setACL", body)[2], code, (path, acls))
        self.assertEqual(zk.get("/acl-node")[1].aversion, 2)
        # No watch fired: an event would come before this answer.
        xid, _, err, _ = watcher.call("exists", zk_wire.path_watch("/acl-node"))
        self.assertEqual((xid, err), (watcher.xid, 0))

    def test_ephemerals_go_with_the_session_that_closed(self):
        owner = self.kazoo()
        watcher = self.kazoo()
        owner.ensure_path("/port/eph")
        owner.create("/port/eph/held", b"x", ephemeral=True)
        self.assertIsNotNone(watcher.exists("/port/eph/held"))
        owner.stop()
        poll_until(lambda: watcher.exists("/port/eph/held") is None, timeout=10,
                   message="the ephemeral gone with its closed session")

    def test_a_session_that_stops_talking_ends_after_its_timeout(self):
        silent = self.wire(timeout_ms=1000)
        self.assertEqual(silent.timeout_ms, 2000)  # raised to -zk-session-timeout-min
        xid = silent.send("create", zk_wire.create_body("/port-silent", b"", flags=1))
        reply = silent.reply()
        self.assertEqual((reply[0], reply[2]), (xid, 0))
        observer = self.kazoo()
        self.assertIsNotNone(observer.exists("/port-silent"))
        # No ping, no request: the leader ends the session once its 2 s
        # passed since the last renewal, and its ephemeral with it.
        poll_until(lambda: observer.exists("/port-silent") is None, timeout=20,
                   message="the silent session's ephemeral deleted at its timeout")
        self.assertTrue(silent.at_eof(), "the ended session's connection closed")

    def test_a_connection_that_opens_no_session_in_time_is_closed(self):
        host, port = self.zk_addr.rsplit(":", 1)
        silent = socket.create_connection((host, int(port)), timeout=10)
        half = socket.create_connection((host, int(port)), timeout=10)
        self.addCleanup(silent.close)
        self.addCleanup(half.close)
        half.sendall(zk_wire.frame(zk_wire.connect_request())[:10])  # a frame begun
        started = time.monotonic()
        for sock in (silent, half):
            sock.settimeout(10)
            self.assertEqual(sock.recv(1), b"", "closed, nothing answered")
        # The test's handshake time is 3 s (tenure's own 10 s): closed by it,
        # not at once for another reason, and well before 10 s.
        elapsed = time.monotonic() - started
        self.assertGreater(elapsed, 2.5)
        self.assertLess(elapsed, 8)
        self.assertEqual(self.wire().call("ping")[2], 0, "the server still serves")

    def test_timeouts_are_clamped_as_zookeeper_clamps_them(self):
        self.assertEqual(self.wire(timeout_ms=10_000_000).timeout_ms, 30000)
        self.assertEqual(self.wire(timeout_ms=7000).timeout_ms, 7000)

    def test_a_session_reopens_with_its_password_and_not_without(self):
        first = self.wire(timeout_ms=6000)
        self.assertEqual(len(first.password), 16)
        again = self.wire(session_id=first.session_id, password=first.password)
        self.assertEqual(again.session_id, first.session_id)
        self.assertEqual(again.timeout_ms, 6000)
        self.assertTrue(first.at_eof(), "the session's older connection closed")
        self.assertEqual(again.call("ping")[2], 0)
        wrong = self.wire(session_id=first.session_id, password=b"\1" * 16)
        self.assertEqual(wrong.connect_answer[:16], struct.pack(">iiq", 0, 0, 0))
        self.assertEqual(wrong.password, b"\0" * 16)
        self.assertTrue(wrong.at_eof())
        unknown = self.wire(session_id=12345, password=first.password)
        self.assertEqual(unknown.connect_answer[:16], struct.pack(">iiq", 0, 0, 0))
        self.assertTrue(unknown.at_eof())
        # The wrong password changed nothing: the right one still reopens.
        self.assertEqual(self.wire(session_id=first.session_id,
                                   password=first.password).session_id, first.session_id)
        closing = self.wire(session_id=first.session_id, password=first.password)
        self.assertEqual(closing.call("close")[2], 0)
        self.assertTrue(closing.at_eof())
        ended = self.wire(session_id=first.session_id, password=first.password)
        self.assertEqual(ended.timeout_ms, 0, "a closed session cannot be reopened")

    def test_answers_come_in_request_order_and_reads_see_earlier_writes(self):
        session = self.wire()
        requests = [("create", zk_wire.create_body("/port-order", b"one")),
                    ("getData", zk_wire.path_watch("/port-order")),
                    ("setData", zk_wire.set_data_body("/port-order", b"two")),
                    ("getData", zk_wire.path_watch("/port-order")),
                    ("ping", b""),
                    ("delete", zk_wire.path_version("/port-order")),
                    ("exists", zk_wire.path_watch("/port-order"))]
        payload = b""
        for xid, (op, body) in enumerate(requests, start=1):
            payload += zk_wire.frame(struct.pack(">ii", xid, zk_wire.OP[op]) + body)
        session.sock.sendall(payload)  # all of them before any answer
        replies = [session.reply() for _ in requests]
        self.assertEqual([r[0] for r in replies], [1, 2, 3, 4, -2, 6, 7])
        self.assertEqual([r[2] for r in replies], [0, 0, 0, 0, 0, 0, NONODE])
        self.assertEqual(zk_wire.read_ustring(replies[1][3])[0], b"one")
        self.assertEqual(zk_wire.read_ustring(replies[3][3])[0], b"two")
        zxids = [r[1] for r in replies]
        self.assertEqual(zxids, sorted(zxids), "zxids only grow")

    def test_the_clients_end_of_stream_is_seen_behind_a_request_and_after_an_answer(self):
        # A connection stops reading after a read shorter than its buffer
        # (zk/connection_io.cc): the client's end of the stream must reach
        # it all the same, whether it came with the last request or after
        # the answer. Seen, the connection closes at once (well within the
        # 6 s session timeout, after which the server would close it anyway).
        session = self.wire()
        # The server stopped while the request and the end of the stream both
        # arrive, so that one readiness report carries both (the end's edge
        # spent with it): only that report tells the short read did not drain.
        self.server.process.send_signal(signal.SIGSTOP)
        try:
            poll_until(lambda: self.process_state() == "T", timeout=5.0)  # stopped now
            xid = session.send("exists", zk_wire.path_watch("/"))
            session.sock.shutdown(socket.SHUT_WR)
        finally:
            self.server.process.send_signal(signal.SIGCONT)
        reply = session.reply()
        self.assertEqual((reply[0], reply[2]), (xid, 0))
        self.assertTrue(session.at_eof(timeout=3.0))
        later = self.wire()
        self.assertEqual(later.call("ping")[2], 0)
        later.sock.shutdown(socket.SHUT_WR)
        self.assertTrue(later.at_eof(timeout=3.0))

    def test_bad_requests_get_zookeepers_codes_and_change_nothing(self):
        session = self.wire()
        before = session.call("getChildren", zk_wire.path_watch("/"))
        cases = [(zk_wire.create_body("/port-bad", flags=7), BADARGUMENTS),
                 (zk_wire.create_body("/port-bad", flags=5), UNIMPLEMENTED),
                 (zk_wire.create_body("no-slash"), BADARGUMENTS),
                 (zk_wire.create_body("/port-bad", acls=[]), INVALIDACL),
                 (zk_wire.create_body("/port-bad", acls=[(31, "world", "someone")]), INVALIDACL),
                 (zk_wire.create_body("/port-bad/"), NONODE),
                 (zk_wire.create_body("/a//b"), NONODE),
                 (zk_wire.create_body("/" + "p" * 4096), BADARGUMENTS)]
        for body, code in cases:
            with self.subTest(code=code, body=body[:40]):
                self.assertEqual(session.call("create", body)[2], code)
        self.assertEqual(session.call("getChildren", zk_wire.path_watch("/"))[3], before[3])
        self.assertEqual(session.call("delete", zk_wire.path_version("/zookeeper"))[2],
                         BADARGUMENTS)
        # An op code ZooKeeper does not define: UNIMPLEMENTED with zxid -1, then the end.
        xid = session.send(999)
        self.assertEqual(session.reply()[:3], (xid, -1, UNIMPLEMENTED))
        self.assertTrue(session.at_eof())

    def test_broken_frames_end_the_connection_unanswered(self):
        streams = {"a length of 2 GiB": struct.pack(">I", 0x7FFFFFFF),
                   "a length past jute.maxbuffer": struct.pack(">i", 0x100000),
                   "a negative length": struct.pack(">i", -5),
                   "garbage": b"abcd" * 8,
                   "a ConnectRequest cut short": zk_wire.frame(b"\0\0\0\0\0")}
        host, port = self.zk_addr.rsplit(":", 1)
        for name, data in streams.items():
            with self.subTest(name), socket.create_connection((host, int(port)),
                                                              timeout=10) as sock:
                sock.sendall(data)
                self.assertEqual(sock.recv(100), b"", "closed with no answer")
        ahead = self.wire(last_zxid=10 ** 15)
        self.assertIsNone(ahead.connect_answer, "a client ahead of the server is refused")
        session = self.wire()
        session.sock.sendall(zk_wire.frame(b"\0\0\0"))  # shorter than a request header
        self.assertTrue(session.at_eof())
        self.assertEqual(self.wire().call("ping")[2], 0, "the server still serves")

    def test_four_letter_words(self):
        self.assertEqual(zk_wire.four_letter(self.zk_addr, "ruok"), "imok")
        srvr = zk_wire.four_letter(self.zk_addr, "srvr")
        self.assertIn("Mode: standalone\n", srvr)
        self.assertRegex(srvr, r"Zxid: 0x[0-9a-f]+\n")
        mntr = zk_wire.four_letter(self.zk_addr, "mntr")
        self.assertTrue(mntr.startswith("zk_version\t"), mntr)
        self.assertIn("zk_server_state\tstandalone\n", mntr)
        self.assertEqual(zk_wire.four_letter(self.zk_addr, "stat"),
                         "stat is not executed because it is not in the whitelist.\n")

    def test_a_client_that_never_reads_its_answers_holds_a_bounded_buffer(self):
        writer = self.wire()
        big = b"z" * (500 * 1024)
        self.assertEqual(writer.call("create", zk_wire.create_body("/port-big", big))[2], 0)
        before = rss_mib(self.server.process.pid)
        hog = self.wire()
        hog.sock.setblocking(False)
        sent, request = 0, zk_wire.frame(struct.pack(">ii", 1, 4) + zk_wire.path_watch("/port-big"))
        deadline = time.monotonic() + 10
        # 400 reads of 500 KiB (200 MB of answers) never read by the client.
        while sent < 400 and time.monotonic() < deadline:
            try:
                hog.sock.send(request)
                sent += 1
            except BlockingIOError:
                time.sleep(0.05)
        other = self.wire()
        self.assertEqual(other.call("ping")[2], 0, "other clients are served meanwhile")
        grown = rss_mib(self.server.process.pid) - before
        self.assertLess(grown, 64, f"the server grew {grown} MiB for a client that never reads")

    def test_a_writes_events_come_before_its_answer(self):
        session = self.wire()
        self.assertEqual(session.call("exists", zk_wire.path_watch("/port-ev", True))[2], NONODE)
        self.assertEqual(session.call("getChildren", zk_wire.path_watch("/", True))[2], 0)
        xid = session.send("create", zk_wire.create_body("/port-ev", b"1"))
        first, second, third = session.reply(), session.reply(), session.reply()
        self.assertEqual({event_of(first), event_of(second)},
                         {(NODE_CREATED, "/port-ev"), (NODE_CHILDREN_CHANGED, "/")})
        self.assertEqual(third[:3:2], (xid, 0), "the create's answer after its events")
        # One-shot: a second change fires nothing until a watch is set again.
        self.assertEqual(session.call("setData", zk_wire.set_data_body("/port-ev", b"2"))[2], 0)
        self.assertEqual(session.call("getData", zk_wire.path_watch("/port-ev", True))[2], 0)
        other = self.wire()
        self.assertEqual(other.call("delete", zk_wire.path_version("/port-ev"))[2], 0)
        self.assertEqual(event_of(session.reply()), (NODE_DELETED, "/port-ev"))

    def test_another_apis_writes_fire_watches_too(self):
        session = self.wire()
        self.assertEqual(session.call("exists", zk_wire.path_watch("/port-consul", True))[2],
                         NONODE)
        self.assertEqual(self.server.request("PUT", "/v1/kv//port-consul", b"c").status, 200)
        self.assertEqual(event_of(session.reply()), (NODE_CREATED, "/port-consul"))
        self.assertEqual(session.call("getData", zk_wire.path_watch("/port-consul", True))[2], 0)
        self.assertEqual(self.server.request("DELETE", "/v1/kv//port-consul").status, 200)
        self.assertEqual(event_of(session.reply()), (NODE_DELETED, "/port-consul"))

    def test_set_watches_on_reconnect_fires_what_the_client_missed(self):
        first = self.wire()
        self.assertEqual(first.call("create", zk_wire.create_body("/port-sw", b"1"))[2], 0)
        seen = first.call("exists", zk_wire.path_watch("/port-sw"))[1]
        self.assertEqual(first.call("setData", zk_wire.set_data_body("/port-sw", b"2"))[2], 0)
        again = self.wire(session_id=first.session_id, password=first.password)
        body = (struct.pack(">q", seen) + struct.pack(">i", 1) + zk_wire.ustring("/port-sw")
                + struct.pack(">i", 1) + zk_wire.ustring("/port-sw-none")
                + struct.pack(">i", 1) + zk_wire.ustring("/"))
        again.send(101, body, xid=-8)
        event, answer = again.reply(), again.reply()
        self.assertEqual(event_of(event), (NODE_DATA_CHANGED, "/port-sw"))
        self.assertEqual((answer[0], answer[2]), (-8, 0))
        # The exist watch and the child watch were set: a create fires both.
        xid = again.send("create", zk_wire.create_body("/port-sw-none"))
        replies = [again.reply() for _ in range(3)]
        self.assertEqual({event_of(r) for r in replies[:2]},
                         {(NODE_CREATED, "/port-sw-none"), (NODE_CHILDREN_CHANGED, "/")})
        self.assertEqual(replies[2][0], xid)

    def test_check_and_remove_watches(self):
        session = self.wire()
        session.call("create", zk_wire.create_body("/port-rw"))
        self.assertEqual(session.call("getData", zk_wire.path_watch("/port-rw", True))[2], 0)
        check = zk_wire.ustring("/port-rw") + struct.pack(">i", 2)
        children = zk_wire.ustring("/port-rw") + struct.pack(">i", 1)
        self.assertEqual(session.call(17, check)[2], 0)
        self.assertEqual(session.call(17, children)[2], NOWATCHER)
        self.assertEqual(session.call(18, check)[2], 0)
        self.assertEqual(session.call(18, check)[2], NOWATCHER)
        self.assertEqual(session.call(17, zk_wire.ustring("/port-rw") + struct.pack(">i", 7))[2],
                         MARSHALLINGERROR)
        # Removed: a change fires nothing; the next answer is the ping's.
        self.wire().call("setData", zk_wire.set_data_body("/port-rw", b"x"))
        self.assertEqual(session.call("ping")[0], -2)

    def test_persistent_and_recursive_watches_stay_and_fire_once_per_event(self):
        session, writer = self.wire(), self.wire()

        def add_watch(path, mode):
            return session.call(106, zk_wire.ustring(path) + struct.pack(">i", mode))

        def events_then_answer(op, body):
            """The events a write of `writer` fires at `session`."""
            self.assertEqual(writer.call(op, body)[2], 0)
            marker = session.send("exists", zk_wire.path_watch("/"))  # after the events
            events = []
            while True:
                reply = session.reply()
                if reply[0] == marker:
                    return events
                events.append(event_of(reply))

        answer = add_watch("/port-pw", 0)  # persistent, before the node exists
        self.assertEqual(answer[2], 0)
        self.assertEqual(answer[3], struct.pack(">i", 0), "ZooKeeper's ErrorResponse of 0")
        self.assertEqual(add_watch("/port-rec", 1)[2], 0)  # persistent recursive
        self.assertEqual(events_then_answer("create", zk_wire.create_body("/port-pw")),
                         [(NODE_CREATED, "/port-pw")])
        self.assertEqual(events_then_answer("create", zk_wire.create_body("/port-pw/c")),
                         [(NODE_CHILDREN_CHANGED, "/port-pw")])
        self.assertEqual(events_then_answer("setData", zk_wire.set_data_body("/port-pw", b"1")),
                         [(NODE_DATA_CHANGED, "/port-pw")])
        self.assertEqual(events_then_answer("delete", zk_wire.path_version("/port-pw/c")),
                         [(NODE_CHILDREN_CHANGED, "/port-pw")])
        # A one-shot watch beside the persistent one: still one event.
        self.assertEqual(session.call("getData", zk_wire.path_watch("/port-pw", True))[2], 0)
        self.assertEqual(events_then_answer("delete", zk_wire.path_version("/port-pw")),
                         [(NODE_DELETED, "/port-pw")])
        self.assertEqual(events_then_answer("create", zk_wire.create_body("/port-pw")),
                         [(NODE_CREATED, "/port-pw")], "kept after the delete")
        # Recursive: every data event at or below, no child events.
        self.assertEqual(events_then_answer("create", zk_wire.create_body("/port-rec")),
                         [(NODE_CREATED, "/port-rec")])
        self.assertEqual(events_then_answer("create", zk_wire.create_body("/port-rec/a")),
                         [(NODE_CREATED, "/port-rec/a")])
        self.assertEqual(events_then_answer("setData",
                                            zk_wire.set_data_body("/port-rec/a", b"2")),
                         [(NODE_DATA_CHANGED, "/port-rec/a")])
        self.assertEqual(events_then_answer("create", zk_wire.create_body("/port-recx")), [])
        # checkWatches and removeWatches by type: 4 persistent, 5 recursive,
        # 3 any kind; a mode addWatch does not know is MARSHALLINGERROR, a
        # relative path BADARGUMENTS.
        kind = lambda path, t: zk_wire.ustring(path) + struct.pack(">i", t)  # noqa: E731
        self.assertEqual(session.call(17, kind("/port-pw", 4))[2], 0)
        self.assertEqual(session.call(17, kind("/port-pw", 5))[2], NOWATCHER)
        self.assertEqual(session.call(17, kind("/port-rec", 5))[2], 0)
        self.assertEqual(session.call(18, kind("/port-rec", 5))[2], 0)
        self.assertEqual(events_then_answer("delete", zk_wire.path_version("/port-rec/a")), [])
        self.assertEqual(session.call(18, kind("/port-pw", 3))[2], 0)
        self.assertEqual(session.call(18, kind("/port-pw", 4))[2], NOWATCHER)
        self.assertEqual(add_watch("/port-pw", 2)[2], MARSHALLINGERROR)
        self.assertEqual(add_watch("port-pw", 0)[2], BADARGUMENTS)
        self.assertEqual(events_then_answer("setData", zk_wire.set_data_body("/port-pw", b"3")),
                         [])
        # setWatches2 on reconnect sets persistent watches again.
        again = self.wire(session_id=session.session_id, password=session.password)
        empty = struct.pack(">i", 0)
        body = (struct.pack(">q", 0) + empty * 3 + struct.pack(">i", 1)
                + zk_wire.ustring("/port-pw") + struct.pack(">i", 1) + zk_wire.ustring("/port-rec"))
        again.send(105, body, xid=-8)
        self.assertEqual(again.reply()[:3:2], (-8, 0))
        session = again
        self.assertEqual(events_then_answer("setData", zk_wire.set_data_body("/port-pw", b"4")),
                         [(NODE_DATA_CHANGED, "/port-pw")])
        self.assertEqual(events_then_answer("create", zk_wire.create_body("/port-rec/z")),
                         [(NODE_CREATED, "/port-rec/z")])

    def test_a_restore_fires_one_shot_watches_and_ends_connections_with_persistent_ones(self):
        one_shot, persistent = self.wire(), self.wire()
        self.assertEqual(one_shot.call("create", zk_wire.create_body("/port-restore", b"1"))[2], 0)
        operator = {"X-Consul-Token": self.operator_token}
        snapshot = self.server.request("GET", "/v1/snapshot", headers=operator, timeout=30)
        self.assertEqual(snapshot.status, 200, snapshot.text)
        self.assertEqual(one_shot.call("setData",
                                       zk_wire.set_data_body("/port-restore", b"2"))[2], 0)
        self.assertEqual(one_shot.call("getData", zk_wire.path_watch("/port-restore", True))[2], 0)
        self.assertEqual(persistent.call(106, zk_wire.ustring("/") + struct.pack(">i", 1))[2], 0)
        resp = self.server.request("PUT", "/v1/snapshot", snapshot.body, headers=operator,
                                   timeout=30)
        self.assertEqual(resp.status, 200, resp.text)
        self.assertEqual(event_of(one_shot.reply()), (NODE_DATA_CHANGED, "/port-restore"))
        # No event could say what changed below "/": the client reconnects
        # and reads again.
        self.assertTrue(persistent.at_eof(), "a connection with a recursive watch ended")

    def test_a_recursive_watch_hears_no_deletes_of_keys_no_client_saw_as_nodes(self):
        session = self.wire()
        for path in ("/port-hidden", "/port-hidden/a", "/port-hidden/a/b"):
            self.assertEqual(session.call("create", zk_wire.create_body(path))[2], 0)
        self.assertEqual(session.call(106, zk_wire.ustring("/") + struct.pack(">i", 1))[2], 0)

        def events_after(method, path):
            self.assertEqual(self.server.request(method, path).status, 200)
            session.send("ping", xid=-2)  # answered after the events before it
            seen = []
            while True:
                reply = session.reply()
                if reply[0] == -2:
                    return seen
                seen.append(event_of(reply))
        # Consul deletes the top key alone: its node goes, and what was
        # below it is no node any more (its parent is missing).
        self.assertEqual(events_after("DELETE", "/v1/kv//port-hidden"),
                         [(NODE_DELETED, "/port-hidden")])
        # Those keys going now is no node's delete.
        self.assertEqual(events_after("DELETE", "/v1/kv//port-hidden/?recurse"), [])

    def test_one_connection_holds_at_most_100000_watches(self):
        session = self.wire()
        before = rss_mib(self.server.process.pid)
        requests = b"".join(
            zk_wire.frame(struct.pack(">ii", i + 1, 3) + zk_wire.path_watch(f"/cap/{i}", True))
            for i in range(100_001))
        answers = []

        def read_all():
            while True:
                reply = session.reply()
                if reply is None:
                    return
                answers.append(reply[2])
        reader = threading.Thread(target=read_all)
        reader.start()
        session.sock.settimeout(60)
        try:
            session.sock.sendall(requests)
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed while the last requests were on their way
        reader.join(timeout=60)
        self.assertFalse(reader.is_alive())
        self.assertEqual(len(answers), 100_000, "the watch past the limit closed it")
        self.assertEqual(set(answers), {NONODE})
        grown = rss_mib(self.server.process.pid) - before
        print(f"\n100,000 watches on one connection: the server grew {grown:.0f} MiB")
        self.assertEqual(self.wire().call("ping")[2], 0, "the server still serves")

    def test_the_leader_deletes_containers_that_had_children_and_have_none(self):
        session = self.wire()
        for path in ("/port-c-never", "/port-c-emptied", "/port-c-full"):
            self.assertEqual(session.call(19, zk_wire.create_body(path, flags=4))[2], 0)
        for path in ("/port-c-emptied/x", "/port-c-full/x"):
            self.assertEqual(session.call("create", zk_wire.create_body(path))[2], 0)
        self.assertEqual(session.call("delete", zk_wire.path_version("/port-c-emptied/x"))[2], 0)
        poll_until(lambda: session.call("exists", zk_wire.path_watch("/port-c-emptied"))[2]
                   == NONODE, timeout=15, message="the emptied container deleted")
        # The sweep that took it saw these two too: one never had a child,
        # the other has one.
        self.assertEqual(session.call("exists", zk_wire.path_watch("/port-c-never"))[2], 0)
        self.assertEqual(session.call("exists", zk_wire.path_watch("/port-c-full"))[2], 0)

    def test_metrics_count_requests_by_op_and_code(self):
        session = self.wire()
        session.call("getData", zk_wire.path_watch("/port-metric-none", True))
        session.call("exists", zk_wire.path_watch("/port-metric-none", True))
        before = self.server.metric('tenure_zk_requests_total{op="getData",code="NONODE"}')
        session.call("getData", zk_wire.path_watch("/port-metric-none"))
        self.assertEqual(
            self.server.metric('tenure_zk_requests_total{op="getData",code="NONODE"}'),
            before + 1)
        self.assertGreaterEqual(self.server.metric("tenure_zk_connections"), 1)
        self.assertGreaterEqual(self.server.metric("tenure_zk_watches"), 1)

    def test_an_answer_past_jute_maxbuffer_ends_the_connection(self):
        # 24,000 children of 40-byte names: getChildren's answer is past
        # 1 MiB, which ZooKeeper's clients refuse; the server closes instead.
        session = self.wire()
        self.assertEqual(session.call("create", zk_wire.create_body("/port-wide"))[2], 0)
        for batch in range(24):
            ops = [("create", zk_wire.create_body(f"/port-wide/{batch:04}-{i:04}-" + "n" * 30))
                   for i in range(1000)]
            self.assertEqual(session.call("multi", zk_wire.multi_body(ops))[2], 0)
        self.assertEqual(session.call("exists", zk_wire.path_watch("/port-wide"))[2], 0)
        session.send("getChildren", zk_wire.path_watch("/port-wide"))
        self.assertTrue(session.at_eof(), "closed with no answer")
        other = self.wire()
        reply = other.call("exists", zk_wire.path_watch("/port-wide"))
        self.assertEqual(zk_wire.read_stat(reply[3])[0]["numChildren"], 24000)


if __name__ == "__main__":
    unittest.main()
