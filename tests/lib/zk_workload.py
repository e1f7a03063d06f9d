"""The fault tier's clients speaking ZooKeeper's client protocol
(docs/checkers.md): the same FaultRun, nemesis and checkers as
cluster_workload.py, with every client call made frame by frame
(tests/lib/zk_wire.py) on the ZooKeeper port of whichever member serves it,
so the histories check the ZooKeeper surface: sessions that move between
servers, sync, getData, setData with a version, ephemeral sequential nodes,
watches and multi.

The raft leader serves ZooKeeper's clients and a follower splices each
connection to it, or closes it unanswered while it knows no leader
(docs/zookeeper-compat.md, "Followers"), so a client connects to the
members in a random order until one answers, so that its calls go through
every member over a run, and moves on when its connection ends, with its
session id and password, as ZooKeeper's clients move along their connect
string.

  - register clients: setData of a unique value, a linearizable read as
    sync then getData on the same connection (answers keep request order
    and a deposed leader answers neither), and CAS as setData with the
    version that read returned. Values are unique and a register node is
    never deleted, so "its version is still v" is "its value is still the
    value read at v": recorded as a cas [old, new] for linearizability.py,
    as etcd_workload.py records its mod_revision compare. A node holds no
    data until its first write: empty data reads as None, the register's
    initial value.
  - lock clients: a ZooKeeper session each (kept alive by pings, each an
    acknowledged renewal: a ping is answered only once its renewal passed a
    barrier), the lock taken as kazoo's and Curator's recipe takes it: an
    EPHEMERAL_SEQUENTIAL node under the lock's node, then sync and
    getChildren; the lowest sequence holds the lock, any other node watches
    its predecessor (exists with a watch) and looks again when it fires.
    A node's name starts with a prefix drawn for the attempt, so a create
    whose answer was lost is found again (Curator's protected mode,
    kazoo's uuid prefix). Fenced writes are a multi of check(our node,
    version -1), which fails NONODE once the node went with its session,
    and the create of a unique node under /fenced/<lock>, made on a second
    session of the same client (the storage a lock guards is reached on
    its own connection: a frozen holder's write then reaches the server
    and the check must refuse it, rather than its expired session
    refusing everything). Release is a delete of our node.

The token: lock_checker.py takes a token as the index at which the lock was
granted, and checks that no other grant has a token between a fenced
write's token and the index the write applied at. Under this recipe the
lock is not granted by the entry that creates the node (its czxid: a waiter
queues long before its turn, while the holder still writes) but at the
first index where the node is the lowest child. The token is therefore the
zxid of the getChildren answer that showed our node lowest: a linearizable
read (sync first), answered from the store at that applied index, so the
lock was ours at that index, every earlier holder's node was gone by then,
and every write we make later applies at a higher index. The czxid is kept
in the grant's result for the record (with the czxid as the token, the
checker finds fenced-write-after-newer-grant in every run against a correct
server: the next waiter's czxid lies below the holder's writes).

An answer is "fail" only when the call certainly took no effect: no member
accepted a connection (the request was never sent), the connection was
found closed before the request was sent, or the server answered an error
code (a write refused before its entry, or failed in the tree: an entry
that changes nothing; a CAS's BADVERSION is a refused cas, recorded as a
fail with result False). A request sent and not answered (a timeout, the
connection ended) is "info" (outcome unknown). A lock session's renewal is
"ok" when a ping was answered, "fail" only when the server answered that
the session ended (lock_checker.py reads a failed renewal as the client
learning its session is gone), otherwise "info".
"""

import json
import random
import select
import socket
import struct
import time

import zk_wire
from cluster_workload import OP_TIMEOUT, FaultRun, LockClient, RegisterClient
from tenure_testlib import poll_until

