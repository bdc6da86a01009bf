# sim_philly_sample.sh: drover sim on a fixed Philly sample (tests/sim):
# the JSON summary's keys, every job accounted for, Little's law, the
# replay check of --jobs-out, determinism, malformed rows and --strict,
# the report, exit codes.
set -eu
. "$ROOT/tests/integration/lib.sh"
cd "$TEST_TMP"
CL="$ROOT/examples/clusters/philly.yaml"
TR="$ROOT/tests/sim/philly-sample.csv"

"$DROVER" sim --cluster "$CL" --trace "$TR" --format philly --policy fifo --json \
	--jobs-out jobs1.csv --report report.html >sum1.json || fail "sim exited $?"
python3 - sum1.json <<'P' || fail "summary check"
import json, sys
s = json.load(open(sys.argv[1]))
keys = ["jobs", "completed", "rejected", "malformed", "avg_jct_s", "p50_jct_s", "p99_jct_s",
        "avg_wait_s", "p99_wait_s", "makespan_s", "gpu_alloc_ratio", "preemptions",
        "lost_gpu_hours", "cost_usd", "events", "sim_wall_s"]
miss = [k for k in keys if k not in s]
assert not miss, miss
assert s["jobs"] == 2407, s["jobs"]
assert s["malformed"] == 0
assert s["completed"] + s["rejected"] + s["never_started"] == s["jobs"], s
assert s["completed"] == 2407, s
assert 0 < s["gpu_alloc_ratio"] <= 1
assert s["p50_jct_s"] <= s["p99_jct_s"]
assert s["cost_usd"] > 0
l = s["littles_law"]
assert abs(l["mean_jobs_in_system"] - l["lambda_times_w"]) <= 0.02 * l["mean_jobs_in_system"], l
print("summary ok", s["avg_jct_s"], s["gpu_alloc_ratio"])
P
python3 "$ROOT/tests/integration/sim_check.py" 8 jobs1.csv sum1.json || fail "replay check"
expect_eq "jobs-out rows" "$(tail -n +2 jobs1.csv | wc -l)" "$(tail -n +2 jobs1.csv | cut -d, -f1,2 | sort -u | wc -l)"
# the 12-GPU job of the sample is split 8 + 4 and placed whole
row=$(grep '^2408,' jobs1.csv) || fail "no row for the 12-GPU job"
echo "$row" | grep -q ',12,1000,2,' || fail "12-GPU job not 2 tasks of 12 GPUs: $row"

# determinism: byte-identical jobs-out, same summary but for sim_wall_s
"$DROVER" sim --cluster "$CL" --trace "$TR" --format philly --policy fifo --json \
	--jobs-out jobs2.csv >sum2.json
cmp jobs1.csv jobs2.csv || fail "jobs-out differs between two identical runs"
grep -v sim_wall_s sum1.json >a.json
grep -v sim_wall_s sum2.json >b.json
cmp a.json b.json || fail "summary differs between two identical runs"

# the report: self-contained HTML with the four charts
grep -q '<svg' report.html || fail "no SVG in the report"
[ "$(grep -o '<svg' report.html | wc -l)" -ge 5 ] || fail "report has fewer than 5 charts"
if grep -Eq '<script|<link|src=|https?://[^"]*\.(js|css)' report.html; then
	fail "report fetches something"
fi
for t in "GPU allocation" "Queue depth" "completion time CDF" "by priority" "Cost by pool"; do
	grep -q "$t" report.html || fail "report lacks '$t'"
done

# malformed rows are counted and skipped; --strict makes them fatal
{ cat "$TR"; echo; echo "2017-11-02 10:00:00,abc,1,1,x"; echo "2017-11-02 10:00:00,5,1"; } >bad.csv
"$DROVER" sim --cluster "$CL" --trace bad.csv --json >bad.json 2>bad.err || fail "non-strict exit $?"
grep -q '"malformed": 2' bad.json || fail "malformed count: $(grep malformed bad.json)"
grep -q 'bad.csv:2410:21: warning: duration' bad.err || fail "no located warning: $(cat bad.err)"
set +e
"$DROVER" sim --cluster "$CL" --trace bad.csv --strict --json --jobs-out strict.csv >/dev/null 2>strict.err
rc=$?
set -e
expect_eq "strict exit" "$rc" 2
[ ! -e strict.csv ] || fail "--strict wrote a jobs-out file"
grep -q 'bad.csv:2410:21: error' strict.err || fail "strict error not located: $(cat strict.err)"

# usage errors
set +e
"$DROVER" sim --cluster "$CL" --trace "$TR" --policy lifo >/dev/null 2>err.txt
expect_eq "bad policy exit" "$?" 2
"$DROVER" sim --trace "$TR" >/dev/null 2>&1
expect_eq "no cluster exit" "$?" 2
"$DROVER" sim --cluster "$CL" --trace /nonexistent.csv >/dev/null 2>&1
expect_eq "missing trace exit" "$?" 2
set -e
grep -q "fifo, sjf, las or fair" err.txt || fail "bad policy message: $(cat err.txt)"
echo "sim_philly_sample: ok"
