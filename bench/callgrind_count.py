"""The server's instructions per operation of one tenure_bench workload,
counted by valgrind's callgrind (the same count for the same binary and
inputs however busy the machine is). Shared by bench/acl_instructions.py,
bench/metrics_cost.py --instructions and bench/tls_instructions.py (which
drives the server with tenure_vs and counts tenure_vs too, with
callgrind_server and callgrind_command below).

The server runs under callgrind with instrumentation off while it starts and
while `prepare` runs, on (callgrind_control -i on) only while tenure_bench
--max-ops OPERATIONS (or --rounds, for wake_wN) runs.
"""
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "lib"))

from tenure_testlib import DevServer, one_address_load_args  # noqa: E402


def _instructions(path):
    """The instructions in one callgrind file (its totals: line; a dump
    after callgrind_control -z says summary: 0)."""
    total = 0
    with open(path) as f:
        for line in f:
            if line.startswith(("totals:", "summary:")):
                total = max(total, int(line.split()[1]))
    return total


@contextlib.contextmanager
def callgrind_server(binary, work, server_args=(), dev=False, env=None):
    """A tenure server under callgrind with instrumentation off, as a context
    manager yielding (server, count). count(command) runs `command` (a
    client, natively) with the server's instrumentation on and returns
    (the instructions the server ran meanwhile, the command's stdout); it
    can be called several times (each count is one callgrind dump). env:
    more environment for the server."""
    out_dir = tempfile.mkdtemp(dir=work)
    wrapper = os.path.join(out_dir, "tenure-under-callgrind")
    with open(wrapper, "w") as f:
        # TENURE_MALLOC_HUGETLB=0: the server must not re-execute itself
        # (decision 0046), which valgrind would not follow.
        f.write("#!/bin/sh\nTENURE_MALLOC_HUGETLB=0 exec valgrind --tool=callgrind "
                "--instr-atstart=no "
                f"--callgrind-out-file={out_dir}/cg.%p.out {binary} \"$@\"\n")
    os.chmod(wrapper, 0o755)
    # Every client from 127.0.0.1: the per-client limit off.
    with DevServer(extra_args=list(server_args) + one_address_load_args(binary), dev=dev,
                   binary=wrapper, env=env,
                   startup_timeout=120) as server:
        pid = str(server.process.pid)
        dumps = [0]

        def count(command):
            control = lambda *a: subprocess.run(["callgrind_control", *a, pid],  # noqa: E731
                                                capture_output=True, check=True)
            control("-z")
            control("-i", "on")
            out = subprocess.run(command, capture_output=True, text=True, timeout=1200,
                                 check=True)
            control("-i", "off")
            control("-d")  # writes cg.PID.out.N, N = 1, 2... and zeroes the counters
            dumps[0] += 1
            return _instructions(os.path.join(out_dir, f"cg.{pid}.out.{dumps[0]}")), out.stdout

        yield server, count


def callgrind_command(command, work, timeout=1200):
    """Runs `command` under callgrind, instrumented from its start to its
    exit; returns (its instructions, its stdout)."""
    out_dir = tempfile.mkdtemp(dir=work)
    out_file = os.path.join(out_dir, "cg.out")
    env = dict(os.environ, TENURE_MALLOC_HUGETLB="0")  # no re-exec under valgrind
    out = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}",
                          *command], capture_output=True, text=True, timeout=timeout, check=True,
                         env=env)
    return _instructions(out_file), out.stdout


def instructions_per_operation(binary, bench, workload, operations, work, server_args=(),
                               prepare=None, bench_args=(), warm=False):
    """prepare(server), if given, runs before counting (ACL set-up...);
    bench_args go to every tenure_bench run; warm runs the workload once (a
    tenth of OPERATIONS) before counting, so the count is the steady state."""
    with callgrind_server(binary, work, server_args) as (server, count):
        if prepare:
            prepare(server)
        command = [bench, "--addr", server.http_addr, "--only", workload, "--runs", "1",
                   "--seconds", "600", "--json"]
        # renew_c1, lock_cycle_c8...: the many-clients workloads at that
        # count. One client makes the count repeatable to a few
        # instructions: one request per turn of the loop, no batching.
        clients = re.fullmatch(r"(renew|kv_put|lock_cycle|session_pair)_c(\d+)", workload)
        if clients and workload not in ("kv_put_c1", "lock_cycle_c1"):
            command += ["--clients", clients.group(2)]
        # wake_w1000 and the like: OPERATIONS is its rounds (every round
        # wakes every watcher once; the count is per wake-up).
        watchers = re.fullmatch(r"wake_w(\d+)", workload)
        if watchers:
            command += ["--watchers", watchers.group(1)]
        command += list(bench_args)
        if warm:
            subprocess.run(command + ["--max-ops", str(max(operations // 10, 100))],
                           capture_output=True, text=True, timeout=1200, check=True)
        command += (["--rounds", str(operations)] if watchers else ["--max-ops", str(operations)])
        total, stdout = count(command)
    done = json.loads(stdout)["workloads"][0]["runs"][0]["metrics"]["count"]
    return total / done
