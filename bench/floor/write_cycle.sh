#!/usr/bin/env bash
# Where one raft log write's time goes: a dev-like server on 127.0.0.1 (one
# API port), bench/vs's driver writing with N clients, and `perf record -a`
# for 2 s of the load on the loop thread's io_submit (entry and return) and
# io_getevents (return). libraft 0.15 keeps one log write in flight
# (src/uv_append.c: a write waits for the one before it), so each write is
# a cycle from one io_submit to the next:
#
#   io_submit call      the system call itself (on this VM it kicks the
#                       virtio disk)
#   disk and kernel     from io_submit's return to io_getevents returning on
#                       the loop thread: the disk's write and the cache
#                       flush an O_DSYNC write needs on a disk without FUA
#                       (bench/floor/durable_write.py measures those alone),
#                       then the kernel's completion worker, the eventfd and
#                       the loop's wake-up
#   loop's work         from there to the next io_submit: libraft's
#                       callbacks, the applies of the entries just written,
#                       the encoding of the next ones
#
# Prints each part's median and mean, the writes per second and the
# requests per write. Needs perf (linux-perf) and root.
#
#   bench/floor/write_cycle.sh [--tenure BIN] [--driver BIN]
#                              [--api zk|etcd|consul] [--clients N]
set -euo pipefail
cd "$(dirname "$0")/../.."
tenure=build/src/tenure
driver=build/bench/vs/tenure_vs
api=zk
clients=16
while [ $# -gt 0 ]; do
  case $1 in
    --tenure) tenure=$2; shift 2 ;;
    --driver) driver=$2; shift 2 ;;
    --api) api=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    *) echo "usage: $0 [--tenure BIN] [--driver BIN] [--api zk|etcd|consul] [--clients N]" >&2
       exit 2 ;;
  esac
done
command -v perf >/dev/null || { echo "$0: needs perf (linux-perf)" >&2; exit 2; }
work=$(mktemp -d /tmp/tenure-write-cycle.XXXXXX)
server=
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
http=$(port); raft=$(port); extra=()
case $api in
  zk) p=$(port); extra=(-zk-addr "127.0.0.1:$p"); system=zk; address=127.0.0.1:$p ;;
  etcd) p=$(port); extra=(-grpc-addr "127.0.0.1:$p"); system=etcd; address=127.0.0.1:$p ;;
  consul) system=tenure; address=127.0.0.1:$http ;;
  *) echo "$0: unknown API $api (zk, etcd, consul)" >&2; exit 2 ;;
esac
"$tenure" server -data-dir "$work/data" -http-addr "127.0.0.1:$http" \
  -raft-addr "127.0.0.1:$raft" -node-id 1 -node node1 -session-ttl-multiplier 1 \
  -http-max-conns-per-client 0 "${extra[@]}" >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 100); do  # up within 10 s
  curl -sf "http://127.0.0.1:$http/v1/status/leader" | grep -q : && break
  sleep 0.1
done
"$driver" --system "$system" --addr "$address" --workload kv_put --clients "$clients" \
  --seconds 8 --server-pid "$server" >"$work/driver.json" &
load=$!
sleep 3
perf record -q -a -m 2048 -o "$work/perf.data" \
  -e syscalls:sys_enter_io_submit,syscalls:sys_exit_io_submit \
  -e syscalls:sys_exit_io_getevents -- sleep 2 2>/dev/null
wait "$load"
perf script -i "$work/perf.data" -F tid,time,event,trace 2>/dev/null >"$work/events.txt"
/usr/bin/python3 - "$server" "$work/events.txt" "$work/driver.json" "$api" "$clients" <<'EOF'
import json, re, statistics, sys
loop, events, driver, api, clients = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
parts = {name: [] for name in ("io_submit call", "disk and kernel", "loop's work", "whole cycle")}
submit = returned = handed = None
first = last = None
cycles = 0
for line in open(events):
    m = re.match(r"\s*(\d+)\s+([\d.]+):\s+(\S+):", line)
    if not m or int(m[1]) != loop:
        continue
    t, event = float(m[2]), m[3]
    if event == "syscalls:sys_enter_io_submit":
        if handed is not None:
            parts["loop's work"].append(t - handed)
            parts["whole cycle"].append(t - submit)
        first = t if first is None else first
        last = t
        cycles += 1
        submit, returned, handed = t, None, None
    elif event == "syscalls:sys_exit_io_submit" and submit is not None and returned is None:
        returned = t
        parts["io_submit call"].append(t - submit)
    elif event == "syscalls:sys_exit_io_getevents" and returned is not None and handed is None:
        handed = t
        parts["disk and kernel"].append(t - returned)
rate = json.load(open(driver))["metrics"]["ops_per_s"]
writes = (cycles - 1) / (last - first) if cycles > 1 else 0
print(f"{api} setData/put, {clients} clients: {rate:.0f} requests/s, {writes:.0f} log writes/s, "
      f"{rate / writes if writes else 0:.1f} requests per write")
for name, xs in parts.items():
    if not xs:
        print(f"  {name:15} no complete cycle seen")
        continue
    xs.sort()
    print(f"  {name:15} median {xs[len(xs) // 2] * 1e6:5.0f} µs   mean {statistics.mean(xs) * 1e6:5.0f} µs"
          f"   ({len(xs)} cycles)")
EOF
