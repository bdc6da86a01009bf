# sim_full_philly.sh: the whole Philly trace (82,247 jobs) under every
# policy, with the issue's exact command, every job accounted for and
# Little's law holding; the fifo run's jobs-out replays cleanly. The trace
# is found by need_data ($DROVER_DATA, else ../shared/data next to the
# repository); skipped, saying so, only when it is really absent.
set -eu
. "$ROOT/tests/integration/lib.sh"
need_data philly.csv
cd "$ROOT"
# Speed is a benchmark figure, not a test verdict (a shared or slow CI
# machine would make a timed test flaky): each run's wall and CPU time is
# printed for the record, and `timeout` only guards against a hang.
timed() {
	python3 - "$@" <<'P'
import resource, subprocess, sys, time
t0 = time.monotonic()
with open(sys.argv[1], "w") as out:
    rc = subprocess.call(["timeout", "180"] + sys.argv[2:], stdout=out)
wall = time.monotonic() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.3f %.3f %d" % (wall, ru.ru_utime + ru.ru_stime, rc))
P
}
for pol in fifo sjf las fair; do
	set -- $(timed "$TEST_TMP/$pol.json" "$DROVER" sim --cluster examples/clusters/philly.yaml \
		--trace "$DATA/philly.csv" --format philly --policy $pol --json)
	[ "$3" = 0 ] || fail "$pol exited $3"
	echo "$pol: the whole trace in $1 s wall, $2 s cpu"
	python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
assert s["jobs"] == 82247, s["jobs"]
assert s["malformed"] == 0
assert s["completed"] + s["rejected"] + s["never_started"] == 82247
l = s["littles_law"]
assert abs(l["mean_jobs_in_system"] - l["lambda_times_w"]) <= 0.02 * l["mean_jobs_in_system"], l
' "$TEST_TMP/$pol.json" || fail "$pol summary: $(cat "$TEST_TMP/$pol.json")"
done
"$DROVER" sim --cluster examples/clusters/philly.yaml --trace "$DATA/philly.csv" --format philly \
	--policy fifo --json --jobs-out "$TEST_TMP/jobs.csv" >"$TEST_TMP/fifo-jobs.json" || fail "jobs-out run"
python3 "$ROOT/tests/integration/sim_check.py" 8 "$TEST_TMP/jobs.csv" "$TEST_TMP/fifo-jobs.json" ||
	fail "full replay check"
echo "sim_full_philly: ok"
