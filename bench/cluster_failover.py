#!/usr/bin/python3
"""Server-leader failover time of a 3-server tenure cluster (docs/benchmarks.md,
"3-server cluster").

A benchmark, not a test: no thresholds. Starts 3 `tenure server` processes on
loopback, bootstrapped together from a static peer list with the default raft
timeouts, and runs N trials of:

  1. wait until all 3 members name the same leader and the last write is
     everywhere; pause a random 0.2-0.7 s (so the kill is not phase-locked to
     the leader's 100 ms heartbeats);
  2. kill -9 the leader;
  3. measure, from the kill:
       - leader_ms: until both survivors name the same new leader
         (GET /v1/status/leader on each, every ~5 ms);
       - write_ms: until the first durable write (PUT /v1/kv/failover/tN)
         answered 200 `true` by ANY member: one writer thread per member
         address (the dead one included, as a client that does not know who
         died would), each retrying every ~5 ms with a 1 s timeout per attempt;
         only attempts sent after the kill count;
  4. restart the killed member with its data dir and the same flags, and
     measure catchup_ms: from its restart until a ?stale read on it returns a
     marker written after the failover.

Prints every trial, then p50/p90/p99/max (nearest-rank percentiles) with the
machine facts and settings. Run with Debian's /usr/bin/python3 (stdlib only):

    /usr/bin/python3 bench/cluster_failover.py [--trials 20] [--tenure build/src/tenure]
    /usr/bin/python3 bench/cluster_failover.py --smoke        (2 trials)

Only processes this script started are ever signalled (by their Popen).
"""

import argparse
import json
import math
import os
import platform
import random
import shlex
import signal
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

from tenure_testlib import Cluster, http_request, poll_until  # noqa: E402

def raft_settings(server_args):
    """What the servers run with: tenure's defaults unless --server-args
    changes them (tenure server -raft-election-timeout / -raft-heartbeat)."""
    def flag(name, default):
        return server_args[server_args.index(name) + 1] if name in server_args else default
    return [
        ("election timeout", flag("-raft-election-timeout", "default")
         + " (libraft randomizes each follower's timer in [T, 2T])"),
        ("heartbeat", flag("-raft-heartbeat", "default")),
        ("pre-vote", "on (raft_set_pre_vote)"),
        ("server flags", "-node-id, -raft-addr, -http-addr, -data-dir, -bootstrap-peers, -node "
                         "(tests/lib Cluster)" + (" plus " + " ".join(server_args)
                                                  if server_args else "")),
    ]

ATTEMPT_INTERVAL = 0.005  # between write attempts / leader polls, per thread
ATTEMPT_TIMEOUT = 1.0     # one write attempt
TRIAL_DEADLINE = 30.0     # give up on a trial after this long