# ZooKeeper's error codes (KeeperException.Code) the workload tells apart.
NONODE, BADVERSION, NODEEXISTS, SESSIONEXPIRED = -101, -103, -110, -112
CODE_NAMES = {0: "OK", -2: "RUNTIMEINCONSISTENCY", -4: "CONNECTIONLOSS", -5: "MARSHALLINGERROR",
              -8: "BADARGUMENTS", NONODE: "NONODE", -102: "NOAUTH", BADVERSION: "BADVERSION",
              NODEEXISTS: "NODEEXISTS", -111: "NOTEMPTY", SESSIONEXPIRED: "SESSIONEXPIRED"}
EPHEMERAL_SEQUENTIAL = 3  # CreateMode's flags: ephemeral 1 | sequential 2
NOTIFICATION_XID, PING_XID = -1, -2

LOCK_SESSION_MS = 4000     # the lock sessions' timeout: the checker's TTL
OTHER_SESSION_MS = 20000   # register and fenced-write sessions: fewer session entries
CONNECT_TIMEOUT = 2.0      # a connect to one member: a stopped one costs this much
# A register client's pause between calls, up to: a call on a kept
# connection takes a few ms, against ~8 for the other APIs' HTTP calls, and
# the linearizability check's time grows with the history, so about their
# rate of calls keeps the test near their ~40 s.
THINK_S = 0.01


def code_name(code):
    return CODE_NAMES.get(code, str(code))


def znode(key):
    """The znode of a workload key ("r/a" is "/r/a")."""
    return "/" + key


def sequence_of(name):
    """The sequence suffix of a sequential node's name (%010d, or a
    negative number past 2^31 - 1)."""
    return int(name.rsplit("-lock-", 1)[1])


def read_children(body):
    (count,) = struct.unpack(">i", body[:4])
    at, names = 4, []
    for _ in range(max(count, 0)):
        name, at = zk_wire.read_ustring(body, at)
        names.append(name.decode())
    return names


def read_data(body):
    """(data bytes, Stat dict) of a getData answer."""
    data, at = zk_wire.read_ustring(body)
    stat, _ = zk_wire.read_stat(body, at)
    return data or b"", stat


def read_multi(body):
    """Each op's code in a multi's answer (0 for the ones that applied)."""
    codes, at = [], 0
    while at + 9 <= len(body):
        kind, done, err = struct.unpack(">i?i", body[at:at + 9])
        at += 9
        if done:
            break
        if kind == -1:  # an ErrorResponse
            (err,) = struct.unpack(">i", body[at:at + 4])
            at += 4
            codes.append(err)
            continue
        codes.append(0)
        if kind in (zk_wire.OP["create"], zk_wire.OP["create2"]):
            _, at = zk_wire.read_ustring(body, at)
        if kind in (zk_wire.OP["create2"], zk_wire.OP["setData"]):
            at += zk_wire.STAT.size
    return codes


class NotSent(Exception):
    """The request was never sent: no member accepted a connection, or the
    connection was found closed before sending. It took no effect."""


class NoAnswer(Exception):
    """The request was sent and no answer came (a timeout, the connection
    ended): it may take effect later, or never."""


class SessionExpired(Exception):
    """A reconnect was answered timeOut 0 / sessionId 0: the session ended
    (and its ephemerals with it)."""


class _Wire(zk_wire.Session):
    """zk_wire.Session whose socket is closed when the connect fails."""

    def __init__(self, address, session_id, password, timeout_ms):
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT)
        try:
            self.xid = 0
            self.sock.sendall(zk_wire.frame(zk_wire.connect_request(session_id, password,
                                                                    timeout_ms)))
            answer = self.connect_answer = self.read_frame()
            if answer is not None:
                _, self.timeout_ms, self.session_id = struct.unpack(">iiq", answer[:16])
                self.password = zk_wire.read_ustring(answer, 16)[0]
        except BaseException:
            self.sock.close()
            raise


