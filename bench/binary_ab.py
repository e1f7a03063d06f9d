#!/usr/bin/python3
"""Session renewals/s (or durable puts/s) at 64 clients on 1 and 3 servers,
two tenure binaries side by side (interleaved runs, fresh servers each
time): what a change costs, e.g. the barrier before each acknowledged
renewal (decision 0011) or tenure's own raft transport (decision 0012). A
benchmark, not a test.

    /usr/bin/python3 bench/binary_ab.py BEFORE_BIN AFTER_BIN [SERVERS] [RUNS] [WORKLOAD] [CLIENTS]
    e.g. bench/binary_ab.py old/tenure build/src/tenure 1,3 3 kv_put 256

SERVERS: comma-separated cluster sizes (default 1,3); RUNS (default 3);
WORKLOAD: renew (default) or kv_put; CLIENTS (default 64; 1 with kv_put is kv_put_c1). Drives the leader
with `tenure_bench --addr LEADER --only renew_cN (or kv_put_cN) --clients N --seconds 5`
(1,000 sessions renewed round-robin; 100-byte puts over 1,000 keys). A
binary that has `tenure keygen` runs with a cluster key and an operator
token, as production clusters do; an older one without.
"""
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, HERE)

from cluster_failover import agreed_leader  # noqa: E402
from tenure_testlib import Cluster, one_address_load_args, poll_until  # noqa: E402


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    binaries = (("before", sys.argv[1]), ("after", sys.argv[2]))
    sizes = [int(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "1,3").split(",")]
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    workload = sys.argv[5] if len(sys.argv) > 5 else "renew"
    clients = int(sys.argv[6]) if len(sys.argv) > 6 else 64
    metric = {"renew": "renewals_per_s", "kv_put": "puts_per_s"}[workload]
    # TENURE_BENCH: a copy of the load generator, so a rebuild cannot swap it mid-run.
    bench = os.environ.get("TENURE_BENCH", os.path.join(ROOT, "build", "bench", "tenure_bench"))
    results = {}
    for _ in range(runs):
        for name, binary in binaries:
            for servers in sizes:
                os.environ["TENURE_BIN"] = os.path.abspath(binary)
                keyed = subprocess.run([binary, "keygen"], capture_output=True).returncode == 0
                with Cluster(servers, extra_args=tuple(one_address_load_args(binary)),
                             secrets=keyed) as cluster:
                    leader = poll_until(lambda: agreed_leader(cluster), timeout=30)
                    # kv_put_c1 and lock_cycle_c1 are workloads of their own
                    # beside the many-clients one that --clients sizes.
                    own_c1 = clients == 1 and workload in ("kv_put", "lock_cycle")
                    many = [] if own_c1 else ["--clients", str(clients)]
                    out = subprocess.run(
                        [bench, "--addr", leader.http_addr, "--only", f"{workload}_c{clients}",
                         *many, "--runs", "1", "--seconds", "5", "--json"],
                        capture_output=True, text=True, timeout=200, check=True)
                m = json.loads(out.stdout)["workloads"][0]["runs"][0]["metrics"]
                results.setdefault((name, servers), []).append(m)
                print(f"{name} {servers} server(s): {m[metric]:,.0f} {workload}/s", flush=True)
    print(f"{workload}, {clients} clients, {runs} runs interleaved")
    print(f"| binary | servers | {workload}/s (median) | p50 ms | p99 ms | runs |")
    print("|---|---:|---:|---:|---:|---|")
    for (name, servers), ms in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        rates = [m[metric] for m in ms]
        p50 = statistics.median(m["p50_ms"] for m in ms)
        p99 = statistics.median(m["p99_ms"] for m in ms)
        each = ", ".join(f"{r:,.0f}" for r in rates)
        print(f"| {name} | {servers} | {statistics.median(rates):,.0f} | {p50:.2f} | {p99:.2f} | "
              f"{each} |")
    # Runs were interleaved (before, after, before, ...): the ratio within each
    # pair cancels most of the machine's drift between pairs.
    print("| servers | after/before, median of paired runs | each pair |")
    print("|---:|---:|---|")
    for servers in sizes:
        pairs = [a[metric] / b[metric]
                 for b, a in zip(results[("before", servers)], results[("after", servers)])]
        each = ", ".join(f"{r:.3f}" for r in pairs)
        print(f"| {servers} | {statistics.median(pairs):.3f} | {each} |")

if __name__ == "__main__":
    main()
