#!/usr/bin/python3
"""tenure's ZooKeeper port next to ZooKeeper 3.8, both driven by the same
ZooKeeper client, in one interleaved run (docs/benchmarks-zookeeper-api.md).

Reuses bench/vs_etcd.py (servers on loopback, fresh data dirs and ports for
every measurement, fsync on, the tenure_vs load generator): tenure is
started as there plus `-zk-addr 127.0.0.1:Z` on every server, and the
driver's ZooKeeper mode (its own jute client, bench/vs/zk_conn.h, one
session per client) talks to the leader's ZooKeeper port exactly as it
talks to ZooKeeper. Next to both, tenure over its Consul HTTP API with the
same workload, so the report also shows what the ZooKeeper surface costs.

Workloads: durable setData at 1, 16 and 64 clients (Consul: a KV put); the
recipes' lock cycle on one hot lock at 1, 16 and 64 contenders (an
ephemeral sequential node, the lowest holds, each waiter watching its
predecessor; Consul: acquire, and a blocking query while refused); session
connect and close at 64 clients (Consul: session create and destroy);
watch fan-out with 1,000 and 10,000 watchers on one node (one-shot watches
set again after each event; the RSS each watcher costs the server).
ZooKeeper runs standalone and as a 3-server ensemble (the driver talks to
its leader, as to tenure's).

    /usr/bin/python3 bench/vs_zookeeper_api.py [--runs 3] [--out docs]   (about 10 min)
    /usr/bin/python3 bench/vs_zookeeper_api.py --smoke --out build/...   (about 1 min)

Writes <out>/benchmarks-zookeeper-api.md (only between the "generated"
markers) and <out>/benchmarks-zookeeper-api.json (every run), or
<out>/<--report>.md and .json. Exits 1 if
any measurement failed. Only processes this script started are ever
signalled, by PID, also on SIGTERM.
"""

import json
import os
import resource
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, HERE)
import vs_etcd as V  # noqa: E402
from cluster_failover import load_average  # noqa: E402

# name -> (system, servers, label)
CONFIGS = {
    "tenure_zk1": ("tenure_zk", 1, "tenure, ZooKeeper API"),
    "zk1": ("zk", 1, "ZooKeeper"),
    "tenure1": ("tenure", 1, "tenure, Consul API"),
    "tenure_zk3": ("tenure_zk", 3, "tenure, ZooKeeper API"),
    "zk3": ("zk", 3, "ZooKeeper"),
    "tenure3": ("tenure", 3, "tenure, Consul API"),
    # Clients on a follower, which splices each connection to the leader.
    "tenure_zk3f": ("tenure_zk_follower", 3, "tenure, ZooKeeper API, through a follower"),
}
ONE = ["tenure_zk1", "zk1", "tenure1"]
THREE = ["tenure_zk3", "zk3", "tenure3"]
# The other configuration each size's tenure ZooKeeper API is held to.
VERSUS = {"tenure_zk1": "zk1", "tenure_zk3": "zk3"}

SERVERS_CPU = ("servers_cpu_pct", "servers' CPU %", 0, None)
DRIVER_CPU = ("driver_cpu_pct", "load generator's CPU %", 0, None)
METRICS = {"kv_put": [m for m in V.METRICS["kv_put"] if m[0] != "servers_cpu_pct"]
           + [SERVERS_CPU, DRIVER_CPU],
           "lock_hot": V.METRICS["lock_hot"] + [SERVERS_CPU, DRIVER_CPU],
           "session_pairs": V.METRICS["session_pairs"] + [SERVERS_CPU, DRIVER_CPU],
           "watch": V.METRICS["watch"],
           "idle_rss": [("bytes_per_item", "server RSS per idle session, bytes", 0, False),
                        ("rss_after_mib", "server RSS with them, MiB", 1, False),
                        ("create_per_s", "sessions opened per second", 0, True)]}

