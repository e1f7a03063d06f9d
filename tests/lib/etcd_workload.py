"""The fault tier's clients speaking etcd's API (docs/checkers.md): the same
FaultRun, nemesis and checkers as cluster_workload.py, with every client call
made through etcd's JSON gateway on a random member's etcd port (followers
relay what needs the leader, decision 0055), so the histories check the etcd
surface: KV, Txn, leases and keep-alives.

  - register clients: Put of a unique value, linearizable Range, and CAS as
    a Txn comparing the key's mod_revision (checked by linearizability.py
    with the final read-back);
  - lock clients: a lease each (Grant, then KeepAlive), the lock taken as
    etcd's leader-key recipe takes it (Patroni's etcd3 DCS: a Txn that puts
    the key with the lease if its create_revision is 0), fenced writes as a
    Txn comparing the lock key's create_revision with the token (the
    server-checked fenced write of docs/etcd.md), and release as a Txn that
    deletes the key if it is still ours. The token is the create revision:
    the index of the entry that granted the lock, as lock_checker.py
    expects of a token.

An answer is "fail" only when the call certainly took no effect: the
connection was refused, or etcd's "no leader", "leader changed" or "not
leader" (tenure answers them before anything is proposed); any other error
or no answer is "info" (outcome unknown).
"""

import base64
import json
import time

from cluster_workload import OP_TIMEOUT, REFUSED, FaultRun, LockClient, RegisterClient
from tenure_testlib import http_request, poll_until

NOT_APPLIED = ("etcdserver: no leader", "etcdserver: leader changed", "etcdserver: not leader")


def b64(text):
    return base64.b64encode(text.encode()).decode()


def unb64(text):
    return base64.b64decode(text).decode() if text else ""


class EtcdAnswer:
    """A gateway answer: its gRPC code (0 = ok), message and result."""

    def __init__(self, code, message, result):
        self.code = code
        self.message = message
        self.result = result

    @property
    def not_applied(self):
        return self.code != 0 and self.message in NOT_APPLIED


class EtcdCaller:
    """A gateway call to a random member's etcd port: an EtcdAnswer, REFUSED
    when nothing listens there, None on a timeout or another transport
    error (outcome unknown)."""

    def __init__(self, cluster, rng):
        self.cluster = cluster
        self.rng = rng

    def call(self, path, body):
        member = self.rng.choice(self.cluster.members)
        try:
            resp = http_request(member.etcd_addr, "POST", path, json.dumps(body),
                                timeout=OP_TIMEOUT)
        except ConnectionRefusedError:
            return REFUSED
        except (OSError, ValueError):
            return None
        try:
            first = json.loads(resp.body.decode().split("\n")[0]) if resp.body else {}
        except ValueError:
            return None
        if isinstance(first.get("error"), dict):  # a keep-alive's streamed error
            error = first["error"]
            return EtcdAnswer(error.get("grpc_code", -1), error.get("message", ""), None)
        if resp.status != 200:
            return EtcdAnswer(first.get("code", -1), first.get("message", ""), None)
        return EtcdAnswer(0, "", first.get("result", first))


def _failed(answer):
    """Whether `answer` certainly took no effect."""
    return answer is REFUSED or (answer is not None and answer.not_applied)


def _record_unsuccessful(client, op, answer):
    """Records a call that did not succeed: a fail when it certainly took no
    effect, else info (outcome unknown; the client goes on as a new process,
    as Jepsen's do)."""
    rec = client.run_.rec
    if _failed(answer):
        rec.fail(op, error="refused" if answer is REFUSED else answer.message)
    else:
        rec.info(op, error="no answer" if answer is None else answer.message)
        client.generation += 1
    time.sleep(0.05)