class MovingSession:
    """A ZooKeeper session whose connection moves between members: the
    connection is made to the members in a random order (a follower that
    knows no leader closes it unanswered, a killed member refuses it, a
    stopped one lets it time out) and made again, with the session's id and password, once it ended.
    One thread uses it. renew_expired: open a new session when the old one
    ended (the register and fenced-write sessions, which hold nothing);
    otherwise SessionExpired is raised, then and on every later use (a lock
    session, whose nodes went with it: its client makes a new
    MovingSession)."""

    def __init__(self, run, rng, timeout_ms, renew_expired=False):
        self.run_ = run
        self.rng = rng
        self.timeout_ms = timeout_ms
        self.renew_expired = renew_expired
        self.session_id = 0
        self.password = b"\0" * 16
        self.negotiated_ms = None
        self.wire = None
        self.ended = False
        self.epoch = 0    # counts connections: a watch lives as long as its connection
        self.events = []  # (type, path) of the notifications received

    @property
    def connected(self):
        return self.wire is not None

    def drop(self):
        if self.wire is not None:
            self.wire.close()
            self.wire = None

    def forget(self):
        """Leaves the session: a new one is made on the next open, or, for
        a session that does not renew, none ever."""
        self.drop()
        self.session_id, self.password = 0, b"\0" * 16
        self.ended = not self.renew_expired

    def _usable(self):
        """Whether the connection is still open, reading the notifications
        that wait on it (never an answer: every request's is read)."""
        sock = self.wire.sock
        while True:
            try:
                readable, _, _ = select.select([sock], [], [], 0)
                if not readable:
                    return True
                head = sock.recv(1, socket.MSG_PEEK)
            except OSError:
                return False
            if not head:
                return False
            if not self._read_notification(time.monotonic() + OP_TIMEOUT):
                return False

    def _read(self, deadline):
        """The next reply (xid, zxid, err, body), None once the connection ended."""
        self.wire.sock.settimeout(max(0.01, deadline - time.monotonic()))
        return self.wire.reply()

    def _read_notification(self, deadline):
        try:
            reply = self._read(deadline)
        except OSError:
            return False
        if reply is None or reply[0] != NOTIFICATION_XID:
            return False
        self._note(reply)
        return True

    def _note(self, reply):
        kind, _state = struct.unpack(">ii", reply[3][:8])
        path, _ = zk_wire.read_ustring(reply[3], 8)
        self.events.append((kind, path.decode()))

    def open(self):
        """True once connected; False when no member accepted (nothing sent).
        Raises SessionExpired (only without renew_expired)."""
        if self.wire is not None and self._usable():
            return True
        self.drop()
        if self.ended:
            raise SessionExpired()
        members = list(self.run_.cluster.members)
        self.rng.shuffle(members)
        for member in members:
            wire = self._connect(member)
            if wire is None:
                continue
            self.wire = wire
            self.session_id, self.password = wire.session_id, wire.password
            self.negotiated_ms = wire.timeout_ms
            self.epoch += 1
            self.events.clear()  # watches stay with the connection that set them
            return True
        return False

    def _connect(self, member):
        """A connection to `member` serving the session, or None."""
        for _ in range(2):  # a second time with a new session after an ended one
            try:
                wire = _Wire(member.zk_addr, self.session_id, self.password, self.timeout_ms)
            except OSError:
                return None  # refused (killed), or no answer in time (stopped, cut off)
            if wire.connect_answer is None:
                wire.close()
                return None  # a follower, or a server not serving yet
            if wire.timeout_ms > 0:
                if self.session_id and wire.session_id == self.session_id:
                    self.run_.reconnects += 1
                return wire
            wire.close()
            self.run_.sessions_ended += 1
            self.forget()
            if not self.renew_expired:
                raise SessionExpired()
        return None

    def request(self, *ops):
        """Sends (op, body) pairs in one go; their (zxid, err, body)
        answers, in order. Raises NotSent, NoAnswer, SessionExpired."""
        if not self.open():
            raise NotSent("no member serves")
        deadline = time.monotonic() + OP_TIMEOUT
        try:
            xids = []
            for op, body in ops:
                xids.append(self.wire.send(op, body))
            answers = [self._answer(xid, deadline)[1:] for xid in xids]
        except OSError as e:
            self.drop()
            raise NoAnswer(f"{e.__class__.__name__}: {e}") from None
        except NoAnswer:
            self.drop()
            raise
        if any(err == SESSIONEXPIRED for _, err, _ in answers):
            self.drop()  # the next open learns it from the reconnect's answer
        return answers

    def _answer(self, xid, deadline):
        """The reply to `xid` (answers come in request order), noting the
        notifications before it. Raises NoAnswer if another comes first or
        the connection ends."""
        while True:
            reply = self._read(deadline)
            if reply is None:
                raise NoAnswer("connection ended")
            if reply[0] == NOTIFICATION_XID:
                self._note(reply)
                continue
            if reply[0] != xid:
                raise NoAnswer(f"answer xid {reply[0]} where {xid} was due")
            return reply

    def ping(self):
        """A ping, answered once its renewal was acknowledged. Raises as request."""
        if not self.open():
            raise NotSent("no member serves")
        deadline = time.monotonic() + OP_TIMEOUT
        try:
            self.wire.send("ping", xid=PING_XID)
            self._answer(PING_XID, deadline)
        except OSError as e:
            self.drop()
            raise NoAnswer(f"{e.__class__.__name__}: {e}") from None
        except NoAnswer:
            self.drop()
            raise

    def wait_event(self, seconds):
        """True once a notification arrived (within `seconds`). Raises
        NoAnswer when the connection ends (its watches end with it)."""
        if self.events:
            return True
        if self.wire is None:
            raise NoAnswer("not connected")
        readable, _, _ = select.select([self.wire.sock], [], [], max(0.0, seconds))
        if not readable:
            return False
        if not self._read_notification(time.monotonic() + OP_TIMEOUT):
            self.drop()
            raise NoAnswer("connection ended")
        return True


