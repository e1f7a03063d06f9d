#!/usr/bin/python3
"""tenure over HTTPS next to etcd 3.4 with TLS on, and each next to itself in
clear text, in one interleaved run (docs/benchmarks-vs-etcd-tls.md).

Reuses bench/vs_etcd.py (servers on loopback, fresh data dirs and ports for
every measurement, fsync on, the tenure_vs load generator) with TLS added:
certificates made with the openssl command in a temporary directory
(tests/lib/test_pki.py: an ECDSA P-256 CA, a server certificate for
127.0.0.1 and a client certificate), then

  tenure  -http-addr off -https-addr ... -tls-cert-file -tls-key-file
          -tls-ca-file -tls-verify-incoming   (raft over mutual TLS: a CA is given)
  etcd    https:// client and peer URLs, --cert-file --key-file
          --trusted-ca-file --client-cert-auth --peer-cert-file
          --peer-key-file --peer-trusted-ca-file --peer-client-cert-auth

on 1 and 3 members, both driven with the client certificate and the server's
verified (tenure_vs --ca-file --cert-file --key-file). Workloads: durable
puts/s and lock cycles at 64 clients, session renewals / lease keepalives,
watch fan-out with 1,000 watchers, new connections per second (connect,
TLS handshake, one small read, close). Every one also in clear text.

    /usr/bin/python3 bench/vs_etcd_tls.py [--runs 3] [--out docs]   (about 20 min)
    /usr/bin/python3 bench/vs_etcd_tls.py --smoke --out build/...   (about 2 min)

Writes <out>/benchmarks-vs-etcd-tls.md (only between the "generated"
markers) and <out>/benchmarks-vs-etcd-tls.json (every run). Exits 1 if any
measurement failed (bench.vs_tls_smoke checks that). Only processes this
script started are ever signalled, by PID, also on SIGTERM.
"""

import json
import os
import resource
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, HERE)
import vs_etcd as V  # noqa: E402
from cluster_failover import load_average  # noqa: E402
from test_pki import Pki  # noqa: E402

# name -> (system, servers, TLS, label)
CONFIGS = {
    "tenure1_tls": ("tenure", 1, True, "tenure TLS"),
    "etcd1_tls": ("etcd", 1, True, "etcd TLS"),
    "tenure1": ("tenure", 1, False, "tenure clear"),
    "etcd1": ("etcd", 1, False, "etcd clear"),
    "tenure3_tls": ("tenure", 3, True, "tenure TLS"),
    "etcd3_tls": ("etcd", 3, True, "etcd TLS"),
    "tenure3": ("tenure", 3, False, "tenure clear"),
    "etcd3": ("etcd", 3, False, "etcd clear"),
}
ONE = ["tenure1_tls", "etcd1_tls", "tenure1", "etcd1"]
THREE = ["tenure3_tls", "etcd3_tls", "tenure3", "etcd3"]

# Both sides' CPU on every table: the load generator shares the machine, and
# with TLS it does its half of every handshake and of the record crypto.
SERVERS_CPU = ("servers_cpu_pct", "servers' CPU %", 0, None)
DRIVER_CPU = ("driver_cpu_pct", "load generator's CPU %", 0, None)
METRICS = {wl: [m for m in V.METRICS[wl] if m[0] != "servers_cpu_pct"] + [SERVERS_CPU, DRIVER_CPU]
           for wl in ("kv_put", "lock_many", "keepalive", "watch")}
METRICS["conns"] = [("ops_per_s", "connections/s", 0, True),
                    ("p50_ms", "p50 ms (connect to close)", 2, False),
                    ("p99_ms", "p99 ms", 2, False), SERVERS_CPU, DRIVER_CPU]

# The TLS targets (docs/benchmarks-vs-etcd-tls.md): (case, what, minimum).
PUT_TARGET = 3.0       # tenure TLS puts/s >= 3 x etcd TLS puts/s
TLS_COST_TARGET = 0.75  # tenure TLS >= 75 % of tenure clear text (TLS costs at most 25 %)
COST_WORKLOADS = ("kv_put", "lock_many", "keepalive")