class EtcdRegisterClient(RegisterClient):
    def __init__(self, run, number, keys):
        super().__init__(run, number, keys)
        self.etcd = EtcdCaller(run.cluster, self.rng)

    def settle(self, op, answer):
        """Records a failed call; True when `answer` is a success."""
        if answer is not None and answer is not REFUSED and answer.code == 0:
            return True
        _record_unsuccessful(self, op, answer)
        return False

    def read(self, key):
        rec = self.run_.rec
        op = rec.invoke(self.process, "read", key=key)
        answer = self.etcd.call("/v3/kv/range", {"key": b64(key)})
        if not self.settle(op, answer):
            return "?", None
        kvs = answer.result.get("kvs", [])
        if not kvs:
            rec.ok(op, result=None)
            return None, 0
        rec.ok(op, result=unb64(kvs[0].get("value", "")))
        return unb64(kvs[0].get("value", "")), int(kvs[0]["mod_revision"])

    def step(self):
        rec = self.run_.rec
        key = self.rng.choice(self.keys)
        kind = self.rng.random()
        self.seq += 1
        value = f"{self.number}-{self.seq}"
        if kind < 0.4:
            op = rec.invoke(self.process, "write", key=key, args=value)
            answer = self.etcd.call("/v3/kv/put", {"key": b64(key), "value": b64(value)})
            if self.settle(op, answer):
                rec.ok(op)
                self.run_.acked_writes += 1
        elif kind < 0.75:
            self.read(key)
        else:
            old, index = self.read(key)
            if index is None:
                return
            op = rec.invoke(self.process, "cas", key=key, args=[old, value])
            # A missing key's mod_revision is 0, as etcd compares it.
            answer = self.etcd.call("/v3/kv/txn", {
                "compare": [{"key": b64(key), "target": "MOD", "result": "EQUAL",
                             "mod_revision": str(index)}],
                "success": [{"request_put": {"key": b64(key), "value": b64(value)}}]})
            if self.settle(op, answer):
                if answer.result.get("succeeded"):
                    rec.ok(op, result=True)
                else:
                    rec.fail(op, result=False)


