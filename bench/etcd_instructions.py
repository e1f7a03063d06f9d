#!/usr/bin/python3
"""What a durable put and a lease keepalive cost tenure in instructions on
each of its surfaces: the server's instructions per operation over Consul's
HTTP API, over etcd's gRPC API and (puts only: setData) over ZooKeeper's
port, from the same load generator (tenure_vs --system tenure / etcd / zk),
counted by valgrind's callgrind
(the same count however busy the machine is). The load generator shares
this machine's two cores with the servers in docs/benchmarks-etcd-api.md,
so its throughput ratios say less about the servers than these counts do;
the generator's own instructions per operation are counted too, since
gRPC's client is the heavier one.

    /usr/bin/python3 bench/etcd_instructions.py [--runs 2] [--ops 20000] [--clients 1,64]
        [--apis consul,etcd,zk,etcd-h2]

- server: tenure under callgrind (bench/callgrind_count.py's
  callgrind_server) with `-grpc-addr`, instrumentation on only while one
  tenure_vs run goes; a warm-up run first; then a run of SMALL operations
  and one of OPS on the same server: (count(OPS) - count(SMALL)) / (OPS -
  SMALL) takes the set-up (connections, leases or sessions) out.
- load generator: tenure_vs under callgrind from start to exit against a
  native server, the same two runs and the same subtraction.

Prints one line per count and the table of medians. Only processes this
script started are signalled (DevServer stops its own by PID).
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, HERE)

from callgrind_count import callgrind_command, callgrind_server  # noqa: E402
from tenure_testlib import DevServer, free_port, one_address_load_args  # noqa: E402

SESSIONS = 64
# Sessions and leases made by the warm-up and the counted runs must not
# expire during a count (an expiry is a raft write): sessions' TTL 60 s x 10;
# leases end at TTL x 1.01 whatever the multiplier, so the keepalive runs
# renew them well within it.
SERVER_FLAGS = ["-session-ttl-multiplier", "10"]
# Under callgrind the server runs ~50x slower (see bench/tls_instructions.py).
SLOW_SERVER_ENV = {"TENURE_TEST_HTTP_FIRST_BYTE_TIMEOUT_MS": "600000"}
WORKLOADS = ("kv_put", "keepalive")
NAMES = {"consul": "Consul API", "etcd": "etcd API", "zk": "ZooKeeper API",
         "etcd-h2": "etcd API, light client"}


# tenure_vs's --system for each API; etcd-h2 is the etcd port driven by the
# driver's light client (--client h2, bench/vs/etcd_h2.cc) instead of gRPC's.
SYSTEMS = {"consul": "tenure", "etcd": "etcd", "zk": "zk", "etcd-h2": "etcd"}


def driver_command(args, api, addr, workload, clients, ops):
    cmd = [args.driver, "--system", SYSTEMS[api], "--addr", addr,
           "--workload", workload, "--clients", str(clients), "--seconds", "3600",
           "--max-ops", str(ops)]
    if workload == "keepalive":
        cmd += ["--sessions", str(SESSIONS)]
    if api == "etcd-h2":
        cmd += ["--client", "h2"]
    return cmd


def operations(stdout):
    result = json.loads(stdout.strip().splitlines()[-1])
    if result.get("error"):
        raise RuntimeError(f"tenure_vs: {result['error']}")
    return int(result["metrics"]["ops"])


def per_operation(small, big):
    return (big[0] - small[0]) / (big[1] - small[1])


def api_ports():
    """The server's flags for the etcd and ZooKeeper ports, and their addresses."""
    addrs = {"etcd": f"127.0.0.1:{free_port()}", "zk": f"127.0.0.1:{free_port()}"}
    addrs["etcd-h2"] = addrs["etcd"]
    return ["-grpc-addr", addrs["etcd"], "-zk-addr", addrs["zk"]], addrs


