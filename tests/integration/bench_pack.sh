#!/bin/sh
# bench_pack.sh: `drover bench pack --json` prints the rows docs/api.md and
# docs/scheduling.md promise: one per workload, strategy and offered load
# (5 x 3 x 3), alloc a share of the GPUs that never falls as more is offered,
# default_strategy multi; and docs/scheduling.md's claims hold on seeds 1-5:
# multi at 130% is ahead of best-fit on every workload, and on cpu-heavy the
# debug figures show the nodes that no pod took whole holding pods that ask
# more cores per GPU than the nodes have, with multi's GPU use within the
# bound that sets. Bad flags exit 2 naming what was expected.
set -eu
. "$ROOT/tests/integration/lib.sh"
cd "$TEST_TMP"

"$DROVER" bench pack --json >pack.json || fail "bench pack exited $?"
python3 - pack.json <<'PY' || fail "bench pack's rows"
import json, sys
d = json.load(open(sys.argv[1]))
assert set(d) == {"results", "default_strategy"}, d.keys()
assert d["default_strategy"] == "multi", d["default_strategy"]
rows = d["results"]
wls = ["shared", "whole", "cpu-heavy", "hetero", "shift"]
strats = ["bestfit", "fgd", "multi"]
assert len(rows) == 45, len(rows)
a = {}
for r in rows:
    assert set(r) == {"workload", "strategy", "offered", "alloc", "ms"}, r
    assert r["workload"] in wls and r["strategy"] in strats, r
    assert 0 < r["alloc"] <= 1 and r["ms"] >= 0, r
    a[(r["workload"], r["strategy"], r["offered"])] = r["alloc"]
assert len(a) == 45, "a row twice"
diff = []
for w in wls:
    for s in strats:
        lv = [a[(w, s, o)] for o in (1.0, 1.15, 1.3)]
        assert lv == sorted(lv), (w, s, lv)
    m, b = a[(w, "multi", 1.3)], a[(w, "bestfit", 1.3)]
    print("%-10s bestfit %.4f multi %.4f" % (w, b, m))
    assert m > b, "multi is not ahead of best-fit on %s: %s <= %s" % (w, m, b)
    diff.append(m - b)
print("multi over best-fit at 130%%: %+.2f points on average" % (100 * sum(diff) / len(diff)))
PY

# cpu-heavy's debug figures, per seed: the bound and multi's use against it
DROVER_BENCH_DEBUG=1 "$DROVER" bench pack --workload cpu-heavy --json >/dev/null 2>debug.txt ||
	fail "bench pack --workload cpu-heavy exited $?"
python3 - debug.txt <<'PY' || fail "cpu-heavy's debug figures"
import re, sys
strat = None
got = {}
for line in open(sys.argv[1]):
    m = re.match(r"  cpu-heavy/(\w+): GPUs free", line)
    if m:
        strat = m.group(1)
        continue
    m = re.search(r"one pod took whole: (\d+); the other (\d+): GPUs used ([\d.]+), CPU used "
                  r"([\d.]+), cores per GPU used ([\d.]+) \(the nodes have ([\d.]+)\)", line)
    if m:
        whole, other = int(m.group(1)), int(m.group(2))
        gpus, cpu, cpg, have = (float(m.group(k)) for k in range(3, 7))
        assert whole + other == 1000, line
        got.setdefault(strat, []).append((gpus, cpu, cpg, have))
assert sorted(got) == ["bestfit", "fgd", "multi"] and all(len(v) == 5 for v in got.values()), got
for gpus, cpu, cpg, have in got["multi"]:
    # the CPU bounds the GPUs: used cores / cores per used GPU <= all cores
    assert cpg > have, (cpg, have)
    assert gpus <= have / cpg + 0.001, (gpus, have / cpg)
    assert cpu >= 0.99, cpu
for (g1, c1, _, _), (g2, c2, _, _) in zip(got["multi"], got["bestfit"]):
    assert g1 > g2 and c1 > c2, (g1, g2, c1, c2)
print("cpu-heavy, multi: GPUs used %s of the bound" %
      ", ".join("%.4f" % (g / (h / c)) for g, _, c, h in got["multi"]))
PY

for bad in "--workload nope:--workload: found 'nope', expected shared, whole, cpu-heavy, hetero or shift" \
	"--placement nope:option '--placement': found 'nope', expected bestfit, fgd or multi" \
	"--seeds 0:option '--seeds': found '0', expected a whole number from 1 to 100"; do
	rc=0
	"$DROVER" bench pack ${bad%%:*} >out.txt 2>err.txt || rc=$?
	expect_eq "bench pack ${bad%%:*}: exit" "$rc" 2
	grep -qF -- "${bad#*:}" err.txt || fail "bench pack ${bad%%:*}: $(cat err.txt)"
	[ -s out.txt ] && fail "bench pack ${bad%%:*} printed: $(cat out.txt)"
done
echo "ok bench_pack: 45 rows; multi ahead of best-fit on every workload; cpu-heavy within its CPU bound"
