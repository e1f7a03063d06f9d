#!/usr/bin/python3
"""What metrics cost on the hot paths (docs/benchmarks.md, "What metrics
cost"): the same binary
with metrics on (the default) and with -disable-metrics, side by side in
interleaved runs, each on a fresh single server with a data dir, while a
scraper reads /metrics once a second as Prometheus would (with metrics off
it gets the 404). A benchmark, not a test.

    /usr/bin/python3 bench/metrics_cost.py [RUNS] [SECONDS] [WORKLOAD,...]   (default 9 runs of 5 s)
    /usr/bin/python3 bench/metrics_cost.py --instructions [WORKLOAD] [OPERATIONS] [RUNS]
        (default kv_put_c1 2000 2; renew_c1 renews with one client)

Workloads (tenure_bench --addr): durable puts/s at 64 clients (kv_put_c64)
and renewals/s at 64 clients (renew_c64). Prints the medians, the ratio of
the medians, the median of the pairs' on/off ratios (each pair runs back to
back, the order alternating from run to run) and the server's CPU time per
operation (/proc/PID/stat around the timed phase), which the machine's
noise moves much less than throughput.

--instructions counts the server's instructions per operation with
valgrind's callgrind instead (the same for the same binary and inputs,
whatever else the machine does), instrumentation on only while
tenure_bench --max-ops OPERATIONS runs, after a warm-up of a tenth as many;
no scraper runs then. Prints the lowest count of each side.
"""
import os
import shutil
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

from ab_report import print_ab_table, process_cpu_s, run_bench  # noqa: E402
from callgrind_count import instructions_per_operation  # noqa: E402
from tenure_testlib import DevServer, http_request, one_address_load_args  # noqa: E402

WORKLOADS = [  # (workload, metric, higher is better)
    ("kv_put_c64", "puts_per_s", True),
    ("renew_c64", "renewals_per_s", True),
]




class Scraper:
    """GET /metrics once a second until stopped."""

    def __init__(self, http_addr):
        self.http_addr = http_addr
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.statuses = []

    def run(self):
        while not self.stop.wait(1.0):
            try:
                self.statuses.append(http_request(self.http_addr, "GET", "/metrics",
                                                  timeout=5).status)
            except OSError:
                self.statuses.append(0)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=10)
        return False




def count_instructions(binary, bench, mode, workload, operations, work):
    # One client, a warm-up of a tenth as many operations first, no scraper.
    return instructions_per_operation(
        binary, bench, workload, operations, work,
        server_args=["-disable-metrics"] if mode == "off" else [], warm=True)


def instructions_main(argv):
    workload = argv[0] if argv else "kv_put_c1"
    operations = int(argv[1]) if len(argv) > 1 else 2000
    runs = int(argv[2]) if len(argv) > 2 else 2
    binary = os.path.abspath(os.environ.get("TENURE_BIN", os.path.join(ROOT, "build", "src",
                                                                        "tenure")))
    os.environ["TENURE_BIN"] = binary
    bench = os.environ.get("TENURE_BENCH", os.path.join(ROOT, "build", "bench", "tenure_bench"))
    work = tempfile.mkdtemp(prefix="tenure-metrics-instructions-")
    try:
        per_op = {"off": [], "on": []}
        for _ in range(runs):
            for mode in ("off", "on"):
                per_op[mode].append(count_instructions(binary, bench, mode, workload, operations,
                                                       work))
                print(f"metrics {mode}: {per_op[mode][-1]:,.0f} instructions per operation",
                      flush=True)
        off, on = min(per_op["off"]), min(per_op["on"])
        print(f"{workload}, {operations} operations: metrics off {off:,.0f}, on {on:,.0f} "
              f"instructions per operation ({on / off - 1:+.1%}); every run: {per_op}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--instructions":
        instructions_main(sys.argv[2:])
        return
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5
    if len(sys.argv) > 3:
        wanted = sys.argv[3].split(",")
        WORKLOADS[:] = [w for w in WORKLOADS if w[0] in wanted]
    os.environ.setdefault("TENURE_BIN", os.path.join(ROOT, "build", "src", "tenure"))
    bench = os.environ.get("TENURE_BENCH", os.path.join(ROOT, "build", "bench", "tenure_bench"))
    results = {}  # (mode, workload) -> [metric per run]
    cpu_us = {}  # (mode, workload) -> [server CPU microseconds per operation]
    for run in range(runs):
        order = ("off", "on") if run % 2 == 0 else ("on", "off")
        for workload, metric, _ in WORKLOADS:
            for mode in order:
                args = ["-disable-metrics"] if mode == "off" else []
                args += one_address_load_args()  # every client from 127.0.0.1
                with DevServer(extra_args=args, dev=False) as server:
                    with Scraper(server.http_addr) as scraper:
                        cpu_before = process_cpu_s(server.process.pid)
                        m = run_bench(bench, server, workload, seconds)
                        cpu_s = process_cpu_s(server.process.pid) - cpu_before
                    want = 200 if mode == "on" else 404
                    if any(s != want for s in scraper.statuses):
                        raise RuntimeError(f"scrapes with metrics {mode}: {scraper.statuses}")
                results.setdefault((mode, workload), []).append(m[metric])
                if m.get("count"):
                    cpu_us.setdefault((mode, workload), []).append(cpu_s * 1e6 / m["count"])
                print(f"run {run + 1} metrics {mode}: {workload} {metric} = {m[metric]:,.1f} "
                      f"({len(scraper.statuses)} scrapes)", flush=True)
    print(f"\n{runs} runs interleaved, {seconds:g} s each, 1 server with a data dir, "
          "/metrics scraped every second")
    print_ab_table("metrics", WORKLOADS, results, cpu_us, runs)

if __name__ == "__main__":
    main()