SETTINGS = [
    ("TLS", "certificates made for the run with the openssl command (tests/lib/test_pki.py): "
            "an ECDSA P-256 CA, one server certificate (SAN 127.0.0.1, localhost; "
            "serverAuth and clientAuth) that every member presents to clients and peers, "
            "and one client certificate. Both servers require the client's certificate; the "
            "client verifies the server's chain and its IP. No session resumption anywhere: "
            "every new connection is a full handshake."),
    ("tenure with TLS", "`tenure server -http-addr off -https-addr 127.0.0.1:H "
                        "-tls-cert-file S -tls-key-file K -tls-ca-file CA -tls-verify-incoming` "
                        "plus the flags of the clear-text report; with a CA, raft between "
                        "servers runs over mutual TLS."),
    ("etcd with TLS", "`etcd --listen-client-urls https://... --advertise-client-urls "
                      "https://... --cert-file S --key-file K --trusted-ca-file CA "
                      "--client-cert-auth --listen-peer-urls https://... "
                      "--initial-advertise-peer-urls https://... --peer-cert-file S "
                      "--peer-key-file K --peer-trusted-ca-file CA --peer-client-cert-auth` "
                      "plus the flags of the clear-text report (peer TLS on 1 member too)."),
    ("clients", "tenure: one HTTP/1.1 keep-alive connection per client (TLS: OpenSSL, the "
                "protocol the probe below shows); etcd: gRPC C++ channels (TLS: "
                "grpc::SslCredentials with the CA, the client certificate and key), clients "
                "spread over at most 64 channels; all clients on one client thread "
                "(build/bench/vs/tenure_vs --ca-file --cert-file --key-file)"),
    ("new connections", "each client in a loop: connect (TCP; with TLS the full handshake, "
                        "client certificate included), one small read, close (TLS: after a "
                        "close_notify). tenure: GET /v1/kv/bench/conn?stale on a new HTTP/1.1 "
                        "connection; etcd: a new gRPC channel (its own connection: HTTP/2 "
                        "preface and settings too) with one serializable Range of bench/conn. "
                        "Both reads are answered by the member without a raft round, so the "
                        "connection is what is measured. In clear text this is new TCP "
                        "connections per second."),
]


def plan(smoke):
    """(case id, title, configs, workload, driver args, timeout s)."""
    s = 0.5 if smoke else ARGS.seconds
    base = ["--seconds", s]
    c = 4 if smoke else 64
    sessions = 16 if smoke else 1000
    watchers = 20 if smoke else 1000
    rounds = 2 if smoke else 10
    conn_clients = 4 if smoke else 16
    return [
        (f"kv_put_c{c}", f"Durable KV put, {c} clients", ONE + THREE, "kv_put",
         base + ["--clients", c], 120),
        (f"lock_many_c{c}", f"Lock acquire+release, independent locks, {c} clients", ONE + THREE,
         "lock_many", base + ["--clients", c], 120),
        (f"keepalive_c{c}", f"Session renew / lease keepalive, {c} clients, {sessions:,} "
         "sessions", ONE + THREE, "keepalive", base + ["--clients", c, "--sessions", sessions],
         120),
        (f"watch_w{watchers}", f"Watch fan-out, {watchers:,} watchers on one key", ONE, "watch",
         ["--watchers", watchers, "--rounds", rounds], 600),
        (f"conns_c{conn_clients}", f"New connections, {conn_clients} clients", ONE + THREE,
         "conns", base + ["--clients", conn_clients], 120),
    ]


def sysctl(name):
    try:
        with open(f"/proc/sys/net/ipv4/{name}") as f:
            return " ".join(f.read().split())
    except OSError:
        return "unknown"


def probe(pki):
    """What a TLS handshake negotiates with each server (openssl s_client,
    the client certificate presented): one line per system."""
    lines = []
    for system in ("tenure", "etcd"):
        with V.Servers(system, 1, ARGS.data_parent, pki) as servers:
            out = subprocess.run(
                ["openssl", "s_client", "-connect", servers.addr, "-CAfile", pki.ca,
                 "-cert", pki.client_cert, "-key", pki.client_key, "-verify_return_error",
                 "-verify_ip", "127.0.0.1", "-brief"],
                input="", capture_output=True, text=True, timeout=30)
            text = out.stdout + out.stderr
            facts = [l.split(":", 1)[1].strip() for l in text.splitlines()
                     if l.startswith(("Protocol version:", "Ciphersuite:", "Peer signature type:",
                                      "Server Temp Key:", "Negotiated TLS1.3 group:"))]
            if out.returncode != 0 or not facts or "Verification: OK" not in text:
                raise RuntimeError(f"openssl s_client to {system} with TLS failed "
                                   f"({out.returncode}):\n{text[-1500:]}")
            lines.append((f"handshake with {system} (openssl s_client)", ", ".join(facts)))
    return lines


# --- report -----------------------------------------------------------------------

def med(report, case_id, config, key):
    vals = [r[key] for r in report["results"].get(case_id, {}).get(config, []) if key in r]
    return V.median(vals)