def machine_facts():
    facts = [("date", time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())),
             ("nproc", str(os.cpu_count()))]
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    facts.append(("cpu", cpu))
    uname = platform.uname()
    facts.append(("kernel", f"{uname.system} {uname.release} {uname.version} {uname.machine}"))
    facts.append(("python", sys.version.split()[0]))
    return facts


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` (all threads), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    except (OSError, IndexError, ValueError):
        return None


def load_average():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def percentile(values, p):
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def put_ok(addr, key, value, timeout):
    try:
        resp = http_request(addr, "PUT", f"/v1/kv/{key}", value, timeout=timeout)
        return resp.status == 200 and resp.body.strip() == b"true"
    except (OSError, ValueError):
        return False


def leader_of(addr, timeout=1.0):
    try:
        resp = http_request(addr, "GET", "/v1/status/leader", timeout=timeout)
        return resp.json() if resp.status == 200 else ""
    except (OSError, ValueError):
        return ""


def stale_value(addr, key):
    """The raw value of key read with ?stale on addr, or None."""
    try:
        resp = http_request(addr, "GET", f"/v1/kv/{key}?stale&raw", timeout=1.0)
        return resp.body if resp.status == 200 else None
    except OSError:
        return None


def agreed_leader(cluster):
    """The member that every running member names as leader, or None."""
    named = {leader_of(m.http_addr) for m in cluster.running()}
    if len(named) != 1:
        return None
    (address,) = named
    return next((m for m in cluster.running() if m.raft_addr == address), None)


def run_trial(cluster, number, log):
    ids = {m.raft_addr: i + 1 for i, m in enumerate(cluster.members)}
    old = poll_until(lambda: agreed_leader(cluster), timeout=TRIAL_DEADLINE,
                     message="the members never agreed on a leader")
    survivors = [m for m in cluster.members if m is not old]
    time.sleep(random.uniform(0.2, 0.7))

    key = f"failover/t{number}"
    stop = threading.Event()
    lock = threading.Lock()
    result = {"write_at": None, "write_by": None, "leader_at": None, "leader": None,
              "attempts": 0}
    kill_at = [math.inf]  # set just after the kill; attempts sent before it do not count

    def writer(member):
        n = 0
        while not stop.is_set():
            n += 1
            sent = time.monotonic()
            ok = put_ok(member.http_addr, key, f"{member.http_addr}#{n}", ATTEMPT_TIMEOUT)
            done = time.monotonic()
            with lock:
                if sent >= kill_at[0]:
                    result["attempts"] += 1
                if ok and sent >= kill_at[0] and result["write_at"] is None:
                    result["write_at"], result["write_by"] = done, member
                    stop.set()
            time.sleep(ATTEMPT_INTERVAL)

    def leader_watch():
        while not stop.is_set() or result["leader_at"] is None:
            if time.monotonic() - kill_at[0] > TRIAL_DEADLINE:
                return
            sent = time.monotonic()
            named = {leader_of(m.http_addr, timeout=ATTEMPT_TIMEOUT) for m in survivors}
            if sent >= kill_at[0] and len(named) == 1:
                (address,) = named
                if address and address != old.raft_addr:
                    result["leader_at"], result["leader"] = time.monotonic(), address
                    return
            time.sleep(ATTEMPT_INTERVAL)

    threads = [threading.Thread(target=writer, args=(m,), daemon=True) for m in cluster.members]
    threads.append(threading.Thread(target=leader_watch, daemon=True))
    for t in threads:
        t.start()
    time.sleep(0.05)  # the threads are spinning (survivors answer 500 as followers)

    old.process.send_signal(signal.SIGKILL)
    with lock:
        kill_at[0] = time.monotonic()
    old.kill()  # reaps it

    deadline = kill_at[0] + TRIAL_DEADLINE
    while time.monotonic() < deadline and (result["write_at"] is None
                                           or result["leader_at"] is None):
        time.sleep(0.01)
    stop.set()
    for t in threads:
        t.join(timeout=ATTEMPT_TIMEOUT + 2)
    if result["write_at"] is None or result["leader_at"] is None:
        raise RuntimeError(f"trial {number}: no new leader or write within {TRIAL_DEADLINE}s")

    # A marker written after the failover, to see the restarted member catch up.
    new = poll_until(lambda: agreed_leader(cluster), timeout=TRIAL_DEADLINE,
                     message="the survivors never agreed on a leader")
    marker = f"t{number}-{time.monotonic_ns()}".encode()
    poll_until(lambda: put_ok(new.http_addr, "failover/marker", marker, 5.0),
               timeout=TRIAL_DEADLINE, message="the marker write never succeeded")
    restarted_at = time.monotonic()
    old.start()
    poll_until(lambda: stale_value(old.http_addr, "failover/marker") == marker,
               timeout=TRIAL_DEADLINE, interval=0.005,
               message="the restarted member never caught up")
    caught_up_at = time.monotonic()
    if stale_value(old.http_addr, key) is None:
        raise RuntimeError(f"trial {number}: the restarted member lacks {key}")

    trial = {
        "trial": number,
        "killed": ids[old.raft_addr],
        "new_leader": ids.get(result["leader"], 0),
        "leader_ms": (result["leader_at"] - kill_at[0]) * 1000,
        "write_ms": (result["write_at"] - kill_at[0]) * 1000,
        "write_via": ids[result["write_by"].raft_addr],
        "attempts": result["attempts"],
        "catchup_ms": (caught_up_at - restarted_at) * 1000,
    }
    log(f"trial {number:3d}: killed node {trial['killed']} (leader), new leader node "
        f"{trial['new_leader']}: agreed {trial['leader_ms']:7.1f} ms, first write "
        f"{trial['write_ms']:7.1f} ms (via node {trial['write_via']}, "
        f"{trial['attempts']} attempts); restarted member caught up in "
        f"{trial['catchup_ms']:6.1f} ms")
    return trial


def summarize(trials, key):
    values = [t[key] for t in trials]
    return {"n": len(values), "min": min(values), "p50": percentile(values, 50),
            "p90": percentile(values, 90), "p99": percentile(values, 99), "max": max(values),
            "mean": sum(values) / len(values)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=20, help="kill -9 trials (default 20)")
    parser.add_argument("--smoke", action="store_true", help="2 trials: proves the harness works")
    parser.add_argument("--tenure", default=os.path.join(ROOT, "build", "src", "tenure"),
                        help="the tenure binary (default build/src/tenure)")
    parser.add_argument("--json", metavar="FILE", help="also write the raw results to FILE")
    parser.add_argument("--seed", type=int, default=None, help="seed of the random pauses")
    parser.add_argument("--server-args", default="",
                        help="extra flags for every server, e.g. '-raft-election-timeout 500ms'")
    args = parser.parse_args()
    server_args = shlex.split(args.server_args)
    settings = raft_settings(server_args)
    trials_wanted = 2 if args.smoke else args.trials
    if trials_wanted < 1:
        parser.error("--trials must be at least 1")
    if not os.access(args.tenure, os.X_OK):
        parser.error(f"not an executable: {args.tenure}")
    os.environ["TENURE_BIN"] = os.path.abspath(args.tenure)
    seed = args.seed if args.seed is not None else int(time.time())
    random.seed(seed)

    def log(line):
        print(line, flush=True)

    command = " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:])
    facts = machine_facts()
    load_start = load_average()
    log("# 3-server failover (kill -9 of the leader)\n")
    log(f"command: /usr/bin/python3 {command}  (seed {seed})")
    for name, value in facts:
        log(f"- {name}: {value}")
    log(f"- load average at start (1/5/15 min): {load_start}")
    for name, value in settings:
        log(f"- {name}: {value}")
    log(f"- writers: one thread per member, an attempt every ~{ATTEMPT_INTERVAL * 1000:.0f} ms, "
        f"{ATTEMPT_TIMEOUT:.0f} s timeout each; leader poll every ~"
        f"{ATTEMPT_INTERVAL * 1000:.0f} ms")
    log("")

    trials = []
    with Cluster(3, extra_args=tuple(server_args)) as cluster:
        leader = poll_until(lambda: agreed_leader(cluster), timeout=30,
                            message="the members never agreed on a leader")
        # Some data first, so the log is not empty.
        for i in range(100):
            if not put_ok(leader.http_addr, f"warmup/{i}", "x" * 100, 5.0):
                raise RuntimeError("warm-up write failed")
        for number in range(1, trials_wanted + 1):
            trials.append(run_trial(cluster, number, log))
    load_end = load_average()

    log("")
    log(f"load average at end (1/5/15 min): {load_end}")
    log(f"{len(trials)} trials (nearest-rank percentiles), milliseconds:\n")
    log("| from kill -9 of the leader | min | p50 | p90 | p99 | max | mean |")
    log("|---|---:|---:|---:|---:|---:|---:|")
    rows = [("survivors agree on a new leader", "leader_ms"),
            ("first successful write (any member)", "write_ms"),
            ("restarted member caught up (from its restart)", "catchup_ms")]
    summary = {}
    for title, key in rows:
        s = summarize(trials, key)
        summary[key] = s
        log(f"| {title} | {s['min']:.0f} | {s['p50']:.0f} | {s['p90']:.0f} | {s['p99']:.0f} | "
            f"{s['max']:.0f} | {s['mean']:.0f} |")
    gap = [t["write_ms"] - t["leader_ms"] for t in trials]
    log(f"\nfirst write minus leader agreement: p50 {percentile(gap, 50):.1f} ms, "
        f"max {max(gap):.1f} ms (negative: the write landed before both survivors named "
        f"the leader)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": command, "seed": seed, "machine": dict(facts),
                       "load_start": load_start, "load_end": load_end,
                       "settings": dict(settings), "trials": trials, "summary": summary},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
