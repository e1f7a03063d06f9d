#!/usr/bin/python3
"""What TLS costs a session renewal in instructions, on both sides: the
server's and the load generator's (tenure_vs) instructions per renewal over
kept connections, in clear text and over TLS, at 1 and 64 clients, counted
by valgrind's callgrind (the same count however busy the machine is). The
TLS-cost target (docs/benchmarks-vs-etcd-tls.md) and decision 0021's addendum rest on
these counts.

    /usr/bin/python3 bench/tls_instructions.py [--runs 2] [--ops 20000] [--clients 1,64]

Certificates are made with the openssl command in a temporary directory
(tests/lib/test_pki.py, as bench/vs_etcd_tls.py does); the server takes
them as vs_etcd_tls.py gives them (-https-addr, -tls-cert-file,
-tls-key-file, -tls-ca-file, -tls-verify-incoming) and keeps its clear-text
listener for the harness's readiness check. The workload is tenure_vs
--workload keepalive (vs_etcd_tls.py's renewal case, which cycles 1,000
sessions; 64 here, each client renewing its own, which keeps the set-up
under callgrind short; a renewal touches one session either way): the
sessions made first, then --max-ops renewals, each client one in flight.

- server: tenure under callgrind (bench/callgrind_count.py's
  callgrind_server), instrumentation on only while one tenure_vs run goes;
  a warm-up run first; then a run of SMALL renewals and one of OPS
  renewals on the same server: (count(OPS) - count(SMALL)) / (OPS - SMALL)
  takes the sessions' creation and the connections' set-up (handshakes)
  out of the count.
- load generator: tenure_vs under callgrind from start to exit against a
  native server, the same two runs and the same subtraction.

Prints one line per count and the table of medians. Only processes this
script started are signalled (DevServer stops its own by PID).
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, HERE)

from callgrind_count import callgrind_command, callgrind_server  # noqa: E402
from tenure_testlib import DevServer, one_address_load_args  # noqa: E402
from test_pki import Pki  # noqa: E402

SESSIONS = 64
# Sessions made by the warm-up and the counted runs must not expire during a
# count (an expiry is a raft write): TTL 60 s x 10.
SERVER_FLAGS = ["-session-ttl-multiplier", "10"]
# Under callgrind the server (or the client) runs ~50x slower: 64 clients'
# handshakes queue for longer than the 10 s a new connection has for its
# first byte, and the server would close the last ones (a test hook, on
# every server here; no per-request cost).
SLOW_SERVER_ENV = {"TENURE_TEST_HTTP_FIRST_BYTE_TIMEOUT_MS": "600000"}


def server_args(pki, https_addr):
    if pki is None:
        return list(SERVER_FLAGS)
    return SERVER_FLAGS + ["-https-addr", https_addr, "-tls-cert-file", pki.server_cert,
                           "-tls-key-file", pki.server_key, "-tls-ca-file", pki.ca_cert,
                           "-tls-verify-incoming"]


def driver_command(args, addr, pki, clients, ops):
    cmd = [args.driver, "--system", "tenure", "--addr", addr, "--workload", "keepalive",
           "--sessions", str(SESSIONS), "--clients", str(clients), "--seconds", "3600",
           "--max-ops", str(ops)]
    if pki is not None:
        cmd += ["--ca-file", pki.ca_cert, "--cert-file", pki.client_cert,
                "--key-file", pki.client_key]
    return cmd


def renewals(stdout):
    result = json.loads(stdout.strip().splitlines()[-1])
    if result.get("error"):
        raise RuntimeError(f"tenure_vs: {result['error']}")
    return int(result["metrics"]["ops"])


def per_renewal(small, big):
    """(instructions, renewals) of the SMALL and the OPS run -> per renewal."""
    return (big[0] - small[0]) / (big[1] - small[1])


def count_server(args, pki, clients, work):
    from tenure_testlib import free_port
    https = f"127.0.0.1:{free_port()}"
    with callgrind_server(args.tenure, work, server_args(pki, https),
                          env=SLOW_SERVER_ENV) as (server, count):
        addr = https if pki else server.http_addr
        count(driver_command(args, addr, pki, clients, args.small))  # warm-up, not used
        runs = []
        for ops in (args.small, args.ops):
            instructions, stdout = count(driver_command(args, addr, pki, clients, ops))
            runs.append((instructions, renewals(stdout)))
    return per_renewal(*runs)


def count_driver(args, pki, clients, work):
    from tenure_testlib import free_port
    https = f"127.0.0.1:{free_port()}"
    with DevServer(extra_args=server_args(pki, https) + one_address_load_args(args.tenure),
                   dev=False, binary=args.tenure, env=SLOW_SERVER_ENV) as server:
        addr = https if pki else server.http_addr
        runs = []
        for ops in (args.small, args.ops):
            instructions, stdout = callgrind_command(
                driver_command(args, addr, pki, clients, ops), work)
            runs.append((instructions, renewals(stdout)))
    return per_renewal(*runs)


def cpu_seconds(pid):
    """(user, system) CPU seconds of process `pid` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def time_native(args, pki, clients, work):
    """No callgrind: µs of CPU per renewal, (server user, server system,
    driver user, driver system), from the SMALL and the NATIVE_OPS run's
    differences (the kernel's share, which callgrind does not count, and
    a check of equal instructions per cycle)."""
    from tenure_testlib import free_port
    https = f"127.0.0.1:{free_port()}"
    with DevServer(extra_args=server_args(pki, https) + one_address_load_args(args.tenure),
                   dev=False, binary=args.tenure, env=SLOW_SERVER_ENV) as server:
        addr = https if pki else server.http_addr
        pid = server.process.pid
        subprocess.run(driver_command(args, addr, pki, clients, args.small),
                       capture_output=True, check=True)  # warm-up
        runs = []
        for ops in (args.small, args.native_ops):
            s0 = cpu_seconds(pid)
            c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            out = subprocess.run(driver_command(args, addr, pki, clients, ops),
                                 capture_output=True, text=True, check=True)
            c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            s1 = cpu_seconds(pid)
            runs.append(((s1[0] - s0[0], s1[1] - s0[1], c1.ru_utime - c0.ru_utime,
                          c1.ru_stime - c0.ru_stime), renewals(out.stdout)))
    (small, n_small), (big, n_big) = runs
    return tuple((b - a) / (n_big - n_small) * 1e6 for a, b in zip(small, big))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tenure", default=os.path.join(ROOT, "build/src/tenure"))
    p.add_argument("--driver", default=os.path.join(ROOT, "build/bench/vs/tenure_vs"))
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--ops", type=int, default=20000, help="renewals of the counted run")
    p.add_argument("--small", type=int, default=2000,
                   help="renewals of the run subtracted (and of the server's warm-up)")
    p.add_argument("--clients", default="1,64")
    p.add_argument("--sides", default="server,driver")
    p.add_argument("--native-ops", type=int, default=200000,
                   help="renewals of the native (no callgrind) CPU-time run of --sides native")
    p.add_argument("--json", help="also write every count here")
    args = p.parse_args()
    if args.small >= args.ops:
        sys.exit("tls_instructions.py: --small must be below --ops")
    work = tempfile.mkdtemp(prefix="tls-instructions-")
    counts = {}  # (side, mode, clients) -> [per renewal, ...]
    try:
        pki = Pki(work)
        for run in range(1, args.runs + 1):
            for clients in [int(c) for c in args.clients.split(",")]:
                for side in args.sides.split(","):
                    for mode in ("clear", "tls"):
                        tls = pki if mode == "tls" else None
                        if side == "native":
                            t = time_native(args, tls, clients, work)
                            counts.setdefault(f"native {mode} c{clients}", []).append(t)
                            print(f"[run {run}] native {mode:<5} c{clients:<3} µs CPU per "
                                  "renewal: server user {:.2f} sys {:.2f}, driver user {:.2f} "
                                  "sys {:.2f}".format(*t), flush=True)
                            continue
                        fn = count_server if side == "server" else count_driver
                        n = fn(args, tls, clients, work)
                        counts.setdefault(f"{side} {mode} c{clients}", []).append(n)
                        print(f"[run {run}] {side:<6} {mode:<5} c{clients:<3} "
                              f"{n:,.0f} instructions per renewal", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(counts, f, indent=1)
    med = {k: statistics.median(v) for k, v in counts.items() if not k.startswith("native")}
    print("\n| clients | server clear | server TLS | driver clear | driver TLS | "
          "server TLS ÷ clear | (server + driver) clear ÷ TLS | server clear ÷ TLS |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for clients in [int(c) for c in args.clients.split(",")]:
        g = lambda side, mode: med.get(f"{side} {mode} c{clients}")  # noqa: E731
        sc, st, dc, dt = g("server", "clear"), g("server", "tls"), g("driver", "clear"), \
            g("driver", "tls")
        f = lambda v: "-" if v is None else f"{v:,.0f}"  # noqa: E731
        r = lambda a, b: "-" if a is None or b is None else f"{a / b:.2f}"  # noqa: E731
        both = (sc + dc) / (st + dt) if None not in (sc, st, dc, dt) else None
        print(f"| {clients} | {f(sc)} | {f(st)} | {f(dc)} | {f(dt)} | {r(st, sc)} | "
              f"{'-' if both is None else f'{both:.2f}'} | {r(sc, st)} |")
    native = {k: [statistics.median(x) for x in zip(*v)] for k, v in counts.items()
              if k.startswith("native")}
    if native:
        print("\n| native run | server user µs | server system µs | driver user µs | "
              "driver system µs | server instructions per user µs | driver instructions per "
              "user µs |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for key, (su, ss, du, ds) in sorted(native.items()):
            _, mode, c = key.split()
            sc, dc = med.get(f"server {mode} {c}"), med.get(f"driver {mode} {c}")
            f = lambda i, t: "-" if i is None or not t else f"{i / t:,.0f}"  # noqa: E731
            print(f"| {mode} {c} | {su:.2f} | {ss:.2f} | {du:.2f} | {ds:.2f} | {f(sc, su)} | "
                  f"{f(dc, du)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
