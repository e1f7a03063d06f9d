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
import os
import shutil
import sys
import tempfile
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, HERE)

import acl_ab  # noqa: E402
from callgrind_count import instructions_per_operation  # noqa: E402


def count(binary, bench, mode, workload, operations, work, warm):
    management = str(uuid.uuid4())
    token_file = os.path.join(work, f"tokens-{uuid.uuid4()}")
    if mode == "on":
        return instructions_per_operation(
            binary, bench, workload, operations, work,
            server_args=["-acl-enabled", "-acl-default-policy", "deny",
                         "-acl-initial-management", management],
            prepare=lambda server: acl_ab.set_up_acls(server, management, token_file),
            bench_args=["--token-file", token_file], warm=warm)
    return instructions_per_operation(binary, bench, workload, operations, work,
                                      prepare=acl_ab.pad_history, warm=warm)


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
