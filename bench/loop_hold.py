#!/usr/bin/python3
"""How long the one loop thread is held by the worst single requests after
the limits of docs/limits.md. A benchmark, not a test.

    /usr/bin/python3 bench/loop_hold.py [BIN] [RUNS]
    e.g. bench/loop_hold.py build/src/tenure 5

For each case a fresh `tenure server -dev` is loaded, then the heavy request
is sent while a probe client sends GET /v1/status/leader back to back on a
keep-alive connection. Reported per case: the heavy request's time to its
whole answer, and the probe's worst latency during it (the loop hold: the
probe is answered only when the loop is free). Medians over RUNS (default 5).
"""
import http.client
import json
import os
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

from tenure_testlib import DevServer  # noqa: E402

VALUE = 512 * 1024


def load(server, prefix, count):
    for i in range(count):
        resp = server.request("PUT", f"/v1/kv/{prefix}/{i:03}", b"v" * VALUE, timeout=30)
        assert resp.status == 200, resp


def get_trees(prefix, n):
    return json.dumps([{"KV": {"Verb": "get-tree", "Key": prefix + "/"}}] * n)


# name, values to load under "p", method, path, body, expected status
CASES = [
    ("txn 128 get-tree over 4 MiB (refused)", 8, "PUT", "/v1/txn", get_trees("p", 128), 413),
    ("txn 11 get-tree over 4 MiB (~61 MiB answer)", 8, "PUT", "/v1/txn", get_trees("p", 11), 200),
    ("recurse over 45 MiB (~63 MiB answer)", 90, "GET", "/v1/kv/p/?recurse", None, 200),
    ("recurse over 64 MiB (refused)", 128, "GET", "/v1/kv/p/?recurse", None, 413),
]


def measure(binary, case):
    name, values, method, path, body, expected = case
    with DevServer(binary=binary) as server:
        load(server, "p", values)
        host, port = server.http_addr.split(":")
        probe = http.client.HTTPConnection(host, int(port), timeout=30)
        worst = [0.0]
        stop = threading.Event()

        def run_probe():
            while not stop.is_set():
                started = time.monotonic()
                probe.request("GET", "/v1/status/leader")
                probe.getresponse().read()
                worst[0] = max(worst[0], time.monotonic() - started)

        thread = threading.Thread(target=run_probe)
        thread.start()
        time.sleep(0.2)  # the probe is running steadily
        worst[0] = 0.0
        started = time.monotonic()
        resp = server.request(method, path, body, timeout=60)
        elapsed = time.monotonic() - started
        stop.set()
        thread.join()
        probe.close()
        assert resp.status == expected, (name, resp)
        return elapsed, worst[0], len(resp.body)


def main():
    binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                             os.path.join(ROOT, "build", "src", "tenure"))
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    print(f"| request | answer bytes | time to whole answer (median of {runs}) | "
          f"worst probe latency = loop hold (median of {runs}) |")
    print("|---|---|---|---|")
    for case in CASES:
        results = [measure(binary, case) for _ in range(runs)]
        elapsed = statistics.median(r[0] for r in results) * 1000
        hold = statistics.median(r[1] for r in results) * 1000
        print(f"| {case[0]} | {results[0][2]:,} | {elapsed:.0f} ms | {hold:.0f} ms |", flush=True)


if __name__ == "__main__":
    main()
