#!/usr/bin/python3
"""Leader election compared (docs/algorithms.md): regenerates docs/algorithms.md's tables,
its data files and its plots from the seeded simulator build/tests/tenure_algos.

Runs every approach x schedule on seeds 1..K (one process, deterministic),
then writes
  docs/data/algorithms-runs.csv   one row per run (approach, schedule, seed, metrics)
  docs/data/algorithms.json       the medians, ranges and counts per schedule and approach
  docs/algorithms.md              the tables between the <!-- algorithms:... --> markers
  docs/images/algorithms-partition.png, docs/images/algorithms-pause.png
                                  timelines of seed PLOT_SEED (tenure_algos --timeline)

    /usr/bin/python3 bench/algorithms.py [--seeds 20] [--bin build/tests/tenure_algos] [--no-plots]

builds tenure_algos first (scripts/build tenure_algos) unless --bin names another binary.

Needs python3-matplotlib for the plots (Debian's /usr/bin/python3).
"""

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
APPROACHES = ["bully", "ring", "lease", "fenced-lease", "redis", "tenure"]
SCHEDULES = ["partition", "pause", "clock", "crash", "loss", "random"]
PLOT_SEED = 1
# The survey's comparison table (its words, per approach it rated; docs/algorithms.md
# quotes it), and which simulated approach stands for each row.
SEED_ROWS = [
    ("Bully", "Weak", "Low", "Low", ["bully"]),
    ("Ring", "Weak", "Medium", "Low", ["ring"]),
    ("Consensus (Raft)", "Strong", "Medium", "High", ["tenure"]),
    ("Lease (etcd)", "Strong", "Medium", "Medium", ["lease", "fenced-lease"]),
    ("Lease (Redis)", "Medium", "High", "Medium", ["redis"]),
]


def run(binary, args):
    out = subprocess.run([binary] + args, check=True, capture_output=True, text=True, timeout=3600)
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def per_election(r):
    return r["messages"] / max(1, r["elections"])


METRICS = [
    ("two_leaders_s", lambda r: r["two_leaders_ms"] / 1000.0),
    ("stale_writes", lambda r: r["stale_writes"]),
    ("writes_refused", lambda r: r["writes_refused"]),
    ("no_leader_s", lambda r: r["no_leader_ms"] / 1000.0),
    ("messages_per_election", per_election),
]


def summarize(rows):
    out = {}
    for schedule in SCHEDULES:
        for approach in APPROACHES:
            runs = [r for r in rows if r["schedule"] == schedule and r["approach"] == approach]
            entry = {"runs": len(runs)}
            for name, f in METRICS:
                xs = [f(r) for r in runs]
                entry[name] = {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}
            entry["runs_with_stale_write"] = sum(1 for r in runs if r["stale_writes"] > 0)
            entry["runs_with_two_leaders"] = sum(1 for r in runs if r["two_leaders_ms"] > 0)
            out["%s/%s" % (schedule, approach)] = entry
    return out


def fmt_range(m, digits):
    f = "%%.%df" % digits
    med, lo, hi = (f % m["median"]), (f % m["min"]), (f % m["max"])
    if lo == hi:
        return med
    return "%s (%s–%s)" % (med, lo, hi)


