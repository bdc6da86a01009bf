# sim_native.sh: the native workload format end to end: services, fractional
# GPUs, multi-group jobs, regions, time limits, rejection with the reason,
# and preemption with grace and resumed work.
set -eu
. "$ROOT/tests/integration/lib.sh"
cd "$TEST_TMP"

# tests/sim/mixed.csv on the multicloud example (regions, spot, elastic)
"$DROVER" sim --cluster "$ROOT/examples/clusters/multicloud.yaml" --trace "$ROOT/tests/sim/mixed.csv" \
	--format drover --preemption on --min-run 0 --json --jobs-out mixed.csv --report mixed.html >mixed.json ||
	fail "mixed exited $?"
python3 "$ROOT/tests/integration/sim_check.py" 8 mixed.csv mixed.json >/dev/null || fail "mixed replay"
python3 - mixed.csv mixed.json <<'P' || fail "mixed outcomes"
import csv, json, sys
allrows = list(csv.DictReader(open(sys.argv[1])))
rows = {r["job"]: r for r in allrows}
s = json.load(open(sys.argv[2]))
assert s["jobs"] == 12 and s["services"] == 2 and s["rejected"] == 4, s
# services: still running at the end, empty end
for j in ("chat-us", "chat-eu"):
    assert rows[j]["outcome"] == "running" and rows[j]["end_s"] == "", rows[j]
# fractional: four quarter-GPU tasks; the EU service stays in the EU pool (gcp a3 nodes)
assert rows["chat-us"]["gpu_milli"] == "250" and rows["chat-us"]["tasks"] == "4"
assert all(t.startswith("a3-") for t in rows["chat-eu"]["placement"].split(";")), rows["chat-eu"]
# impossible jobs are rejected, with the reason a person can read
for j, why in (("pretrain", "leaf"), ("ft-llama", "node"), ("too-big", "1600"),
               ("eu-only-big", "64 GPUs under one node; the largest node has 8")):
    assert rows[j]["outcome"] == "rejected" and why in rows[j]["reason"], rows[j]
    assert rows[j]["start_s"] == "" and rows[j]["end_s"] == "", rows[j]
    assert sum(r["job"] == j for r in allrows) == 1, j    # never ran: one row
# killed at its time limit
assert rows["runaway"]["outcome"] == "timed_out", rows["runaway"]
assert int(rows["runaway"]["end_s"]) - int(rows["runaway"]["start_s"]) == 1000
assert rows["urgent-eval"]["outcome"] == "completed"
P
grep -q 'Cost by pool' mixed.html || fail "report"

# preemption: 32 long 8-GPU jobs fill 256 GPUs; a priority-100 gang of 2 x 8
# arrives at t=100 and preempts exactly two whole jobs, which resume later
# and do exactly their work in all (grace 30 s counts as work done)
"$DROVER" sim --cluster "$ROOT/examples/clusters/h100-256.yaml" --trace "$ROOT/tests/sim/preempt.csv" \
	--preemption on --min-run 0 --json --jobs-out pre.csv >pre.json || fail "preempt exited $?"
python3 "$ROOT/tests/integration/sim_check.py" 8 pre.csv pre.json >/dev/null || fail "preempt replay"
python3 - pre.csv pre.json <<'P' || fail "preemption"
import csv, json, sys
runs = {}
for r in csv.DictReader(open(sys.argv[1])):
    runs.setdefault(r["job"], []).append(r)
s = json.load(open(sys.argv[2]))
assert s["preemptions"] == 2 and s["completed"] == 33, s
u = runs["urgent"][0]
assert 100 <= int(u["start_s"]) <= 100 + 60, u
victims = [j for j, rs in runs.items() if any(r["preempted"] == "1" for r in rs)]
assert len(victims) == 2, victims
placed = set(t.split(":")[0] for t in u["placement"].split(";"))
for v in victims:
    first, second = runs[v]
    assert first["outcome"] == "preempted" and second["attempt"] == "1", runs[v]
    assert first["end_s"] == u["start_s"], (first, u)       # freed exactly when it starts
    assert first["placement"].split(":")[0] in placed      # the urgent job took their nodes
    work = sum(int(r["end_s"]) - int(r["start_s"]) for r in runs[v])
    assert work == 10000 + 60, (v, work)   # the 60 s since its checkpoint are redone
P
# elastic pools: 48 jobs of 8 GPUs want 384 GPUs in us-east/us-east-1, the
# existing nodes hold 304; with --grow-wait the scheduler asks for AWS nodes,
# which arrive after --provision-delay and take the waiting jobs
"$DROVER" sim --cluster "$ROOT/examples/clusters/multicloud.yaml" --trace "$ROOT/tests/sim/elastic.csv" \
	--json --jobs-out fixed.csv >fixed.json || fail "elastic (no growth) exited $?"
"$DROVER" sim --cluster "$ROOT/examples/clusters/multicloud.yaml" --trace "$ROOT/tests/sim/elastic.csv" \
	--grow-wait 600 --provision-delay 300 --json --jobs-out grow.csv >grow.json || fail "elastic exited $?"
python3 "$ROOT/tests/integration/sim_check.py" 8 grow.csv grow.json >/dev/null || fail "elastic replay"
python3 - fixed.json grow.json grow.csv fixed.csv <<'P' || fail "elastic growth"
import csv, json, sys
fixed, grow = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
# without --grow-wait (default: never) no pool grows
assert not [r for r in csv.DictReader(open(sys.argv[4])) if "-elastic-" in r["placement"]]
assert grow["completed"] == 48 and grow["avg_wait_s"] < fixed["avg_wait_s"], (fixed, grow)
new = [r for r in csv.DictReader(open(sys.argv[3])) if "-elastic-" in r["placement"]]
assert new, "no job ran on a provisioned node"
for r in new:
    assert r["placement"].startswith("aws-p5-use1"), r      # in the allowed regions
    assert int(r["start_s"]) >= int(r["submit_s"]) + 600 + 300, r  # waited, then provisioned
P
echo "sim_native: ok"