# The target: tenure's ZooKeeper API >= 3x ZooKeeper on every
# throughput row, p99 at most ZooKeeper's.
THROUGHPUT_TARGET = 3.0
# And memory per session and per watch at most a tenth of ZooKeeper's.
MEMORY_TARGET = 0.1

SETTINGS = [
    ("tenure, ZooKeeper API", "the tenure command line of benchmarks-vs-etcd.md plus `-zk-addr "
                              "127.0.0.1:Z` on every server; the driver's ZooKeeper client "
                              "talks to the leader's ZooKeeper port"),
    ("ZooKeeper", "as in benchmarks-vs-etcd.md (Debian's zookeeper 3.8.0 on OpenJDK 17, "
                  "forceSync on), standalone, and as an ensemble of 3 servers on loopback "
                  "(each its own JVM, -Xmx1000m, initLimit 10, syncLimit 5) whose leader the "
                  "driver talks to"),
    ("tenure, Consul API", "as in benchmarks-vs-etcd.md: the same workload over Consul's HTTP "
                           "API (KV puts, blocking queries for the watchers)"),
    ("client", "build/bench/vs/tenure_vs: its own ZooKeeper client (jute over one TCP "
               "connection per session, requests pipelined per session), one HTTP/1.1 "
               "keep-alive connection per client for the Consul API; all clients on one "
               "client thread"),
    ("lock cycle", "ZooKeeper: kazoo's and Curator's recipe (create EPHEMERAL_SEQUENTIAL "
                   "under /bench-lock, getChildren; the lowest deletes its node, the others "
                   "exists-watch their predecessor and read the children again when it "
                   "goes), one session per contender; Consul: acquire with a session, while "
                   "refused a blocking query on the key; a cycle is acquire to release "
                   "answered"),
    ("session pairs", "ZooKeeper: a new connection, ConnectRequest (answered once the "
                      "session is created), closeSession (answered once it ended); Consul: "
                      "PUT /v1/session/create then /v1/session/destroy"),
]


def plan(smoke):
    """(case id, title, configs, workload, driver args, timeout s)."""
    s = 0.5 if smoke else ARGS.seconds
    base = ["--seconds", s]
    cases = []
    for c in ((1, 4) if smoke else (1, 16, 64)):
        cases.append((f"kv_put_c{c}", f"Durable setData (KV put), {c} client{'s' if c > 1 else ''}",
                      ONE + THREE, "kv_put", base + ["--clients", c], 120))
    for c in ((1, 4) if smoke else (1, 16, 64)):
        cases.append((f"lock_hot_c{c}", f"Lock cycle, one hot lock, {c} contender"
                      f"{'s' if c > 1 else ''}", ONE + THREE, "lock_hot",
                      base + ["--clients", c, "--mode", "consul"], 120))
    # What a follower's splice costs: the same writes through a follower
    # and on the leader (no ZooKeeper row: its ensemble's followers forward
    # writes in their own way).
    for c in ((1,) if smoke else (1, 16)):
        cases.append((f"follower_kv_put_c{c}", f"Durable setData through a follower, {c} "
                      f"client{'s' if c > 1 else ''}", ["tenure_zk3", "tenure_zk3f"], "kv_put",
                      base + ["--clients", c], 120))
    sc = 4 if smoke else 64
    cases.append((f"session_pairs_c{sc}", f"Session connect and close, {sc} clients",
                  ONE + THREE, "session_pairs", base + ["--clients", sc], 120))
    idle = 200 if smoke else 10000
    cases.append((f"idle_rss_{idle}", f"Server RSS, {idle:,} idle sessions",
                  ["tenure_zk1", "zk1"], "idle_rss", ["--count", idle], 600))
    for watchers in ((20,) if smoke else (1000, 10000)):
        # Consul's blocking queries hold one HTTP connection each, and the
        # HTTP listener serves at most (descriptors - 256) / 2 of them: not
        # 10,000 here (benchmarks-vs-etcd.md's watch rows say so).
        configs = ONE if watchers <= 1000 else ["tenure_zk1", "zk1"]
        cases.append((f"watch_w{watchers}", f"Watch fan-out, {watchers:,} watchers on one node",
                      configs, "watch", ["--watchers", watchers, "--rounds", 2 if smoke else 10],
                      600))
    return cases


