# sim_users.sh: per-user limits of the tenants file in `drover sim` (the
# trace's user column): alice may run one job at a time, bob may hold 8
# GPUs, carol may have 2 jobs queued or running; dave has no limit. A bad
# limit is reported at file:line:col, exit 2.
set -eu
. "$ROOT/tests/integration/lib.sh"
cd "$TEST_TMP"
CL="$ROOT/examples/clusters/h100-256.yaml"
cat >t.csv <<'T'
name,submit_s,duration_s,tasks,gpus,user
a1,0,100,1,1,alice
a2,0,100,1,1,alice
a3,0,100,1,1,alice
b1,0,100,1,8,bob
b2,0,100,1,8,bob
c1,0,100,1,1,carol
c2,0,100,1,1,carol
c3,0,100,1,1,carol
d1,0,100,1,1,dave
d2,0,100,1,1,dave
T
cat >u.yaml <<'U'
users:
  alice: {maxRunningJobs: 1}
  bob: {maxGpus: 8}
  carol: {maxSubmittedJobs: 2}
U
"$DROVER" sim --cluster "$CL" --trace t.csv --tenants u.yaml --jobs-out runs.csv >/dev/null ||
	fail "sim exited $?"
starts=$(python3 -c "
import csv
print(' '.join('%s=%s' % (r['job'], r['start_s']) for r in csv.DictReader(open('runs.csv'))))")
expect_eq "start times" "$starts" "a1=0 a2=100 a3=200 b1=0 b2=100 c1=0 c2=0 c3=100 d1=0 d2=0"
printf 'users:\n  alice: {maxRunningJobs: lots}\n' >bad.yaml
set +e
"$DROVER" sim --cluster "$CL" --trace t.csv --tenants bad.yaml >/dev/null 2>err.txt
rc=$?
set -e
expect_eq "bad limit exit" "$rc" 2
grep -q '^bad.yaml:2:[0-9]*: error: users.alice.maxRunningJobs: found .lots., expected a whole number' err.txt ||
	fail "bad limit: $(cat err.txt)"
echo "ok: per-user limits hold jobs in the simulator"
