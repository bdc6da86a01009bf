#!/usr/bin/env python3
"""sim_check.py: checks a `drover sim --jobs-out` CSV independently of drover.

usage: sim_check.py GPUS_PER_NODE JOBS.csv [SUMMARY.json] [JOBS2.csv [SUMMARY2.json]]...

Replays every run's placement over time and fails (exit 1) if any GPU ever
holds more than one whole GPU (1000 milli), if a run's placement does not
hold all its tasks (a gang must start whole, at one instant), if a task's
GPU index is beyond the node's GPUs, if a job's runs overlap or start
before the job was submitted, or if counts disagree with the row. Given
the run's JSON summary, it also recomputes the completion and wait
statistics from the rows and compares.
"""
import csv
import json
import math
import sys
from collections import defaultdict


def check(path, node_gpus, summary):
    jct, wait = [], []
    events = []  # (time, delta, (node, gpu))
    runs = defaultdict(list)
    rows = 0
    with open(path, newline="") as f:
        rd = csv.DictReader(f)
        need = ["job", "attempt", "tenant", "submit_s", "start_s", "end_s", "gpus",
                "gpu_milli", "tasks", "placement", "preempted", "cost_usd"]
        missing = [c for c in need if c not in rd.fieldnames]
        if missing:
            sys.exit("missing columns: %s" % missing)
        for r in rd:
            rows += 1
            if r["outcome"] == "completed":
                jct.append(int(r["end_s"]) - int(r["submit_s"]))
            if r["attempt"] == "0" and r["start_s"]:
                wait.append(int(r["start_s"]) - int(r["submit_s"]))
            if r["start_s"] == "":
                if r["placement"]:
                    sys.exit("job %s: placement without a start" % r["job"])
                continue
            start = int(r["start_s"])
            end = int(r["end_s"]) if r["end_s"] else None
            submit = int(r["submit_s"])
            if start < submit:
                sys.exit("job %s started at %d before its submit %d" % (r["job"], start, submit))
            if end is not None and end < start:
                sys.exit("job %s ends before it starts" % r["job"])
            milli = int(r["gpu_milli"])
            tasks = r["placement"].split(";")
            if len(tasks) != int(r["tasks"]):
                sys.exit("job %s attempt %s: %d tasks placed at start %d, want %s (gang split)"
                         % (r["job"], r["attempt"], len(tasks), start, r["tasks"]))
            ngpus = 0
            for t in tasks:
                node, gpus = t.split(":")
                for g in gpus.split(","):
                    g = int(g)
                    if g < 0 or g >= node_gpus:
                        sys.exit("job %s: GPU index %d on %s" % (r["job"], g, node))
                    ngpus += 1
                    events.append((start, milli, (node, g)))
                    if end is not None:
                        events.append((end, -milli, (node, g)))
            if ngpus != int(r["gpus"]):
                sys.exit("job %s: %d GPUs placed, row says %s" % (r["job"], ngpus, r["gpus"]))
            runs[r["job"]].append((int(r["attempt"]), start, end))
    # releases before acquisitions at the same instant
    events.sort(key=lambda e: (e[0], e[1]))
    used = defaultdict(int)
    peak = 0
    for t, d, gpu in events:
        used[gpu] += d
        if used[gpu] > 1000:
            sys.exit("GPU %s:%d holds %d milli at t=%d" % (gpu[0], gpu[1], used[gpu], t))
        peak = max(peak, used[gpu])
    for job, rs in runs.items():
        rs.sort()
        for (a1, s1, e1), (a2, s2, e2) in zip(rs, rs[1:]):
            if e1 is None or s2 < e1:
                sys.exit("job %s: run %d starts before run %d ended" % (job, a2, a1))
    if summary is not None:
        jct.sort()
        wait.sort()

        def pct(v, p):
            return v[max(1, math.ceil(p * len(v))) - 1] if v else 0

        want = {"completed": len(jct),
                "avg_jct_s": round(sum(jct) / len(jct), 3) if jct else 0,
                "p50_jct_s": pct(jct, .5), "p99_jct_s": pct(jct, .99),
                "avg_wait_s": round(sum(wait) / len(wait), 3) if wait else 0,
                "p99_wait_s": pct(wait, .99)}
        for k, v in want.items():
            if abs(summary[k] - v) > 2e-3:
                sys.exit("summary %s is %s, the rows say %s" % (k, summary[k], v))
    print("%s ok: %d rows, %d runs placed, %d GPU intervals, no over-commit, gangs whole"
          % (path, rows, sum(len(v) for v in runs.values()), len(events) // 2))


def main():
    node_gpus = int(sys.argv[1])
    args = sys.argv[2:]
    i = 0
    while i < len(args):
        summary = None
        if i + 1 < len(args) and args[i + 1].endswith(".json"):
            summary = json.load(open(args[i + 1]))
        try:
            check(args[i], node_gpus, summary)
        except SystemExit as e:
            if e.code:
                sys.exit("%s: %s" % (args[i], e.code))
            raise
        i += 2 if summary is not None else 1


main()
