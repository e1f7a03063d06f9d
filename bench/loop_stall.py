#!/usr/bin/python3
"""Large but legal work against a 3-server tenure cluster: does the leader keep
its leadership, and how long does each server's loop stall? (docs/benchmarks.md,
"Loop stalls"; decision 0046.)

A benchmark, not a test: no thresholds. Each trial starts 3 `tenure server`
processes on loopback (tests/lib Cluster: default raft timeouts, a cluster key,
an operator token) and runs, against the leader:

  1. restore: PUT /v1/snapshot of a file of --keys keys (made once with
     bench/backup_maker's make_backup, the real encoder), then waits until
     every member has applied it;
  2. compaction: with the restored state in place, small writes from 16
     keep-alive clients until every member has taken a raft snapshot of it
     (tenure_raft_snapshots_taken_total moved; libraft takes one every
     16,384 entries): the log compaction a large state costs (decision 0049);
  3. reads: writes --read-keys values of 500,000 bytes under wide/ (about
     58 MiB of JSON when read back), then --reads concurrent
     GET /v1/kv/wide/?recurse, each read whole.

Around each phase it records, per member, the raft term, the leadership
leaderships-lost counter and the loop-stall metrics (tenure_loop_stall_seconds, a timer
due every 10 ms and how late it fired; tenure_loop_stall_max_seconds). A phase
"kept the leader" when no member's term moved and no leader stepped down
(and, for the restore, it answered 200). --phase picks one (compaction
restores first, unreported). Prints each trial,
then the medians over trials with the machine facts. Run with Debian's
/usr/bin/python3 (stdlib only):

    /usr/bin/python3 bench/loop_stall.py [--trials 3] [--tenure build/src/tenure]
        [--make-backup build/bench/backup_maker/make_backup] [--keys 1000000]
    /usr/bin/python3 bench/loop_stall.py --smoke     (1 small trial)

Only processes this script started are ever signalled.
"""

import argparse
import concurrent.futures
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

from tenure_testlib import Cluster, http_request, poll_until  # noqa: E402

sys.path.insert(0, HERE)
from cluster_failover import machine_facts as cluster_machine_facts  # noqa: E402

def scrape(member, headers):
    """term, leaderships lost, stall buckets (cumulative, by le), stall max."""
    resp = member.request("GET", "/metrics", headers=headers, timeout=30.0)
    if resp.status != 200:
        raise RuntimeError(f"GET /metrics: {resp!r}")
    out = {"buckets": {}, "term": 0, "lost": 0, "max": 0.0, "snapshots": 0}
    for line in resp.text.splitlines():
        if line.startswith("tenure_raft_term "):
            out["term"] = int(float(line.split()[1]))
        elif line.startswith('tenure_raft_leadership_changes_total{change="lost"}'):
            out["lost"] = int(float(line.split()[1]))
        elif line.startswith("tenure_raft_snapshots_taken_total "):
            out["snapshots"] = int(float(line.split()[1]))
        elif line.startswith("tenure_loop_stall_max_seconds "):
            out["max"] = float(line.split()[1])
        elif line.startswith("tenure_loop_stall_seconds_bucket{"):
            le = line.split('le="', 1)[1].split('"', 1)[0]
            out["buckets"][le] = int(float(line.split()[1]))
    return out


def worst_bucket(before, after):
    """The `le` of the highest stall bucket that gained an observation
    between two scrapes of one member: the phase's worst stall is at most it
    (and above the bucket below)."""
    def gained(key):
        return after["buckets"].get(key, 0) - before["buckets"].get(key, 0)
    keys = sorted((k for k in after["buckets"] if k != "+Inf"), key=float) + ["+Inf"]
    worst = "none"
    below = 0
    for key in keys:
        if gained(key) > below:
            worst = key
        below = gained(key)
    return worst


