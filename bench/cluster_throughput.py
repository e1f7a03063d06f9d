#!/usr/bin/python3
"""Durable KV put throughput of a 3-server tenure cluster, next to a single
server, at 1, 64 and 256 clients (docs/benchmarks.md, "3-server cluster").

A benchmark, not a test: no thresholds. For each run (default 3) and each
client count, in interleaved order (single, cluster, single, cluster...), it
starts fresh servers on loopback with the default settings (a lone server, or
3 servers bootstrapped from a static peer list), waits for a leader, and
drives the leader with `tenure_bench --addr LEADER --only kv_put_cN
--clients N` (the same load generator and KV put workload as the single-node
benchmark: closed-loop keep-alive clients on one thread, 100-byte
values over 1000 keys, each put a durable raft write). All servers and the
load generator share this machine's cores. CPU seconds of every server
process (all threads) are read from /proc around each tenure_bench run and
divided by its timed phase.

Prints every run, then the medians:

    /usr/bin/python3 bench/cluster_throughput.py [--runs 3] [--seconds 5]
    /usr/bin/python3 bench/cluster_throughput.py --smoke     (1 run, 1 s phases)

Only processes this script started are ever signalled.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, HERE)

from cluster_failover import (agreed_leader, cpu_seconds, load_average,  # noqa: E402
                              machine_facts, raft_settings)
from tenure_testlib import Cluster, one_address_load_args, poll_until  # noqa: E402

CLIENTS = (1, 64, 256)


def run_once(bench, servers, clients, seconds):
    """One tenure_bench run of kv_put_c<clients> against a fresh cluster of
    `servers` members; returns the metrics dict."""
    # Every client from 127.0.0.1: the per-client limit off.
    with Cluster(servers, extra_args=tuple(one_address_load_args())) as cluster:
        leader = poll_until(lambda: agreed_leader(cluster), timeout=30,
                            message="the members never agreed on a leader")
        pids = [m.process.pid for m in cluster.members]
        before = [cpu_seconds(p) for p in pids]
        started = time.monotonic()
        cmd = [bench, "--addr", leader.http_addr, "--only", f"kv_put_c{clients}",
               # kv_put_c1 always exists; --clients names the other one
               "--clients", str(clients if clients > 1 else 64), "--runs", "1",
               "--seconds", str(seconds),
               "--json"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120)
        took = time.monotonic() - started
        after = [cpu_seconds(p) for p in pids]
        if out.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr}\n"
                               f"{out.stdout[-2000:]}")
        report = json.loads(out.stdout)
        metrics = report["workloads"][0]["runs"][0]["metrics"]
        leader_index = cluster.members.index(leader)
        # Server CPU over the timed phase (count / rate): the servers are idle
        # but for heartbeats while tenure_bench starts, probes and reports.
        phase = metrics["count"] / metrics["puts_per_s"] if metrics.get("puts_per_s") else took
        cpu = [(a - b) / phase * 100 if a is not None and b is not None else None
               for a, b in zip(after, before)]
        metrics["leader_cpu_pct"] = cpu[leader_index]
        metrics["followers_cpu_pct"] = sum(c for i, c in enumerate(cpu)
                                           if i != leader_index and c is not None)
        # Every member must hold the data: a follower's stale read of a key the
        # workload wrote (keys are random over 1000 names; the probe key always).
        for member in cluster.members:
            poll_until(lambda: member.request("GET", "/v1/kv/bench/ready?stale").status == 200,
                       timeout=10, message=f"{member.http_addr} lacks bench/ready")
        return metrics, report


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per case (default 3)")
    parser.add_argument("--seconds", type=float, default=5.0,
                        help="timed phase of each run (default 5)")
    parser.add_argument("--smoke", action="store_true", help="1 run, 1 s phases")
    parser.add_argument("--tenure", default=os.path.join(ROOT, "build", "src", "tenure"))
    parser.add_argument("--bench", default=os.path.join(ROOT, "build", "bench", "tenure_bench"))
    parser.add_argument("--json", metavar="FILE", help="also write the raw results to FILE")
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.seconds = 1, 1.0
    for path in (args.tenure, args.bench):
        if not os.access(path, os.X_OK):
            parser.error(f"not an executable: {path}")
    os.environ["TENURE_BIN"] = os.path.abspath(args.tenure)

    def log(line):
        print(line, flush=True)

    command = " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:])
    facts = machine_facts()
    load_start = load_average()
    log("# durable KV put throughput: 3-server cluster vs single server\n")
    log(f"command: /usr/bin/python3 {command}")
    for name, value in facts:
        log(f"- {name}: {value}")
    log(f"- load average at start (1/5/15 min): {load_start}")
    for name, value in raft_settings([]):
        log(f"- {name}: {value}")
    log(f"- load: tenure_bench --addr LEADER --only kv_put_cN --clients N --seconds "
        f"{args.seconds:g}, 100-byte values over 1000 keys; fresh servers (new data dirs "
        f"under /tmp) for every run; {args.runs} runs per case, interleaved")
    log("")

    results = {}  # (servers, clients) -> [metrics]
    for run in range(1, args.runs + 1):
        for clients in CLIENTS:
            for servers in (1, 3):
                metrics, report = run_once(args.bench, servers, clients, args.seconds)
                metrics["disk"] = report["machine"].get("disk sync-write latency at start", "?")
                results.setdefault((servers, clients), []).append(metrics)
                log(f"[run {run}/{args.runs}] {servers} server{'s' if servers > 1 else ' '}, "
                    f"{clients:3d} clients: {metrics['puts_per_s']:8.0f} puts/s, "
                    f"p50 {metrics['p50_ms']:6.2f} ms, p99 {metrics['p99_ms']:7.2f} ms, "
                    f"max {metrics['max_ms']:6.1f} ms; CPU % of a core: leader "
                    f"{metrics['leader_cpu_pct']:.0f}, followers {metrics['followers_cpu_pct']:.0f}, "
                    f"bench {metrics.get('bench_cpu_pct', 0):.0f}; disk {metrics['disk']}")
    load_end = load_average()

    def med(servers, clients, key):
        values = [m[key] for m in results[(servers, clients)] if m.get(key) is not None]
        return statistics.median(values) if values else float("nan")

    log("")
    log(f"load average at end (1/5/15 min): {load_end}")
    log(f"medians of {args.runs} runs:\n")
    log("| clients | servers | puts/s | p50 ms | p99 ms | max ms | leader CPU % | "
        "followers CPU % (sum) | bench CPU % | 3 servers / 1 server |")
    log("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for clients in CLIENTS:
        for servers in (1, 3):
            ratio = med(3, clients, "puts_per_s") / med(1, clients, "puts_per_s")
            log(f"| {clients} | {servers} | {med(servers, clients, 'puts_per_s'):,.0f} | "
                f"{med(servers, clients, 'p50_ms'):.2f} | {med(servers, clients, 'p99_ms'):.2f} | "
                f"{med(servers, clients, 'max_ms'):.1f} | "
                f"{med(servers, clients, 'leader_cpu_pct'):.0f} | "
                f"{med(servers, clients, 'followers_cpu_pct'):.0f} | "
                f"{med(servers, clients, 'bench_cpu_pct'):.0f} | "
                f"{f'{ratio:.2f}' if servers == 3 else '-'} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": command, "machine": dict(facts), "load_start": load_start,
                       "load_end": load_end,
                       "results": {f"{s}x{c}": v for (s, c), v in results.items()}}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
