#!/usr/bin/python3
"""The floor a durable write puts under every write benchmark on this disk.

A write that a client may count on is on the disk before its answer: tenure
(through libraft) writes its log with O_DIRECT | O_DSYNC, etcd and ZooKeeper
write through the page cache and then fdatasync. Either way, on a disk with a
volatile write cache and no FUA (a virtio disk here:
/sys/block/*/queue/fua is 0), the kernel sends the data and then a cache
flush, and the write is done only when the flush is. No server answers a
lone client faster than that, so a ratio between two servers at one client
is bounded by the slower one's overhead above this floor.

Measures, per mode and number of concurrent writers (each its own process and
file, as the servers of a 3-server cluster on one machine share its disk):
the latency of one durable 4 KiB append (median, p90) and the writes per
second of all writers together. The files are written once and synced before
the timed appends, so no append changes the file's extents.

  /usr/bin/python3 bench/floor/durable_write.py [--dir DIR] [--writes N]
                                                [--writers 1,3] [--json FILE]
"""

import argparse
import json
import mmap
import multiprocessing
import os
import platform
import statistics
import sys
import tempfile
import time

BLOCK = 4096
MODES = ("odirect_dsync", "write_fdatasync")


def prepare(path, size):
    with open(path, "wb") as f:
        chunk = b"\0" * (1 << 20)
        for _ in range(size // len(chunk)):
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())


def writer(path, mode, writes, start_at, out):
    buf = mmap.mmap(-1, BLOCK)  # page-aligned, as O_DIRECT needs
    buf.write(b"x" * BLOCK)
    if mode == "odirect_dsync":
        fd = os.open(path, os.O_WRONLY | os.O_DIRECT | os.O_DSYNC)
    else:
        fd = os.open(path, os.O_WRONLY)
    took = []
    while time.time() < start_at:  # all writers start together
        time.sleep(0.001)
    for i in range(writes):
        t0 = time.perf_counter_ns()
        os.pwrite(fd, buf, i * BLOCK)
        if mode == "write_fdatasync":
            os.fdatasync(fd)
        took.append(time.perf_counter_ns() - t0)
    os.close(fd)
    out.put(took)


def run(directory, mode, writers, writes):
    paths = [os.path.join(directory, f"floor-{mode}-{w}") for w in range(writers)]
    for path in paths:
        prepare(path, ((writes * BLOCK) // (1 << 20) + 1) << 20)
    queue = multiprocessing.Queue()
    start_at = time.time() + 0.5
    procs = [multiprocessing.Process(target=writer, args=(p, mode, writes, start_at, queue))
             for p in paths]
    begin = time.perf_counter()
    for p in procs:
        p.start()
    lat = []
    for _ in procs:
        lat.extend(queue.get())
    for p in procs:
        p.join()
    wall = time.perf_counter() - begin - 0.5
    for path in paths:
        os.unlink(path)
    lat.sort()
    return {
        "mode": mode,
        "writers": writers,
        "writes_per_writer": writes,
        "p50_us": round(lat[len(lat) // 2] / 1000),
        "p90_us": round(lat[int(len(lat) * 0.9)] / 1000),
        "mean_us": round(statistics.mean(lat) / 1000),
        "writes_per_s": round(len(lat) / wall),
    }


def disk_facts(directory):
    dev = os.stat(directory).st_dev
    facts = {}
    try:
        name = os.path.basename(os.path.realpath(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}"))
        base = f"/sys/block/{name}/queue"
        if not os.path.isdir(base):  # a partition: its disk's queue
            base = os.path.realpath(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/../queue")
        for key in ("fua", "write_cache", "rotational", "scheduler"):
            with open(os.path.join(base, key)) as f:
                facts[key] = f.read().strip()
        facts["device"] = name
    except OSError as e:
        facts["error"] = str(e)
    return facts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=None, help="where to write (default: a temporary "
                    "directory under /var/tmp, on the disk servers' data dirs use)")
    ap.add_argument("--writes", type=int, default=2000, help="appends per writer")
    ap.add_argument("--writers", default="1,3", help="comma-separated writer counts")
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args()
    if args.writes < 10:
        ap.error("--writes must be at least 10")
    counts = [int(x) for x in args.writers.split(",")]
    if not counts or min(counts) < 1 or max(counts) > 16:
        ap.error("--writers takes counts from 1 to 16")
    with tempfile.TemporaryDirectory(dir=args.dir or "/var/tmp", prefix="tenure-floor.") as d:
        facts = disk_facts(d)
        results = [run(d, mode, n, args.writes) for n in counts for mode in MODES]
    print(f"disk: {facts}; kernel {platform.release()}; {os.cpu_count()} cpus")
    print(f"{'mode':16} {'writers':>7} {'p50 µs':>7} {'p90 µs':>7} {'mean µs':>7} {'writes/s':>9}")
    for r in results:
        print(f"{r['mode']:16} {r['writers']:7} {r['p50_us']:7} {r['p90_us']:7} "
              f"{r['mean_us']:7} {r['writes_per_s']:9}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"disk": facts, "kernel": platform.release(), "results": results}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
