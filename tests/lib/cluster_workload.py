"""Clients and a nemesis for the multi-process fault tests (docs/checkers.md).

A FaultRun drives a 3-server cluster (tests/lib/tenure_testlib.Cluster behind
a raft_proxy.PartitionProxy) with concurrent clients while a seeded nemesis
kills, pauses, partitions and restarts servers, and records every client call
in a history.Recorder (docs/checkers.md):

  - register clients: unique-value writes, `?consistent` reads and CAS on a
    few keys (checked by linearizability.py, with the final read-back, so an
    acknowledged write that vanished is caught);
  - lock clients: a session each, `?acquire`, fenced writes (`/v1/txn`
    check-fence + set of a unique key), renewals, releases (checked by
    lock_checker.py against the server's record of fenced writes).

Clients talk to any member (a random one per call; followers forward), with a
short timeout: an answer they did not get is an "info" op, and the client
continues under a new process id, as Jepsen's do. The nemesis schedule comes
from a seed, printed by the tests; TENURE_FAULT_SEED reproduces one.
"""

import base64
import json
import os
import random
import signal
import threading
import time

import raft_wire
from history import Recorder
from tenure_testlib import free_port, http_request, poll_until

OP_TIMEOUT = 3.0
FREEZE_MAX_S = 25.0  # the longest a frozen lock holder stays frozen


def b64(text):
    return base64.b64encode(text.encode()).decode()


class _Refused:
    """A connection refused: the request was never sent, so the call
    definitely did not take effect (a "fail", not an "info")."""
    status = 0


REFUSED = _Refused()


def not_proposed(resp):
    """500 "No cluster leader": the server that answered proposed nothing
    (it is not the leader, or a follower that does not know the leader's
    address yet), so the call definitely did not take effect. Any other 500
    ("leadership lost before the write was committed; outcome unknown", a
    forwarding error) may have."""
    return resp is not None and resp.status == 500 and resp.body.strip() == b"No cluster leader"


class Caller:
    """HTTP to a random member; REFUSED when nothing listens there (a killed
    server), None on any other transport error or a timeout (outcome unknown)."""

    def __init__(self, cluster, rng):
        self.cluster = cluster
        self.rng = rng

    def call(self, method, path, body=None):
        member = self.rng.choice(self.cluster.members)
        try:
            return http_request(member.http_addr, method, path, body, timeout=OP_TIMEOUT)
        except ConnectionRefusedError:
            return REFUSED
        except (OSError, ValueError):
            return None


class RegisterClient(threading.Thread):
    def __init__(self, run, number, keys):
        super().__init__(daemon=True)
        self.run_ = run
        self.number = number
        self.keys = keys
        self.rng = random.Random(run.seed * 1000 + number)
        self.http = Caller(run.cluster, self.rng)
        self.generation = 0
        self.seq = 0

    @property
    def process(self):
        return f"r{self.number}.{self.generation}"

    def outcome(self, op, resp):
        rec = self.run_.rec
        if not_proposed(resp):
            rec.fail(op, error="No cluster leader")
            time.sleep(0.05)  # as clients back off
            return False
        if resp is None or resp.status >= 500:
            rec.info(op, error="no answer" if resp is None else f"HTTP {resp.status}")
            self.generation += 1
            time.sleep(0.05)
            return False
        if resp.status != 200:
            rec.fail(op, error=f"HTTP {resp.status}")
            time.sleep(0.05)
            return False
        return True

    def read(self, key):
        rec = self.run_.rec
        op = rec.invoke(self.process, "read", key=key)
        resp = self.http.call("GET", f"/v1/kv/{key}?consistent")
        if resp is not None and resp.status == 404:
            rec.ok(op, result=None)
            return None, 0
        if not self.outcome(op, resp):
            return "?", None
        entry = resp.json()[0]
        value = base64.b64decode(entry["Value"]).decode() if entry["Value"] else ""
        rec.ok(op, result=value)
        return value, entry["ModifyIndex"]

    def step(self):
        rec = self.run_.rec
        key = self.rng.choice(self.keys)
        kind = self.rng.random()
        self.seq += 1
        value = f"{self.number}-{self.seq}"
        if kind < 0.4:
            op = rec.invoke(self.process, "write", key=key, args=value)
            resp = self.http.call("PUT", f"/v1/kv/{key}", value.encode())
            if self.outcome(op, resp):
                if resp.json() is True:
                    rec.ok(op)
                    self.run_.acked_writes += 1
                else:
                    rec.fail(op, error="false")
        elif kind < 0.75:
            self.read(key)
        else:
            old, index = self.read(key)
            if index is None:
                return
            op = rec.invoke(self.process, "cas", key=key, args=[old, value])
            resp = self.http.call("PUT", f"/v1/kv/{key}?cas={index}", value.encode())
            if self.outcome(op, resp):
                if resp.json() is True:
                    rec.ok(op, result=True)
                else:
                    rec.fail(op, result=False)

    def run(self):
        while not self.run_.stopping.is_set():
            self.step()


