# sim_generate.sh: a generated workload written with --write-trace and
# read back with --format drover gives the very same schedule; failures
# requeue gangs whole and count lost work; the schedule replays cleanly
# under every policy and mode.
set -eu
. "$ROOT/tests/integration/lib.sh"
cd "$TEST_TMP"
CL="$ROOT/examples/clusters/philly.yaml"

"$DROVER" sim --cluster "$CL" --generate --jobs 4000 --load 0.9 --seed 7 --write-trace gen.csv \
	--json --jobs-out gen-jobs.csv >gen.json || fail "generate exited $?"
head -1 gen.csv | grep -q '^name,submit_s,duration_s' || fail "write-trace header"
expect_eq "trace rows" "$(tail -n +2 gen.csv | cut -d, -f1 | sort -u | wc -l)" 4000
"$DROVER" sim --cluster "$CL" --trace gen.csv --format drover --seed 7 --json \
	--jobs-out read-jobs.csv >read.json || fail "reading the written trace exited $?"
cmp gen-jobs.csv read-jobs.csv || fail "the written trace does not replay to the same schedule"

checks=""
for pol in fifo sjf las fair; do
	for mode in strict backfill greedy; do
		"$DROVER" sim --cluster "$CL" --trace gen.csv --policy $pol --mode $mode \
			--preemption on --json --jobs-out j-$pol-$mode.csv >s-$pol-$mode.json ||
			fail "$pol/$mode exited $?"
		checks="$checks j-$pol-$mode.csv s-$pol-$mode.json"
	done
done
# one python for all: the schedules replay cleanly, the statistics match the rows
python3 "$ROOT/tests/integration/sim_check.py" 8 $checks >/dev/null || fail "replay check"
python3 -c '
import json, sys
for p in sys.argv[1:]:
    s = json.load(open(p))
    l = s["littles_law"]
    assert s["completed"] == 4000, (p, s["completed"])
    assert abs(l["mean_jobs_in_system"] - l["lambda_times_w"]) <= 0.02 * l["mean_jobs_in_system"], (p, l)
' s-*.json || fail "summaries"

# failures: nodes fail and are repaired; gangs requeued whole, work lost
"$DROVER" sim --cluster "$CL" --trace gen.csv --mtbf-hours 20 --repair-hours 2 --json \
	--jobs-out fail-jobs.csv >fail.json || fail "failures run exited $?"
python3 "$ROOT/tests/integration/sim_check.py" 8 fail-jobs.csv fail.json >/dev/null || fail "failure replay"
python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
assert s["failures"] > 0 and s["lost_gpu_hours"] > 0, s
assert s["completed"] == 4000, s["completed"]
' fail.json || fail "failure summary: $(cat fail.json)"
grep -q ',failed,' fail-jobs.csv || fail "no failed run in jobs-out"
echo "sim_generate: ok"
