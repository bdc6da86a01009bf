# sim_tenants.sh: `drover sim --tenants FILE`. The same small trace
# (tests/sim/quota.csv: tenant big asks for 320 GPUs of a 256-GPU cluster,
# tenant small for 64 more at t=100) runs without and with a tenants file
# that holds big to 64 H100s and makes small's jobs urgent. With the file,
# big never holds more than 64 GPUs at any instant (checked from the JSON
# and, independently, by sweeping the per-run CSV), its wait rises and
# small's falls. Two tenants of one cohort borrow each other's unused
# quota, and take it back by preemption when that is on; fair-share
# weights split the cluster in their ratio. A trace row may
# name a class of the file; bad files and
# unknown classes are reported at file:line:col with exit 2 and no output.
set -eu
. "$ROOT/tests/integration/lib.sh"
cd "$TEST_TMP"

CL="$ROOT/examples/clusters/h100-256.yaml"
TR="$ROOT/tests/sim/quota.csv"
TF="$ROOT/tests/sim/quota-tenants.yaml"

"$DROVER" sim --cluster "$CL" --trace "$TR" --json --jobs-out free.csv >free.json ||
	fail "run without tenants exited $?"
"$DROVER" sim --cluster "$CL" --trace "$TR" --tenants "$TF" --json --jobs-out quota.csv \
	--report quota.html >quota.json || fail "run with tenants exited $?"
grep -q '<figcaption>Per tenant</figcaption>' quota.html || fail "report has no tenant table"
grep -q '<tr><th>big</th><td>40</td><td>40</td>.*<td>64</td><td>64</td></tr>' quota.html ||
	fail "report's big row: $(grep '<th>big' quota.html)"
python3 "$ROOT/tests/integration/sim_check.py" 8 free.csv free.json quota.csv quota.json \
	>/dev/null || fail "replay"

python3 - free.csv free.json quota.csv quota.json <<'P' || fail "quota not honoured"
import csv, json, sys

def peak(path, tenant):
    """Most GPUs the tenant held at one instant, from the runs alone."""
    ev = []
    for r in csv.DictReader(open(path)):
        if r["tenant"] == tenant and r["start_s"]:
            g = int(r["gpus"]) * int(r["gpu_milli"]) / 1000
            ev.append((int(r["start_s"]), 1, g))
            ev.append((int(r["end_s"]) if r["end_s"] else 10**18, 0, -g))  # ends first
    held = top = 0
    for _, _, g in sorted(ev):
        held += g
        top = max(top, held)
    return top

free, quota = json.load(open(sys.argv[2])), json.load(open(sys.argv[4]))
fb, qb = free["tenants"]["big"], quota["tenants"]["big"]
fs, qs = free["tenants"]["small"], quota["tenants"]["small"]
# without the file big fills the cluster; with it, never more than its quota
assert fb["peak_gpus"] == 256 and peak(sys.argv[1], "big") == 256, fb
assert "quota_gpus" not in fb, fb
assert qb["quota_gpus"] == 64, qb
assert qb["peak_gpus"] <= 64 and peak(sys.argv[3], "big") <= 64, (qb, peak(sys.argv[3], "big"))
assert qb["peak_gpus"] == 64, qb  # and it does use what it has
# all work still done; big waits longer, small no longer waits behind big
assert quota["completed"] == free["completed"] == 48, (free, quota)
assert qb["completed"] == 40 and qb["gpu_hours"] == fb["gpu_hours"] == 320, (fb, qb)
assert qb["avg_wait_s"] > 4 * fb["avg_wait_s"], (fb, qb)
assert fs["avg_wait_s"] > 3000 and qs["avg_wait_s"] == 0, (fs, qs)
assert quota["config"]["tenants"].endswith("quota-tenants.yaml"), quota["config"]
# small's jobs got the file's class: its value in priority, its name beside
for r in csv.DictReader(open(sys.argv[3])):
    want = ("100", "urgent") if r["tenant"] == "small" else ("0", "")
    assert (r["priority"], r["priority_class"]) == want, r
