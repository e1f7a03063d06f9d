"""What the A/B cost benches share (acl_ab.py, metrics_cost.py): the server's
CPU per operation, one run of the load generator, and the summary table of
interleaved off/on runs."""
import json
import os
import statistics
import subprocess


def process_cpu_s(pid):
    """User + system CPU seconds of a process so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_bench(bench, server, workload, seconds, token_file=None):
    """One run of `workload` by the load generator; its metrics."""
    args = [bench, "--addr", server.http_addr, "--only", workload, "--runs", "1",
            "--seconds", str(seconds), "--json"]
    if token_file:
        args += ["--token-file", token_file]
    out = subprocess.run(args, capture_output=True, text=True, timeout=600, check=True)
    return json.loads(out.stdout)["workloads"][0]["runs"][0]["metrics"]


def print_ab_table(feature, workloads, results, cpu_us, runs):
    """The off/on table. workloads: (workload, metric, higher_is_better);
    results and cpu_us: (mode, workload) -> one value per run."""
    print(f"| workload | metric | {feature} off (median) | {feature} on (median) "
          "| on/off of the medians | median of the pairs' on/off "
          "| server CPU µs/op off / on | runs |")
    print("|---|---|---|---|---|---|---|---|")
    for workload, metric, higher in workloads:
        offs, ons = results[("off", workload)], results[("on", workload)]
        off, on = statistics.median(offs), statistics.median(ons)
        pairs = statistics.median(b / a for a, b in zip(offs, ons) if a)
        cpu = "-"
        if cpu_us.get(("off", workload)) and cpu_us.get(("on", workload)):
            cpu = (f"{statistics.median(cpu_us[('off', workload)]):.1f} / "
                   f"{statistics.median(cpu_us[('on', workload)]):.1f}")
        print(f"| {workload} | {metric} ({'higher' if higher else 'lower'} is better) | "
              f"{off:,.1f} | {on:,.1f} | {on / off:.3f} | {pairs:.3f} | {cpu} | {runs} |")
    print("\nEvery run (off / on): " + json.dumps(
        {f"{w} {m}": {"off": results[("off", w)], "on": results[("on", w)]}
         for w, m, _ in workloads}))
