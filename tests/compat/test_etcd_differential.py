"""tenure's etcd API next to etcd itself: the same seeded random requests
sent to Debian's etcd 3.4 and to `tenure server -dev -grpc-addr`, over
etcd's JSON gateway, every answer compared.

The client suites (etcdctl, clientv3, etcd3gw, Patroni) show that the calls
clients make work; this shows that the answers are etcd's in the corners
they do not visit: ranges with every option, past revisions, txns whose
compares fail, deletes of nothing, leases with keys, compaction, errors and
their texts, and watches replaying the history (every key with prev_kv,
each filter, one key, an interval, and one from a compacted revision).

What is normalised, and only that (docs/etcd-compat.md, "Known
differences"): revisions, which are raft log indexes in tenure (each write's
revision is mapped to etcd's revision of the same write, and must be that
write's; a header's revision to the latest write at or before it), the
header's cluster and member ids and raft term, and the seconds left on a
lease's timer.
"""

import base64
import bisect
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import tempfile
import unittest

from tenure_testlib import DevServer, free_port, poll_until

ETCD = "/usr/bin/etcd"
SEEDS = tuple(range(1, int(os.environ.get("DIFF_SEEDS", "3")) + 1))
OPS_PER_SEED = int(os.environ.get("DIFF_OPS", "150"))
PREFIX = b"diff/"
KEYS = [PREFIX + k for k in (b"a", b"a/1", b"a/2", b"b", b"c", b"c/x", b"d", b"")]


def b64(data):
    return base64.b64encode(data).decode()


def unb64(text):
    return base64.b64decode(text)


def prefix_end(key):
    """etcd's range_end for every key starting with `key`."""
    end = bytearray(key)
    while end and end[-1] == 0xFF:
        end.pop()
    if not end:
        return b"\0"
    end[-1] += 1
    return bytes(end)


class Gateway:
    """POSTs JSON to an etcd gateway on one keep-alive connection."""

    def __init__(self, address):
        host, port = address.rsplit(":", 1)
        self.conn = http.client.HTTPConnection(host, int(port), timeout=10)

    def call(self, path, body):
        self.conn.request("POST", path, json.dumps(body).encode(),
                          {"Content-Type": "application/json"})
        response = self.conn.getresponse()
        data = response.read()
        try:
            answer = json.loads(data) if data else {}
        except ValueError:
            answer = {"unparsed": data.decode(errors="replace")}
        return response.status, answer

    def close(self):
        self.conn.close()


class EtcdProcess:
    """Debian's etcd 3.4, one member on loopback, its data in a temporary
    directory; stopped by its PID."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="tenure-etcd-diff-")
        self.address = f"127.0.0.1:{free_port()}"
        peer = f"http://127.0.0.1:{free_port()}"
        self.log = open(os.path.join(self.dir, "etcd.log"), "wb")
        self.process = subprocess.Popen(
            [ETCD, "--name", "m1", "--data-dir", os.path.join(self.dir, "data"),
             "--listen-client-urls", f"http://{self.address}",
             "--advertise-client-urls", f"http://{self.address}",
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"m1={peer}", "--logger", "zap", "--log-level", "warn"],
            stdout=self.log, stderr=subprocess.STDOUT)

        def ready():
            if self.process.poll() is not None:
                raise RuntimeError(f"etcd exited: {self.log_tail()}")
            gateway = Gateway(self.address)
            try:
                status, answer = gateway.call("/v3/maintenance/status", {})
                return status == 200 and answer.get("leader")
            finally:
                gateway.close()
        poll_until(ready, timeout=30, message="etcd serving with a leader")

    def log_tail(self):
        with open(os.path.join(self.dir, "etcd.log"), "rb") as f:
            return f.read()[-3000:].decode(errors="replace")

    def close(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Revisions:
    """The pairs (tenure revision, etcd revision) of every write both made,
    to read tenure's revisions as etcd's."""

    def __init__(self):
        self.tenure = []  # ascending
        self.etcd = []

    def add(self, tenure_rev, etcd_rev):
        if self.etcd and etcd_rev == self.etcd[-1]:
            return
        self.tenure.append(tenure_rev)
        self.etcd.append(etcd_rev)

    def write(self, tenure_rev):
        """etcd's revision of the write tenure made at tenure_rev, or a
        marker that names the unknown one."""
        i = bisect.bisect_left(self.tenure, tenure_rev)
        if i < len(self.tenure) and self.tenure[i] == tenure_rev:
            return self.etcd[i]
        return f"<no write at tenure revision {tenure_rev}>"

    def at(self, tenure_rev):
        """etcd's revision of the latest write at or before tenure_rev."""
        i = bisect.bisect_right(self.tenure, tenure_rev)
        return self.etcd[i - 1] if i else f"<before every write: {tenure_rev}>"

    def to_tenure(self, etcd_rev):
        i = bisect.bisect_left(self.etcd, etcd_rev)
        if i < len(self.etcd) and self.etcd[i] == etcd_rev:
            return self.tenure[i]
        return None


class EtcdDifferentialTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(ETCD):
            # Not a skip: a check that did not run must not read as passed.
            raise AssertionError("needs Debian's etcd-server (scripts/setup installs it)")

    def setUp(self):
        self.etcd = EtcdProcess()
        self.addCleanup(self.etcd.close)
        port = free_port()
        self.tenure = DevServer(extra_args=["-grpc-addr", f"127.0.0.1:{port}"]).__enter__()
        self.tenure_address = f"127.0.0.1:{port}"
        self.addCleanup(self.tenure.__exit__, None, None, None)
        self.sides = {"etcd": Gateway(self.etcd.address), "tenure": Gateway(f"127.0.0.1:{port}")}
        for gateway in self.sides.values():
            self.addCleanup(gateway.close)
        self.revs = Revisions()
        self.compacted = 0
        self.addCleanup(self.report_dead_servers)  # first of the cleanups: servers still up
        self.sync_revisions()
        self.trace = []

    def report_dead_servers(self):
        """A server that died makes every later request fail: say why once."""
        tenure = getattr(self, "tenure", None)
        if tenure is not None and not tenure.alive():
            self.fail(f"tenure exited:\n{tenure.log_tail(60)}")
        if self.etcd.process.poll() is not None:
            self.fail(f"etcd exited:\n{self.etcd.log_tail()}")

    # --- normalising -------------------------------------------------------

    def sync_revisions(self):
        """Pairs the two stores' current revisions (the stores may start at
        different revisions: etcd at 1, tenure at its log's index)."""
        revisions = {}
        for side, gateway in self.sides.items():
            status, answer = gateway.call("/v3/kv/range", {"key": b64(b"\0"), "limit": 1})
            self.assertEqual(status, 200, answer)
            revisions[side] = int(answer["header"].get("revision", 0))
        self.revs.add(revisions["tenure"], revisions["etcd"])

    def norm(self, side, answer):
        """The answer with what may differ taken out or mapped to etcd's."""
        answer = json.loads(json.dumps(answer))
        if isinstance(answer, dict) and "header" in answer:
            header = answer.pop("header")
            if "revision" in header:
                rev = int(header["revision"])
                answer["header_revision"] = rev if side == "etcd" else self.revs.at(rev)
        self.map_kvs(side, answer)
        return answer

    def map_kvs(self, side, node):
        if isinstance(node, list):
            for item in node:
                self.map_kvs(side, item)
            return
        if not isinstance(node, dict):
            return
        for field in ("create_revision", "mod_revision"):
            if field in node and side == "tenure":
                node[field] = str(self.revs.write(int(node[field])))
        if "header" in node:  # a txn's ops carry headers too, with nothing else
            header = node["header"]
            if "revision" in header and side == "tenure":
                header["revision"] = str(self.revs.at(int(header["revision"])))
        for value in node.values():
            self.map_kvs(side, value)

    # --- one request on both ----------------------------------------------

    def both(self, path, body, tenure_body=None, writes=False, ignore=(), shown=None):
        """Sends body to etcd and tenure_body (or body) to tenure; records
        the write's revisions; asserts the normalised answers are equal and
        returns them. `shown` stands for a body too large to print."""
        status_e, etcd = self.sides["etcd"].call(path, body)
        status_t, ten = self.sides["tenure"].call(path, tenure_body or body)
        if writes and status_e == 200 and status_t == 200:
            self.revs.add(int(ten["header"].get("revision", 0)), int(etcd["header"].get("revision", 0)))
        etcd_n, ten_n = self.norm("etcd", etcd), self.norm("tenure", ten)
        for answer in (etcd_n, ten_n):
            for field in ignore:
                answer.pop(field, None)
        self.trace.append((path, shown or body))
        if (status_e, etcd_n) != (status_t, ten_n):
            steps = "\n".join(f"  {p} {json.dumps(b)}" for p, b in self.trace[-12:])
            self.fail(f"{path} {json.dumps(shown or body)}\n etcd:   {status_e} "
                      f"{json.dumps(etcd_n)[:2000]}\n tenure: {status_t} "
                      f"{json.dumps(ten_n)[:2000]}\nlast requests:\n{steps}")
        return etcd_n

    # --- random requests ---------------------------------------------------

    def random_key(self, rng):
        return rng.choice(KEYS)

    def random_range(self, rng, body):
        """A key, or a key and range_end (a prefix, an interval, or
        everything from the key on)."""
        key = self.random_key(rng)
        body["key"] = b64(key)
        shape = rng.randrange(4)
        if shape == 1:
            body["range_end"] = b64(prefix_end(key))
        elif shape == 2:
            other = self.random_key(rng)
            body["range_end"] = b64(max(key, other) + b"\0")
        elif shape == 3:
            body["range_end"] = b64(b"\0")
        return body

    def put(self, rng):
        body = {"key": b64(self.random_key(rng)), "value": b64(rng.choice([b"", b"v1", b"v2", bytes([rng.randrange(256)]) * rng.randrange(1, 40)]))}
        if rng.random() < 0.3:
            body["prev_kv"] = True
        if rng.random() < 0.1:
            body["ignore_value"] = True
            body.pop("value")
        if self.leases and rng.random() < 0.3:
            body["lease"] = str(rng.choice(self.leases))
        elif rng.random() < 0.1:
            body["ignore_lease"] = True
        self.both("/v3/kv/put", body, writes=True)

    def range(self, rng):
        body = self.random_range(rng, {})
        if rng.random() < 0.3:
            body["limit"] = str(rng.randrange(0, 4))
        if rng.random() < 0.4:
            body["sort_order"] = rng.choice(["NONE", "ASCEND", "DESCEND"])
            body["sort_target"] = rng.choice(["KEY", "VERSION", "CREATE", "MOD", "VALUE"])
        for flag in ("keys_only", "count_only", "serializable"):
            if rng.random() < 0.15:
                body[flag] = True
        tenure_body = dict(body)
        if rng.random() < 0.25 and len(self.revs.etcd) > 1:
            etcd_rev = rng.choice(self.revs.etcd[1:])
            body["revision"] = str(etcd_rev)
            tenure_body["revision"] = str(self.revs.to_tenure(etcd_rev))
        for field in ("min_mod_revision", "max_mod_revision", "min_create_revision",
                      "max_create_revision"):
            if rng.random() < 0.08 and len(self.revs.etcd) > 1:
                etcd_rev = rng.choice(self.revs.etcd[1:])
                body[field] = str(etcd_rev)
                tenure_body[field] = str(self.revs.to_tenure(etcd_rev))
        self.both("/v3/kv/range", body, tenure_body)

    def delete(self, rng):
        body = self.random_range(rng, {})
        if rng.random() < 0.5:
            body["prev_kv"] = True
        self.both("/v3/kv/deleterange", body, writes=True)

    def random_compare(self, rng):
        """A compare and its tenure form (revisions mapped)."""
        key = self.random_key(rng)
        compare = {"key": b64(key), "result": rng.choice(["EQUAL", "GREATER", "LESS",
                                                          "NOT_EQUAL"])}
        target = rng.choice(["VERSION", "CREATE", "MOD", "VALUE", "LEASE"])
        compare["target"] = target
        tenure_compare = dict(compare)
        if target == "VERSION":
            compare["version"] = tenure_compare["version"] = str(rng.randrange(0, 4))
        elif target == "VALUE":
            compare["value"] = tenure_compare["value"] = b64(rng.choice([b"", b"v1", b"v2"]))
        elif target == "LEASE":
            lease = rng.choice(self.leases + [0]) if self.leases else 0
            compare["lease"] = tenure_compare["lease"] = str(lease)
        else:
            field = "create_revision" if target == "CREATE" else "mod_revision"
            if rng.random() < 0.3 or len(self.revs.etcd) < 2:
                compare[field] = tenure_compare[field] = "0"
            else:
                etcd_rev = rng.choice(self.revs.etcd[1:])
                compare[field] = str(etcd_rev)
                tenure_compare[field] = str(self.revs.to_tenure(etcd_rev))
        if rng.random() < 0.15:
            end = b64(prefix_end(key))
            compare["range_end"] = tenure_compare["range_end"] = end
        return compare, tenure_compare

    def random_op(self, rng, depth):
        kind = rng.choice(["put", "range", "delete", "txn"] if depth < 1 else
                          ["put", "range", "delete"])
        if kind == "put":
            op = {"request_put": {"key": b64(self.random_key(rng)),
                                  "value": b64(rng.choice([b"t1", b"t2"])),
                                  "prev_kv": rng.random() < 0.3}}
            return op, op
        if kind == "range":
            op = {"request_range": self.random_range(rng, {})}
            return op, op
        if kind == "delete":
            op = {"request_delete_range": self.random_range(rng, {"prev_kv": True})}
            return op, op
        txn, tenure_txn = self.random_txn(rng, depth + 1)
        return {"request_txn": txn}, {"request_txn": tenure_txn}

    def random_txn(self, rng, depth=0):
        txn, tenure_txn = {}, {}
        pairs = [self.random_compare(rng) for _ in range(rng.randrange(0, 3))]
        if pairs:
            txn["compare"] = [p[0] for p in pairs]
            tenure_txn["compare"] = [p[1] for p in pairs]
        for branch in ("success", "failure"):
            ops = [self.random_op(rng, depth) for _ in range(rng.randrange(0, 3))]
            if ops:
                txn[branch] = [o[0] for o in ops]
                tenure_txn[branch] = [o[1] for o in ops]
        return txn, tenure_txn

    def txn(self, rng):
        txn, tenure_txn = self.random_txn(rng)
        self.both("/v3/kv/txn", txn, tenure_txn, writes=True)

    def lease_grant(self, rng):
        lease = rng.randrange(1, 1 << 40)
        self.both("/v3/lease/grant", {"ID": str(lease), "TTL": str(rng.randrange(60, 600))})
        self.leases.append(lease)

    def snapshot_read(self, rng):
        """A txn of ranges at one past revision, as concurrency.NewSTM reads
        its snapshot."""
        if len(self.revs.etcd) < 2:
            return
        etcd_rev = rng.choice(self.revs.etcd[1:])
        ranges = [self.random_range(rng, {}) for _ in range(rng.randrange(1, 3))]
        txn = {"success": [{"request_range": dict(r, revision=str(etcd_rev))} for r in ranges]}
        tenure_rev = str(self.revs.to_tenure(etcd_rev))
        tenure_txn = {"success": [{"request_range": dict(r, revision=tenure_rev)} for r in ranges]}
        self.both("/v3/kv/txn", txn, tenure_txn)

    def lease_grant_edge(self, rng):
        """TTLs at etcd's bounds, and an id in use."""
        if self.leases and rng.random() < 0.3:
            self.both("/v3/lease/grant", {"ID": str(rng.choice(self.leases)), "TTL": "60"})
            return
        lease = rng.randrange(1, 1 << 40)
        ttl = rng.choice([-5, 0, 1, 2, 3, 9_000_000_000, 9_000_000_001])
        answer = self.both("/v3/lease/grant", {"ID": str(lease), "TTL": str(ttl)})
        # A short lease ends during the run, at a moment each server picks
        # (tenure: TTL x 1.01 after the grant, docs/etcd-compat.md; etcd: at
        # its lessor's next check): it is not used again.
        if "error" not in answer and ttl >= 60:
            self.leases.append(lease)

    def lease_leases(self, rng):
        def ids(side, answer):  # short leases may be gone from one and not yet the other
            return sorted(int(lease["ID"]) for lease in answer.get("leases", [])
                          if int(lease["ID"]) in self.leases)
        status_e, etcd = self.sides["etcd"].call("/v3/lease/leases", {})
        status_t, ten = self.sides["tenure"].call("/v3/lease/leases", {})
        self.assertEqual((status_e, ids("etcd", etcd)), (status_t, ids("tenure", ten)))

    def bad_request(self, rng):
        """Requests etcd refuses before they apply: each must be refused the
        same way and change nothing."""
        key = b64(self.random_key(rng))
        path, body = rng.choice([
            ("/v3/kv/put", {"key": "", "value": b64(b"v")}),
            ("/v3/kv/put", {"key": key, "value": b64(b"v"), "ignore_value": True}),
            ("/v3/kv/put", {"key": key, "lease": "7", "ignore_lease": True}),
            ("/v3/kv/put", {"key": key, "value": b64(b"v"), "lease": str(rng.randrange(1, 1 << 40))}),
            ("/v3/kv/range", {"key": ""}),
            ("/v3/kv/deleterange", {"key": ""}),
            ("/v3/kv/txn", {"compare": [{"key": "", "target": "VALUE", "value": ""}]}),
            ("/v3/kv/txn", {"success": [{"request_put": {"key": b64(b"diff/n%d" % i), "value": ""}}
                                        for i in range(129)]}),
            ("/v3/kv/txn", {"success": [{"request_put": {"key": key}},
                                        {"request_put": {"key": key}}]}),
            ("/v3/kv/range", {"key": key, "revision": "1000000000"}),
            ("/v3/kv/compaction", {"revision": "1000000000"}),
            ("/v3/lease/revoke", {"ID": str(rng.randrange(1, 1 << 40))}),
            ("/v3/lease/grant", {"ID": "-3", "TTL": "60"}),
        ])
        self.both(path, body, writes=True)

    def lease_revoke(self, rng):
        known = self.leases and rng.random() < 0.9
        lease = rng.choice(self.leases) if known else rng.randrange(1, 1 << 40)
        self.both("/v3/lease/revoke", {"ID": str(lease)}, writes=True)
        if lease in self.leases:
            self.leases.remove(lease)

    def lease_timetolive(self, rng):
        known = self.leases and rng.random() < 0.8
        lease = rng.choice(self.leases) if known else rng.randrange(1, 1 << 40)
        answer = self.both("/v3/lease/timetolive", {"ID": str(lease), "keys": True},
                           ignore=("TTL",))
        return answer

    def compact(self, rng):
        if len(self.revs.etcd) < 3:
            return
        etcd_rev = rng.choice(self.revs.etcd[len(self.revs.etcd) // 2:])
        answer = self.both("/v3/kv/compaction", {"revision": str(etcd_rev)},
                           {"revision": str(self.revs.to_tenure(etcd_rev))})
        if "error" not in answer:
            self.compacted = max(self.compacted, etcd_rev)

    def watched(self, side, address, create, enough):
        """The results a gateway watch made with `create` delivers after its
        created answer, read from its stream of {"result": ...} lines until
        enough(results) (bounded by a socket timeout)."""
        host, port = address.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        try:
            conn.request("POST", "/v3/watch", json.dumps({"create_request": create}).encode())
            response = conn.getresponse()
            self.assertEqual(response.status, 200, side)
            results = []
            while not enough(results):
                try:
                    line = response.readline()
                except TimeoutError:
                    self.fail(f"{side}: the watch {create} ran dry after {results}")
                self.assertTrue(line, f"{side}: the watch stream ended after {results}")
                result = json.loads(line)["result"]
                result.pop("header", None)
                if result.get("created") and not result.get("canceled"):
                    continue  # the created answer, alone in its result on both
                results.append(result)
            return results
        finally:
            conn.close()

    def watched_events(self, side, address, create, count):
        """The first `count` events a watch made with `create` delivers."""
        def enough(results):
            events = sum((r.get("events", []) for r in results), [])
            if any(r.get("canceled") for r in results):
                self.fail(f"{side}: the watch {create} was canceled: {results}")
            return len(events) >= count
        events = sum((r.get("events", []) for r in self.watched(side, address, create, enough)),
                     [])
        self.assertEqual(len(events), count, f"{side}: {create}")
        if side == "tenure":
            self.map_kvs("tenure", events)
        return events

    def check_watch_replay(self):
        """Watches from the oldest revision not compacted replay the same
        events, with the same previous values, on both: every key of the
        test with prev_kv, each filter, one key, an interval; and a watch
        from a compacted revision is canceled the same way."""
        if len(self.revs.etcd) < 2:
            return
        # From the first write (the stores' starting revisions are no
        # writes), or the oldest revision a compaction left.
        start = max(self.compacted + 1, self.revs.etcd[1])
        if start > self.revs.etcd[-1] or self.revs.to_tenure(start) is None:
            return
        everything = {"key": b64(PREFIX), "range_end": b64(prefix_end(PREFIX)),
                      "prev_kv": True}

        def replay(create, count):
            on_etcd = self.watched_events("etcd", self.etcd.address,
                                          dict(create, start_revision=str(start)), count)
            on_tenure = self.watched_events(
                "tenure", self.tenure_address,
                dict(create, start_revision=str(self.revs.to_tenure(start))), count)
            for i, (e, t) in enumerate(zip(on_etcd, on_tenure)):
                self.assertEqual(e, t, f"event {i} of the watch {create} from etcd revision "
                                       f"{start}")
            return on_etcd

        # Every event up to the last write: etcd's count of them.
        etcd_all = []
        results = self.watched("etcd", self.etcd.address,
                               dict(everything, start_revision=str(start)),
                               lambda rs: rs and int(rs[-1]["events"][-1]["kv"]["mod_revision"])
                               >= self.revs.etcd[-1])
        for result in results:
            etcd_all += result.get("events", [])
        replay(everything, len(etcd_all))
        deletes = [e for e in etcd_all if e.get("type") == "DELETE"]
        if deletes:
            replay(dict(everything, filters=["NOPUT"]), len(deletes))
        if len(deletes) < len(etcd_all):
            replay({"key": everything["key"], "range_end": everything["range_end"],
                    "filters": ["NODELETE"]}, len(etcd_all) - len(deletes))
        by_key = {}
        for event in etcd_all:
            by_key.setdefault(event["kv"]["key"], []).append(event)
        busiest = max(sorted(by_key), key=lambda k: len(by_key[k]))
        replay({"key": busiest, "prev_kv": True}, len(by_key[busiest]))
        low, high = PREFIX + b"a/", PREFIX + b"c/"
        inside = [e for e in etcd_all if low <= unb64(e["kv"]["key"]) < high]
        if inside:
            replay(dict(everything, key=b64(low), range_end=b64(high)), len(inside))
        if self.compacted >= self.revs.etcd[1]:
            # From before the compaction: canceled, naming the compacted
            # revision (a write both made).
            compacted = {}
            for side, address, first in (("etcd", self.etcd.address, self.revs.etcd[1]),
                                         ("tenure", self.tenure_address, self.revs.tenure[1])):
                (result,) = self.watched(side, address, dict(everything, start_revision=str(first)),
                                         lambda rs: rs)
                if side == "tenure" and "compact_revision" in result:
                    result["compact_revision"] = str(self.revs.write(
                        int(result["compact_revision"])))
                compacted[side] = result
            self.assertEqual(compacted["etcd"], compacted["tenure"])

    # --- the tests -----------------------------------------------------------

    def test_requests_up_to_etcds_size_limit(self):
        """etcd's --max-request-bytes (1.5 MiB) on a Put and a Txn at its
        edge, and a request past gRPC's 2 MiB message limit: the same answer
        from both, and the large values read back the same."""
        key = PREFIX + b"big"
        # The largest value a Put of this key takes: the PutRequest (the key's
        # tag and length, the value's tag and 3-byte length) and tenure's
        # 17-byte envelope make 1,572,864 bytes. etcd's envelope holds a
        # request id whose varint is 9 or 10 bytes (17 or 18 in all) as its
        # member id falls, so the sizes step round the edge by two.
        edge = 1572864 - 17 - (2 + len(key)) - (1 + 3)
        for size in (512 * 1024 + 1, edge - 1, edge + 1, 2500000):
            self.both("/v3/kv/put", {"key": b64(key), "value": b64(bytes([size % 251]) * size)},
                      writes=True, shown={"key": b64(key), "value bytes": size})
        got = self.both("/v3/kv/range", {"key": b64(key)}, shown={"key": b64(key)})
        self.assertEqual(len(unb64(got["kvs"][0]["value"])), edge - 1)
        for count in (3, 4):  # 3 x 500,000 bytes fit, 4 do not
            ops = [{"request_put": {"key": b64(key + b"/" + str(i).encode()),
                                    "value": b64(b"t" * 500000)}} for i in range(count)]
            self.both("/v3/kv/txn", {"success": ops}, writes=True,
                      shown={"puts of 500,000 bytes": count})
        self.both("/v3/kv/range", {"key": b64(key + b"/"), "range_end": b64(key + b"0"),
                                   "count_only": True})

    def test_an_ended_lease_deletes_its_keys_as_etcd(self):
        """A lease left to run out takes its keys with it in one revision,
        in key order, each DELETE event with its previous value; the keys of
        no lease stay; TimeToLive then answers TTL -1: the same on both."""
        lease = 4242
        self.both("/v3/lease/grant", {"ID": str(lease), "TTL": "2"})
        base = PREFIX + b"exp/"
        for name, leased in ((b"b", True), (b"a", True), (b"c", False)):
            body = {"key": b64(base + name), "value": b64(b"v-" + name)}
            if leased:
                body["lease"] = str(lease)
            self.both("/v3/kv/put", body, writes=True)
        after_puts = self.revs.etcd[-1]

        def ended(side):
            status, answer = self.sides[side].call("/v3/lease/timetolive", {"ID": str(lease)})
            return status == 200 and answer.get("TTL") == "-1"
        poll_until(lambda: ended("etcd") and ended("tenure"), timeout=20,
                   message="the lease ended on both servers")
        create = {"key": b64(base), "range_end": b64(prefix_end(base)), "prev_kv": True}
        tenure_start = self.revs.to_tenure(after_puts) + 1
        deletes = {}
        for side, address, start in (("etcd", self.etcd.address, after_puts + 1),
                                     ("tenure", self.tenure_address, tenure_start)):
            results = self.watched(side, address, dict(create, start_revision=str(start)),
                                   lambda rs: sum(len(r.get("events", [])) for r in rs) >= 2)
            deletes[side] = sum((r.get("events", []) for r in results), [])
        self.assertEqual(len(deletes["etcd"]), 2, deletes)
        self.assertEqual(len(deletes["tenure"]), 2, deletes)
        # One revision for both deletes on each side: pair them, then compare.
        revisions = {side: {e["kv"]["mod_revision"] for e in events}
                     for side, events in deletes.items()}
        self.assertEqual([len(r) for r in revisions.values()], [1, 1], revisions)
        self.revs.add(int(revisions["tenure"].pop()), int(revisions["etcd"].pop()))
        self.map_kvs("tenure", deletes["tenure"])
        self.assertEqual(deletes["etcd"], deletes["tenure"])
        self.assertEqual([unb64(e["kv"]["key"]) for e in deletes["etcd"]],
                         [base + b"a", base + b"b"])
        self.both("/v3/kv/range", {"key": b64(base), "range_end": b64(prefix_end(base))})
        self.both("/v3/lease/timetolive", {"ID": str(lease), "keys": True})

    # --- the random histories ----------------------------------------------

    def test_random_histories_answer_as_etcd(self):
        steps = [(self.put, 30), (self.range, 30), (self.delete, 10), (self.txn, 20),
                 (self.lease_grant, 3), (self.lease_revoke, 2), (self.lease_timetolive, 3),
                 (self.compact, 1), (self.lease_grant_edge, 2), (self.lease_leases, 1),
                 (self.bad_request, 4), (self.snapshot_read, 3)]
        actions = [s for s, _ in steps]
        weights = [w for _, w in steps]
        self.leases = []
        for seed in SEEDS:
            rng = random.Random(seed)
            with self.subTest(seed=seed):
                for _ in range(OPS_PER_SEED):
                    rng.choices(actions, weights)[0](rng)
                self.check_watch_replay()


if __name__ == "__main__":
    unittest.main()
