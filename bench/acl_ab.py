#!/usr/bin/python3
"""What ACLs cost (docs/benchmarks.md, "What ACLs cost"): the same binary
with ACLs off and with ACLs on (default deny, 100 policies, 1,000 tokens,
every request carrying one of them), side by side in interleaved runs, each
on a fresh single server with a data dir. A benchmark, not a test.

    /usr/bin/python3 bench/acl_ab.py [RUNS] [SECONDS] [WORKLOAD,...]   (default 9 runs of 5 s, all)

Workloads (tenure_bench --addr): durable puts/s at 64 clients (kv_put_c64),
renewals/s (renew_c64), lock cycles/s (lock_cycle_c64) and the blocking-query
wake with 1,000 watchers (wake_w1000: time from the write to the last wake).
With ACLs on, each bench connection sends its own token (tenure_bench
--token-file): 64 clients use 64 of the 1,000 tokens, the 1,000 watchers all
of them. Every token links three of the 100 policies: one grants the bench's
keys and sessions (key_prefix "bench/" write, session_prefix "" write,
agent_prefix "" read for the watchers' control reads), two grant other
prefixes, so each check walks real rule trees.

Throughput on two shared cores varies by 20% from run to run, so besides
the medians it prints the median of the on/off ratios of the runs side by
side (each pair runs back to back, in alternating order) and, for the
closed-loop workloads, the server's CPU time per operation (from
/proc/PID/stat around the timed phase, over tenure_bench's operation
count), which the machine's noise moves much less.
"""
import json
import os
import sys
import tempfile
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

from ab_report import print_ab_table, process_cpu_s, run_bench  # noqa: E402
from tenure_testlib import (DevServer, http_request, one_address_load_args,  # noqa: E402
                            poll_until)

WORKLOADS = [  # (workload, metric, higher is better)
    ("kv_put_c64", "puts_per_s", True),
    ("renew_c64", "renewals_per_s", True),
    ("lock_cycle_c64", "cycles_per_s", True),
    ("wake_w1000", "last_wake_median_ms", False),
]
POLICIES = 100
TOKENS = 1000


def put(server, path, body, token):
    r = http_request(server.http_addr, "PUT", path, json.dumps(body).encode(),
                     headers={"X-Consul-Token": token}, timeout=30)
    if r.status != 200:
        raise RuntimeError(f"PUT {path}: {r.status} {r.body[:200]!r}")
    return r.json()


def set_up_acls(server, management, token_file):
    # The first leader writes the initial management token just after its
    # election: wait until it works.
    poll_until(lambda: http_request(server.http_addr, "GET", "/v1/acl/token/self",
                                    headers={"X-Consul-Token": management}).status == 200,
               timeout=30, message="the initial management token")
    bench_rules = ('key_prefix "bench/" { policy = "write" }\n'
                   'session_prefix "" { policy = "write" }\n'
                   'agent_prefix "" { policy = "read" }\n')
    ids = []
    for i in range(POLICIES):
        rules = bench_rules if i == 0 else (
            f'key_prefix "app-{i}/" {{ policy = "write" }}\n'
            f'key "app-{i}/secret" {{ policy = "deny" }}\n'
            f'session "node-{i}" {{ policy = "read" }}\n')
        ids.append(put(server, "/v1/acl/policy", {"Name": f"p{i}", "Rules": rules},
                       management)["ID"])
    secrets = []
    for t in range(TOKENS):
        links = [{"ID": ids[0]}, {"ID": ids[1 + t % (POLICIES - 1)]},
                 {"ID": ids[1 + (t * 7) % (POLICIES - 1)]}]
        secrets.append(put(server, "/v1/acl/token",
                           {"Description": f"bench {t}", "Policies": links},
                           management)["SecretID"])
    with open(token_file, "w") as f:
        f.write("\n".join(secrets) + "\n")


def pad_history(server):
    """The ACLs-off side's stand-in for set_up_acls: as many raft writes,
    so that both servers start the workload at indexes of the same size
    (X-Consul-Index and ?index= have as many digits) and with a raft log as
    long. All to one key: 1,100 keys would make every KV lookup of the
    workload dearer (a deeper tree) than anything the ACL side adds."""
    for i in range(POLICIES + TOKENS):
        r = http_request(server.http_addr, "PUT", "/v1/kv/pad", str(i).encode(), timeout=30)
        if r.status != 200:
            raise RuntimeError(f"PUT /v1/kv/pad: {r.status} {r.body[:200]!r}")






def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5
    if len(sys.argv) > 3:
        wanted = sys.argv[3].split(",")
        WORKLOADS[:] = [w for w in WORKLOADS if w[0] in wanted]
    os.environ.setdefault("TENURE_BIN", os.path.join(ROOT, "build", "src", "tenure"))
    # A copy of the load generator, so a rebuild cannot swap it mid-run.
    bench = os.environ.get("TENURE_BENCH", os.path.join(ROOT, "build", "bench", "tenure_bench"))
    work = tempfile.mkdtemp(prefix="tenure-acl-ab-")
    token_file = os.path.join(work, "tokens")
    results = {}  # (mode, workload) -> [metric per run]
    cpu_us = {}  # (mode, workload) -> [server CPU microseconds per operation, per run]
    for run in range(runs):
        # Each workload's pair runs back to back, the order alternating from
        # run to run, so a drift of the machine favours neither side.
        order = ("off", "on") if run % 2 == 0 else ("on", "off")
        for workload, metric, _ in WORKLOADS:
            for mode in order:
                management = str(uuid.uuid4())
                args = (["-acl-enabled", "-acl-default-policy", "deny",
                         "-acl-initial-management", management] if mode == "on" else [])
                args += one_address_load_args()  # every client from 127.0.0.1
                with DevServer(extra_args=args, dev=False) as server:
                    if mode == "on":
                        set_up_acls(server, management, token_file)
                    else:
                        pad_history(server)
                    cpu_before = process_cpu_s(server.process.pid)
                    m = run_bench(bench, server, workload, seconds,
                                  token_file if mode == "on" else None)
                    cpu_s = process_cpu_s(server.process.pid) - cpu_before
                results.setdefault((mode, workload), []).append(m[metric])
                operations = m.get("count")
                if operations:
                    cpu_us.setdefault((mode, workload), []).append(cpu_s * 1e6 / operations)
                print(f"run {run + 1} ACLs {mode}: {workload} {metric} = {m[metric]:,.1f}",
                      flush=True)
    print(f"\n{runs} runs interleaved, {seconds:g} s each, 1 server; ACLs on: default deny, "
          f"{POLICIES} policies, {TOKENS} tokens, a token on every request")
    print_ab_table("ACLs", WORKLOADS, results, cpu_us, runs)

if __name__ == "__main__":
    main()