def targets(report):
    """The two TLS targets, each line saying whether it is met."""
    out, verdicts = [], []
    by_workload = {c["workload"]: c for c in report["cases"]}
    put = by_workload.get("kv_put")
    if put:
        for tls_t, tls_e in (("tenure1_tls", "etcd1_tls"), ("tenure3_tls", "etcd3_tls")):
            a = med(report, put["id"], tls_t, "ops_per_s")
            b = med(report, put["id"], tls_e, "ops_per_s")
            r = a / b if a is not None and b else None
            ok = r is not None and r >= PUT_TARGET
            verdicts.append(ok)
            n = CONFIGS[tls_t][1]
            out.append(f"  - {n} server{'s' if n > 1 else ''}: {V.fmt(a)} ÷ {V.fmt(b)} = "
                       f"{'-' if r is None else f'{r:.2f}'} → **{'met' if ok else 'not met'}**")
    head1 = (f"- **tenure with TLS ≥ {PUT_TARGET:g}× etcd with TLS on durable puts/s** "
             f"({put['title'] if put else 'not run'}): "
             f"**{'met' if verdicts and all(verdicts) else 'not met'}**")
    cost, cost_verdicts = [], []
    for wl in COST_WORKLOADS:
        case = by_workload.get(wl)
        if not case:
            continue
        label = METRICS[wl][0][1]
        for n, (tls_cfg, clear_cfg) in ((1, ("tenure1_tls", "tenure1")),
                                        (3, ("tenure3_tls", "tenure3"))):
            a = med(report, case["id"], tls_cfg, "ops_per_s")
            b = med(report, case["id"], clear_cfg, "ops_per_s")
            r = a / b if a is not None and b else None
            ok = r is not None and r >= TLS_COST_TARGET
            cost_verdicts.append(ok)
            cost.append(f"  - {case['title']}, {n} server{'s' if n > 1 else ''}: {label} with TLS "
                        f"{V.fmt(a)} ÷ clear {V.fmt(b)} = {'-' if r is None else f'{r:.2f}'} "
                        f"(TLS costs {'-' if r is None else f'{(1 - r) * 100:.0f} %'}) → "
                        f"**{'met' if ok else 'not met'}**")
    head2 = (f"- **TLS costs tenure at most {(1 - TLS_COST_TARGET) * 100:.0f} % of its clear-text "
             f"throughput** (TLS ÷ clear ≥ {TLS_COST_TARGET:.2f} on every throughput workload "
             "over kept connections: puts, lock cycles, renewals; new connections per second "
             "and watch latency are shown below but not judged: a TLS handshake against a bare "
             "TCP connect is not a throughput cost of TLS on a connection): "
             f"**{'met' if cost_verdicts and all(cost_verdicts) else 'not met'}**")
    return [head1] + out + [head2] + cost


def markdown(report):
    out = []
    w = out.append
    w(f"Generated by `{report['command']}` ({report['mode']}); {report['runs']} run"
      f"{'s' if report['runs'] > 1 else ''}, interleaved (run 1 of every case on every "
      "configuration, then run 2...); every cell is the median of the runs, ratios are ratios "
      "of medians (above 1: the first is higher, which is better for throughput and worse "
      "for latency).\n")
    w("### Targets\n")
    if report["mode"] != "full":
        w("_Smoke run: tiny counts on a busy machine; these verdicts mean nothing._\n")
    for line in targets(report):
        w(line)
    w("")
    w("### Machine\n")
    for k, v in report["machine"]:
        w(f"- {k}: {v}")
    w("")
    w("### Settings\n")
    for k, v in SETTINGS:
        w(f"- **{k}**: {v}")
    for k, v in report["settings"]:
        w(f"- {k}: {v}")
    w("- everything else (durability, server flags, workloads) as in "
      "[benchmarks-vs-etcd.md](benchmarks-vs-etcd.md)")
    w("")
    for case in report["cases"]:
        w(f"### {case['title']}\n")
        for group in (ONE, THREE):
            cfgs = [c for c in group if c in case["configs"]]
            if not cfgs:
                continue
            n = CONFIGS[cfgs[0]][1]
            size = "1 server / member" if n == 1 else "3 servers / members"
            tt, et, tc, ec = cfgs
            w(f"| {size} | tenure TLS | etcd TLS | tenure clear | etcd clear | "
              "tenure TLS ÷ etcd TLS | tenure TLS ÷ tenure clear | etcd TLS ÷ etcd clear |")
            w("|---|---:|---:|---:|---:|---:|---:|---:|")
            for key, label, dec, _ in METRICS[case["workload"]]:
                m = {c: med(report, case["id"], c, key) for c in cfgs}
                if all(v is None for v in m.values()):
                    continue
                w(f"| {label} | " + " | ".join(V.fmt(m[c], dec) for c in cfgs) + " | " +
                  " | ".join(V.ratio(m[a], m[b]) for a, b in ((tt, et), (tt, tc), (et, ec))) + " |")
            w("")
        notes = sorted({f"{CONFIGS[c][3]}, {CONFIGS[c][1]}: {r['note']}"
                        for c, runs in report["results"][case["id"]].items() for r in runs
                        if r.get("note") and CONFIGS[c][2] and case["workload"] == "conns"})
        if notes:
            w("Negotiated: " + "; ".join(notes) + ".\n")
    out += V.every_run_lines(report, METRICS, lambda c: f"{CONFIGS[c][3]}, {CONFIGS[c][1]}")
    return "\n".join(out)