class LockClient(threading.Thread):
    """One candidate: session, acquire, a few fenced writes, release; it stops
    acting as holder as soon as it cannot prove its session alive (its last
    acknowledged renewal was sent more than TTL/2 ago) and records "lost"."""

    def __init__(self, run, number, lock_key, ttl_s, lock_delay_s):
        super().__init__(daemon=True)
        self.run_ = run
        self.number = number
        self.lock_key = lock_key
        self.ttl_s = ttl_s
        self.lock_delay_s = lock_delay_s
        self.rng = random.Random(run.seed * 1000 + 500 + number)
        self.http = Caller(run.cluster, self.rng)
        self.generation = 0
        self.seq = 0
        self.session = None
        self.proven_at = 0.0  # when the last acknowledged renewal (or create) was sent

    @property
    def process(self):
        return f"l{self.number}.{self.generation}"

    def info(self, op, resp):
        if not_proposed(resp):
            self.run_.rec.fail(op, error="No cluster leader")
        else:
            self.run_.rec.info(op, error="no answer" if resp is None else f"HTTP {resp.status}")
            self.generation += 1
        time.sleep(0.05)

    def create_session(self):
        rec = self.run_.rec
        body = json.dumps({"TTL": f"{self.ttl_s}s", "LockDelay": f"{self.lock_delay_s}s",
                           "Behavior": "release"}).encode()
        op = rec.invoke(self.process, "create-session", key=None, args={})
        sent = time.monotonic()
        resp = self.http.call("PUT", "/v1/session/create", body)
        if resp is None or resp.status != 200:
            self.info(op, resp) if resp is None or resp.status >= 500 else rec.fail(op)
            return False
        self.session = resp.json()["ID"]
        self.proven_at = sent
        rec.ok(op, result=self.session)
        return True

    def alive(self):
        return time.monotonic() - self.proven_at < self.ttl_s / 2

    def renew(self):
        rec = self.run_.rec
        op = rec.invoke(self.process, "renew", key=self.lock_key, args={"session": self.session})
        sent = time.monotonic()
        resp = self.http.call("PUT", f"/v1/session/renew/{self.session}")
        if resp is not None and resp.status == 200:
            rec.ok(op)
            self.proven_at = sent
            return True
        if resp is not None and resp.status == 404:
            rec.fail(op, error="HTTP 404")
            self.session = None
            return False
        self.info(op, resp)
        return None

    def lose(self):
        self.run_.rec.event(self.process, "lost", key=None, args={"session": self.session})
        self.run_.losses += 1

    def freeze(self, token):
        """The pause case (a GC pause, a SIGSTOPped process): the holder
        freezes past its TTL and lock-delay without noticing, then writes as
        if it still held the lock. Fencing must refuse it."""
        self.run_.note(f"lock client {self.number} freezes while holding token {token}")
        self.run_.frozen_since = time.monotonic()
        grants = self.run_.grants
        # Frozen until its session expired and someone else got the lock
        # (leader changes restart the TTL, so this can take a while), or
        # FREEZE_MAX_S.
        try:
            poll_until(lambda: self.run_.grants > grants, timeout=FREEZE_MAX_S, interval=0.1)
        except AssertionError:
            pass  # nobody else got it: the write after it may well be accepted
        self.run_.stale_write_token = token
        self.run_.frozen_since = None
        self.run_.note(f"lock client {self.number} wakes and writes with token {token} "
                       f"({self.run_.grants - grants} grants to others meanwhile)")

    def hold(self, token):
        rec = self.run_.rec
        for _ in range(self.rng.randint(1, 4)):
            if self.run_.stopping.is_set():
                break
            if self.run_.take_pause():
                self.freeze(token)
            elif not self.alive():
                renewed = self.renew()
                if renewed is not True and not self.alive():
                    self.lose()
                    return False
            self.seq += 1
            value = f"{self.number}-{self.seq}"
            op = rec.invoke(self.process, "fenced-write", key=self.lock_key,
                            args={"token": token, "value": value})
            txn = [{"KV": {"Verb": "check-fence", "Key": self.lock_key, "Index": token}},
                   {"KV": {"Verb": "set", "Key": f"fenced/{self.lock_key}/{value}",
                           "Value": b64(json.dumps({"token": token, "value": value}))}}]
            resp = self.http.call("PUT", "/v1/txn", json.dumps(txn).encode())
            if resp is not None and resp.status == 200:
                rec.ok(op)
                self.run_.fenced_ok += 1
            elif resp is REFUSED:
                rec.fail(op, error="connection refused")
            elif resp is not None and resp.status == 409:
                rec.fail(op, error="HTTP 409")
                self.run_.fenced_refused += 1
                if token == self.run_.stale_write_token:
                    self.run_.note(f"the woken holder's write with token {token} was refused (409)")
                self.lose()
                return False
            else:
                self.info(op, resp)
            time.sleep(self.rng.uniform(0.05, 0.3))
        op = rec.invoke(self.process, "release", key=self.lock_key, args={"session": self.session})
        resp = self.http.call("PUT", f"/v1/kv/{self.lock_key}?release={self.session}")
        if resp is not None and resp.status == 200:
            rec.ok(op)
        else:
            self.info(op, resp)
        return True

    def step(self):
        rec = self.run_.rec
        if self.session is None and not self.create_session():
            time.sleep(0.2)
            return
        if not self.alive() and self.renew() is not True:
            if not self.alive():
                self.lose()
                self.session = None  # a new session: this one may be gone
                self.generation += 1
            return
        op = rec.invoke(self.process, "acquire", key=self.lock_key, args={"session": self.session})
        resp = self.http.call("PUT", f"/v1/kv/{self.lock_key}?acquire={self.session}",
                              f"c{self.number}".encode())
        if not_proposed(resp):
            self.info(op, resp)  # recorded as a fail: nothing was proposed
            return
        if resp is None or resp.status >= 500:
            self.info(op, resp)
            # It may hold the lock now without knowing: stop acting as holder.
            self.lose()
            self.session = None
            return
        if resp.status != 200:
            rec.fail(op, error=f"HTTP {resp.status}")
            return
        if resp.json() is not True:
            rec.ok(op, result=False)
            time.sleep(self.rng.uniform(0.05, 0.2))
            return
        token = int(resp.header("X-Tenure-Fence"))
        rec.ok(op, result=token)
        self.run_.grants += 1
        self.hold(token)

    def run(self):
        while not self.run_.stopping.is_set():
            self.step()


