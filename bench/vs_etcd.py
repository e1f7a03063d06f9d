#!/usr/bin/python3
"""Side-by-side benchmark of tenure, etcd 3.4 and ZooKeeper 3.8
(docs/benchmarks-vs-etcd.md).

Starts every server itself on loopback (free ports, fresh temporary data
dirs, fsync on for all three: see SETTINGS below), a fresh server or cluster
for every measurement, and drives each with build/bench/vs/tenure_vs (one
process per measurement: tenure over its Consul HTTP API, etcd over native
gRPC, ZooKeeper over its binary protocol; all from one client thread). Runs
are interleaved: run 1 of every workload on every system, then run 2, ...;
tables show the median of the runs and the ratio of the medians.

    /usr/bin/python3 bench/vs_etcd.py [--runs 3] [--out docs]   (about 25 min)
    /usr/bin/python3 bench/vs_etcd.py --smoke --out build/...   (about 1-2 min)
    /usr/bin/python3 bench/vs_etcd.py --only lock_hot --out build/hot   (the hot lock only: 1, 16, 64
        clients the Consul way next to etcd, and tenure's fair acquire when offered)

Writes <out>/benchmarks-vs-etcd.md (only the part between the
"generated" markers is replaced; hand-written text around it stays),
<out>/benchmarks-vs-etcd.json (every run) and PNG plots beside them.
Exits 1 if any measurement failed (the smoke test, bench.vs_smoke, checks
that). Only processes this script started are ever signalled, by PID;
SIGTERM stops them too before the script exits.
"""

import argparse
import base64
import json
import mmap
import os
import platform
import queue
import random
import resource
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
START_TIMEOUT = 60.0      # a server or cluster must be ready within this
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, HERE)
from cluster_failover import cpu_seconds, load_average  # noqa: E402

ZK_CLASSPATH = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar"

# Exact durability and server settings (printed into the report).
SETTINGS = [
    ("tenure", "`tenure server -data-dir D -http-addr 127.0.0.1:H -raft-addr 127.0.0.1:R "
               "-node-id I -node nodeI [-bootstrap-peers 1@...,2@...,3@... -raft-key-file K] "
               "-session-ttl-multiplier 1 -http-max-conns-per-client 0` (the cluster key, from "
               "`tenure keygen`, only authenticates each raft connection once; every client "
               "connects from 127.0.0.1, past one address's default 200). Durability is not "
               "configurable: a write is acknowledged only after libraft 0.15 has written its "
               "log entry to disk and "
               "synced it (on 3 servers: on a majority, the leader and one follower). Raft "
               "defaults: election timeout 500 ms, heartbeat 50 ms, pre-vote on. "
               "`-session-ttl-multiplier 1` makes a session expire TTL after its last renewal, "
               "like an etcd lease (tenure's default 2, as Consul, allows up to 2 x TTL)."),
    ("etcd", "Debian's etcd-server 3.4.23 (Go 1.19.8): `etcd --name mI --data-dir D "
             "--listen-client-urls http://127.0.0.1:C --advertise-client-urls ... "
             "--listen-peer-urls http://127.0.0.1:P --initial-advertise-peer-urls ... "
             "--initial-cluster m1=...[,m2=...,m3=...] --initial-cluster-state new "
             "--initial-cluster-token T --logger zap --log-level warn`. Durability: etcd 3.4 "
             "always fdatasyncs its WAL before a raft batch is acknowledged (no flag turns it "
             "off in 3.4; `--unsafe-no-fsync` exists only from 3.5). Defaults otherwise: "
             "--snapshot-count 100000, heartbeat 100 ms, election timeout 1000 ms, bbolt "
             "backend commit every 100 ms (not on the acknowledgement path: the WAL is)."),
    ("ZooKeeper", "Debian's zookeeper 3.8.0 on OpenJDK 17, standalone: `java -Xmx1000m "
                  "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp " + ZK_CLASSPATH +
                  " org.apache.zookeeper.server.quorum.QuorumPeerMain zoo.cfg` with zoo.cfg "
                  "`tickTime=2000, dataDir=D, clientPort=C, clientPortAddress=127.0.0.1, "
                  "clientPortListenBacklog=4096, forceSync=yes, maxClientCnxns=0, admin.enableServer=false, "
                  "4lw.commands.whitelist=ruok,srvr`. Durability: forceSync=yes (the default, "
                  "set explicitly) fsyncs the transaction log before a write is acknowledged "
                  "(group commit). -Xmx1000m is zkEnv.sh's default heap; maxClientCnxns=0 "
                  "lifts the 60-connections-per-IP limit for the watchers; the listen backlog of "
                  "4096 is what tenure and etcd (Go) use (the JVM's default, 50, drops the SYNs "
                  "of thousands of watchers connecting at once: 1 s retransmits)."),
]


# --- small helpers --------------------------------------------------------------

def free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


class TlsFiles:
    """Certificates for servers and clients with TLS on (bench/vs_etcd_tls.py):
    a CA, a server certificate for 127.0.0.1 (also the peers' and raft's)
    and a client certificate, all PEM paths."""

    def __init__(self, ca, server_cert, server_key, client_cert, client_key):
        self.ca, self.server_cert, self.server_key = ca, server_cert, server_key
        self.client_cert, self.client_key = client_cert, client_key
        self.context = ssl.create_default_context(cafile=ca)
        self.context.load_cert_chain(client_cert, client_key)

    def driver_args(self):
        return ["--ca-file", self.ca, "--cert-file", self.client_cert,
                "--key-file", self.client_key]


def http(addr, method, path, body=None, timeout=5.0, tls=None):
    scheme = "https" if tls else "http"
    req = urllib.request.Request(f"{scheme}://{addr}{path}", data=body, method=method)
    with urllib.request.urlopen(req, timeout=timeout,
                                context=tls.context if tls else None) as resp:
        return resp.status, resp.read()


def poll(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except (OSError, ValueError, KeyError) as e:
            last = e
        time.sleep(0.05)
    raise RuntimeError(f"{what} not within {timeout:.0f} s (last error: {last})")


# Every Process not stopped yet: what stop_everything stops on the way out.
LIVE = []
# Every Servers data directory not removed yet: stop_everything removes
# them too (a signal between a Servers' creation and its `with` block, or
# inside an __enter__ that started it, would leave one behind).
ROOTS = []


def stop_everything():
    """Stops, by PID, every server process still running (a SIGTERM or an
    error between a start and its `with` block's end)."""
    for p in reversed(list(LIVE)):
        try:
            p.stop()
        except Exception as e:  # noqa: BLE001 - the others must still be stopped
            print(f"could not stop PID {p.pid}: {e}", file=sys.stderr)
    for root in list(ROOTS):
        shutil.rmtree(root, ignore_errors=True)
        ROOTS.remove(root)


def exit_on_sigterm():
    """SIGTERM (kill PID, a CI timeout) unwinds like an error: the `with
    Servers` blocks stop their processes and stop_everything the rest.
    Without this Python dies at once and every server, each in a session of
    its own, keeps running. Later SIGTERMs are ignored so the cleanup runs
    to its end."""
    state = {"seen": False}

    def handler(signum, _frame):
        if state["seen"]:
            return
        state["seen"] = True
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, handler)