def count_server(args, api, workload, clients, work):
    flags, addrs = api_ports()
    with callgrind_server(args.tenure, work, SERVER_FLAGS + flags,
                          env=SLOW_SERVER_ENV) as (server, count):
        addr = addrs.get(api, server.http_addr)
        count(driver_command(args, api, addr, workload, clients, args.small))  # warm-up
        runs = []
        for ops in (args.small, args.ops):
            instructions, stdout = count(driver_command(args, api, addr, workload, clients, ops))
            runs.append((instructions, operations(stdout)))
    return per_operation(*runs)


def count_driver(args, api, workload, clients, work):
    flags, addrs = api_ports()
    with DevServer(extra_args=SERVER_FLAGS + flags + one_address_load_args(args.tenure),
                   dev=False, binary=args.tenure, env=SLOW_SERVER_ENV) as server:
        addr = addrs.get(api, server.http_addr)
        runs = []
        for ops in (args.small, args.ops):
            instructions, stdout = callgrind_command(
                driver_command(args, api, addr, workload, clients, ops), work)
            runs.append((instructions, operations(stdout)))
    return per_operation(*runs)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tenure", default=os.path.join(ROOT, "build/src/tenure"))
    p.add_argument("--driver", default=os.path.join(ROOT, "build/bench/vs/tenure_vs"))
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--ops", type=int, default=20000, help="operations of the counted run")
    p.add_argument("--small", type=int, default=2000,
                   help="operations of the run subtracted (and of the server's warm-up)")
    p.add_argument("--clients", default="1,64")
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--sides", default="server,driver")
    p.add_argument("--apis", default="consul,etcd",
                   help="of consul, etcd, zk, etcd-h2 (the ZooKeeper port counts kv_put "
                        "only; etcd-h2: the etcd port with the driver's light client)")
    p.add_argument("--json", help="also write every count here")
    args = p.parse_args()
    if args.small >= args.ops:
        sys.exit("etcd_instructions.py: --small must be below --ops")
    apis = args.apis.split(",")
    if not set(apis) <= set(SYSTEMS):
        sys.exit(f"etcd_instructions.py: --apis takes {', '.join(SYSTEMS)}")
    work = tempfile.mkdtemp(prefix="etcd-instructions-")
    counts = {}  # "side api workload cN" -> [per operation, ...]
    try:
        for run in range(1, args.runs + 1):
            for workload in args.workloads.split(","):
                for clients in [int(c) for c in args.clients.split(",")]:
                    for side in args.sides.split(","):
                        for api in apis:
                            if api == "zk" and workload != "kv_put":
                                continue  # tenure_vs's ZooKeeper side has no keepalive
                            fn = count_server if side == "server" else count_driver
                            n = fn(args, api, workload, clients, work)
                            counts.setdefault(f"{side} {api} {workload} c{clients}", []).append(n)
                            print(f"[run {run}] {side:<6} {api:<6} {workload:<9} c{clients:<3} "
                                  f"{n:,.0f} instructions per operation", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(counts, f, indent=1)
    med = {k: statistics.median(v) for k, v in counts.items()}
    heads = [f"{side}, {NAMES[api]}" for side in ("server", "driver") for api in apis]
    ratios = [f"{NAMES[api]} ÷ Consul API" for api in apis[1:]] if apis[0] == "consul" else []
    print("\n| workload | clients | " + " | ".join(heads[:len(apis)] + ratios + heads[len(apis):]) +
          " |")
    print("|---|---:|" + "---:|" * (len(heads) + len(ratios)))
    f = lambda v: "-" if v is None else f"{v:,.0f}"  # noqa: E731
    for workload in args.workloads.split(","):
        for clients in [int(c) for c in args.clients.split(",")]:
            g = lambda side, api: med.get(f"{side} {api} {workload} c{clients}")  # noqa: E731
            cells = [f(g("server", api)) for api in apis]
            sc = g("server", "consul")
            for api in apis[1:] if apis[0] == "consul" else []:
                v = g("server", api)
                cells.append("-" if sc is None or v is None else f"{v / sc:.2f}")
            cells += [f(g("driver", api)) for api in apis]
            print(f"| {workload} | {clients} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