def targets(report):
    lines, verdicts = [], []
    for case in report["cases"]:
        key, label, _, better = METRICS[case["workload"]][0]
        if key != "ops_per_s":
            continue
        for ours, theirs in VERSUS.items():
            if theirs not in case["configs"]:
                continue
            a = V.median_of(report, case["id"], ours, key)
            b = V.median_of(report, case["id"], theirs, key)
            r = a / b if a is not None and b else None
            ok = r is not None and r >= THROUGHPUT_TARGET
            verdicts.append(ok)
            size = "1 server" if CONFIGS[ours][1] == 1 else "3 servers"
            lines.append(f"  - {case['title']}, {size}: {label} {V.fmt(a)} ÷ {V.fmt(b)} = "
                         f"{'-' if r is None else f'{r:.2f}'} → **{'met' if ok else 'not met'}**")
    head = (f"- **tenure's ZooKeeper API ≥ {THROUGHPUT_TARGET:g}× ZooKeeper on every throughput "
            f"row**: **{'met' if verdicts and all(verdicts) else 'not met'}** "
            f"({sum(verdicts)} of {len(verdicts)} rows)")
    memory = []
    for case in report["cases"]:
        key = {"idle_rss": "bytes_per_item", "watch": "bytes_per_watcher"}.get(case["workload"])
        if key is None or "zk1" not in case["configs"]:
            continue
        a = V.median_of(report, case["id"], "tenure_zk1", key)
        b = V.median_of(report, case["id"], "zk1", key)
        r = a / b if a is not None and b else None
        ok = r is not None and r <= MEMORY_TARGET
        # Three decimals: a ratio near the target must not round onto it.
        memory.append(f"  - {case['title']}: bytes {V.fmt(a)} ÷ {V.fmt(b)} = "
                      f"{'-' if r is None else f'{r:.3f}'} → **{'met' if ok else 'not met'}**")
    if memory:
        memory.insert(0, f"- **memory per session and per watch ≤ {MEMORY_TARGET:g} of "
                         "ZooKeeper's** (server RSS):")
    if not verdicts:
        # No throughput row: memory's verdicts alone, or (the follower's
        # rows, tenure alone) none.
        head = [] if memory else [
            "- no row of this report has ZooKeeper in it: the issue's targets do not apply"]
        return head + memory
    return [head] + lines + memory


def markdown(report):
    out = []
    w = out.append
    out += V.report_preamble(report, targets(report), SETTINGS)
    for case in report["cases"]:
        w(f"### {case['title']}\n")
        for group in (ONE, THREE + ["tenure_zk3f"]):
            cfgs = [c for c in group if c in case["configs"]]
            if not cfgs:
                continue
            size = "1 server" if CONFIGS[cfgs[0]][1] == 1 else "3 servers"
            first = cfgs[0]
            w(f"| {size} | " + " | ".join(CONFIGS[c][2] for c in cfgs) + " | " +
              " | ".join(f"{CONFIGS[first][2]} ÷ {CONFIGS[c][2]}" for c in cfgs[1:]) + " |")
            w("|---|" + "---:|" * (2 * len(cfgs) - 1))
            for key, label, dec, _ in METRICS[case["workload"]]:
                m = {c: V.median_of(report, case["id"], c, key) for c in cfgs}
                if all(v is None for v in m.values()):
                    continue
                w(f"| {label} | " + " | ".join(V.fmt(m[c], dec) for c in cfgs) + " | " +
                  " | ".join(V.ratio(m[first], m[c]) for c in cfgs[1:]) + " |")
            w("")
    out += V.every_run_lines(report, METRICS, lambda c: f"{CONFIGS[c][2]}, {CONFIGS[c][1]}")
    return "\n".join(out)