class ZkRegisterClient(RegisterClient):
    def __init__(self, run, number, keys):
        super().__init__(run, number, keys)
        self.zk = MovingSession(run, self.rng, OTHER_SESSION_MS, renew_expired=True)

    def send(self, op, *requests):
        """The answers of `requests`, or None after recording the op as a
        fail (never sent) or info (no answer)."""
        rec = self.run_.rec
        try:
            return self.zk.request(*requests)
        except NotSent as e:
            rec.fail(op, error=str(e))
        except NoAnswer as e:
            rec.info(op, error=str(e))
            self.generation += 1
        time.sleep(0.05)
        return None

    def read(self, key):
        """(value, version), or ("?", None) when the read did not complete."""
        rec = self.run_.rec
        path = znode(key)
        op = rec.invoke(self.process, "read", key=key)
        answers = self.send(op, ("sync", zk_wire.ustring(path)),
                            ("getData", zk_wire.path_watch(path)))
        if answers is None:
            return "?", None
        (_, synced, _), (_, err, body) = answers
        if synced or err:
            rec.fail(op, error=code_name(synced or err))  # a read changes nothing
            return "?", None
        data, stat = read_data(body)
        value = data.decode() or None
        rec.ok(op, result=value)
        return value, stat["version"]

    def step(self):
        time.sleep(self.rng.uniform(0, THINK_S))
        rec = self.run_.rec
        key = self.rng.choice(self.keys)
        kind = self.rng.random()
        self.seq += 1
        value = f"{self.number}-{self.seq}"
        if kind < 0.4:
            op = rec.invoke(self.process, "write", key=key, args=value)
            answers = self.send(op, ("setData", zk_wire.set_data_body(znode(key), value.encode())))
            if answers is None:
                return
            err = answers[0][1]
            if err:
                rec.fail(op, error=code_name(err))
            else:
                rec.ok(op)
                self.run_.acked_writes += 1
        elif kind < 0.75:
            self.read(key)
        else:
            old, version = self.read(key)
            if version is None:
                return
            op = rec.invoke(self.process, "cas", key=key, args=[old, value])
            answers = self.send(op, ("setData", zk_wire.set_data_body(znode(key), value.encode(),
                                                                      version)))
            if answers is None:
                return
            err = answers[0][1]
            if err == 0:
                rec.ok(op, result=True)
            elif err == BADVERSION:
                rec.fail(op, result=False)
            else:
                rec.fail(op, error=code_name(err))