def detail_table(summary, seeds):
    lines = [
        "| schedule | approach | two leaders, s | runs with two leaders | stale writes accepted "
        "| runs with a stale write | writes refused | no leader, s | messages per election |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for schedule in SCHEDULES:
        for approach in APPROACHES:
            e = summary["%s/%s" % (schedule, approach)]
            lines.append("| %s | %s | %s | %d/%d | %s | %d/%d | %s | %s | %s |" % (
                schedule, approach, fmt_range(e["two_leaders_s"], 3),
                e["runs_with_two_leaders"], e["runs"], fmt_range(e["stale_writes"], 0),
                e["runs_with_stale_write"], e["runs"], fmt_range(e["writes_refused"], 0),
                fmt_range(e["no_leader_s"], 1), fmt_range(e["messages_per_election"], 0)))
    return "\n".join(lines)


def seed_table(summary, rows, seeds):
    total = seeds * len(SCHEDULES)
    lines = [
        "| survey's row | its consistency | its availability | its complexity | simulated as "
        "| runs with two leaders | longest two leaders, s | runs with a stale write accepted "
        "| two leaders in the partition, s (median) | no leader, s (median of all runs) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row, cons, avail, cplx, approaches in SEED_ROWS:
        for approach in approaches:
            entries = [summary["%s/%s" % (s, approach)] for s in SCHEDULES]
            two = sum(e["runs_with_two_leaders"] for e in entries)
            stale = sum(e["runs_with_stale_write"] for e in entries)
            part = summary["partition/%s" % approach]["two_leaders_s"]["median"]
            nl = statistics.median([r["no_leader_ms"] / 1000.0 for r in rows
                                    if r["approach"] == approach])
            longest = max(r["two_leaders_ms"] / 1000.0 for r in rows if r["approach"] == approach)
            lines.append("| %s | %s | %s | %s | %s | %d of %d | %.3f | %d of %d | %.3f | %.1f |" % (
                row, cons, avail, cplx, approach, two, total, longest, stale, total, part, nl))
    return "\n".join(lines)


def replace_between(text, name, body):
    begin, end = "<!-- algorithms:%s -->" % name, "<!-- /algorithms:%s -->" % name
    a, b = text.index(begin) + len(begin), text.index(end)
    return text[:a] + "\n" + body + "\n" + text[b:]


def plot(binary, schedule, approaches, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.lines import Line2D

    fig, axes = plt.subplots(len(approaches), 1, figsize=(11, 2.3 * len(approaches)), sharex=True)
    for ax, approach in zip(axes, approaches):
        r = run(binary, ["--approach", approach, "--schedule", schedule, "--seed", str(PLOT_SEED),
                         "--timeline"])[0]
        end = 150.0
        events = r["timeline"]
        for replica in range(5):
            y = 4 - replica
            lead_from = down_from = None
            for at, who, what in events:
                if who != replica:
                    continue
                t = at / 1000.0
                if what == "lead":
                    lead_from = t
                elif what == "follow" and lead_from is not None:
                    ax.broken_barh([(lead_from, t - lead_from)], (y - 0.3, 0.6), color="#4c72b0")
                    lead_from = None
                elif what == "down":
                    down_from = t
                elif what == "up" and down_from is not None:
                    ax.broken_barh([(down_from, t - down_from)], (y - 0.4, 0.8), color="none",
                                   edgecolor="#999999", hatch="///")
                    down_from = None
            if lead_from is not None:
                ax.broken_barh([(lead_from, end - lead_from)], (y - 0.3, 0.6), color="#4c72b0")
            if down_from is not None:
                ax.broken_barh([(down_from, end - down_from)], (y - 0.4, 0.8), color="none",
                               edgecolor="#999999", hatch="///")
        for kind, marker, color, size in (("write-stale", "X", "#d62728", 90),
                                          ("write-refused", "s", "black", 60)):
            xs = [at / 1000.0 for at, who, what in events if what == kind]
            ys = [4 - who for at, who, what in events if what == kind]
            ax.scatter(xs, ys, marker=marker, color=color, s=size, zorder=3)
        ax.set_yticks(range(5))
        ax.set_yticklabels(["replica %d" % (4 - i) for i in range(5)])
        ax.set_ylim(-0.7, 4.7)
        ax.set_title("%s: %s (seed %d): two leaders %.1f s, stale writes accepted %d, refused %d, "
                     "no leader %.1f s" % (approach, r["plan"], PLOT_SEED, r["two_leaders_ms"] / 1000.0,
                                            r["stale_writes"], r["writes_refused"],
                                            r["no_leader_ms"] / 1000.0), fontsize=9, loc="left")
        for part in r["plan"].split("; "):
            span = part.split(" ")[1].rstrip("s").split("-")
            ax.axvspan(float(span[0]), float(span[1]), color="#f2c14e", alpha=0.25, zorder=0)
    axes[-1].set_xlabel("simulated time, s")
    axes[-1].set_xlim(0, 150)
    fig.legend(handles=[
        Patch(color="#4c72b0", label="believes it leads and acts"),
        Patch(facecolor="none", edgecolor="#999999", hatch="///", label="paused or crashed"),
        Patch(color="#f2c14e", alpha=0.25, label="fault"),
        Line2D([], [], marker="X", color="#d62728", linestyle="none", label="stale write accepted"),
        Line2D([], [], marker="s", color="black", linestyle="none", label="write refused by fencing"),
    ], loc="lower center", ncol=5, fontsize=8)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "tests", "tenure_algos"))
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args()
    default_bin = os.path.join(ROOT, "build", "tests", "tenure_algos")
    if os.path.abspath(args.bin) == default_bin:
        # Builds (or finds up to date) the simulator first: one command does it all.
        subprocess.run([os.path.join(ROOT, "scripts", "build"), "tenure_algos"], check=True)
    rows = run(args.bin, ["--approach", "all", "--schedule", "all", "--seed", "1",
                          "--seeds", str(args.seeds)])
    summary = summarize(rows)
    data = os.path.join(ROOT, "docs", "data")
    os.makedirs(data, exist_ok=True)
    fields = ["approach", "schedule", "seed", "two_leaders_ms", "no_leader_ms", "writes_accepted",
              "stale_writes", "writes_refused", "messages", "elections", "plan"]
    with open(os.path.join(data, "algorithms-runs.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: r[k] for k in fields})
    with open(os.path.join(data, "algorithms.json"), "w") as f:
        json.dump({"command": "bench/algorithms.py --seeds %d" % args.seeds, "seeds": args.seeds,
                   "summary": summary}, f, indent=1, sort_keys=True)
        f.write("\n")
    doc = os.path.join(ROOT, "docs", "algorithms.md")
    with open(doc) as f:
        text = f.read()
    text = replace_between(text, "seed-table", seed_table(summary, rows, args.seeds))
    text = replace_between(text, "detail", detail_table(summary, args.seeds))
    with open(doc, "w") as f:
        f.write(text)
    if not args.no_plots:
        images = os.path.join(ROOT, "docs", "images")
        os.makedirs(images, exist_ok=True)
        plot(args.bin, "partition", ["bully", "lease", "tenure"],
             os.path.join(images, "algorithms-partition.png"))
        plot(args.bin, "pause", ["lease", "fenced-lease", "tenure"],
             os.path.join(images, "algorithms-pause.png"))
    print("algorithms: %d runs (%d seeds x %d approaches x %d schedules); wrote docs/algorithms.md "
          "tables, docs/data/algorithms-runs.csv, docs/data/algorithms.json%s" % (
              len(rows), args.seeds, len(APPROACHES), len(SCHEDULES),
              "" if args.no_plots else ", docs/images/algorithms-{partition,pause}.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
