#!/usr/bin/python3
"""Server-leader failover, tenure and etcd side by side (docs/benchmarks-vs-etcd.md).

A benchmark, not a test: no thresholds. Starts a 3-server tenure cluster and
a 3-member etcd 3.4 cluster (bench/vs_etcd.py's Servers: loopback, fresh data
dirs, each system's default raft timeouts) and keeps both for the whole run.
Trials are interleaved (tenure trial 1, etcd trial 1, tenure trial 2, ...);
each trial, on one system:

  1. waits for a healthy cluster: all 3 members running and naming the same
     leader, a write through the leader acknowledged and visible in a local
     (stale / serializable) read on every member;
  2. starts the writer: a new write attempt every 5 ms, alternating between
     the two members that will survive, each attempt on a new connection with
     a 3 s timeout (open loop: an attempt stuck on a dead leader does not hold
     up the next one, so no client retry/backoff policy is measured);
  3. after a random 0.2-0.7 s, kill -9 of the leader (reaped at once);
  4. measures from the kill to the first acknowledged write among the
     attempts sent after the leader was reaped (so the dead leader cannot
     have acknowledged it), and, for the diagnosis, to the moment both
     survivors name the same new leader;
  5. restarts the killed member with its data dir and flags.

Writes go over HTTP/1.1 from this script to both systems: tenure's Consul API
(PUT /v1/kv/K, a follower forwards it to the leader), etcd's JSON gateway
(POST /v3/kv/put, served by the member's own process, which proposes through
raft, i.e. forwards to the leader the same way). Timestamps are
CLOCK_MONOTONIC.

    /usr/bin/python3 bench/vs_leader_failover.py [--trials 20] [--out docs]
    /usr/bin/python3 bench/vs_leader_failover.py --trials 1 --out build/x   (smoke)

Replaces the part of <out>/benchmarks-vs-etcd.md between this script's
"generated" markers (appended at the end if absent) and writes
<out>/benchmarks-vs-etcd-failover.json. Only processes this script started
are signalled, by PID; SIGINT and SIGTERM stop them before it exits.
"""

import argparse
import base64
import json
import os
import random
import shlex
import signal
import sys
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import vs_etcd  # noqa: E402
from cluster_failover import load_average, machine_facts, percentile  # noqa: E402
from vs_etcd import Process, Servers, poll, stop_everything  # noqa: E402

ATTEMPT_INTERVAL = 0.005   # between write attempts (alternating survivors)
ATTEMPT_TIMEOUT = 3.0      # one write attempt
MAX_IN_FLIGHT = 800        # attempts in flight at once (a bound, not a target)
TRIAL_DEADLINE = 60.0      # no acknowledged write this long after a kill: the trial fails
HEALTHY_DEADLINE = 60.0    # a restarted cluster must be healthy within this


def b64(s):
    return base64.b64encode(s if isinstance(s, bytes) else s.encode()).decode()