class Prober(threading.Thread):
    """Asks each member GET /v1/status/leader every 20 ms (one keep-alive
    connection each) and keeps the slowest answer: the loop stall as a client
    sees it, also for a binary without the stall metric."""

    def __init__(self, cluster):
        super().__init__(daemon=True)
        self.members = list(cluster.members)
        self.worst = [0.0] * len(self.members)
        self.stop = threading.Event()

    def run(self):
        clients = [m.client(timeout=30.0) for m in self.members]
        while not self.stop.is_set():
            for i, client in enumerate(clients):
                t0 = time.monotonic()
                try:
                    client.request("GET", "/v1/status/leader")
                except OSError:
                    pass
                self.worst[i] = max(self.worst[i], time.monotonic() - t0)
            self.stop.wait(0.02)

    def finish(self):
        self.stop.set()
        self.join()
        return [round(w * 1000) for w in self.worst]


def phase_report(cluster, headers, before, prober):
    probe_ms = prober.finish()
    after = [scrape(m, headers) for m in cluster.members]
    # A leader that steps down (no word from a majority for an election
    # timeout) may win again in the same term: count the losses too.
    moved = any(a["term"] != b["term"] or a["lost"] != b["lost"] for a, b in zip(after, before))
    return after, {
        "kept_leader": not moved,
        "terms": [a["term"] for a in after],
        "worst_stall_bucket": [worst_bucket(b, a) for b, a in zip(before, after)],
        "stall_max_s": [a["max"] for a in after],
        "probe_worst_ms": probe_ms,
    }


def applied_everywhere(cluster, key):
    for member in cluster.members:
        resp = member.request("GET", f"/v1/kv/{key}?stale", timeout=30.0)
        if resp.status != 200:
            return False
    return True


def run_trial(args, backup, log):
    value = b"w" * 500_000
    with Cluster(3, extra_args=("-session-ttl-multiplier", "1", "-http-max-conns-per-client",
                                "0")) as cluster:
        headers = cluster.operator_headers()
        leader = cluster.leader()
        first_key = "big/000000000"
        restore = None
        if args.phase in ("all", "restore", "compaction"):
            before = [scrape(m, headers) for m in cluster.members]
            with open(backup, "rb") as f:
                body = f.read()
            prober = Prober(cluster)
            prober.start()
            start = time.monotonic()
            resp = leader.request("PUT", "/v1/snapshot", body, headers=headers, timeout=300.0)
            answered = time.monotonic() - start
            if resp.status == 200:
                poll_until(lambda: applied_everywhere(cluster, first_key), timeout=300.0,
                           interval=0.2, message="the restore never reached every member")
            everywhere = time.monotonic() - start
            after, restore = phase_report(cluster, headers, before, prober)
            restore["kept_leader"] = restore["kept_leader"] and resp.status == 200
            restore.update({"status": resp.status, "answered_s": round(answered, 2),
                            "everywhere_s": round(everywhere, 2)})
            if args.phase == "compaction":
                restore = None
            else:
                log(f"  restore ({len(body)} bytes): {restore}")

        compaction = None
        if args.phase in ("all", "compaction"):
            compaction = run_compaction(cluster, headers, args)
            log(f"  compaction: {compaction}")

        reads = None
        if args.phase in ("all", "reads"):
            leader = cluster.leader()
            for i in range(args.read_keys):
                r = leader.request("PUT", f"/v1/kv/wide/{i:04d}", value, headers=headers,
                                   timeout=60.0)
                if r.status != 200:
                    raise RuntimeError(f"write wide/{i}: {r!r}")
            before = [scrape(m, headers) for m in cluster.members]

            def read(_):
                t0 = time.monotonic()
                r = http_request(leader.http_addr, "GET", "/v1/kv/wide/?recurse", headers=headers,
                                 timeout=300.0)
                return r.status, len(r.body), time.monotonic() - t0

            prober = Prober(cluster)
            prober.start()
            start = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(args.reads) as pool:
                results = list(pool.map(read, range(args.reads)))
            elapsed = time.monotonic() - start
            _, reads = phase_report(cluster, headers, before, prober)
            codes = [s for s, _, _ in results]
            reads.update({"statuses": {c: codes.count(c) for c in sorted(set(codes))},
                          "answer_mib": round(max(n for _, n, _ in results) / 2**20, 1),
                          # 429: no room in the unsent-output budget (docs/limits.md)
                          "all_done_s": round(elapsed, 2)})
            log(f"  reads ({args.reads} x recurse): {reads}")
        return restore, compaction, reads


