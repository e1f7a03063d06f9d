"""The fair acquire (decision 0027) against real servers.

PUT /v1/kv/<key>?acquire=<session>&queue[&wait=<dur>] parks the request in the
key's FIFO queue; the apply that frees the key hands it to the head and
answers that request alone, with a new fencing token (X-Tenure-Fence).
GET /v1/tenure/queue/<key> lists the waiters, head first. A wait that runs out
answers false with X-Tenure-Queue-Position and the session keeps its place
while its client asks again within the grace (10 s); ?release (or a txn
unlock) by a waiter leaves the queue.

Every wait is a poll with a deadline (tenure_testlib.poll_until) or a join
with a timeout; nothing sleeps and hopes.

Run (from tests/integration):
  TENURE_BIN=<path>/tenure PYTHONPATH=<repo>/tests/lib /usr/bin/python3 -m unittest -v test_fair_acquire
"""

import json
import socket
import threading
import time
import unittest

import consul

from tenure_testlib import (Cluster, DevServer, FairWaiter, SharedServerTestCase, poll_until,
                            queue_of)

PARK_WAIT = FairWaiter.PARK_WAIT
JOIN_S = FairWaiter.JOIN_S


def fence(resp):
    return int(resp.header("X-Tenure-Fence"))


class FairAcquireTest(SharedServerTestCase):
    def session(self, name, lock_delay="0s", server=None):
        return (server or self.server).create_session({"Name": name, "LockDelay": lock_delay})

    def acquire(self, key, session):
        resp = self.server.request("PUT", f"/v1/kv/{key}?acquire={session}", b"held")
        self.assertEqual(resp.status, 200, resp)
        return resp

    def park(self, key, session, wait=PARK_WAIT):
        """Parks a fair acquire and waits until the session shows in the queue."""
        waiter = FairWaiter(self.server.http_addr, key, session, wait)
        poll_until(lambda: session in queue_of(self.server, key) or waiter.answered(),
                   message=f"{session} in the queue of {key}")
        self.assertFalse(waiter.answered(), waiter.response)
        return waiter

    def test_free_key_is_granted_at_once_with_a_token(self):
        s = self.session("free")
        resp = self.server.request("PUT", f"/v1/kv/fair/free?acquire={s}&queue", b"v")
        self.assertEqual((resp.status, resp.json()), (200, True), resp)
        self.assertGreater(fence(resp), 0)
        # Already held: true again, the same token, no queue.
        again = self.server.request("PUT", f"/v1/kv/fair/free?acquire={s}&queue", b"v")
        self.assertEqual((again.status, again.json(), fence(again)), (200, True, fence(resp)))
        self.assertEqual(queue_of(self.server, "fair/free"), [])

    def test_fifo_order_under_contention(self):
        key = "fair/fifo"
        holder = self.session("holder")
        first = fence(self.acquire(key, holder))
        sessions = [self.session(f"client-{i}") for i in range(8)]
        waiters = []
        for i, s in enumerate(sessions):
            waiters.append(self.park(key, s))
            self.assertEqual(queue_of(self.server, key), sessions[:i + 1])
        listed = self.server.get_json(f"/v1/tenure/queue/{key}")
        self.assertEqual([w["SessionName"] for w in listed], [f"client-{i}" for i in range(8)])
        self.assertTrue(all(w["Node"] and w["Since"].endswith("Z") for w in listed), listed)

        current, last_fence = holder, first
        for i, waiter in enumerate(waiters):
            resp = self.server.request("PUT", f"/v1/kv/{key}?release={current}")
            self.assertEqual(resp.json(), True, resp)
            answer = waiter.answer()
            self.assertEqual((answer.status, answer.json()), (200, True), answer)
            self.assertGreater(fence(answer), last_fence)
            last_fence = fence(answer)
            self.assertEqual(self.server.kv_entry(key)["Session"], waiter.session)
            # Only the head was answered: everyone behind it still waits, in order.
            self.assertTrue(all(not w.answered() for w in waiters[i + 1:]))
            self.assertEqual(queue_of(self.server, key), sessions[i + 1:])
            current = waiter.session
        self.server.request("PUT", f"/v1/kv/{key}?release={current}")
        self.assertNotIn("Session", self.server.kv_entry(key))

    def test_wait_runs_out_and_the_session_keeps_its_place(self):
        # Decision 0027's addendum: a wait that runs out answers false with
        # X-Tenure-Queue-Position (1 = next) and nobody leaves the queue; the
        # waiters re-send (here in reverse order) and are granted in their
        # arrival order.
        key = "fair/timeout"
        holder = self.session("holder")
        current, last = holder, fence(self.acquire(key, holder))
        sessions = [self.session(f"impatient-{i}") for i in range(3)]
        for i, s in enumerate(sessions):
            start = time.monotonic()
            waiter = FairWaiter(self.server.http_addr, key, s, wait="300ms")
            resp = waiter.answer()
            self.assertGreaterEqual(waiter.answered_at - start, 0.3 - 0.02)
            self.assertEqual((resp.status, resp.json()), (200, False), resp)
            self.assertEqual(resp.header("X-Tenure-Queue-Position"), str(i + 1), resp)
            self.assertIsNone(resp.header("X-Tenure-Fence"), resp)
            self.assertEqual(queue_of(self.server, key), sessions[:i + 1])
        # Every one asks again with a short wait: each keeps its position.
        for i, s in reversed(list(enumerate(sessions))):
            resp = FairWaiter(self.server.http_addr, key, s, wait="50ms").answer()
            self.assertEqual((resp.status, resp.json()), (200, False), resp)
            self.assertEqual(resp.header("X-Tenure-Queue-Position"), str(i + 1), resp)
        again = {}
        for s in reversed(sessions):
            again[s] = self.park(key, s)
        self.assertEqual(queue_of(self.server, key), sessions)
        for i, s in enumerate(sessions):
            resp = self.server.request("PUT", f"/v1/kv/{key}?release={current}")
            self.assertEqual(resp.json(), True, resp)
            answer = again[s].answer()
            self.assertEqual((answer.status, answer.json()), (200, True), answer)
            self.assertIsNone(answer.header("X-Tenure-Queue-Position"), answer)
            self.assertGreater(fence(answer), last)
            self.assertTrue(all(not again[t].answered() for t in sessions[i + 1:]))
            last, current = fence(answer), s
        self.server.request("PUT", f"/v1/kv/{key}?release={current}")

    def test_waiters_that_stop_asking_leave_and_free_the_queue(self):
        # Decision 0027's third addendum: 100 sessions that queue with
        # wait=1ms and never ask again keep their places for the grace, then
        # leave; one that keeps asking keeps its place throughout.
        key = "fair/abandoned"
        holder = self.session("holder")
        self.acquire(key, holder)
        keeper = self.session("keeper")
        self.assertEqual(FairWaiter(self.server.http_addr, key, keeper, wait="1ms")
                         .answer().header("X-Tenure-Queue-Position"), "1")
        stop = threading.Event()
        asked = []

        def keep_asking():
            while not stop.is_set():
                resp = FairWaiter(self.server.http_addr, key, keeper, wait="500ms").answer()
                asked.append(resp.header("X-Tenure-Queue-Position"))

        thread = threading.Thread(target=keep_asking, daemon=True)
        thread.start()
        self.addCleanup(thread.join, 10)
        self.addCleanup(stop.set)
        gone = [self.session(f"gone-{i}") for i in range(100)]
        started = time.monotonic()
        for i, s in enumerate(gone):
            resp = FairWaiter(self.server.http_addr, key, s, wait="1ms").answer()
            self.assertEqual((resp.status, resp.json()), (200, False), resp)
            self.assertEqual(resp.header("X-Tenure-Queue-Position"), str(i + 2), resp)
        last_asked = time.monotonic()
        self.assertEqual(queue_of(self.server, key), [keeper] + gone)
        poll_until(lambda: queue_of(self.server, key) == [keeper], timeout=30.0,
                   message="the waiters that stopped asking left")
        left = time.monotonic()
        # Not before the grace from each one's answer, not long after the last one's.
        self.assertGreaterEqual(left - started, 10.0 - 0.1)
        self.assertLess(left - last_asked, 10.0 + 5.0)
        stop.set()
        thread.join(10)
        self.assertTrue(asked and all(p == "1" for p in asked), asked)
        # The queue is free for others again: a newcomer waits behind the keeper.
        newcomer = self.session("newcomer")
        resp = FairWaiter(self.server.http_addr, key, newcomer, wait="1ms").answer()
        self.assertEqual(resp.header("X-Tenure-Queue-Position"), "2", resp)

    def test_a_session_waits_in_at_most_sixteen_queues(self):
        holder = self.session("holder")
        many = self.session("many")
        for i in range(17):
            self.acquire(f"fair/bound/{i}", holder)
        for i in range(16):
            resp = FairWaiter(self.server.http_addr, f"fair/bound/{i}", many, wait="1ms").answer()
            self.assertEqual(resp.header("X-Tenure-Queue-Position"), "1", resp)
        resp = FairWaiter(self.server.http_addr, "fair/bound/16", many, wait="1ms").answer()
        self.assertEqual(resp.status, 500, resp)
        self.assertEqual(resp.text, f'session "{many}" already waits in the queues of 16 keys '
                                    '(limit 16)')
        self.assertEqual(queue_of(self.server, "fair/bound/16"), [])
        # Another session still queues there.
        other = self.session("other")
        resp = FairWaiter(self.server.http_addr, "fair/bound/16", other, wait="1ms").answer()
        self.assertEqual(resp.header("X-Tenure-Queue-Position"), "1", resp)

    def test_release_by_a_waiter_leaves_the_queue(self):
        key = "fair/leave"
        holder = self.session("holder")
        self.acquire(key, holder)
        before = self.server.kv_entry(key)
        leaver, stays = self.session("leaver"), self.session("stays")
        w1, w2 = self.park(key, leaver), self.park(key, stays)
        resp = self.server.request("PUT", f"/v1/kv/{key}?release={leaver}", b"ignored")
        self.assertEqual((resp.status, resp.json()), (200, True), resp)
        # Its parked request: false, and no position (it no longer waits).
        answer = w1.answer()
        self.assertEqual((answer.status, answer.json()), (200, False), answer)
        self.assertIsNone(answer.header("X-Tenure-Queue-Position"), answer)
        self.assertEqual(queue_of(self.server, key), [stays])
        self.assertEqual(self.server.kv_entry(key), before)  # the key untouched
        # Neither holder nor waiter now: Consul's false, nothing changes.
        resp = self.server.request("PUT", f"/v1/kv/{key}?release={leaver}")
        self.assertEqual((resp.status, resp.json()), (200, False), resp)
        self.assertEqual(queue_of(self.server, key), [stays])
        self.server.request("PUT", f"/v1/kv/{key}?release={holder}")
        self.assertEqual(w2.answer().json(), True)
        self.assertEqual(self.server.kv_entry(key)["Session"], stays)

    def test_txn_unlock_by_a_waiter_leaves_the_queue(self):
        key = "fair/txnleave"
        holder = self.session("holder")
        self.acquire(key, holder)
        leaver = self.session("leaver")
        w = self.park(key, leaver)
        resp = self.server.request(
            "PUT", "/v1/txn",
            json.dumps([{"KV": {"Verb": "unlock", "Key": key, "Session": leaver}}]).encode())
        self.assertEqual(resp.status, 200, resp)
        self.assertEqual(resp.json()["Results"][0]["KV"]["Session"], holder)
        self.assertEqual(w.answer().json(), False)
        self.assertEqual(queue_of(self.server, key), [])
        self.assertEqual(self.server.kv_entry(key)["Session"], holder)

    def test_hang_up_leaves_the_queue(self):
        key = "fair/hangup"
        holder = self.session("holder")
        self.acquire(key, holder)
        s = self.session("leaves")
        host, port = self.server.http_addr.rsplit(":", 1)
        sock = socket.create_connection((host, int(port)), timeout=10.0)
        sock.sendall(f"PUT /v1/kv/{key}?acquire={s}&queue HTTP/1.1\r\nHost: x\r\n"
                     f"Content-Length: 0\r\n\r\n".encode())
        poll_until(lambda: queue_of(self.server, key) == [s], message="the waiter queued")
        sock.close()
        poll_until(lambda: queue_of(self.server, key) == [], message="the hung-up waiter left")
        self.server.request("PUT", f"/v1/kv/{key}?release={holder}")
        self.assertNotIn("Session", self.server.kv_entry(key))

    def test_hang_up_keeps_the_place_while_another_request_of_the_session_waits(self):
        key = "fair/hangup2"
        holder = self.session("holder")
        self.acquire(key, holder)
        s = self.session("twice")
        host, port = self.server.http_addr.rsplit(":", 1)
        socks = []
        for _ in range(2):
            sock = socket.create_connection((host, int(port)), timeout=10.0)
            sock.sendall(f"PUT /v1/kv/{key}?acquire={s}&queue HTTP/1.1\r\nHost: x\r\n"
                         f"Content-Length: 0\r\n\r\n".encode())
            socks.append(sock)
        poll_until(lambda: queue_of(self.server, key) == [s], message="the waiter queued")
        # A later request of the session, proposed after both, times out
        # after both parked (applies and parking go in log order).
        resp = FairWaiter(self.server.http_addr, key, s, wait="200ms").answer()
        self.assertEqual(resp.header("X-Tenure-Queue-Position"), "1", resp)
        socks[0].close()
        # A hang-up that dequeued would empty the queue within milliseconds
        # (the next step shows how fast it does for the last request): watch
        # it for a bounded second, with nothing else of the session parked.
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            self.assertEqual(queue_of(self.server, key), [s])
        socks[1].close()  # the last parked request: now it leaves
        poll_until(lambda: queue_of(self.server, key) == [], timeout=1.0,
                   message="the waiter left")
        self.server.request("PUT", f"/v1/kv/{key}?release={holder}")

    def test_destroyed_session_leaves_the_queue(self):
        key = "fair/destroyed"
        holder = self.session("holder")
        self.acquire(key, holder)
        doomed, next_one = self.session("doomed"), self.session("next")
        w1, w2 = self.park(key, doomed), self.park(key, next_one)
        self.server.put_json(f"/v1/session/destroy/{doomed}")
        resp = w1.answer()
        self.assertEqual((resp.status, resp.json()), (200, False), resp)
        self.assertEqual(queue_of(self.server, key), [next_one])
        self.server.request("PUT", f"/v1/kv/{key}?release={holder}")
        self.assertEqual(w2.answer().json(), True)

    def test_lock_delay_is_respected_after_the_holder_is_destroyed(self):
        key = "fair/lockdelay"
        holder = self.session("holder", lock_delay="2s")
        self.acquire(key, holder)
        s = self.session("patient")
        waiter = self.park(key, s)
        start = time.monotonic()
        self.server.put_json(f"/v1/session/destroy/{holder}")
        resp = waiter.answer()
        elapsed = waiter.answered_at - start
        self.assertEqual((resp.status, resp.json()), (200, True), resp)
        self.assertGreaterEqual(elapsed, 2.0 - 0.02)
        self.assertLess(elapsed, 2.0 + 1.5)
        self.assertEqual(self.server.kv_entry(key)["Session"], s)

    def test_consul_plain_acquire_is_refused_while_waiters_exist(self):
        key = "fair/consul"
        c = consul.Consul(host="127.0.0.1", port=int(self.server.http_addr.rsplit(":", 1)[1]))
        holder, plain = self.session("holder"), self.session("plain")
        self.assertTrue(c.kv.put(key, "h", acquire=holder))
        w1 = self.park(key, self.session("w1"))
        w2 = self.park(key, self.session("w2"))
        self.assertTrue(c.kv.put(key, None, release=holder))
        self.assertEqual(w1.answer().json(), True)
        self.assertFalse(c.kv.put(key, "p", acquire=plain))  # w2 waits: no jumping the queue
        self.assertTrue(c.kv.put(key, None, release=w1.session))
        self.assertEqual(w2.answer().json(), True)
        self.assertTrue(c.kv.put(key, None, release=w2.session))
        self.assertTrue(c.kv.put(key, "p", acquire=plain))  # nobody waits: Consul's way
        index, entry = c.kv.get(key)
        self.assertEqual((entry["Session"], entry["Value"]), (plain, b"p"))

    def test_bad_inputs_change_nothing(self):
        key = "fair/bad"
        s = self.session("bad")
        cases = [
            ("PUT", f"/v1/kv/{key}?queue", 400, "?queue needs ?acquire=<session>"),
            ("PUT", f"/v1/kv/{key}?release={s}&queue", 400, "?queue needs ?acquire=<session>"),
            ("PUT", f"/v1/kv/{key}?acquire={s}&queue&wait=soon", 400, "Invalid wait time"),
            ("PUT", f"/v1/kv/{key}?acquire={s}&cas=0&queue", 400, "Conflicting flags"),
            ("PUT", f"/v1/kv/{key}?acquire=&queue", 500, "missing session"),
            ("PUT", f"/v1/kv/{key}?acquire=00000000-0000-0000-0000-000000000000&queue", 500,
             "invalid session"),
            ("GET", "/v1/tenure/queue/", 400, "Missing key name"),
        ]
        for method, path, status, text in cases:
            with self.subTest(path=path):
                resp = self.server.request(method, path, b"x")
                self.assertEqual(resp.status, status, resp)
                self.assertIn(text.lower(), resp.text.lower())
        self.assertIsNone(self.server.kv_entry(key))
        self.assertEqual(queue_of(self.server, key), [])

    def test_queue_listing_is_a_blocking_query(self):
        key = "fair/blocking"
        self.acquire(key, self.session("holder"))
        first = self.server.request("GET", f"/v1/tenure/queue/{key}")
        index = first.header("X-Consul-Index")
        s = self.session("joins")
        result = {}

        def block():
            result["resp"] = self.server.request(
                "GET", f"/v1/tenure/queue/{key}?index={index}&wait=30s", timeout=60.0)

        reader = threading.Thread(target=block, daemon=True)
        reader.start()
        waiter = self.park(key, s)
        reader.join(JOIN_S)
        self.assertFalse(reader.is_alive(), "the blocking queue read was not woken")
        self.assertEqual([w["Session"] for w in result["resp"].json()], [s])
        self.assertGreater(int(result["resp"].header("X-Consul-Index")), int(index))
        self.server.put_json(f"/v1/session/destroy/{s}")
        self.assertEqual(waiter.answer().json(), False)