class FaultRun:
    """A cluster, its clients and a nemesis; see the module docstring.
    Subclasses speak another API by naming other client classes
    (etcd_workload.EtcdFaultRun)."""

    REGISTER_CLIENT = RegisterClient
    LOCK_CLIENT = LockClient

    def __init__(self, cluster, seed, register_keys=("r/a", "r/b", "r/c"), register_clients=4,
                 lock_key="locks/L", lock_clients=3, ttl_s=10, lock_delay_s=1):
        self.cluster = cluster
        self.proxy = cluster.proxy
        self.seed = seed
        self.rng = random.Random(seed)
        self.rec = Recorder()
        self.stopping = threading.Event()
        self.register_keys = list(register_keys)
        self.lock_key = lock_key
        self.ttl_s = ttl_s
        self.lock_delay_s = lock_delay_s
        self.clients = ([self.REGISTER_CLIENT(self, i, self.register_keys)
                         for i in range(register_clients)] +
                        [self.LOCK_CLIENT(self, i, lock_key, ttl_s, lock_delay_s)
                         for i in range(lock_clients)])
        self.faults = []
        self.stopped = set()  # members paused with SIGSTOP
        self.acked_writes = self.grants = self.fenced_ok = self.fenced_refused = self.losses = 0
        self.pauses_left = 1 if lock_clients > 1 else 0
        self.pause_lock = threading.Lock()
        self.pause_rng = random.Random(seed + 7)
        self.stale_write_token = None
        self.frozen_since = None  # the nemesis stands back while a holder is frozen
        self.deadline = float("inf")

    def take_pause(self):
        """True once per run, for the first holder that asks after 3 s."""
        with self.pause_lock:
            now = time.monotonic()
            frozen = FREEZE_MAX_S
            if self.pauses_left and now - self.t0 > 3 and now + frozen + 2 < self.deadline:
                self.pauses_left -= 1
                return True
            return False

    # --- cluster state ----------------------------------------------------------

    def live(self):
        return [m for m in self.cluster.running() if m not in self.stopped]

    def leader(self, timeout=20.0):
        """The member a majority of live members name as leader."""
        def agreed():
            votes = {}
            for member in self.live():
                try:
                    resp = member.request("GET", "/v1/status/leader", timeout=1.0)
                except OSError:
                    continue
                if resp.status == 200 and resp.json():
                    votes[resp.json()] = votes.get(resp.json(), 0) + 1
            for address, count in votes.items():
                if count >= 2:
                    for member in self.live():
                        if member.raft_addr == address:
                            return member
            return None
        return poll_until(agreed, timeout=timeout, message="no leader agreed by a majority")

    def note(self, text):
        self.faults.append(f"{time.monotonic() - self.t0:6.2f}s {text}")

    # --- the nemesis ------------------------------------------------------------

    def fault_kill(self, pick_leader):
        leader = self.leader()
        victim = leader if pick_leader else self.rng.choice(
            [m for m in self.live() if m is not leader])
        self.note(f"kill -9 {'leader' if pick_leader else 'follower'} "
                  f"node{self.cluster.id_of(victim)}")
        victim.kill()
        self.pause(1.0, 3.0)
        victim.start()
        self.note(f"restart node{self.cluster.id_of(victim)} with its data")

    def fault_pause_leader(self):
        leader = self.leader()
        self.note(f"SIGSTOP leader node{self.cluster.id_of(leader)}")
        leader.process.send_signal(signal.SIGSTOP)
        self.stopped.add(leader)
        self.pause(1.5, 3.5)  # several election timeouts: a new leader is elected meanwhile
        leader.process.send_signal(signal.SIGCONT)
        self.stopped.discard(leader)
        self.note(f"SIGCONT node{self.cluster.id_of(leader)}")

    def fault_isolate_leader(self):
        leader = self.leader()
        lid = self.cluster.id_of(leader)
        self.note(f"isolate leader node{lid} (clients still reach it)")
        self.proxy.isolate(lid, range(1, len(self.cluster.members) + 1))
        self.pause(1.5, 3.5)
        self.proxy.heal()
        self.note("heal")

    def fault_split(self):
        ids = list(range(1, len(self.cluster.members) + 1))
        self.rng.shuffle(ids)
        alone, rest = ids[:1], ids[1:]
        self.note(f"split {alone} | {rest}")
        self.proxy.split(alone, rest)
        self.pause(1.0, 3.0)
        self.proxy.heal()
        self.note("heal")

    def fault_one_way(self):
        leader = self.leader()
        lid = self.cluster.id_of(leader)
        other = self.rng.choice([i for i in range(1, len(self.cluster.members) + 1) if i != lid])
        self.note(f"one-way cut node{lid} -> node{other}")
        self.proxy.cut(lid, other)
        self.pause(1.0, 3.0)
        self.proxy.heal()
        self.note("heal")

    def fault_stranger(self):
        """A process that is not a member (no cluster key, or a wrong one, or
        none at all on a keyless cluster) sends every member forged raft
        traffic for a while: AppendEntries writing a value no client wrote
        to the register keys (the linearizability check would catch it),
        type-0 entries, disrupt-leader votes, huge declared sizes and
        garbage (docs/security.md)."""
        seconds = self.rng.uniform(1.0, 3.0)
        self.note(f"stranger on every raft port for {seconds:.1f}s")
        rng = random.Random(self.rng.random())
        wrong_key = os.urandom(32)
        targets = [m.raft_addr for m in self.cluster.members]
        until = time.monotonic() + seconds
        sent = 0
        while time.monotonic() < until:
            address = rng.choice(targets)
            claimed = rng.randrange(1, len(targets) + 1)
            forged = raft_wire.append_entries(
                term=rng.randrange(1, 50), prev_index=rng.randrange(0, 2000),
                prev_term=rng.randrange(0, 50), commit=rng.randrange(0, 2000),
                entries=[(raft_wire.ENTRY_COMMAND,
                          raft_wire.kv_set_entry(rng.choice(self.register_keys), "stranger"))])
            payload = rng.choice([
                forged,
                raft_wire.append_entries(entries=[(0, b"x" * 8)]),
                raft_wire.request_vote(rng.randrange(1, 100), claimed, disrupt_leader=True),
                raft_wire.install_snapshot_header(255 << 20, raft_wire.configuration(
                    [(i + 1, a, 1) for i, a in enumerate(targets)])),
                os.urandom(rng.randrange(1, 512)),
            ])
            try:
                with raft_wire.RaftWire.dial(address, timeout=1.0) as wire:
                    how = rng.randrange(3)
                    if how == 0:
                        wire.send(payload)  # no handshake at all
                    else:
                        wire.handshake(key=wrong_key if how == 1 else None, node_id=claimed,
                                       raft_address=address, pipelined=payload, timeout=1.0)
                    sent += 1
            except OSError:
                pass
            time.sleep(0.01)
        self.note(f"stranger gone after {sent} connections")

    def pause(self, low, high):
        time.sleep(self.rng.uniform(low, high))

    FAULTS = {
        "kill-leader": lambda self: self.fault_kill(True),
        "kill-follower": lambda self: self.fault_kill(False),
        "pause-leader": lambda self: self.fault_pause_leader(),
        "isolate-leader": lambda self: self.fault_isolate_leader(),
        "split": lambda self: self.fault_split(),
        "one-way": lambda self: self.fault_one_way(),
        "stranger": lambda self: self.fault_stranger(),
    }

    def run(self, seconds, faults):
        """Clients for `seconds`, the nemesis cycling through `faults` (names
        of FAULTS, in a seeded order) with quiet gaps between them."""
        self.t0 = time.monotonic()
        for client in self.clients:
            client.start()
        deadline = self.deadline = self.t0 + seconds
        order = list(faults)
        try:
            while time.monotonic() < deadline:
                since = self.frozen_since
                if since is not None and time.monotonic() - since < self.ttl_s + self.lock_delay_s + 3:
                    # A leader change restarts every TTL at full length: give
                    # the frozen holder's session the quiet it needs to expire.
                    time.sleep(0.1)
                    continue
                self.pause(0.5, 1.5)
                if time.monotonic() >= deadline or not faults:
                    continue
                if not order:
                    order = list(faults)
                name = order.pop(self.rng.randrange(len(order)))
                self.FAULTS[name](self)
        finally:
            self.recover()
            self.stopping.set()
            for client in self.clients:
                client.join(timeout=OP_TIMEOUT * 3 + FREEZE_MAX_S)

    def recover(self):
        self.proxy.heal()
        for member in list(self.stopped):
            member.process.send_signal(signal.SIGCONT)
        self.stopped.clear()
        for member in self.cluster.members:
            if member.process is None or member.process.poll() is not None:
                member.start()

    # --- the end ----------------------------------------------------------------

    def read_back(self):
        """Final register values and the server's record of fenced writes,
        read through the leader once every member is back."""
        leader = self.leader()
        final = {}
        for key in self.register_keys:
            resp = leader.request("GET", f"/v1/kv/{key}?consistent")
            if resp.status == 200:
                value = resp.json()[0]["Value"]
                final[key] = base64.b64decode(value).decode() if value else ""
        writes = []
        resp = leader.request("GET", f"/v1/kv/fenced/{self.lock_key}/?recurse&consistent")
        if resp.status == 200:
            for entry in resp.json():
                data = json.loads(base64.b64decode(entry["Value"]))
                writes.append({"lock": self.lock_key, "token": data["token"],
                               "index": entry["ModifyIndex"], "value": data["value"]})
        poll_until(lambda: len({m.request("GET", "/v1/agent/self").json()["Stats"]["raft"]
                                ["applied_index"] for m in self.cluster.members}) == 1,
                   timeout=20, message="the members never reached the same applied index")
        return final, writes

    def summary(self, history):
        counts = {}
        for op in history:
            counts[op.status] = counts.get(op.status, 0) + 1
        return (f"seed {self.seed}: {len(history)} ops ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}); "
                f"{self.acked_writes} acknowledged writes, {self.grants} lock grants, "
                f"{self.fenced_ok} fenced writes accepted, {self.fenced_refused} refused, "
                f"{self.losses} holders stepped down; faults: {len(self.faults)}")