# --- main ---------------------------------------------------------------------------

def run():
    global ARGS
    p = V.side_by_side_arguments(__doc__)
    ARGS = p.parse_args()
    V.ARGS = ARGS  # vs_etcd's servers and measurements read their paths from here
    if ARGS.smoke:
        ARGS.runs = 1
    for tool in (ARGS.tenure, ARGS.driver, ARGS.etcd, "/usr/bin/openssl"):
        if not os.access(tool, os.X_OK):
            sys.exit(f"vs_etcd_tls.py: not an executable: {tool} (scripts/setup installs etcd; "
                     "scripts/build tenure tenure_vs builds the rest)")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:  # 1,000 watchers: the driver and the servers inherit this
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    os.makedirs(ARGS.out, exist_ok=True)

    cases = [{"id": cid, "title": t, "configs": cf, "workload": wl, "args": a, "timeout": to}
             for cid, t, cf, wl, a, to in plan(ARGS.smoke)]
    if ARGS.only:
        wanted = ARGS.only.split(",")
        cases = [c for c in cases if any(c["id"].startswith(x) for x in wanted)]
    report = {"command": " ".join(["bench/vs_etcd_tls.py"] + sys.argv[1:]),
              "mode": "smoke: tiny counts, the numbers mean nothing" if ARGS.smoke else "full",
              "runs": ARGS.runs,
              "cases": [{k: v for k, v in c.items() if k != "args"} for c in cases],
              "results": {c["id"]: {} for c in cases}, "failures": []}
    failures = report["failures"]
    with tempfile.TemporaryDirectory(prefix="vs-tls-pki-", dir=ARGS.data_parent) as pki_dir:
        made = Pki(pki_dir)
        pki = V.TlsFiles(made.ca_cert, made.server_cert, made.server_key, made.client_cert,
                         made.client_key)
        machine = V.machine_facts()
        machine.append(("openssl", V.version(["openssl", "version"])))
        # New clear-text connections at thousands per second reuse ports in
        # TIME_WAIT (loopback: tcp_tw_reuse 2, the default) or run out.
        machine.append(("TCP", "; ".join(f"net.ipv4.{name} {sysctl(name)}"
                                         for name in ("tcp_tw_reuse", "ip_local_port_range"))))
        try:
            machine += probe(pki)
        except Exception as e:  # noqa: BLE001 - reported, and the exit code says it
            failures.append(f"TLS probe: {e}")
            print(f"TLS probe FAILED: {e}", file=sys.stderr, flush=True)
        machine.append(("load average at start (1/5/15 min)", load_average()))
        machine.append(("disk sync-write latency at start", V.disk_latency(ARGS.data_parent)))
        report["settings"] = [
            ("timed phase", f"{0.5 if ARGS.smoke else ARGS.seconds} s per throughput run, "
                            "closed loop (each client one operation in flight)"),
            ("servers", "a fresh server (or cluster, new data dirs and ports) for every "
                        "measurement; the client drives the leader; 'servers' CPU %' = CPU "
                        "of all server processes over the driver's whole run, % of one core"),
        ]
        V.run_interleaved(
            report, cases, machine,
            lambda case, cfg: [V.measure(CONFIGS[cfg][0], CONFIGS[cfg][1], case["workload"],
                                         case["args"], case["timeout"],
                                         pki if CONFIGS[cfg][2] else None)],
            lambda case: METRICS[case["workload"]][0][0])
        machine.append(("load average at end (1/5/15 min)", load_average()))
        machine.append(("disk sync-write latency at end", V.disk_latency(ARGS.data_parent)))
        report["machine"] = machine

    with open(os.path.join(ARGS.out, "benchmarks-vs-etcd-tls.json"), "w") as f:
        json.dump(report, f, indent=1)
    generated = markdown(report)
    V.write_doc(os.path.join(ARGS.out, "benchmarks-vs-etcd-tls.md"), generated,
                script="bench/vs_etcd_tls.py",
                title="tenure over TLS next to etcd 3.4 over TLS",
                regenerate="scripts/bench --vs-etcd-tls")
    print(generated)
    if failures:
        print(f"vs_etcd_tls.py: {len(failures)} measurement(s) FAILED", file=sys.stderr)
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