P

# a cohort: a and b may each use 128 and borrow what the other leaves; a
# borrows all of b's share, and b gets it back by preemption only when the
# policy allows preemption (then it waits just the 30 s grace)
sed 's/,big$/,a/; s/,small$/,b/' "$TR" >co.csv
printf 'tenants:\n  a: {quota: {H100: 128}, cohort: c}\n  b: {quota: {H100: 128}, cohort: c}\n' >co.yaml
for p in off on; do
	"$DROVER" sim --cluster "$CL" --trace co.csv --tenants co.yaml --preemption $p --min-run 0 --json \
		--jobs-out co-$p.csv >co-$p.json || fail "cohort preemption $p exited $?"
done
python3 "$ROOT/tests/integration/sim_check.py" 8 co-on.csv co-on.json >/dev/null || fail "cohort replay"
python3 - co-off.json co-on.json <<'P' || fail "cohort"
import json, sys
off, on = (json.load(open(f))["tenants"] for f in sys.argv[1:3])
assert off["a"]["peak_gpus"] == 256 and off["a"]["quota_gpus"] == 128, off["a"]  # borrowed
assert off["b"]["avg_wait_s"] > 3000 and off["a"]["preempted"] == 0, off
assert on["b"]["avg_wait_s"] <= 60 and on["a"]["preempted"] == 8, on          # reclaimed
assert on["b"]["preempted"] == 0 and on["a"]["completed"] == 40, on
P

# fair-share weights: a (weight 3) and b (weight 1) each ask for 64 jobs of 8
# GPUs at once; under --policy fair the first 32 slots split 24 : 8
python3 - <<'P' >w.csv
print("name,submit_s,duration_s,estimate_s,tasks,gpus,tenant")
for i in range(64):
    print("a-%02d,0,3600,3600,1,8,a" % i)
    print("b-%02d,0,3600,3600,1,8,b" % i)
P
printf 'tenants:\n  a: {weight: 3}\n  b: {weight: 1}\n' >w.yaml
"$DROVER" sim --cluster "$CL" --trace w.csv --policy fair --tenants w.yaml --json \
	--jobs-out w-out.csv >w.json || fail "weights exited $?"
python3 - w-out.csv w.json <<'P' || fail "weights"
import csv, json, sys
first = {"a": 0, "b": 0}
for r in csv.DictReader(open(sys.argv[1])):
    if r["start_s"] == "0":
        first[r["tenant"]] += 1
assert first == {"a": 24, "b": 8}, first
t = json.load(open(sys.argv[2]))["tenants"]
assert t["a"]["avg_wait_s"] < t["b"]["avg_wait_s"], t
P

# the text output has a tenant table with the quota column
"$DROVER" sim --cluster "$CL" --trace "$TR" --tenants "$TF" >quota.txt || fail "text exited $?"
grep -Eq '^big +40 +40 +0 .* 64 +64$' quota.txt || fail "text table: $(cat quota.txt)"

# a trace row may name a class; --write-trace keeps the name, and reading it
# back with the same file gives the same schedule
sed 's/^big-05,5,3600,3600,1,8,,/big-05,5,3600,3600,1,8,urgent,/' "$TR" >named.csv
"$DROVER" sim --cluster "$CL" --trace named.csv --tenants "$TF" --jobs-out named-out.csv \
	--write-trace again.csv >/dev/null || fail "named class exited $?"
grep -q '^big-05,.*,urgent$' named-out.csv || fail "big-05 lost its class: $(grep big-05 named-out.csv)"
grep -q '^big-05,5,3600,,3600,1,8,,,,,,urgent,' again.csv || fail "write-trace: $(grep big-05 again.csv)"
"$DROVER" sim --cluster "$CL" --trace again.csv --tenants "$TF" --jobs-out again-out.csv \
	>/dev/null || fail "re-read exited $?"