class EtcdLockClient(LockClient):
    """One candidate on a lease: Grant, the leader-key Txn, fenced Txns,
    keep-alives, a release Txn; it stops acting as holder as soon as it
    cannot prove its lease alive (its last acknowledged keep-alive was sent
    more than TTL/2 ago) and records "lost"."""

    def __init__(self, run, number, lock_key, ttl_s, lock_delay_s):
        super().__init__(run, number, lock_key, ttl_s, lock_delay_s)
        self.etcd = EtcdCaller(run.cluster, self.rng)

    def unknown(self, op, answer):
        _record_unsuccessful(self, op, answer)

    def create_session(self):
        rec = self.run_.rec
        op = rec.invoke(self.process, "create-session", key=None, args={})
        sent = time.monotonic()
        answer = self.etcd.call("/v3/lease/grant", {"TTL": str(self.ttl_s)})
        if answer is None or answer is REFUSED or answer.code != 0:
            self.unknown(op, answer)
            return False
        self.session = str(answer.result["ID"])
        self.proven_at = sent
        rec.ok(op, result=self.session)
        return True

    def renew(self):
        rec = self.run_.rec
        op = rec.invoke(self.process, "renew", key=self.lock_key, args={"session": self.session})
        sent = time.monotonic()
        answer = self.etcd.call("/v3/lease/keepalive", {"ID": self.session})
        if answer is not None and answer is not REFUSED and answer.code == 0:
            if int(answer.result.get("TTL", 0)) > 0:
                rec.ok(op)
                self.proven_at = sent
                return True
            # TTL 0: the lease is gone, as etcd answers.
            rec.fail(op, error="lease gone")
            self.session = None
            return False
        self.unknown(op, answer)
        return None

    def fenced_write(self, token, value):
        return self.etcd.call("/v3/kv/txn", {
            "compare": [{"key": b64(self.lock_key), "target": "CREATE", "result": "EQUAL",
                         "create_revision": str(token)}],
            "success": [{"request_put": {
                "key": b64(f"fenced/{self.lock_key}/{value}"),
                "value": b64(json.dumps({"token": token, "value": value}))}}]})

    def hold(self, token):
        rec = self.run_.rec
        for _ in range(self.rng.randint(1, 4)):
            if self.run_.stopping.is_set():
                break
            if self.run_.take_pause():
                self.freeze(token)  # the compare on the create revision must refuse its write
            elif not self.alive():
                renewed = self.renew()
                if renewed is not True and not self.alive():
                    self.lose()
                    return False
            self.seq += 1
            value = f"{self.number}-{self.seq}"
            op = rec.invoke(self.process, "fenced-write", key=self.lock_key,
                            args={"token": token, "value": value})
            answer = self.fenced_write(token, value)
            if answer is not None and answer is not REFUSED and answer.code == 0:
                if answer.result.get("succeeded"):
                    rec.ok(op)
                    self.run_.fenced_ok += 1
                else:
                    rec.fail(op, error="compare failed")
                    self.run_.fenced_refused += 1
                    if token == self.run_.stale_write_token:
                        self.run_.note(f"the woken holder's write with token {token} was "
                                       f"refused (compare failed)")
                    self.lose()
                    return False
            else:
                self.unknown(op, answer)
            time.sleep(self.rng.uniform(0.05, 0.3))
        op = rec.invoke(self.process, "release", key=self.lock_key, args={"session": self.session})
        answer = self.etcd.call("/v3/kv/txn", {
            "compare": [{"key": b64(self.lock_key), "target": "CREATE", "result": "EQUAL",
                         "create_revision": str(token)}],
            "success": [{"request_delete_range": {"key": b64(self.lock_key)}}]})
        if answer is not None and answer is not REFUSED and answer.code == 0:
            rec.ok(op)
        else:
            self.unknown(op, answer)
        return True

    def step(self):
        rec = self.run_.rec
        if self.session is None and not self.create_session():
            time.sleep(0.2)
            return
        if not self.alive() and self.renew() is not True:
            if not self.alive():
                self.lose()
                self.session = None
                self.generation += 1
            return
        op = rec.invoke(self.process, "acquire", key=self.lock_key, args={"session": self.session})
        answer = self.etcd.call("/v3/kv/txn", {
            "compare": [{"key": b64(self.lock_key), "target": "CREATE", "result": "EQUAL",
                         "create_revision": "0"}],
            "success": [{"request_put": {"key": b64(self.lock_key), "value": b64(f"c{self.number}"),
                                         "lease": self.session}}]})
        if _failed(answer):
            self.unknown(op, answer)
            return
        if answer is None or answer.code != 0:
            self.unknown(op, answer)
            # It may hold the lock now without knowing: stop acting as holder.
            self.lose()
            self.session = None
            return
        if not answer.result.get("succeeded"):
            rec.ok(op, result=False)
            time.sleep(self.rng.uniform(0.05, 0.2))
            return
        # The key was created by this txn: its create revision is the txn's.
        token = int(answer.result["header"]["revision"])
        rec.ok(op, result=token)
        self.run_.grants += 1
        self.hold(token)


class EtcdFaultRun(FaultRun):
    """FaultRun with the etcd clients; members need `etcd_addr`."""

    REGISTER_CLIENT = EtcdRegisterClient
    LOCK_CLIENT = EtcdLockClient

    def read_back(self):
        leader = self.leader()

        def call(path, body):
            resp = http_request(leader.etcd_addr, "POST", path, json.dumps(body), timeout=10)
            assert resp.status == 200, resp.text
            return resp.json()

        final = {}
        for key in self.register_keys:
            kvs = call("/v3/kv/range", {"key": b64(key)}).get("kvs", [])
            if kvs:
                final[key] = unb64(kvs[0].get("value", ""))
        writes = []
        prefix = f"fenced/{self.lock_key}/"
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        for kv in call("/v3/kv/range", {"key": b64(prefix), "range_end": b64(end)}).get("kvs", []):
            data = json.loads(unb64(kv["value"]))
            writes.append({"lock": self.lock_key, "token": data["token"],
                           "index": int(kv["mod_revision"]), "value": data["value"]})
        poll_until(lambda: len({m.request("GET", "/v1/agent/self").json()["Stats"]["raft"]
                                ["applied_index"] for m in self.cluster.members}) == 1,
                   timeout=20, message="the members never reached the same applied index")
        return final, writes