class Process:
    """One server process with its log; signalled only by its own PID."""

    def __init__(self, cmd, log_path, cwd=None):
        self.log_path = log_path
        self.log = open(log_path, "ab")
        self.log.write(("$ " + " ".join(cmd) + "\n").encode())
        self.log.flush()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True)
        LIVE.append(self)

    @property
    def pid(self):
        return self.proc.pid

    def check(self):
        code = self.proc.poll()
        if code is not None:
            raise RuntimeError(f"{self.proc.args[0]} exited with {code}:\n{self.tail()}")

    def tail(self, n=3000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode(errors="replace")
        except OSError:
            return ""

    def stop(self):
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=10)
        finally:
            # Interrupted before the process was reaped (the SIGTERM), it
            # stays listed for stop_everything.
            if self.proc.returncode is not None and self in LIVE:
                LIVE.remove(self)
                self.log.close()


# --- servers --------------------------------------------------------------------

class Servers:
    """A fresh server or cluster of one system, as a context manager.
    addr: the client address of the leader; pids: every server process.
    tls (TlsFiles): the client API over TLS with client certificates
    required, and the servers' own links (tenure's raft, etcd's peers) over
    mutual TLS; None: all in clear text."""

    def __init__(self, system, n, data_parent, tls=None, server_args=()):
        self.system, self.n, self.tls = system, n, tls
        self.server_args = list(server_args)  # extra flags for every server (tenure only)
        self.root = tempfile.mkdtemp(prefix=f"vs-{system}{n}{'-tls' if tls else ''}-",
                                     dir=data_parent)
        ROOTS.append(self.root)
        self.procs, self.addr, self.leader_pid = [], None, None

    def __enter__(self):
        try:
            getattr(self, "_start_" + self.system)()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def pids(self):
        return [p.pid for p in self.procs]

    def close(self):
        try:
            for p in self.procs:
                p.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
            # A process this list did not know of (one started as a signal
            # came) may still write there: stop_everything tries again after
            # it stopped every process.
            if self.root in ROOTS and not os.path.exists(self.root):
                ROOTS.remove(self.root)

    def _check(self):
        for p in self.procs:
            p.check()

    def _cluster_key(self):
        path = os.path.join(self.root, "raft.key")
        if not os.path.exists(path):
            key = subprocess.run([ARGS.tenure, "keygen"], capture_output=True, text=True,
                                 check=True).stdout
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(key)
        return path

    def _start_tenure_etcd(self):
        """tenure serving etcd's API too (-grpc-addr on every server): addr is
        the leader's etcd port, which the driver's etcd client speaks to
        (bench/vs_etcd_api.py)."""
        etcd_ports = free_ports(self.n)
        etcd_addrs = [f"127.0.0.1:{p}" for p in etcd_ports]
        # With TLS: the etcd port with the HTTPS listener's settings
        # (client certificates required), as etcd's https:// client URL.
        flag = "-grpc-tls-addr" if self.tls else "-grpc-addr"
        self.server_args_per_server = [[flag, a] for a in etcd_addrs]
        self.taken_ports = set(etcd_ports)
        self._start_tenure()
        self.addr = etcd_addrs[[p.pid for p in self.procs].index(self.leader_pid)]

    def _start_tenure_zk(self):
        """tenure serving ZooKeeper's protocol too (-zk-addr on every server):
        addr is the leader's ZooKeeper port, which the driver's ZooKeeper
        client speaks to (bench/vs_zookeeper_api.py)."""
        zk_ports = free_ports(self.n)
        zk_addrs = [f"127.0.0.1:{p}" for p in zk_ports]
        self.server_args_per_server = [["-zk-addr", a] for a in zk_addrs]
        self.taken_ports = set(zk_ports)
        self._start_tenure()
        self.zk_addrs = zk_addrs
        self.addr = zk_addrs[[p.pid for p in self.procs].index(self.leader_pid)]

    def _start_tenure_zk_follower(self):
        """As _start_tenure_zk, with addr a follower's ZooKeeper port: each
        connection there is spliced to the leader's (decision 0056)."""
        self._start_tenure_zk()
        self.addr = next(a for a, p in zip(self.zk_addrs, self.procs) if p.pid != self.leader_pid)

    def _start_tenure(self):
        ports = free_ports(2 * self.n)
        while set(ports) & getattr(self, "taken_ports", set()):
            ports = free_ports(2 * self.n)
        http_addrs = [f"127.0.0.1:{ports[2 * i]}" for i in range(self.n)]
        raft_addrs = [f"127.0.0.1:{ports[2 * i + 1]}" for i in range(self.n)]
        peers = ",".join(f"{i + 1}@{a}" for i, a in enumerate(raft_addrs))
        for i in range(self.n):
            d = os.path.join(self.root, f"s{i + 1}")
            os.makedirs(d)
            cmd = [ARGS.tenure, "server", "-data-dir", d, "-http-addr", http_addrs[i],
                   "-raft-addr", raft_addrs[i], "-node-id", str(i + 1), "-node", f"node{i + 1}",
                   "-session-ttl-multiplier", "1", "-http-max-conns-per-client", "0"]
            if self.tls:  # HTTPS only, client certificates required; raft over mutual TLS
                cmd[cmd.index("-http-addr") + 1] = "off"
                cmd += ["-https-addr", http_addrs[i], "-tls-cert-file", self.tls.server_cert,
                        "-tls-key-file", self.tls.server_key, "-tls-ca-file", self.tls.ca,
                        "-tls-verify-incoming"]
            if self.n > 1:
                cmd += ["-bootstrap-peers", peers]
                if not self.tls:  # peers need a cluster key or mutual TLS (docs/security.md)
                    cmd += ["-raft-key-file", self._cluster_key()]
            cmd += self.server_args
            cmd += getattr(self, "server_args_per_server", [[]] * self.n)[i]
            self.procs.append(Process(cmd, os.path.join(self.root, f"s{i + 1}.log")))

        def ready():
            self._check()
            named = set()
            for a in http_addrs:
                status, body = http(a, "GET", "/v1/status/leader", timeout=2, tls=self.tls)
                named.add(json.loads(body) if status == 200 else "")
            if len(named) != 1 or "" in named:
                return None
            leader = raft_addrs.index(named.pop())
            status, body = http(http_addrs[leader], "PUT", "/v1/kv/bench/ready", b"1", timeout=5,
                                tls=self.tls)
            return leader + 1 if status == 200 and body.strip() == b"true" else None
        leader = poll(ready, START_TIMEOUT, f"tenure x{self.n}: a leader and a committed write") - 1
        self.addr, self.leader_pid = http_addrs[leader], self.procs[leader].pid

    def _start_etcd(self):
        ports = free_ports(2 * self.n)
        scheme = "https" if self.tls else "http"
        client = [f"127.0.0.1:{ports[2 * i]}" for i in range(self.n)]
        peer = [f"{scheme}://127.0.0.1:{ports[2 * i + 1]}" for i in range(self.n)]
        cluster = ",".join(f"m{i + 1}={p}" for i, p in enumerate(peer))
        token = f"bench-{os.getpid()}-{random.randrange(1 << 30)}"
        for i in range(self.n):
            d = os.path.join(self.root, f"m{i + 1}")
            cmd = [ARGS.etcd, "--name", f"m{i + 1}", "--data-dir", d,
                   "--listen-client-urls", f"{scheme}://{client[i]}",
                   "--advertise-client-urls", f"{scheme}://{client[i]}",
                   "--listen-peer-urls", peer[i], "--initial-advertise-peer-urls", peer[i],
                   "--initial-cluster", cluster, "--initial-cluster-state", "new",
                   "--initial-cluster-token", token, "--logger", "zap", "--log-level", "warn"]
            if self.tls:  # client certificates required; peers over mutual TLS
                t = self.tls
                cmd += ["--cert-file", t.server_cert, "--key-file", t.server_key,
                        "--trusted-ca-file", t.ca, "--client-cert-auth",
                        "--peer-cert-file", t.server_cert, "--peer-key-file", t.server_key,
                        "--peer-trusted-ca-file", t.ca, "--peer-client-cert-auth"]
            self.procs.append(Process(cmd, os.path.join(self.root, f"m{i + 1}.log")))

        def ready():
            # The JSON gateway, for orchestration only (never measured).
            self._check()
            ids, leaders = [], set()
            for a in client:
                status, body = http(a, "POST", "/v3/maintenance/status", b"{}", timeout=2,
                                    tls=self.tls)
                st = json.loads(body)
                ids.append(st["header"]["member_id"])
                leaders.add(st.get("leader"))
            if len(leaders) != 1 or None in leaders or leaders.copy().pop() not in ids:
                return None
            leader = ids.index(leaders.pop())
            b64 = lambda s: base64.b64encode(s).decode()
            put = json.dumps({"key": b64(b"bench/ready"), "value": b64(b"1")}).encode()
            status, _ = http(client[leader], "POST", "/v3/kv/put", put, timeout=5, tls=self.tls)
            return leader + 1 if status == 200 else None
        leader = poll(ready, START_TIMEOUT, f"etcd x{self.n}: a leader and a committed put") - 1
        self.addr, self.leader_pid = client[leader], self.procs[leader].pid

    def _start_zk(self):
        """ZooKeeper standalone (n = 1) or an ensemble of n servers on
        loopback, each its own JVM and data dir; addr is the leader's client
        port (srvr says "Mode: leader"), as tenure's clients talk to its
        leader."""
        ports = free_ports(3 * self.n if self.n > 1 else 1)  # one call: no two the same
        client_ports, quorum_ports = ports[:self.n], ports[self.n:]
        common = ("tickTime=2000\nclientPortAddress=127.0.0.1\nclientPortListenBacklog=4096\n"
                  "forceSync=yes\nmaxClientCnxns=0\nadmin.enableServer=false\n"
                  "4lw.commands.whitelist=ruok,srvr\n")
        if self.n > 1:
            common += "initLimit=10\nsyncLimit=5\n" + "".join(
                f"server.{i + 1}=127.0.0.1:{quorum_ports[2 * i]}:{quorum_ports[2 * i + 1]}\n"
                for i in range(self.n))
        addrs = []
        for i, port in enumerate(client_ports):
            home = os.path.join(self.root, f"zk{i + 1}")
            data = os.path.join(home, "data")
            os.makedirs(data)
            if self.n > 1:
                with open(os.path.join(data, "myid"), "w") as f:
                    f.write(f"{i + 1}\n")
            cfg = os.path.join(home, "zoo.cfg")
            with open(cfg, "w") as f:
                f.write(f"dataDir={data}\nclientPort={port}\n" + common)
            cmd = [ARGS.java, "-Xmx1000m", f"-Dzookeeper.log.dir={home}",
                   "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", ZK_CLASSPATH,
                   "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg]
            self.procs.append(Process(cmd, os.path.join(home, "zk.log")))
            addrs.append(f"127.0.0.1:{port}")
        want = b"Mode: standalone" if self.n == 1 else b"Mode: leader"

        def ready():
            self._check()
            # ruok answers imok before sessions are served; srvr names the
            # mode only then, and an ensemble's followers only once they
            # follow.
            modes = [four_letter(a, b"srvr") for a in addrs]
            if self.n > 1 and sum(b"Mode: follower" in m for m in modes) != self.n - 1:
                return None
            return next((i + 1 for i, m in enumerate(modes) if want in m), None)
        leader = poll(ready, START_TIMEOUT,
                      f"ZooKeeper x{self.n}: srvr reporting {want.decode()}") - 1
        self.addr, self.leader_pid = addrs[leader], self.procs[leader].pid


def four_letter(addr, word):
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=2) as s:
        s.sendall(word)
        out = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                return out
            out += chunk


