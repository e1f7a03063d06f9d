#!/usr/bin/python3
"""Watch fan-out and idle-session memory of two tenure binaries side by
side (interleaved runs, a fresh one-server cluster each time): the tenure
half of bench/vs_etcd.py's watch_w10000 and idle_rss_100000 cases, without
etcd and ZooKeeper. A benchmark, not a test.

    /usr/bin/python3 bench/fanout_ab.py BEFORE_BIN AFTER_BIN [RUNS] [WATCHERS] [SESSIONS]
    e.g. bench/fanout_ab.py /tmp/old/tenure build/src/tenure 3 10000 100000

Each run starts `tenure server` (not -dev, -session-ttl-multiplier 1, as
vs_etcd.py does) and drives it with build/bench/vs/tenure_vs:
  --workload watch --watchers W --rounds 10: W connections park GET ?index=N&wait=60s
    on one key, one PUT wakes them; the time from the PUT to the last answer
    (median round), and the server's RSS growth per parked watcher, at the
    first round and again at the last (after answers, the steady state);
  --workload idle_rss --count S: S sessions (TTL 86400s) by 64 clients, the server's
    RSS growth per session and its RSS in all.
Also the server's CPU time (utime+stime from /proc) over the watch run: unlike
the latencies it hardly depends on what else the machine runs. RSS does not
either. RUNS default 3, WATCHERS 10000, SESSIONS 100000 (0 skips a part).
FANOUT_AB_API=etcd makes the sessions etcd leases, granted on the server's
etcd port (`-grpc-addr`) by tenure_vs's etcd client, as
bench/vs_etcd_api.py's idle_rss_100000 case does.
"""
import json
import os
import resource
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

from tenure_testlib import DevServer, free_port, one_address_load_args  # noqa: E402


def cpu_seconds(pid):
    """(user, system) CPU seconds of the process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def drive(driver, server, args, timeout, system="tenure", addr=None):
    out = subprocess.run([driver, "--system", system, "--addr", addr or server.http_addr,
                          "--server-pid", str(server.process.pid)] + [str(a) for a in args],
                         capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"tenure_vs {args}: {out.stderr[-2000:]}{out.stdout[-2000:]}")
    return json.loads(out.stdout)["metrics"]


def one_run(binary, driver, watchers, sessions):
    m = {}
    args = ["-session-ttl-multiplier", "1"]
    if watchers:
        with DevServer(extra_args=args + one_address_load_args(binary), binary=binary,
                       dev=False) as server:
            cpu0 = cpu_seconds(server.process.pid)
            w = drive(driver, server, ["--workload", "watch", "--watchers", watchers,
                                       "--rounds", 10], 900)
            user, system = cpu_seconds(server.process.pid)
            m["server_cpu_s"] = user + system - sum(cpu0)
            m["server_sys_s"] = system - cpu0[1]
            m.update({k: w[k] for k in ("last_median_ms", "wake_p50_ms", "wake_p99_ms",
                                        "bytes_per_watcher", "bytes_per_watcher_reparked",
                                        "rss_parked_mib") if k in w})
    if sessions:
        etcd = os.environ.get("FANOUT_AB_API") == "etcd"
        grpc_addr = f"127.0.0.1:{free_port()}"
        with DevServer(extra_args=args + one_address_load_args(binary) +
                       (["-grpc-addr", grpc_addr] if etcd else []), binary=binary,
                       dev=False) as server:
            s = drive(driver, server, ["--workload", "idle_rss", "--count", sessions], 900,
                      *(("etcd", grpc_addr) if etcd else ()))
            m["bytes_per_session"] = s["bytes_per_item"]
            m["rss_after_mib"] = s["rss_after_mib"]
    return m


ROWS = [("last_median_ms", "watchers: write to last watcher, median round, ms", 1),
        ("wake_p50_ms", "watchers: per-watcher p50, ms", 1),
        ("wake_p99_ms", "watchers: per-watcher p99, ms", 1),
        ("server_cpu_s", "watchers: server CPU over the run (connect, 10 rounds), s", 2),
        ("server_sys_s", "watchers: of which in the kernel, s", 2),
        ("bytes_per_watcher", "watchers: server RSS per parked watcher, bytes", 0),
        ("bytes_per_watcher_reparked",
         "watchers: the same, parked again in the last round, bytes", 0),
        ("rss_parked_mib", "watchers: server RSS with watchers parked, MiB", 1),
        ("bytes_per_session", "sessions: server RSS per idle session, bytes", 0),
        ("rss_after_mib", "sessions: server RSS with the sessions, MiB", 1)]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    binaries = (("before", os.path.abspath(sys.argv[1])), ("after", os.path.abspath(sys.argv[2])))
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    watchers = int(sys.argv[4]) if len(sys.argv) > 4 else 10000
    sessions = int(sys.argv[5]) if len(sys.argv) > 5 else 100000
    driver = os.environ.get("TENURE_VS", os.path.join(ROOT, "build", "bench", "vs", "tenure_vs"))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:  # thousands of watchers: the driver and the server inherit this
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    results = {"before": [], "after": []}
    for run in range(runs):
        for name, binary in binaries:
            m = one_run(binary, driver, watchers, sessions)
            results[name].append(m)
            print(f"run {run + 1} {name}: " + ", ".join(f"{k} {v:.2f}" for k, v in m.items()),
                  flush=True)
    print(f"\n{runs} runs interleaved (before, after, before, ...); medians, then each run")
    print("| measure | before | after | before runs | after runs |")
    print("|---|---:|---:|---|---|")
    for key, title, decimals in ROWS:
        if key not in results["before"][0]:
            continue
        b = [m[key] for m in results["before"]]
        a = [m[key] for m in results["after"]]
        each = lambda xs: " / ".join(f"{x:,.{decimals}f}" for x in xs)  # noqa: E731
        print(f"| {title} | {statistics.median(b):,.{decimals}f} | "
              f"{statistics.median(a):,.{decimals}f} | {each(b)} | {each(a)} |")


if __name__ == "__main__":
    main()
