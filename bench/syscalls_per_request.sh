#!/usr/bin/env bash
# System calls and CPU time a durable write costs tenure's server, per API
# (decision 0059): one dev-like server on 127.0.0.1, bench/vs's driver
# writing with N clients for 8 s, `perf stat` on the server for 4 s of it.
# Prints, per run: the API, the server's CPU (all threads) per request,
# recv(2), all system calls and page faults per request (requests = answers
# sent), and the driver's rate. A rate on two shared cores is noisy; the
# counts are not.
#
#   bench/syscalls_per_request.sh [--tenure BIN] [--driver BIN]
#                                 [--apis "zk consul etcd"] [--clients N] [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
tenure=build/src/tenure
driver=build/bench/vs/tenure_vs
apis="zk consul etcd"
clients=64
runs=1
while [ $# -gt 0 ]; do
  case $1 in
    --tenure) tenure=$2; shift 2 ;;
    --driver) driver=$2; shift 2 ;;
    --apis) apis=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "usage: $0 [--tenure BIN] [--driver BIN] [--apis LIST] [--clients N] [--runs N]" >&2
       exit 2 ;;
  esac
done
command -v perf >/dev/null || { echo "$0: needs perf (linux-perf)" >&2; exit 2; }
work=$(mktemp -d /tmp/tenure-syscalls.XXXXXX)
server=
cleanup() {
  [ -z "$server" ] || kill "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
for run in $(seq "$runs"); do
  for api in $apis; do
    http=$(port); raft=$(port); grpc=$(port); zk=$(port)
    rm -rf "$work/data"
    "$tenure" server -data-dir "$work/data" -http-addr "127.0.0.1:$http" \
      -raft-addr "127.0.0.1:$raft" -node-id 1 -node node1 -session-ttl-multiplier 1 \
      -http-max-conns-per-client 0 -grpc-addr "127.0.0.1:$grpc" -zk-addr "127.0.0.1:$zk" \
      >"$work/server.log" 2>&1 &
    server=$!
    case $api in
      zk) system=zk; address=127.0.0.1:$zk ;;
      consul) system=tenure; address=127.0.0.1:$http ;;
      etcd) system=etcd; address=127.0.0.1:$grpc ;;
      *) echo "$0: unknown API $api (zk, consul, etcd)" >&2; exit 2 ;;
    esac
    for _ in $(seq 100); do  # up within 10 s
      curl -sf "http://127.0.0.1:$http/v1/status/leader" | grep -q : && break
      sleep 0.1
    done
    "$driver" --system "$system" --addr "$address" --workload kv_put --clients "$clients" \
      --seconds 8 --server-pid "$server" >"$work/driver.json" &
    load=$!
    sleep 2
    perf stat -x, -e task-clock,page-faults,raw_syscalls:sys_enter,syscalls:sys_enter_recvfrom \
      -e syscalls:sys_enter_sendmsg,syscalls:sys_enter_sendto -p "$server" sleep 4 \
      2>"$work/perf.csv"
    wait "$load"
    kill "$server"; wait "$server" 2>/dev/null || true; server=
    /usr/bin/python3 - "$api" "$run" "$work/perf.csv" "$work/driver.json" <<'EOF'
import json, sys
api, run, perf_csv, driver_json = sys.argv[1:]
counts = {}
for line in open(perf_csv):
    fields = line.strip().split(",")
    if len(fields) > 3 and fields[0][:1].isdigit():
        counts[fields[2]] = float(fields[0])
answers = counts["syscalls:sys_enter_sendmsg"] + counts["syscalls:sys_enter_sendto"]
rate = json.load(open(driver_json))["metrics"]["ops_per_s"]
print(f"run {run} {api:6} cpu_us/request {counts['task-clock'] * 1000 / answers:6.1f}"
      f"  recv/request {counts['syscalls:sys_enter_recvfrom'] / answers:4.2f}"
      f"  syscalls/request {counts['raw_syscalls:sys_enter'] / answers:4.2f}"
      f"  faults/request {counts['page-faults'] / answers:4.2f}"
      f"  requests/s {rate:8.0f}")
EOF
  done
done