# --- measurements -----------------------------------------------------------------

CONFIGS = {  # name -> (system, servers, label)
    "tenure1": ("tenure", 1, "tenure, 1 server"),
    "etcd1": ("etcd", 1, "etcd, 1 member"),
    "zk1": ("zk", 1, "ZooKeeper, standalone"),
    "tenure3": ("tenure", 3, "tenure, 3 servers"),
    "etcd3": ("etcd", 3, "etcd, 3 members"),
}


def run_driver(config, workload, extra, timeout):
    """One measurement on fresh servers; returns the metrics dict (raises on failure)."""
    system, n, _ = CONFIGS[config]
    return measure(system, n, workload, extra, timeout)


def measure(system, n, workload, extra, timeout, tls=None):
    """One measurement of `workload` on a fresh server or cluster of `system`
    (TLS on when `tls` is given); returns the metrics dict (raises on failure)."""
    with Servers(system, n, ARGS.data_parent, tls) as servers:
        # tenure's etcd and ZooKeeper APIs are driven by the driver's etcd
        # and ZooKeeper clients.
        driver_system = {"tenure_etcd": "etcd", "tenure_zk": "zk",
                         "tenure_zk_follower": "zk"}.get(system, system)
        cmd = [ARGS.driver, "--system", driver_system, "--addr", servers.addr, "--workload", workload,
               "--server-pid", str(servers.leader_pid)] + [str(x) for x in extra]
        if tls:
            cmd += tls.driver_args()
        before = [cpu_seconds(p) for p in servers.pids]
        # The driver is the only child reaped during the run (the servers
        # are stopped after it): its CPU is the children's growth.
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{' '.join(cmd)}: no result within {timeout:.0f} s")
        took = time.monotonic() - started
        reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
        driver_cpu = (reaped.ru_utime + reaped.ru_stime) - (children.ru_utime + children.ru_stime)
        after = [cpu_seconds(p) for p in servers.pids]
        try:
            result = json.loads(out.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise RuntimeError(f"{' '.join(cmd)} exited {out.returncode} without a result:\n"
                               f"{out.stderr[-2000:]}")
        if result.get("unsupported"):
            raise Unsupported(result.get("error"))
        if out.returncode != 0 or result.get("error"):
            logs = "\n".join(p.tail(1500) for p in servers.procs)
            raise RuntimeError(f"{' '.join(cmd)}: {result.get('error')}\n{out.stderr[-1000:]}\n"
                               f"--- server logs ---\n{logs}")
        metrics = result["metrics"]
        if all(b is not None and a is not None for a, b in zip(after, before)):
            metrics["servers_cpu_pct"] = sum(a - b for a, b in zip(after, before)) / took * 100
        metrics["driver_wall_s"] = took
        metrics["driver_cpu_pct"] = driver_cpu / took * 100
        if result.get("note"):
            metrics["note"] = result["note"]
        return metrics


class Unsupported(Exception):
    """The server lacks what a measurement needs (the driver said
    "unsupported"): reported as such, neither a number nor a failure."""


def every_run_lines(report, metrics, label_of):
    """The report's closing sections: every run's first metric per case and
    configuration (metrics: workload -> [(key, label, decimals, better)];
    label_of(config) names a configuration), then the failed measurements."""
    out = ["### Every run\n", "| case | configuration | metric | runs | median |",
           "|---|---|---|---|---:|"]
    for case in report["cases"]:
        key, label, dec, _ = metrics[case["workload"]][0]
        for c in case["configs"]:
            vals = [r[key] for r in report["results"][case["id"]].get(c, []) if key in r]
            out.append(f"| {case['id']} | {label_of(c)} | {label} | "
                       f"{' / '.join(fmt(v, dec) for v in vals)} | {fmt(median(vals), dec)} |")
    out.append("")
    if report["failures"]:
        out.append("### Failed measurements\n")
        out += [f"- {f}" for f in report["failures"]]
        out.append("")
    return out


def side_by_side_arguments(description, runs=3):
    """The command line the side-by-side scripts share (vs_etcd_tls.py,
    vs_etcd_api.py): paths, runs, the timed phase, --only, --out, --smoke."""
    p = argparse.ArgumentParser(description=description,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tenure", default=os.path.join(ROOT, "build/src/tenure"))
    p.add_argument("--driver", default=os.path.join(ROOT, "build/bench/vs/tenure_vs"))
    p.add_argument("--etcd", default="/usr/bin/etcd")
    p.add_argument("--runs", type=int, default=runs)
    p.add_argument("--seconds", type=float, default=5.0, help="timed phase of each throughput run")
    p.add_argument("--only", default="", help="comma-separated case ids (prefix match)")
    p.add_argument("--out", default=os.path.join(ROOT, "docs"))
    p.add_argument("--data-parent", default=os.environ.get("TMPDIR", "/tmp"))
    p.add_argument("--smoke", action="store_true",
                   help="tiny counts, 1 run: proves the harness works")
    return p


def run_interleaved(report, cases, machine, measure_one, first_metric):
    """Every case on every one of its configurations, interleaved: run 1 of
    all of them, then run 2, ... (ARGS.runs). measure_one(case, config)
    returns the metrics of one measurement (a list: a failover case gives one
    per trial), kept in report["results"]; a measurement that fails goes to
    report["failures"] (one the server does not offer, to
    report["unsupported"]) and the runs go on. Progress lines on stderr name
    first_metric(case); `machine` gets the load and the disk at each later
    run's start (the machine drifts: other tenants, the disk)."""
    for run in range(1, ARGS.runs + 1):
        if run > 1:
            machine.append((f"load average / disk sync-write latency at the start of run {run}",
                            f"{load_average()} / {disk_latency(ARGS.data_parent)}"))
        for case in cases:
            for cfg in case["configs"]:
                started = time.monotonic()
                try:
                    for m in measure_one(case, cfg):
                        report["results"][case["id"]].setdefault(cfg, []).append(m)
                    key = first_metric(case)
                    print(f"[run {run}/{ARGS.runs}] {case['id']:<20} {cfg:<13} "
                          f"{time.monotonic() - started:5.1f} s  {key}={m.get(key, 0):,.2f}"
                          f"{'  ' + m['note'] if m.get('note') else ''}",
                          file=sys.stderr, flush=True)
                except Unsupported as e:
                    if run == 1:
                        report.setdefault("unsupported", []).append(f"{case['id']} {cfg} {e}")
                    print(f"[run {run}/{ARGS.runs}] {case['id']} {cfg} NOT OFFERED: {e}",
                          file=sys.stderr, flush=True)
                except Exception as e:  # noqa: BLE001 - reported, and the exit code says it
                    report["failures"].append(f"run {run} {case['id']} {cfg}: {e}")
                    print(f"[run {run}/{ARGS.runs}] {case['id']} {cfg} FAILED: {e}",
                          file=sys.stderr, flush=True)


class Lines:
    """A candidate process's stdout lines, read by a thread into a queue."""

    def __init__(self, cmd):
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.q = queue.Queue()
        self.renewed = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.q.put(line.split())
        self.q.put(None)

    def wait_for(self, word, timeout):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"candidate: no {word} within {timeout:.0f} s")
            try:
                item = self.q.get(timeout=left)
            except queue.Empty:
                continue
            if item is None:
                err = self.proc.stderr.read()
                raise RuntimeError(f"candidate exited ({self.proc.wait()}) before {word}: {err[-1500:]}")
            if item[0] == "RENEWED":
                self.renewed.append(int(item[1]))
            elif item[0] == "HELD" and word != "HELD":
                raise RuntimeError(f"candidate: HELD while waiting for {word}")
            if item[0] == word:
                return int(item[1])

    def drain_renewals(self):
        while True:
            try:
                item = self.q.get_nowait()
            except queue.Empty:
                return
            if item and item[0] == "RENEWED":
                self.renewed.append(int(item[1]))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


def failover_trial(config, ttl):
    """kill -9 of the candidate holding the lock until the waiting one holds it."""
    system, n, _ = CONFIGS[config]
    with Servers(system, n, ARGS.data_parent) as servers:
        key = f"bench/election{random.randrange(1 << 30)}"
        cmd = [ARGS.driver, "--system", system, "--addr", servers.addr, "--workload",
               "candidate", "--ttl", str(ttl), "--key", key]
        holder = waiter = None
        try:
            holder = Lines(cmd)
            held_at = holder.wait_for("HELD", 30)
            waiter = Lines(cmd)
            waiter.wait_for("WAITING", 30)
            # Kill at a random point of the holder's renewal cycle.
            time.sleep(random.uniform(0.5, ttl / 3))
            holder.drain_renewals()
            last = max([held_at] + holder.renewed)
            kill_at = time.monotonic_ns()
            os.kill(holder.proc.pid, signal.SIGKILL)
            taken = waiter.wait_for("HELD", 3 * ttl + 30)
            return {"kill_to_held_ms": (taken - kill_at) / 1e6,
                    "renewal_to_held_ms": (taken - last) / 1e6,
                    "beyond_ttl_ms": (taken - last) / 1e6 - ttl * 1000}
        finally:
            for c in (holder, waiter):
                if c:
                    c.kill()


def big_watch_count():
    """10,000 watchers, or the most (in thousands) that tenure can serve under
    this machine's descriptor limit: a server serves at most (RLIMIT_NOFILE -
    256) / 2 connections (src/common/limits.h), and the hard limit is what
    the servers inherit here. The case's id and title name the count used."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY or (hard - 256) // 2 >= 10000:
        return 10000
    return max(1000, (hard - 256) // 2 // 1000 * 1000)


def plan(smoke):
    """(case id, title, configs, workload, driver args, timeout s, metric keys)."""
    s = 0.5 if smoke else ARGS.seconds
    base = ["--seconds", s]
    all5 = ["tenure1", "etcd1", "zk1", "tenure3", "etcd3"]
    te = ["tenure1", "etcd1", "tenure3", "etcd3"]
    clients = (1, 4) if smoke else (1, 16, 64, 256)
    cases = []
    for c in clients:
        cases.append((f"kv_put_c{c}", f"Durable KV put, {c} client{'s' if c > 1 else ''}", all5,
                      "kv_put", base + ["--clients", c], 120))
    lock_many = (2,) if smoke else (1, 64)
    for c in lock_many:
        cases.append((f"lock_many_c{c}", f"Lock acquire+release, independent locks, {c} client"
                      f"{'s' if c > 1 else ''}", te, "lock_many", base + ["--clients", c], 120))
    # The hot lock the Consul way (acquire; while refused, a blocking query
    # on the key) next to etcd's Mutex, then tenure's fair acquire (queued,
    # handed over by the server: --mode fair) on its own rows. A server
    # without the fair acquire is reported as not offering it, not measured.
    for hot in ((1, 4) if smoke else (1, 16, 64)):
        s_ = "s" if hot > 1 else ""
        cases.append((f"lock_hot_c{hot}", f"Lock acquire+release, one hot lock, {hot} client{s_}",
                      te, "lock_hot", base + ["--clients", hot, "--mode", "consul"], 120))
        cases.append((f"lock_hot_fair_c{hot}", f"Lock acquire+release, one hot lock, {hot} "
                      f"client{s_}, tenure's fair acquire", ["tenure1", "tenure3"], "lock_hot",
                      base + ["--clients", hot, "--mode", "fair"], 120))
    sc = 4 if smoke else 64
    cases.append((f"session_pairs_c{sc}", f"Session/lease create+destroy, {sc} clients",
                  te, "session_pairs", base + ["--clients", sc], 120))
    ns = 16 if smoke else 1000
    cases.append((f"keepalive_c{sc}", f"Session renew / lease keepalive, {sc} clients, {ns} "
                  "sessions", te, "keepalive",
                  base + ["--clients", sc, "--sessions", ns], 120))
    for w in ((20,) if smoke else (1000, big_watch_count())):
        rounds = 2 if smoke else 10
        cases.append((f"watch_w{w}", f"Watch fan-out, {w:,} watchers on one key",
                      ["tenure1", "etcd1", "zk1"], "watch",
                      ["--watchers", w, "--rounds", rounds], 600))
    count = 500 if smoke else 100000
    cases.append((f"idle_rss_{count}", f"Server RSS, {count:,} idle sessions/leases",
                  ["tenure1", "etcd1"], "idle_rss", ["--count", count], 600))
    return cases


# --- report -------------------------------------------------------------------------

def median(values):
    return statistics.median(values) if values else None


def fmt(v, decimals=0):
    if v is None:
        return "-"
    return f"{v:,.{decimals}f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}"


def disk_latency(path):
    """p50/p90 of 200 4 KiB O_DIRECT|O_DSYNC writes in `path` (what a log append costs)."""
    name = os.path.join(path, f"vs-disk-probe-{os.getpid()}")
    buf = mmap.mmap(-1, 4096)
    buf.write(b"x" * 4096)
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_DIRECT | os.O_DSYNC, 0o600)
    except OSError as e:
        return f"unknown ({e})"
    times = []
    try:
        for i in range(200):
            t = time.perf_counter()
            os.pwrite(fd, buf, (i % 16) * 4096)
            times.append((time.perf_counter() - t) * 1e6)
    finally:
        os.close(fd)
        os.unlink(name)
    times.sort()
    return f"p50 {times[99]:.0f} us, p90 {times[179]:.0f} us (200 writes of 4 KiB, O_DIRECT|O_DSYNC)"


def version(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        return "unknown"


def machine_facts():
    facts = [("date", time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())),
             ("nproc", str(os.cpu_count()))]
    with open("/proc/cpuinfo") as f:
        cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    facts.append(("cpu", cpu))
    with open("/proc/meminfo") as f:
        facts.append(("memory", f.readline().split(":", 1)[1].strip()))
    u = platform.uname()
    facts.append(("kernel", f"{u.system} {u.release} {u.machine}"))
    try:
        with open("/etc/os-release") as f:
            osr = dict(l.rstrip("\n").split("=", 1) for l in f if "=" in l)
        facts.append(("os", osr.get("PRETTY_NAME", "?").strip('"')))
    except OSError:
        pass
    df = version(["df", "-T", ARGS.data_parent]).splitlines()
    facts.append(("data dirs", f"{ARGS.data_parent} ({' '.join(df[-1].split()[:2]) if df else '?'})"))
    pkgs = version(["dpkg-query", "-W", "-f", "${Package} ${Version}, ", "etcd-server",
                    "zookeeper", "libgrpc++1.51", "libprotobuf32", "openjdk-17-jre-headless",
                    "libraft0"])
    facts.append(("packages", pkgs.rstrip(", ")))
    rev = version(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
    dirty = version(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"])
    facts.append(("tenure", f"{ARGS.tenure} (git {rev}{' + local changes' if dirty else ''})"))
    return facts


METRICS = {  # workload -> [(key, label, decimals, higher_is_better)]
    "kv_put": [("ops_per_s", "puts/s", 0, True), ("p50_ms", "p50 ms", 2, False),
               ("p99_ms", "p99 ms", 2, False), ("servers_cpu_pct", "servers' CPU %", 0, None)],
    "lock_many": [("ops_per_s", "cycles/s", 0, True), ("p50_ms", "p50 ms", 2, False),
                  ("p99_ms", "p99 ms", 2, False)],
    "lock_hot": [("ops_per_s", "cycles/s", 0, True), ("p50_ms", "p50 ms", 2, False),
                 ("p99_ms", "p99 ms", 2, False),
                 ("handoff_p50_ms", "handoff p50 ms (release sent to next holder's answer)", 3, False),
                 ("handoff_p99_ms", "handoff p99 ms", 3, False)],
    "session_pairs": [("ops_per_s", "pairs/s", 0, True), ("p50_ms", "p50 ms", 2, False),
                      ("p99_ms", "p99 ms", 2, False)],
    "keepalive": [("ops_per_s", "renewals/s", 0, True), ("p50_ms", "p50 ms", 3, False),
                  ("p99_ms", "p99 ms", 3, False)],
    "watch": [("last_median_ms", "write to last watcher, median round, ms", 2, False),
              ("last_max_ms", "worst round, ms", 2, False),
              ("wake_p50_ms", "per-watcher p50 ms", 2, False),
              ("wake_p99_ms", "per-watcher p99 ms", 2, False),
              ("bytes_per_watcher", "server RSS per watcher, bytes", 0, False),
              ("rss_parked_mib", "server RSS with watchers, MiB", 1, False)],
    "idle_rss": [("bytes_per_item", "RSS bytes per idle session/lease", 0, False),
                 ("rss_after_mib", "RSS after, MiB", 1, False),
                 ("create_per_s", "creates/s while filling", 0, True)],
    "failover": [("kill_to_held_ms", "kill -9 to next holder, ms", 0, False),
                 ("renewal_to_held_ms", "holder's last renewal to next holder, ms", 0, False),
                 ("beyond_ttl_ms", "beyond the TTL, ms", 1, False)],
}


def median_of(report, case_id, config, key):
    """The median of `key` over a case's runs on `config` (None: no run has it)."""
    vals = [r[key] for r in report["results"].get(case_id, {}).get(config, []) if key in r]
    return median(vals)


def report_preamble(report, target_lines, settings):
    """The opening of a side-by-side report of one API against its original
    (vs_etcd_api.py, vs_zookeeper_api.py): how it was generated, the
    targets' verdicts, the machine and the settings, as markdown lines."""
    out = []
    w = out.append
    w(f"Generated by `{report['command']}` ({report['mode']}); {report['runs']} run"
      f"{'s' if report['runs'] > 1 else ''}, interleaved (run 1 of every case on every "
      "configuration, then run 2...); every cell is the median of the runs, ratios are ratios "
      "of medians (above 1: the first is higher, which is better for throughput and worse "
      "for latency and memory).\n")
    w("### Targets\n")
    if report["mode"] != "full":
        w("_Smoke run: tiny counts on a busy machine; these verdicts mean nothing._\n")
    out += target_lines
    w("")
    w("### Machine\n")
    for k, v in report["machine"]:
        w(f"- {k}: {v}")
    w("")
    w("### Settings\n")
    for k, v in settings:
        w(f"- **{k}**: {v}")
    for k, v in report["settings"]:
        w(f"- {k}: {v}")
    w("- everything else (durability, server flags, workloads) as in "
      "[benchmarks-vs-etcd.md](benchmarks-vs-etcd.md)")
    w("")
    return out


def markdown(report):
    out = []
    w = out.append
    w(f"Generated by `{report['command']}` ({report['mode']}); {report['runs']} runs, "
      "interleaved; every cell is the median of the runs, ratios are ratios of medians "
      "(tenure ÷ other: above 1 means tenure is higher, which is better for throughput and "
      "worse for latency and memory).\n")
    w("### Machine\n")
    for k, v in report["machine"]:
        w(f"- {k}: {v}")
    w("")
    w("### Settings\n")
    for k, v in SETTINGS:
        w(f"- **{k}**: {v}")
    for k, v in report["settings"]:
        w(f"- {k}: {v}")
    w("")
    for case in report["cases"]:
        cid, title, configs, workload = case["id"], case["title"], case["configs"], case["workload"]
        res = report["results"][cid]
        w(f"### {title}\n")
        missing = [u for u in report.get("unsupported", []) if u.startswith(cid + " ")]
        if missing:
            w("Not measured, the server does not offer it: " + "; ".join(missing) + ".\n")
        groups = [[c for c in configs if CONFIGS[c][1] == 1], [c for c in configs if CONFIGS[c][1] == 3]]
        for group in groups:
            if not group or not any(res.get(c) for c in group):
                continue
            others = [c for c in group if CONFIGS[c][0] != "tenure"]
            tenure = next((c for c in group if CONFIGS[c][0] == "tenure"), None)
            head = "| metric | " + " | ".join(CONFIGS[c][2] for c in group) + " |" + \
                "".join(f" tenure ÷ {CONFIGS[c][2].split(',')[0]} |" for c in others)
            w(head)
            w("|---|" + "---:|" * (len(group) + len(others)))
            for key, label, dec, _ in METRICS[workload]:
                meds = {c: median([r[key] for r in res.get(c, []) if key in r]) for c in group}
                if all(v is None for v in meds.values()):
                    continue
                cells = [fmt(meds[c], dec) for c in group]
                # A difference near zero has no meaningful ratio.
                rats = [ratio(meds.get(tenure), meds[c]) if key != "beyond_ttl_ms" else "-"
                        for c in others]
                w(f"| {label} | " + " | ".join(cells) + " |" + "".join(f" {x} |" for x in rats))
            w("")
        if workload == "failover":
            w("Trials: " + "; ".join(
                f"{CONFIGS[c][2]}: " + ", ".join(f"{r['kill_to_held_ms']:.0f}" for r in res.get(c, []))
                for c in configs) + " (kill -9 to next holder, ms).\n")
    w("### Every run\n")
    w("| case | system | metric | runs | median |")
    w("|---|---|---|---|---:|")
    for case in report["cases"]:
        res = report["results"][case["id"]]
        for c in case["configs"]:
            for key, label, dec, _ in METRICS[case["workload"]][:1]:
                vals = [r[key] for r in res.get(c, []) if key in r]
                w(f"| {case['id']} | {CONFIGS[c][2]} | {label} | "
                  f"{' / '.join(fmt(v, dec) for v in vals)} | {fmt(median(vals), dec)} |")
    w("")
    if report["failures"]:
        w("### Failed measurements\n")
        for f in report["failures"]:
            w(f"- {f}")
        w("")
    return "\n".join(out)


def plots(report, out_dir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return [f"plots skipped: {e}"]
    made = []
    res = report["results"]
    kv = [c for c in report["cases"] if c["workload"] == "kv_put"]
    if kv:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        xs = [int(c["id"].split("_c")[1]) for c in kv]
        for cfg in kv[0]["configs"]:
            for ax, key in zip(axes, ("ops_per_s", "p99_ms")):
                ys = [median([r[key] for r in res[c["id"]].get(cfg, [])]) for c in kv]
                ax.plot(xs, ys, marker="o", label=CONFIGS[cfg][2],
                        linestyle="-" if CONFIGS[cfg][1] == 1 else "--")
        for ax, title in zip(axes, ("durable puts/s (median of runs)", "put p99 latency, ms")):
            ax.set_xscale("log", base=2)
            ax.set_xticks(xs)
            ax.set_xticklabels([str(x) for x in xs])
            ax.set_xlabel("concurrent clients")
            ax.set_title(title)
            ax.grid(True, alpha=0.3)
        axes[1].set_yscale("log")
        axes[0].legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(out_dir, "benchmarks-vs-etcd-kv-put.png")
        fig.savefig(path, dpi=90)
        plt.close(fig)
        made.append(path)
    bars = [c for c in report["cases"] if c["workload"] in ("lock_many", "lock_hot", "session_pairs",
                                                            "keepalive")]
    if bars:
        fig, ax = plt.subplots(figsize=(11, 4))
        cfgs = ["tenure1", "etcd1", "tenure3", "etcd3"]
        width = 0.2
        for i, cfg in enumerate(cfgs):
            ys = [median([r["ops_per_s"] for r in res[c["id"]].get(cfg, [])]) or 0 for c in bars]
            ax.bar([j + (i - 1.5) * width for j in range(len(bars))], ys, width, label=CONFIGS[cfg][2])
        ax.set_xticks(range(len(bars)))
        ax.set_xticklabels([c["id"] for c in bars], fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("operations/s (median of runs)")
        ax.set_title("locks, sessions/leases, keepalives")
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
        fig.tight_layout()
        path = os.path.join(out_dir, "benchmarks-vs-etcd-locks-sessions.png")
        fig.savefig(path, dpi=90)
        plt.close(fig)
        made.append(path)
    watch = [c for c in report["cases"] if c["workload"] == "watch"]
    if watch:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        cfgs = watch[0]["configs"]
        width = 0.25
        for ax, key, title in ((axes[0], "last_median_ms", "write to last watcher notified, ms"),
                               (axes[1], "bytes_per_watcher", "server RSS per watcher, bytes")):
            for i, cfg in enumerate(cfgs):
                ys = [median([r[key] for r in res[c["id"]].get(cfg, []) if key in r]) or 0
                      for c in watch]
                ax.bar([j + (i - 1) * width for j in range(len(watch))], ys, width, label=CONFIGS[cfg][2])
            ax.set_xticks(range(len(watch)))
            ax.set_xticklabels([c["title"].split(", ")[1] for c in watch], fontsize=8)
            ax.set_title(title)
            ax.grid(True, axis="y", alpha=0.3)
        axes[0].legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(out_dir, "benchmarks-vs-etcd-watch.png")
        fig.savefig(path, dpi=90)
        plt.close(fig)
        made.append(path)
    return made


def write_doc(path, generated, script="bench/vs_etcd.py",
              title="tenure next to etcd 3.4 and ZooKeeper 3.8", regenerate="scripts/bench --vs-etcd",
              append=False):
    """Replaces the part of `path` between `script`'s generated markers (the
    hand-written text around it stays); without them, appends the section to
    the page (append) or writes a new page with `title`."""
    begin = f"<!-- generated by {script}: begin -->"
    end = f"<!-- generated by {script}: end -->"
    text = ""
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
    block = f"{begin}\n{generated}\n{end}"
    if begin in text and end in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    elif append:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    else:
        text = f"# {title}\n\nRegenerate with `{regenerate}`.\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(text)


# --- main ---------------------------------------------------------------------------

def main():
    exit_on_sigterm()
    try:
        return run()
    finally:
        stop_everything()


def run():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tenure", default=os.path.join(ROOT, "build/src/tenure"))
    p.add_argument("--driver", default=os.path.join(ROOT, "build/bench/vs/tenure_vs"))
    p.add_argument("--etcd", default="/usr/bin/etcd")
    p.add_argument("--java", default="/usr/bin/java")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--seconds", type=float, default=5.0, help="timed phase of each throughput run")
    p.add_argument("--failover-trials", type=int, default=2, help="per system per run")
    p.add_argument("--ttl", type=int, default=10, help="failover TTL, s (tenure's minimum is 10)")
    p.add_argument("--only", default="", help="comma-separated case ids (prefix match)")
    p.add_argument("--configs", default="", help="comma-separated systems to run, of "
                   + ",".join(CONFIGS) + " (default: each case's own)")
    p.add_argument("--out", default=os.path.join(ROOT, "docs"))
    p.add_argument("--data-parent", default=os.environ.get("TMPDIR", "/tmp"))
    p.add_argument("--smoke", action="store_true", help="tiny counts, 1 run: proves the harness works")
    ARGS = p.parse_args()
    if ARGS.smoke:
        ARGS.runs, ARGS.failover_trials = 1, 1
    for tool in (ARGS.tenure, ARGS.driver, ARGS.etcd, ARGS.java):
        if not os.access(tool, os.X_OK):
            sys.exit(f"vs_etcd.py: not an executable: {tool} (scripts/setup installs etcd and "
                     "ZooKeeper; scripts/build tenure tenure_vs builds the rest)")
    if not os.path.exists(ZK_CLASSPATH.split(":")[0]):
        sys.exit("vs_etcd.py: ZooKeeper is not installed (/usr/share/java/zookeeper.jar); run scripts/setup")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:  # 10,000 watchers: the driver and the servers inherit this
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    os.makedirs(ARGS.out, exist_ok=True)

    cases = [{"id": cid, "title": t, "configs": cf, "workload": wl, "args": a, "timeout": to}
             for cid, t, cf, wl, a, to in plan(ARGS.smoke)]
    cases.append({"id": "failover", "title": f"Election failover: kill -9 of the holding "
                  f"candidate, TTL {ARGS.ttl} s, no lock-delay", "configs": ["tenure1", "etcd1"],
                  "workload": "failover", "args": [], "timeout": 0})
    if ARGS.only:
        wanted = ARGS.only.split(",")
        cases = [c for c in cases if any(c["id"].startswith(w) for w in wanted)]
    if ARGS.configs:
        unknown = [c for c in ARGS.configs.split(",") if c not in CONFIGS]
        if unknown:
            sys.exit(f"vs_etcd.py: unknown --configs {','.join(unknown)}; known: {','.join(CONFIGS)}")
        for c in cases:
            c["configs"] = [x for x in c["configs"] if x in ARGS.configs.split(",")]
        cases = [c for c in cases if c["configs"]]
    report = {"command": " ".join(["bench/vs_etcd.py"] + sys.argv[1:]),
              "mode": "smoke: tiny counts, the numbers mean nothing" if ARGS.smoke else "full",
              "runs": ARGS.runs, "cases": [{k: v for k, v in c.items() if k != "args"} for c in cases],
              "results": {c["id"]: {} for c in cases}, "failures": [], "unsupported": []}
    machine = machine_facts()
    machine.append(("load average at start (1/5/15 min)", load_average()))
    machine.append(("disk sync-write latency at start", disk_latency(ARGS.data_parent)))
    report["settings"] = [
        ("timed phase", f"{0.5 if ARGS.smoke else ARGS.seconds} s per throughput run, closed loop "
                        "(each client one operation in flight)"),
        ("clients", "tenure: one HTTP/1.1 keep-alive connection per client; ZooKeeper: one "
                    "session (connection) per client; etcd: clients spread over at most 64 gRPC "
                    "channels (TCP connections), calls multiplexed by HTTP/2; all clients on one "
                    "client thread (build/bench/vs/tenure_vs)"),
        ("KV put", "100-byte values over 1,000 keys, uniformly random (tenure PUT /v1/kv/bench/kNNNN, "
                   "etcd KV.Put bench/kNNNN, ZooKeeper setData /bench/kNNNN, znodes created first)"),
        ("lock", "tenure: a session (TTL 60 s, LockDelay 0s) per client, then PUT ?acquire= / "
                 "?release=; a refused client reads the key and parks a blocking query on it "
                 "(Consul's api.Lock). etcd: a lease (TTL 60 s) per client, then the Txn of "
                 "clientv3 concurrency.Mutex.Lock, waitDeletes with a Watch when another key "
                 "is older, Unlock = DeleteRange. Independent locks: one key (prefix) per client. "
                 "tenure's fair acquire (--mode fair): PUT ?acquire=S&queue&wait=30s, parked in "
                 "the lock's FIFO queue until the server hands the lock over; measured only when "
                 "a probe (acquire&queue&wait=1s on a held key parks for the wait instead of an "
                 "immediate false) shows the server offers it."),
        ("sessions", "tenure PUT /v1/session/create {TTL 60s} + /v1/session/destroy; etcd "
                     "LeaseGrant(60) + LeaseRevoke. Keepalive: tenure PUT /v1/session/renew/ID; "
                     "etcd one LeaseKeepAlive stream per client, one request in flight; both "
                     "cycle over their share of the sessions/leases"),
        ("watch", "tenure: one connection per watcher with GET ?index=N&wait=60s, parking "
                  "confirmed by /v1/agent/self; etcd: one Watch stream per watcher (over at most "
                  "64 channels), created before the first write; ZooKeeper: one session per "
                  "watcher, getData with watch=true re-armed every round. Each round: one write "
                  "from another connection; the time from sending it to each watcher's "
                  "notification. RSS per watcher = server RSS growth from before the watchers "
                  "connected to all parked, / watchers (includes each watcher's connection, "
                  "stream or session)"),
        ("idle RSS", "server VmRSS before and 2 s after creating N sessions (tenure TTL 86400s) "
                     "or leases (etcd TTL 86400) with 64 clients; bytes = growth / N"),
        ("failover", f"two candidate processes (tenure_vs --workload candidate) on one server: "
                     f"the holder, and a waiter (tenure: blocking query on the key; etcd: "
                     f"Mutex waitDeletes' watch). TTL {ARGS.ttl} s on both, renewed every TTL/3, "
                     "no lock-delay; the holder is killed with SIGKILL at a random point of its "
                     "renewal cycle. Timestamps are CLOCK_MONOTONIC in both processes"),
        ("servers", "a fresh server (or cluster, new data dirs and ports) for every measurement; "
                    "the client drives the leader; 'servers' CPU %' = CPU of all server "
                    "processes over the driver's whole run, % of one core"),
    ]

    def measure_one(case, cfg):
        if case["workload"] == "failover":
            return [failover_trial(cfg, ARGS.ttl) for _ in range(ARGS.failover_trials)]
        return [run_driver(cfg, case["workload"], case["args"], case["timeout"])]

    failures = report["failures"]
    run_interleaved(report, cases, machine, measure_one,
                    lambda case: METRICS[case["workload"]][0][0])
    machine.append(("load average at end (1/5/15 min)", load_average()))
    machine.append(("disk sync-write latency at end", disk_latency(ARGS.data_parent)))
    report["machine"] = machine

    with open(os.path.join(ARGS.out, "benchmarks-vs-etcd.json"), "w") as f:
        json.dump(report, f, indent=1)
    made = plots(report, ARGS.out)
    generated = markdown(report)
    if made:
        generated += "\n### Plots\n\n" + "\n".join(
            f"![{os.path.basename(m)}]({os.path.basename(m)})" for m in made if m.endswith(".png")) + "\n"
    write_doc(os.path.join(ARGS.out, "benchmarks-vs-etcd.md"), generated)
    print(generated)
    if failures:
        print(f"vs_etcd.py: {len(failures)} measurement(s) FAILED", file=sys.stderr)
        return 1
    return 0


ARGS = None

if __name__ == "__main__":
    sys.exit(main())
