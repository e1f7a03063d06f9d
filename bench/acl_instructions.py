#!/usr/bin/python3
"""What ACLs cost in instructions: the server's instructions per request
with ACLs off and with ACLs on (default deny, 100 policies, 1,000 tokens, a
token on every request), counted by valgrind's callgrind, which counts the
same for the same binary and inputs whatever else the machine does. A
benchmark, not a test; bench/acl_ab.py measures throughput.

    /usr/bin/python3 bench/acl_instructions.py [WORKLOAD] [OPERATIONS] [RUNS]
    (default kv_put_c1 2000 2; renew_c1 and the like run the many-clients
    workloads with that many clients)

ACL_INSTRUCTIONS_WARM=1 runs the workload once (a tenth of OPERATIONS)
before counting, on both sides, so that the count leaves out each token's
first-request cost (compiling its policies). ACL_INSTRUCTIONS_KEEP=1 keeps
the callgrind files for callgrind_annotate.

The server runs under callgrind with instrumentation off while it starts
and the ACLs are set up, on (callgrind_control -i on) only while
tenure_bench --max-ops OPERATIONS runs, so the count is the timed phase's.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, HERE)

import acl_ab  # noqa: E402
from tenure_testlib import DevServer  # noqa: E402


def count(binary, bench, mode, workload, operations, work, warm):
    out_dir = tempfile.mkdtemp(dir=work)
    wrapper = os.path.join(out_dir, "tenure-under-callgrind")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec valgrind --tool=callgrind --instr-atstart=no "
                f"--callgrind-out-file={out_dir}/cg.%p.out {binary} \"$@\"\n")
    os.chmod(wrapper, 0o755)
    management = str(uuid.uuid4())
    args = (["-acl-enabled", "-acl-default-policy", "deny", "-acl-initial-management",
             management] if mode == "on" else [])
    token_file = os.path.join(out_dir, "tokens")
    with DevServer(extra_args=args, dev=False, binary=wrapper, startup_timeout=120) as server:
        if mode == "on":
            acl_ab.set_up_acls(server, management, token_file)
        else:
            acl_ab.pad_history(server)
        pid = str(server.process.pid)
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
        if mode == "on":
            command += ["--token-file", token_file]
        if warm:
            # The same workload once before counting: the server has then
            # compiled every token the bench sends, so what is counted is
            # the steady state rather than each token's first request.
            subprocess.run(command + ["--max-ops", str(max(operations // 10, 100))],
                           capture_output=True, text=True, timeout=1200, check=True)
        command += (["--rounds", str(operations)] if watchers else ["--max-ops", str(operations)])
        subprocess.run(["callgrind_control", "-i", "on", pid], capture_output=True, check=True)
        out = subprocess.run(command, capture_output=True, text=True, timeout=1200, check=True)
        subprocess.run(["callgrind_control", "-i", "off", pid], capture_output=True, check=True)
        subprocess.run(["callgrind_control", "-d", pid], capture_output=True, check=True)
    done = json.loads(out.stdout)["workloads"][0]["runs"][0]["metrics"]["count"]
    total = 0
    for path in glob.glob(os.path.join(out_dir, f"cg.{pid}.out*")):
        with open(path) as f:
            for line in f:
                if line.startswith(("totals:", "summary:")):
                    total = max(total, int(line.split()[1]))
    return total / done


def main():
    workload = sys.argv[1] if len(sys.argv) > 1 else "kv_put_c1"
    operations = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    warm = os.environ.get("ACL_INSTRUCTIONS_WARM") == "1"
    binary = os.path.abspath(os.environ.get("TENURE_BIN", os.path.join(ROOT, "build", "src",
                                                                        "tenure")))
    os.environ["TENURE_BIN"] = binary
    bench = os.environ.get("TENURE_BENCH", os.path.join(ROOT, "build", "bench", "tenure_bench"))
    work = tempfile.mkdtemp(prefix="tenure-acl-instructions-")
    try:
        per_op = {"off": [], "on": []}
        for _ in range(runs):
            for mode in ("off", "on"):
                per_op[mode].append(count(binary, bench, mode, workload, operations, work, warm))
                print(f"ACLs {mode}: {per_op[mode][-1]:,.0f} instructions per operation",
                      flush=True)
        off, on = min(per_op["off"]), min(per_op["on"])
        print(f"{workload}, {operations} operations: ACLs off {off:,.0f}, on {on:,.0f} "
              f"instructions per operation ({on / off - 1:+.1%}); every run: {per_op}")
    finally:
        if os.environ.get("ACL_INSTRUCTIONS_KEEP"):  # to read with callgrind_annotate
            print(f"callgrind output kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