def run():
    global ARGS
    p = V.side_by_side_arguments(__doc__)
    p.add_argument("--java", default="/usr/bin/java")
    p.add_argument("--report", default="benchmarks-zookeeper-api",
                   help="the report's file name in --out, without .md or .json (a run of "
                        "some cases with --only goes to a report of its own)")
    ARGS = p.parse_args()
    V.ARGS = ARGS  # vs_etcd's servers and measurements read their paths from here
    if ARGS.smoke:
        ARGS.runs = 1
    for tool in (ARGS.tenure, ARGS.driver):
        if not os.access(tool, os.X_OK):
            sys.exit(f"vs_zookeeper_api.py: not an executable: {tool} (scripts/build tenure "
                     "tenure_vs builds them)")
    if not os.path.exists(V.ZK_CLASSPATH.split(":")[0]):
        sys.exit("vs_zookeeper_api.py: ZooKeeper is not installed; run scripts/setup")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:  # 10,000 watchers: the driver and the servers inherit this
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    os.makedirs(ARGS.out, exist_ok=True)

    cases = [{"id": cid, "title": t, "configs": cf, "workload": wl, "args": a, "timeout": to}
             for cid, t, cf, wl, a, to in plan(ARGS.smoke)]
    if ARGS.only:
        wanted = ARGS.only.split(",")
        cases = [c for c in cases if any(c["id"].startswith(x) for x in wanted)]
    report = {"command": " ".join(["bench/vs_zookeeper_api.py"] + sys.argv[1:]),
              "mode": "smoke: tiny counts, the numbers mean nothing" if ARGS.smoke else "full",
              "runs": ARGS.runs,
              "cases": [{k: v for k, v in c.items() if k != "args"} for c in cases],
              "results": {c["id"]: {} for c in cases}, "failures": []}
    failures = report["failures"]
    machine = V.machine_facts()
    machine.append(("load average at start (1/5/15 min)", load_average()))
    machine.append(("disk sync-write latency at start", V.disk_latency(ARGS.data_parent)))
    report["settings"] = [
        ("timed phase", f"{0.5 if ARGS.smoke else ARGS.seconds} s per throughput run, "
                        "closed loop (each client one operation in flight)"),
        ("servers", "a fresh server (or cluster, new data dirs and ports) for every "
                    "measurement; the client drives the leader; 'servers' CPU %' = CPU of all "
                    "server processes over the driver's whole run, % of one core"),
    ]
    V.run_interleaved(
        report, cases, machine,
        lambda case, cfg: [V.measure(CONFIGS[cfg][0], CONFIGS[cfg][1], case["workload"],
                                     case["args"], case["timeout"])],
        lambda case: METRICS[case["workload"]][0][0])
    machine.append(("load average at end (1/5/15 min)", load_average()))
    machine.append(("disk sync-write latency at end", V.disk_latency(ARGS.data_parent)))
    report["machine"] = machine
    report["failures"] = [f.replace(ROOT + "/", "") for f in report["failures"]]
    report["machine"] = [(k, v.replace(ROOT + "/", "")) for k, v in report["machine"]]

    name = ARGS.report
    with open(os.path.join(ARGS.out, name + ".json"), "w") as f:
        json.dump(report, f, indent=1)
    generated = markdown(report)
    V.write_doc(os.path.join(ARGS.out, name + ".md"), generated,
                script="bench/vs_zookeeper_api.py",
                title="tenure's ZooKeeper API next to ZooKeeper 3.8",
                regenerate="scripts/bench --vs-zookeeper-api" + (
                    f" --only {ARGS.only} --report {ARGS.report}"
                    if ARGS.report != "benchmarks-zookeeper-api" else ""))
    print(generated)
    if failures:
        print(f"vs_zookeeper_api.py: {len(failures)} measurement(s) FAILED", file=sys.stderr)
        return 1
    return 0


def main():
    V.exit_on_sigterm()
    try:
        return run()
    finally:
        V.stop_everything()


ARGS = None

if __name__ == "__main__":
    sys.exit(main())