class ZkLockClient(LockClient):
    """One candidate on a ZooKeeper session: the sequential-node recipe,
    fenced multis on a second session, pings, a delete to release. It stops
    acting as holder as soon as it cannot prove its session alive (its last
    answered ping was sent more than TTL/2 ago) and records "lost", then
    leaves the session (closeSession, or letting it expire)."""

    def __init__(self, run, number, lock_key, ttl_s, lock_delay_s):
        super().__init__(run, number, lock_key, ttl_s, lock_delay_s)
        self.zk = MovingSession(run, self.rng, int(ttl_s * 1000))
        self.writer = MovingSession(run, self.rng, OTHER_SESSION_MS, renew_expired=True)
        self.directory = znode(lock_key)
        self.pinged_at = 0.0

    @property
    def pinger(self):
        """The process the pings are recorded under: a process has one call
        in flight, and pings go on while an acquire waits."""
        return f"k{self.number}.{self.generation}"

    def renew_due(self):
        return time.monotonic() - max(self.proven_at, self.pinged_at) > self.ttl_s / 3

    def create_session(self):
        rec = self.run_.rec
        op = rec.invoke(self.process, "create-session", key=None, args={})
        sent = time.monotonic()
        self.zk.forget()
        self.zk = MovingSession(self.run_, self.rng, int(self.ttl_s * 1000))
        if not self.zk.open():
            # A connect that timed out may have made a session: it holds nothing.
            rec.info(op, error="no member serves")
            self.generation += 1
            return False
        self.session = f"{self.zk.session_id:x}"
        self.proven_at = sent
        rec.ok(op, result=self.session)
        return True

    def renew(self):
        """True when a ping was answered, False when the session ended, None
        when unknown."""
        rec = self.run_.rec
        op = rec.invoke(self.pinger, "renew", key=self.lock_key, args={"session": self.session})
        sent = self.pinged_at = time.monotonic()
        try:
            self.zk.ping()
        except SessionExpired:
            rec.fail(op, error="session expired")
            return False
        except NotSent as e:
            rec.info(op, error=str(e))
            time.sleep(0.1)
            return None
        except NoAnswer as e:
            rec.info(op, error=str(e))
            self.generation += 1
            return None
        rec.ok(op)
        self.proven_at = sent
        return True

    def leave(self):
        """Leaves the session: closeSession when connected (its ephemeral
        goes in the same entry), else it expires unrenewed."""
        if self.zk.connected:
            rec = self.run_.rec
            op = rec.invoke(self.process, "destroy-session", key=None,
                            args={"session": self.session})
            try:
                self.zk.request(("close", b""))
                rec.ok(op)
            except (NotSent, SessionExpired) as e:
                rec.fail(op, error=str(e) or e.__class__.__name__)
            except NoAnswer as e:
                rec.info(op, error=str(e))
                self.generation += 1
        self.zk.forget()
        self.session = None

    def children(self):
        """The lock's children and the zxid they were read at, after a sync
        (a linearizable read)."""
        (_, synced, _), (zxid, err, body) = self.zk.request(
            ("sync", zk_wire.ustring(self.directory)),
            ("getChildren", zk_wire.path_watch(self.directory)))
        if synced or err:
            raise NoAnswer(f"sync {code_name(synced)}, getChildren {code_name(err)}")
        return read_children(body), zxid

    def wait_turn(self):
        """Until a watch fires (or the connection moves: its watches are
        gone), pinging every third of the timeout."""
        epoch = self.zk.epoch
        while not self.run_.stopping.is_set():
            if self.renew_due():
                renewed = self.renew()
                if renewed is False:
                    raise SessionExpired()
                if renewed is None or self.zk.epoch != epoch:
                    return
            due = max(self.proven_at, self.pinged_at) + self.ttl_s / 3 - time.monotonic()
            if self.zk.wait_event(min(0.5, max(0.0, due))):
                self.zk.events.clear()
                return

    def acquire(self):
        """(node, token) once our node is the lowest, or None (recorded as
        a fail: the client never saw the lock as its own)."""
        rec = self.run_.rec
        prefix = f"c{self.number}-{self.rng.getrandbits(32):08x}-lock-"
        op = rec.invoke(self.process, "acquire", key=self.lock_key, args={"session": self.session})
        node, czxid, create_unknown = None, None, False
        while True:
            if self.run_.stopping.is_set():
                rec.fail(op, error="stopped")
                return None
            try:
                if self.renew_due() and self.renew() is False:
                    raise SessionExpired()
                if node is None and not create_unknown:
                    ((_, err, body),) = self.zk.request(("create2", zk_wire.create_body(
                        f"{self.directory}/{prefix}", f"c{self.number}".encode(),
                        flags=EPHEMERAL_SEQUENTIAL)))
                    if err:
                        rec.fail(op, error=code_name(err))
                        if err == SESSIONEXPIRED:
                            self.zk.forget()
                            self.session = None
                        return None
                    path, at = zk_wire.read_ustring(body)
                    node = path.decode().rsplit("/", 1)[1]
                    czxid = zk_wire.read_stat(body, at)[0]["czxid"]
                    continue
                names, zxid = self.children()
                if create_unknown:
                    # After the sync every create sent before it applied, or never will.
                    mine = [n for n in names if n.startswith(prefix)]
                    create_unknown = False
                    if mine:
                        node = mine[0]
                    continue
                if node not in names:
                    # An ephemeral goes only with its session.
                    rec.fail(op, error=f"node {node} gone: the session ended")
                    self.leave()
                    return None
                queue = sorted(names, key=sequence_of)
                at = queue.index(node)
                if at == 0:
                    rec.ok(op, result={"token": zxid, "node": node, "seq": sequence_of(node),
                                       "czxid": czxid})
                    self.run_.grants += 1
                    return node, zxid
                ((_, err, _),) = self.zk.request(("exists", zk_wire.path_watch(
                    f"{self.directory}/{queue[at - 1]}", True)))
                if err == 0:
                    self.wait_turn()  # else gone already: look again
            except NotSent:
                if time.monotonic() - self.proven_at > 3 * self.ttl_s:
                    rec.fail(op, error="no member serves")
                    self.leave()
                    return None
                time.sleep(0.2)
            except NoAnswer:
                if node is None:
                    create_unknown = True
                time.sleep(0.05)
            except SessionExpired:
                rec.fail(op, error="session expired")
                self.zk.forget()
                self.session = None
                return None

    def fenced_write(self, node, token, value):
        """The multi's answers: the check of our node, then the create."""
        record = json.dumps({"token": token, "value": value}).encode()
        ((_, err, body),) = self.writer.request(("multi", zk_wire.multi_body([
            ("check", zk_wire.path_version(f"{self.directory}/{node}", -1)),
            ("create", zk_wire.create_body(f"/fenced/{self.lock_key}/{value}", record))])))
        return err, (read_multi(body) if err == 0 else [])

    def hold(self, node, token):
        for _ in range(self.rng.randint(1, 4)):
            if self.run_.stopping.is_set():
                break
            tries = 1
            if self.run_.take_pause():
                self.freeze(token)  # its node goes with its session: the check must refuse it
                # It writes until it hears back: a write lost on the way
                # (its server no longer leads, say) tests nothing.
                tries = 5
            else:
                renewed = self.renew() if self.renew_due() or not self.alive() else True
                if renewed is False or not self.alive():
                    self.lose()
                    self.leave()
                    return False
            for _ in range(tries):
                answered = self.write(node, token)
                if answered == "refused":
                    self.lose()
                    self.leave()
                    return False
                if answered:
                    break
            time.sleep(self.rng.uniform(0.05, 0.3))
        self.release(node)
        return True

    def write(self, node, token):
        """One fenced write of a new value: "ok", "refused" (the check found
        our node gone), "failed" (another error answered), or None (never
        sent, or no answer)."""
        rec = self.run_.rec
        self.seq += 1
        value = f"{self.number}-{self.seq}"
        op = rec.invoke(self.process, "fenced-write", key=self.lock_key,
                        args={"token": token, "value": value})
        try:
            err, codes = self.fenced_write(node, token, value)
        except NotSent as e:
            rec.fail(op, error=str(e))
            time.sleep(0.1)
            return None
        except NoAnswer as e:
            rec.info(op, error=str(e))
            self.generation += 1
            return None
        if err == 0 and codes and not any(codes):
            rec.ok(op)
            self.run_.fenced_ok += 1
            return "ok"
        if err == 0 and codes and codes[0] == NONODE:
            rec.fail(op, error="check: NONODE")
            self.run_.fenced_refused += 1
            if token == self.run_.stale_write_token:
                self.run_.note(f"the woken holder's write with token {token} was refused "
                               f"(check: NONODE)")
            return "refused"
        rec.fail(op, error=f"{code_name(err)} {[code_name(c) for c in codes]}")
        return "failed"

    def release(self, node):
        """A delete of our node, tried again on another connection while
        unanswered (NONODE is as good: it is gone)."""
        rec = self.run_.rec
        op = rec.invoke(self.process, "release", key=self.lock_key, args={"session": self.session})
        until = time.monotonic() + 2 * OP_TIMEOUT
        while time.monotonic() < until:
            try:
                ((_, err, _),) = self.zk.request(("delete", zk_wire.path_version(
                    f"{self.directory}/{node}", -1)))
            except NotSent:
                time.sleep(0.2)
                continue
            except NoAnswer:
                time.sleep(0.05)
                continue
            except SessionExpired:
                rec.fail(op, error="session expired")
                self.zk.forget()
                self.session = None
                return
            if err in (0, NONODE):
                rec.ok(op, result=None if err == 0 else "NONODE")
                if err == NONODE:
                    self.run_.released_gone += 1
                return
            rec.fail(op, error=code_name(err))
            break
        else:
            rec.info(op, error="no answer")
            self.generation += 1
        self.leave()  # its node may still be there: let it go with the session

    def step(self):
        if self.session is None and not self.create_session():
            time.sleep(0.2)
            return
        if not self.alive():
            renewed = self.renew()
            if renewed is False or not self.alive():
                self.leave()  # ended, or unproven too long: a new one
                self.generation += 1
            if renewed is not True:
                return
        grant = self.acquire()
        if grant is None:
            time.sleep(self.rng.uniform(0.05, 0.2))
            return
        self.hold(*grant)