def run_compaction(cluster, headers, args):
    """Small writes until every member took a raft snapshot of the state."""
    leader = cluster.leader()
    before = [scrape(m, headers) for m in cluster.members]
    done = threading.Event()
    written = [0] * 16

    def writer(n):
        client = leader.client(timeout=60.0)
        i = 0
        while not done.is_set() and i < args.compaction_writes_max // 16:
            r = client.request("PUT", f"/v1/kv/compaction/{n:02d}/{i % 64:02d}", b"x",
                               headers=headers)
            if r.status != 200:
                raise RuntimeError(f"write: {r!r}")
            i += 1
            written[n] = i

    prober = Prober(cluster)
    prober.start()
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        futures = [pool.submit(writer, n) for n in range(16)]
        poll_until(lambda: all(scrape(m, headers)["snapshots"] > b["snapshots"]
                               for m, b in zip(cluster.members, before)),
                   timeout=300.0, interval=1.0,
                   message="not every member took a raft snapshot")
        done.set()
        for f in futures:
            f.result()
    elapsed = time.monotonic() - start
    after, report = phase_report(cluster, headers, before, prober)
    report.update({"writes": sum(written), "snapshots_taken": [
        a["snapshots"] - b["snapshots"] for a, b in zip(after, before)],
        "all_done_s": round(elapsed, 2)})
    return report


def machine_facts():
    """cluster_failover's facts, and the load when this run started."""
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    return cluster_machine_facts() + [("load average at start", load)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="1 small trial")
    parser.add_argument("--tenure", default=os.path.join(ROOT, "build", "src", "tenure"))
    parser.add_argument("--make-backup",
                        default=os.path.join(ROOT, "build", "bench", "backup_maker", "make_backup"))
    parser.add_argument("--keys", type=int, default=1_000_000, help="keys in the restored file")
    parser.add_argument("--reads", type=int, default=12, help="concurrent prefix reads")
    parser.add_argument("--phase", choices=["all", "restore", "compaction", "reads"],
                        default="all")
    parser.add_argument("--compaction-writes-max", type=int, default=64_000,
                        help="give up on the compaction phase after this many writes")
    parser.add_argument("--read-keys", type=int, default=88,
                        help="500,000-byte values under the read prefix (88: ~58 MiB of JSON)")
    args = parser.parse_args()
    if args.smoke:
        args.trials, args.keys, args.reads, args.read_keys = 1, 20_000, 3, 4
    os.environ["TENURE_BIN"] = os.path.abspath(args.tenure)

    def log(line):
        print(line, flush=True)

    log("# Loop stalls under a large restore and large reads, 3 servers\n")
    log("command: /usr/bin/python3 " + " ".join(
        [os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]))
    for name, value in machine_facts():
        log(f"{name}: {value}")
    with tempfile.TemporaryDirectory(prefix="tenure-loop-stall-") as tmp:
        backup = os.path.join(tmp, "big.snap")
        made = subprocess.run([args.make_backup, backup, str(args.keys), "2", "big/"],
                              capture_output=True, text=True, check=True)
        log(made.stdout.strip())
        restores, compactions, reads = [], [], []
        for trial in range(args.trials):
            log(f"trial {trial + 1}:")
            restore, compaction, read = run_trial(args, backup, log)
            if restore is not None:
                restores.append(restore)
            if compaction is not None:
                compactions.append(compaction)
            if read is not None:
                reads.append(read)
    log("\nsummary over trials:")
    for name, rows in (("restore", restores), ("compaction", compactions), ("reads", reads)):
        if not rows:
            continue
        kept = sum(1 for r in rows if r["kept_leader"])
        worst = [max(r["stall_max_s"]) for r in rows]
        probe = [max(r["probe_worst_ms"]) for r in rows]
        log(f"  {name}: leader kept in {kept} of {len(rows)}; worst stall (max over members, "
            f"since start) median {statistics.median(worst) * 1000:.0f} ms, "
            f"max {max(worst) * 1000:.0f} ms; slowest probe answer median "
            f"{statistics.median(probe)} ms, max {max(probe)} ms; the phase's stall buckets "
            f"(le, per member) {[r['worst_stall_bucket'] for r in rows]}")
    ok = all(r["kept_leader"] for r in restores + compactions + reads)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