cmp -s named-out.csv again-out.csv || fail "write-trace round trip changed the schedule"

# without the file the class name is a malformed row: skipped with a warning,
# an error under --strict
set +e
"$DROVER" sim --cluster "$CL" --trace named.csv --strict --jobs-out nf.csv >/dev/null 2>nf.err
rc=$?
set -e
expect_eq "unknown class exit" "$rc" 2
grep -q "named.csv:7:24: error: priority: expected an integer priority, or empty (a priority class name needs --tenants FILE defining it), found 'urgent'" nf.err ||
	fail "unknown class message: $(cat nf.err)"
[ ! -e nf.csv ] || fail "--jobs-out written on bad input"

# a bad tenants file: every error at file:line:col, exit 2, nothing written
cat >bad.yaml <<'Y'
tenants:
  big:
    quota: {H100: lots}
    weight: 0
  small: {priorityClass: urgnet}
Y
set +e
"$DROVER" sim --cluster "$CL" --trace "$TR" --tenants bad.yaml --json --jobs-out bad.csv \
	>bad.json 2>bad.err
rc=$?
set -e
expect_eq "bad tenants exit" "$rc" 2
grep -q "^bad.yaml:3:19: error: tenants.big.quota.H100: found 'lots', expected a number of GPUs >= 0" bad.err ||
	fail "quota message: $(cat bad.err)"
grep -q "^bad.yaml:4:13: error: tenants.big.weight: found '0', expected a whole number from 1 to 1000000" bad.err ||
	fail "weight message: $(cat bad.err)"
grep -q "^bad.yaml:5:26: error: tenants.small.priorityClass: found 'urgnet', expected a class of priorityClasses (the file defines none)" bad.err ||
	fail "class message: $(cat bad.err)"
grep -q "bad.yaml: invalid tenants file; nothing simulated" bad.err || fail "summary line: $(cat bad.err)"
[ ! -e bad.csv ] && [ ! -s bad.json ] || fail "output written on a bad tenants file"
set +e
"$DROVER" sim --cluster "$CL" --trace "$TR" --tenants missing.yaml >/dev/null 2>miss.err
rc=$?
set -e
expect_eq "missing tenants exit" "$rc" 2
grep -q "missing.yaml: error: cannot read: No such file" miss.err || fail "missing: $(cat miss.err)"

# a tenant of the file that no job belongs to is pointed out (a typo limits nothing)
# and so is a quota on GPU models the cluster has none of
printf 'tenants:\n  bgi: {quota: 8}\n  big: {quota: {A100: 8, V100: 4}}\n' >typo.yaml
"$DROVER" sim --cluster "$CL" --trace "$TR" --tenants typo.yaml >/dev/null 2>typo.err ||
	fail "typo exited $?"
grep -q "typo.yaml:2:3: warning: tenants.bgi: no job of the workload belongs to this tenant" typo.err ||
	fail "typo warning: $(cat typo.err)"
grep -q "typo.yaml:3:3: warning: tenants.big.quota: names only GPU models the cluster has none of (A100, V100); it limits nothing" typo.err ||
	fail "model warning: $(cat typo.err)"

# the example file loads and changes the Philly sample's per-tenant figures
"$DROVER" sim --cluster "$ROOT/examples/clusters/philly.yaml" --trace "$ROOT/tests/sim/philly-sample.csv" \
	--tenants "$ROOT/examples/tenants/philly-quota.yaml" --json >ex.json 2>ex.err || fail "example exited $?"
python3 - ex.json <<'P' || fail "example"
import json, sys
t = json.load(open(sys.argv[1]))["tenants"]
assert t["b436b2"]["quota_gpus"] == 32 and t["b436b2"]["peak_gpus"] <= 32, t["b436b2"]
P
echo "sim_tenants: ok"
