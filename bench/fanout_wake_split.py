#!/usr/bin/python3
"""Where a watch fan-out's wake time goes: the server's side (from the write's
apply to the last answer handed to the kernel, logged by Waiters at
-log-level debug as "woke N blocking queries in U us") against what the load
generator sees (from sending the PUT to each watcher's complete answer), and
the CPU the load generator spends. A benchmark, not a test.

    /usr/bin/python3 bench/fanout_wake_split.py BINARY [WATCHERS] [ROUNDS] [RUNS]
    e.g. bench/fanout_wake_split.py build/src/tenure 9000 10 3

Each run: a fresh `tenure server` (not -dev, -session-ttl-multiplier 1,
-log-level debug, as bench/fanout_ab.py), then build/bench/vs/tenure_vs
--workload watch --watchers W --rounds R. Printed per run: the server's wake
loop per round (median and max, ms), the client's write-to-last-watcher
(median round) and per-watcher p50, the client's CPU seconds over the whole
run (connects, R rounds of W re-parking GETs and W answers) and the
server's. Times depend on what else the machine runs.
"""
import json
import os
import re
import resource
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

from tenure_testlib import DevServer, one_address_load_args  # noqa: E402

WOKE = re.compile(r"woke (\d+) blocking queries in (\d+) us")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick


def one_run(binary, driver, watchers, rounds):
    args = ["-session-ttl-multiplier", "1", "-log-level", "debug"]
    args += one_address_load_args(binary)  # every watcher from 127.0.0.1
    with DevServer(extra_args=args, binary=binary, dev=False) as server:
        cpu0 = cpu_seconds(server.process.pid)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run([driver, "--system", "tenure", "--addr", server.http_addr,
                              "--server-pid", str(server.process.pid), "--workload", "watch",
                              "--watchers", str(watchers), "--rounds", str(rounds)],
                             capture_output=True, text=True, timeout=900)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if out.returncode != 0:
            raise RuntimeError(f"tenure_vs: {out.stderr[-2000:]}{out.stdout[-2000:]}")
        metrics = json.loads(out.stdout)["metrics"]
        server_cpu = cpu_seconds(server.process.pid) - cpu0
        loops = [int(m.group(2)) / 1000.0 for m in WOKE.finditer(server.log())
                 if int(m.group(1)) >= watchers]
    client_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "server_wake_loop_median_ms": statistics.median(loops) if loops else float("nan"),
        "server_wake_loop_max_ms": max(loops) if loops else float("nan"),
        "rounds_logged": len(loops),
        "client_last_median_ms": metrics.get("last_median_ms"),
        "client_wake_p50_ms": metrics.get("wake_p50_ms"),
        "client_cpu_s": round(client_cpu, 2),
        "server_cpu_s": round(server_cpu, 2),
    }


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    watchers = int(sys.argv[2]) if len(sys.argv) > 2 else 9000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    driver = os.path.join(ROOT, "build", "bench", "vs", "tenure_vs")
    for run in range(runs):
        print(json.dumps({"run": run + 1, **one_run(binary, driver, watchers, rounds)}),
              flush=True)


if __name__ == "__main__":
    main()