def request(addr, method, path, body=None, timeout=1.0):
    """(status, body) or (None, b"") on any transport error."""
    req = urllib.request.Request(f"http://{addr}{path}", data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (OSError, ValueError):
        return None, b""


class Cluster:
    """One system's 3-member cluster with what a trial needs: who leads, a
    write, a local read, a kill and a restart of one member."""

    def __init__(self, system, data_parent, server_args=()):
        self.system = system
        self.servers = Servers(system, 3, data_parent, server_args=server_args)

    def __enter__(self):
        self.servers.__enter__()
        # Past this point __exit__ will not run if anything raises (a signal
        # during the status requests): close the servers here then.
        try:
            procs = self.servers.procs
            args = [p.proc.args for p in procs]
            # The client address of member i: the value after the client-address flag.
            flag = "-http-addr" if self.system == "tenure" else "--listen-client-urls"
            self.addrs = [a[a.index(flag) + 1].replace("http://", "") for a in args]
            if self.system == "tenure":
                self.ids = [a[a.index("-raft-addr") + 1] for a in args]
            else:
                self.ids = [self._status(a)[0] for a in self.addrs]
        except BaseException:
            self.servers.close()
            raise
        return self

    def __exit__(self, *exc):
        self.servers.__exit__(*exc)

    def _status(self, addr):
        """etcd: (member id, leader id) as the member at addr says, or (None, None)."""
        status, body = request(addr, "POST", "/v3/maintenance/status", b"{}")
        if status != 200:
            return None, None
        st = json.loads(body)
        return st["header"]["member_id"], st.get("leader")

    def leader_named_by(self, i):
        """The index of the member that member i names as leader, or None."""
        if self.system == "tenure":
            status, body = request(self.addrs[i], "GET", "/v1/status/leader")
            named = json.loads(body) if status == 200 else ""
        else:
            named = self._status(self.addrs[i])[1]
        return self.ids.index(named) if named in self.ids else None

    def write(self, i, key, value, timeout):
        """True if the write through member i was acknowledged."""
        if self.system == "tenure":
            status, body = request(self.addrs[i], "PUT", f"/v1/kv/{key}", value.encode(), timeout)
            return status == 200 and body.strip() == b"true"
        body = json.dumps({"key": b64(key), "value": b64(value)}).encode()
        status, _ = request(self.addrs[i], "POST", "/v3/kv/put", body, timeout)
        return status == 200

    def local_read(self, i, key):
        """key's value as member i has it locally (no leader involved), or None."""
        if self.system == "tenure":
            status, body = request(self.addrs[i], "GET", f"/v1/kv/{key}?stale&raw")
            return body.decode() if status == 200 else None
        body = json.dumps({"key": b64(key), "serializable": True}).encode()
        status, body = request(self.addrs[i], "POST", "/v3/kv/range", body)
        if status != 200:
            return None
        kvs = json.loads(body).get("kvs", [])
        return base64.b64decode(kvs[0]["value"]).decode() if kvs else None

    def healthy_leader(self):
        """Waits until every member runs and names the same leader, and a marker
        written through it is in every member's local state; returns its index."""
        def agreed():
            self.servers._check()
            named = {self.leader_named_by(i) for i in range(3)}
            return named.pop() + 1 if len(named) == 1 and None not in named else None
        leader = poll(agreed, HEALTHY_DEADLINE, f"{self.system}: all 3 members naming one leader") - 1
        marker = f"m{time.monotonic_ns()}"
        poll(lambda: self.write(leader, "bench/marker", marker, 5.0), HEALTHY_DEADLINE,
             f"{self.system}: a marker write through the leader")
        poll(lambda: all(self.local_read(i, "bench/marker") == marker for i in range(3)),
             HEALTHY_DEADLINE, f"{self.system}: the marker on every member")
        if self.leader_named_by(leader) != leader:
            raise RuntimeError(f"{self.system}: the leader changed while checking health")
        return leader

    def kill(self, i):
        """kill -9 of member i, reaped; returns (sent_at, reaped_at) monotonic s."""
        p = self.servers.procs[i]
        sent = time.monotonic()
        os.kill(p.pid, signal.SIGKILL)
        p.proc.wait(timeout=10)
        reaped = time.monotonic()
        p.stop()  # unlists it (already dead: nothing is sent)
        return sent, reaped

    def restart(self, i):
        old = self.servers.procs[i]
        self.servers.procs[i] = Process(list(old.proc.args), old.log_path)


def trial(cluster, number):
    leader = cluster.healthy_leader()
    survivors = [i for i in range(3) if i != leader]
    lock = threading.Lock()
    state = {"reaped_at": None, "ack": None, "ack_via": None, "attempts": 0, "in_flight": 0,
             "leader_at": None, "new_leader": None}
    stop = threading.Event()
    key = f"bench/failover{number}"

    def attempt(i, n):
        sent = time.monotonic()
        ok = cluster.write(i, key, f"{i}#{n}", ATTEMPT_TIMEOUT)
        done = time.monotonic()
        with lock:
            state["in_flight"] -= 1
            after = state["reaped_at"] is not None and sent >= state["reaped_at"]
            if after:
                state["attempts"] += 1
            if ok and after and (state["ack"] is None or done < state["ack"]):
                state["ack"], state["ack_via"] = done, i

    def writer():
        n = 0
        while not stop.is_set():
            with lock:
                busy = state["in_flight"] >= MAX_IN_FLIGHT
                if not busy:
                    state["in_flight"] += 1
            if not busy:
                n += 1
                threading.Thread(target=attempt, args=(survivors[n % 2], n), daemon=True).start()
            time.sleep(ATTEMPT_INTERVAL)

    def leader_watch():
        while not stop.is_set():
            with lock:
                reaped = state["reaped_at"]
            if reaped is not None:
                sent = time.monotonic()
                named = {cluster.leader_named_by(i) for i in survivors}
                if sent >= reaped and len(named) == 1 and None not in named and leader not in named:
                    with lock:
                        state["leader_at"], state["new_leader"] = time.monotonic(), named.pop()
                    return
            time.sleep(ATTEMPT_INTERVAL)

    threads = [threading.Thread(target=writer, daemon=True),
               threading.Thread(target=leader_watch, daemon=True)]
    for t in threads:
        t.start()
    try:
        time.sleep(random.uniform(0.2, 0.7))  # not phase-locked to the heartbeats
        kill_at, reaped_at = cluster.kill(leader)
        with lock:
            state["reaped_at"] = reaped_at
        deadline = kill_at + TRIAL_DEADLINE
        while time.monotonic() < deadline:
            with lock:
                if state["ack"] is not None and state["leader_at"] is not None:
                    break
            time.sleep(0.01)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=5)
    # Attempts still in flight end within ATTEMPT_TIMEOUT; one of them may be
    # acknowledged earlier than the first one seen.
    drain = time.monotonic() + ATTEMPT_TIMEOUT + 1
    while time.monotonic() < drain:
        with lock:
            if state["in_flight"] == 0:
                break
        time.sleep(0.01)
    cluster.restart(leader)
    if state["ack"] is None:
        raise RuntimeError(f"{cluster.system} trial {number}: no acknowledged write within "
                           f"{TRIAL_DEADLINE:.0f} s of the kill")
    return {"trial": number, "killed": leader + 1,
            "write_ms": (state["ack"] - kill_at) * 1000,
            "leader_ms": (state["leader_at"] - kill_at) * 1000 if state["leader_at"] else None,
            "new_leader": state["new_leader"] + 1 if state["new_leader"] is not None else None,
            "via": state["ack_via"] + 1, "attempts": state["attempts"],
            "reap_ms": (reaped_at - kill_at) * 1000}