class FairAcquireShutdownTest(unittest.TestCase):
    def test_shutdown_answers_parked_requests(self):
        with DevServer() as server:
            key = "fair/shutdown"
            holder = server.create_session({"Name": "holder", "LockDelay": "0s"})
            self.assertEqual(server.request("PUT", f"/v1/kv/{key}?acquire={holder}").json(), True)
            s = server.create_session({"Name": "waits", "LockDelay": "0s"})
            waiter = FairWaiter(server.http_addr, key, s)
            poll_until(lambda: queue_of(server, key) == [s], message="the waiter queued")
            server.stop()
            resp = waiter.answer()
            self.assertEqual(resp.status, 500, resp)
            self.assertIn("stopped leading", resp.text)


class FairAcquireClusterTest(unittest.TestCase):
    def test_queue_survives_the_leader_killed(self):
        with Cluster(3) as cluster:
            leader = cluster.leader()
            follower = next(m for m in cluster.members if m is not leader)
            key = "fair/failover"
            holder = follower.create_session({"Name": "holder", "LockDelay": "0s"})
            resp = follower.request("PUT", f"/v1/kv/{key}?acquire={holder}", b"h")
            self.assertEqual(resp.json(), True, resp)
            first = fence(resp)
            sessions = [follower.create_session({"Name": f"w{i}", "LockDelay": "0s"})
                        for i in range(3)]
            waiters = []
            for i, s in enumerate(sessions):  # through the follower: forwarded and parked
                waiters.append(FairWaiter(follower.http_addr, key, s))
                poll_until(lambda: queue_of(leader, key) == sessions[:i + 1],
                           message=f"w{i} queued")
            # A client of the follower that hangs up leaves the leader's queue too.
            quitter = follower.create_session({"Name": "quitter", "LockDelay": "0s"})
            host, port = follower.http_addr.rsplit(":", 1)
            sock = socket.create_connection((host, int(port)), timeout=10.0)
            sock.sendall(f"PUT /v1/kv/{key}?acquire={quitter}&queue HTTP/1.1\r\nHost: x\r\n"
                         f"Content-Length: 0\r\n\r\n".encode())
            poll_until(lambda: queue_of(leader, key) == sessions + [quitter],
                       message="the quitter queued")
            sock.close()
            poll_until(lambda: queue_of(leader, key) == sessions,
                       message="the quitter left through the follower")
            leader.kill()
            for waiter in waiters:  # answered 500 (or the forwarding failed): send again
                resp = waiter.answer(timeout=60.0)
                self.assertGreaterEqual(resp.status, 500, resp)
            new_leader = cluster.wait_leader(exclude=leader)
            self.assertEqual(queue_of(new_leader, key, consistent=True), sessions)
            # Re-sent in reverse order: everyone keeps the place it had.
            again = {}
            for s in reversed(sessions):
                again[s] = FairWaiter(new_leader.http_addr, key, s)
            poll_until(lambda: all(not w.answered() for w in again.values()) and
                       queue_of(new_leader, key) == sessions, timeout=5.0,
                       message="the re-sent requests parked")
            current, last = holder, first
            for i, s in enumerate(sessions):
                resp = new_leader.request("PUT", f"/v1/kv/{key}?release={current}")
                self.assertEqual(resp.json(), True, resp)
                answer = again[s].answer()
                self.assertEqual((answer.status, answer.json()), (200, True), answer)
                self.assertGreater(fence(answer), last)
                last, current = fence(answer), s
                self.assertTrue(all(not again[t].answered() for t in sessions[i + 1:]))

            # Leadership moves away from the server holding a parked request:
            # it is answered 500 and keeps its place when sent again.
            x = new_leader.create_session({"Name": "x", "LockDelay": "0s"})
            parked = FairWaiter(new_leader.http_addr, key, x)
            poll_until(lambda: queue_of(new_leader, key) == [x], message="x queued")
            resp = new_leader.request("POST", "/v1/operator/raft/transfer-leader",
                                      headers=cluster.operator_headers())
            self.assertEqual(resp.status, 200, resp)
            answer = parked.answer()
            self.assertEqual(answer.status, 500, answer)
            self.assertIn("stopped leading", answer.text)
            self.assertEqual(answer.header("X-Tenure-Queue-Position"), "1", answer)
            third = cluster.wait_leader(exclude=new_leader)
            self.assertEqual(queue_of(third, key, consistent=True), [x])
            resent = FairWaiter(third.http_addr, key, x)
            resp = third.request("PUT", f"/v1/kv/{key}?release={current}")
            self.assertEqual(resp.json(), True, resp)
            self.assertEqual(resent.answer().json(), True)
            self.assertGreater(fence(resent.response), last)


if __name__ == "__main__":
    unittest.main()