def check_succession(history, lock_key):
    """The recipe's order: taken in the order of their tokens (the zxids at
    which each holder saw its node lowest), grants go to nodes of strictly
    increasing sequence numbers, each node granted once. A node that
    queued behind another can only be lowest once every node before it is
    gone, so a grant out of sequence means the parent's counter went back
    or a read was not linearizable. Problems as sentences; empty when fine."""
    grants = sorted((op for op in history if op.type == "acquire" and op.key == lock_key
                     and op.outcome == "ok" and isinstance(op.result, dict)),
                    key=lambda op: op.result["token"])
    problems = []
    seen = {}
    for op in grants:
        node = op.result["node"]
        if node in seen:
            problems.append(f"node {node} was granted twice (acquire #{seen[node].id} and "
                            f"#{op.id})")
        seen[node] = op
    for before, after in zip(grants, grants[1:]):
        if after.result["seq"] <= before.result["seq"]:
            problems.append(
                f"acquire #{after.id} got the lock for {after.result['node']} (sequence "
                f"{after.result['seq']}) at zxid {after.result['token']}, after acquire "
                f"#{before.id} got it for {before.result['node']} (sequence "
                f"{before.result['seq']}) at zxid {before.result['token']}: grants out of "
                f"sequence order")
    return problems


class ZkFaultRun(FaultRun):
    """FaultRun with the ZooKeeper clients; members need `zk_addr`. The
    lock sessions' timeout is the checker's TTL; a ZooKeeper session has no
    lock-delay."""

    REGISTER_CLIENT = ZkRegisterClient
    LOCK_CLIENT = ZkLockClient

    def __init__(self, cluster, seed, **kwargs):
        kwargs.setdefault("ttl_s", LOCK_SESSION_MS // 1000)
        kwargs.setdefault("lock_delay_s", 0)
        # Counted by the sessions (summary): reconnects that kept their
        # session, reconnects answered "expired", releases that found the
        # node gone (its session had ended).
        self.reconnects = self.sessions_ended = self.released_gone = 0
        super().__init__(cluster, seed, **kwargs)

    def serving_session(self, timeout_ms):
        """A session on whichever member serves, for the set-up and the read-back."""
        session = MovingSession(self, random.Random(self.seed), timeout_ms)
        poll_until(session.open, timeout=20, interval=0.2, message="no member serves ZooKeeper")
        return session

    def create_nodes(self):
        """The register nodes (no data: the initial value None), the lock's
        node and the fenced writes' parent; the lock session timeout is the
        one the clients ask for."""
        session = self.serving_session(int(self.ttl_s * 1000))
        assert session.negotiated_ms == self.ttl_s * 1000, \
            f"asked a {self.ttl_s * 1000} ms session timeout, got {session.negotiated_ms}"
        paths = set()
        for key in self.register_keys + [self.lock_key, f"fenced/{self.lock_key}"]:
            parts = key.split("/")
            paths.update("/" + "/".join(parts[:n]) for n in range(1, len(parts) + 1))
        for path in sorted(paths, key=lambda p: p.count("/")):
            ((_, err, _),) = session.request(("create", zk_wire.create_body(path)))
            assert err in (0, NODEEXISTS), f"create {path}: {code_name(err)}"
        session.request(("close", b""))
        session.drop()

    def run(self, seconds, faults):
        self.create_nodes()
        super().run(seconds, faults)

    def read_back(self):
        self.leader()
        session = self.serving_session(OTHER_SESSION_MS)
        final = {}
        for key in self.register_keys:
            (_, synced, _), (_, err, body) = session.request(
                ("sync", zk_wire.ustring(znode(key))), ("getData", zk_wire.path_watch(znode(key))))
            assert synced == 0 and err == 0, f"read-back of {key}: {code_name(synced or err)}"
            data, _ = read_data(body)
            if data:
                final[key] = data.decode()
        writes = []
        parent = f"/fenced/{self.lock_key}"
        ((_, err, body),) = session.request(("getChildren", zk_wire.path_watch(parent)))
        assert err == 0, f"read-back of {parent}: {code_name(err)}"
        for name in read_children(body):
            ((_, err, body),) = session.request(("getData", zk_wire.path_watch(f"{parent}/{name}")))
            assert err == 0, f"read-back of {parent}/{name}: {code_name(err)}"
            data, stat = read_data(body)
            record = json.loads(data)
            # czxid: the index of the multi that created it.
            writes.append({"lock": self.lock_key, "token": record["token"],
                           "index": stat["czxid"], "value": record["value"]})
        session.request(("close", b""))
        session.drop()
        poll_until(lambda: len({m.request("GET", "/v1/agent/self").json()["Stats"]["raft"]
                                ["applied_index"] for m in self.cluster.members}) == 1,
                   timeout=20, message="the members never reached the same applied index")
        return final, writes

    def summary(self, history):
        return (super().summary(history) + f"; {self.reconnects} reconnects kept their session, "
                f"{self.sessions_ended} found it ended, {self.released_gone} releases found "
                f"the node gone")