def summary(values):
    return {"n": len(values), "p50": percentile(values, 50), "p90": percentile(values, 90),
            "max": max(values)}


SYSTEMS = [("tenure", "tenure, 3 servers"), ("etcd", "etcd 3.4, 3 members")]


def markdown(report):
    out = []
    w = out.append
    w("## Server-leader failover, side by side\n")
    w(f"Command: `{report['command']}`. {report['trials']} trials per system, interleaved "
      "(tenure, etcd, tenure, ...), both clusters running for the whole run. Each trial: wait "
      "for a healthy cluster (one leader named by all 3, a marker written through it and "
      "read locally on every member), a writer starts a new write attempt every 5 ms "
      "alternating between the 2 members that will survive (each on a new connection, 3 s "
      "timeout, so a stuck attempt does not delay the next), kill -9 of the leader at a "
      "random 0.2-0.7 s, then the time from the kill to the first acknowledged write among "
      "attempts sent after the leader was reaped; the killed member is restarted with its "
      "data between trials. Each system with its default timeouts: tenure election timeout "
      "500 ms (randomized in [T, 2T]), heartbeat 50 ms, pre-vote on; etcd 3.4 election "
      "timeout 1000 ms, heartbeat 100 ms, pre-vote off (3.4's default). Writes: tenure "
      "`PUT /v1/kv/K` on a follower, forwarded to the leader; etcd `POST /v3/kv/put` on its "
      "JSON gateway (in the member's process; proposed through raft). Percentiles are "
      "nearest-rank.\n")
    w("Machine: " + "; ".join(f"{k} {v}" for k, v in report["machine"]) + ".\n")
    w("| kill -9 of the leader to ... | " + " | ".join(label for _, label in SYSTEMS) +
      " | tenure ÷ etcd |")
    w("|---|---:|---:|---:|")
    for key, what in (("write_ms", "first acknowledged write"),
                      ("leader_ms", "both survivors name the new leader")):
        sums = {}
        for system, _ in SYSTEMS:
            vals = [t[key] for t in report["results"][system] if t.get(key) is not None]
            sums[system] = summary(vals) if vals else None
        for p in ("p50", "p90", "max"):
            cells = [f"{sums[s][p]:.0f} ms" if sums[s] else "-" for s, _ in SYSTEMS]
            rat = (f"{sums['tenure'][p] / sums['etcd'][p]:.2f}"
                   if sums["tenure"] and sums["etcd"] and sums["etcd"][p] else "-")
            w(f"| {what}, {p} | " + " | ".join(cells) + f" | {rat} |")
    w("")
    for system, label in SYSTEMS:
        w(f"{label}, every trial (kill to first write / to new leader named, ms): " + ", ".join(
            f"{t['write_ms']:.0f}/{t['leader_ms']:.0f}" if t.get("leader_ms") is not None
            else f"{t['write_ms']:.0f}/-" for t in report["results"][system]) + ".\n")
    if report["failures"]:
        w("Failed trials: " + "; ".join(report["failures"]) + ".\n")
    return "\n".join(out)