def run_and_check(test, faults, default_seconds=35, server_args=(), api="consul"):
    """The body of a fault test: a seeded FaultRun against a proxied 3-server
    cluster for TENURE_FAULT_SECONDS (default `default_seconds`), then every
    checker. server_args: more flags for every member (TLS, say). api:
    "consul" (Consul's HTTP API), "etcd" (etcd's, through each member's
    etcd port: etcd_workload.py) or "zk" (ZooKeeper's client protocol,
    through each member's ZooKeeper port: zk_workload.py; the run is left
    in `test.zk_run` for the test's own checks). Prints the seed, the
    faults and a summary; on a violation saves the history and says how to re-check it and how to
    replay the seed."""
    import os
    import tempfile

    from linearizability import check_history
    from lock_checker import check_locks
    from raft_proxy import PartitionProxy
    from tenure_testlib import Cluster

    seed = int(os.environ.get("TENURE_FAULT_SEED") or random.SystemRandom().randrange(1 << 31))
    seconds = float(os.environ.get("TENURE_FAULT_SECONDS") or default_seconds)
    print(f"seed {seed} (reproduce: TENURE_FAULT_SEED={seed} ctest -R {test.id().split('.')[0]} -V)",
          flush=True)
    extra_args = ("-session-ttl-multiplier", "1", *server_args)
    if api == "etcd":
        extra_args += ("-grpc-addr", "x")
    elif api == "zk":
        extra_args += ("-zk-addr", "x")
    cluster = Cluster(3, proxy=PartitionProxy(), extra_args=extra_args)
    if api == "etcd":
        for member in cluster.members:
            member.etcd_addr = f"127.0.0.1:{free_port()}"
            member.extra_args[member.extra_args.index("-grpc-addr") + 1] = member.etcd_addr
    elif api == "zk":
        for member in cluster.members:
            member.zk_addr = f"127.0.0.1:{free_port()}"
            member.extra_args[member.extra_args.index("-zk-addr") + 1] = member.zk_addr
    with cluster:
        if api == "etcd":
            from etcd_workload import EtcdFaultRun
            # etcd's leases have no lock-delay (-etcd-lease-lock-delay 0).
            run = EtcdFaultRun(cluster, seed, lock_delay_s=0)
        elif api == "zk":
            from zk_workload import ZkFaultRun
            # Lock sessions of 4 s (the -zk-session-timeout-min default) and
            # no lock-delay, as ZooKeeper's sessions.
            run = ZkFaultRun(cluster, seed)
            test.zk_run = run
        else:
            run = FaultRun(cluster, seed)
        run.leader()
        run.run(seconds, faults)
        final, writes = run.read_back()
        history = run.rec.history()
        for line in run.faults:
            print("  " + line, flush=True)
        print(run.summary(history), flush=True)
        registers = check_history(history, final=final, time_limit=60)
        locks = check_locks(history, server_writes=writes, ttl=run.ttl_s,
                            lock_delay=run.lock_delay_s)
        print(f"linearizability: {registers.valid}; locks: "
              f"{'valid' if locks.valid else 'INVALID'} ({len(writes)} fenced writes in the "
              f"server's record, {len(locks.stale_holders)} stale holders)", flush=True)
        if registers.valid is not True or not locks.valid:
            path = os.path.join(tempfile.gettempdir(), f"tenure-faults-{seed}.jsonl")
            run.rec.meta.update({"final": final, "server_writes": writes, "ttl": run.ttl_s,
                                 "lock_delay": run.lock_delay_s, "seed": seed})
            run.rec.dump(path)
            print(f"history saved to {path}: /usr/bin/python3 tests/lib/linearizability.py {path}; "
                  f"/usr/bin/python3 tests/lib/lock_checker.py {path}", flush=True)
        test.assertIs(registers.valid, True, registers.explain())
        test.assertTrue(locks.valid, locks.explain())
        # The workload did something under every fault.
        test.assertGreater(run.acked_writes, 0)
        test.assertGreater(run.grants, 0)
        test.assertGreater(run.fenced_ok, 0)
        print("a lock holder was frozen" if run.pauses_left == 0 else
              "no lock holder was frozen (none held the lock early enough)", flush=True)