def main():
    vs_etcd.exit_on_sigterm()
    # SIGINT (Ctrl-C) unwinds the same way: KeyboardInterrupt, then the
    # `with` blocks and stop_everything stop every server.
    try:
        return run()
    finally:
        stop_everything()


def run():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tenure", default=os.path.join(ROOT, "build/src/tenure"))
    p.add_argument("--etcd", default="/usr/bin/etcd")
    p.add_argument("--trials", type=int, default=20, help="per system")
    p.add_argument("--systems", default="tenure,etcd")
    p.add_argument("--out", default=os.path.join(ROOT, "docs"))
    p.add_argument("--data-parent", default=os.environ.get("TMPDIR", "/tmp"))
    p.add_argument("--machine-note", default="", help="added to the machine facts")
    p.add_argument("--tenure-args", default="",
                   help="extra flags for every tenure server, e.g. '-raft-election-timeout 300ms' "
                        "(an experiment: the report then no longer shows the defaults)")
    args = p.parse_args()
    for tool in (args.tenure, args.etcd):
        if not os.access(tool, os.X_OK):
            sys.exit(f"vs_leader_failover.py: not an executable: {tool}")
    # vs_etcd's Servers read their tools from its ARGS.
    vs_etcd.ARGS = argparse.Namespace(tenure=args.tenure, etcd=args.etcd)
    systems = [s for s in args.systems.split(",") if s]
    machine = machine_facts() + [("load average at start", load_average())]
    if args.machine_note:
        machine.append(("note", args.machine_note))
    if args.tenure_args:
        machine.append(("NOT the defaults: tenure servers run with", args.tenure_args))
    report = {"command": shlex.join(["/usr/bin/python3", "bench/vs_leader_failover.py"]
                                    + sys.argv[1:]),
              "trials": args.trials, "results": {s: [] for s, _ in SYSTEMS}, "failures": [],
              "machine": machine}
    os.makedirs(args.out, exist_ok=True)
    clusters = {}
    try:
        for s in systems:
            extra = shlex.split(args.tenure_args) if s == "tenure" else ()
            clusters[s] = Cluster(s, args.data_parent, extra).__enter__()
        print("started: " + ", ".join(f"{s} pids {c.servers.pids}" for s, c in clusters.items()),
              file=sys.stderr, flush=True)
        for n in range(1, args.trials + 1):
            for s in systems:
                try:
                    t = trial(clusters[s], n)
                    report["results"][s].append(t)
                    print(f"{s:<6} trial {n:2d}: killed member {t['killed']}, first write "
                          f"{t['write_ms']:7.1f} ms (via {t['via']}, {t['attempts']} attempts), "
                          f"new leader {t['new_leader']} named at "
                          f"{t['leader_ms'] if t['leader_ms'] is not None else float('nan'):7.1f} ms",
                          file=sys.stderr, flush=True)
                except Exception as e:  # noqa: BLE001 - reported, and the exit code says it
                    report["failures"].append(f"{s} trial {n}: {e}")
                    print(f"{s} trial {n} FAILED: {e}", file=sys.stderr, flush=True)
    finally:
        for c in clusters.values():
            c.__exit__(None, None, None)
    report["machine"].append(("load average at end", load_average()))
    with open(os.path.join(args.out, "benchmarks-vs-etcd-failover.json"), "w") as f:
        json.dump(report, f, indent=1)
    generated = markdown(report)
    vs_etcd.write_doc(os.path.join(args.out, "benchmarks-vs-etcd.md"), generated,
                      script="bench/vs_leader_failover.py", append=True)
    print(generated)
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
