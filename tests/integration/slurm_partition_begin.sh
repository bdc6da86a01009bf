# slurm_partition_begin.sh: #SBATCH -p names pools and --begin delays a job
# (docs/job-format.md): -p b runs on b's node only, -p a,b on either; a
# partition the cluster has not got is refused at submit; the tenant comes
# from --account, not from -p; one unknown name in a list refuses the job; --begin=now+4 waits (reason code BeginTime)
# and starts no earlier than its time, also across a controller restart; a
# malformed --begin is an error at its line.
. "$ROOT/tests/integration/lib.sh"

cat >"$TEST_TMP/cluster.yaml" <<'YAML'
kind: Cluster
name: two-pools
levels: [pool, node]
nodeTypes:
  box2: {gpus: 2, gpuModel: H100, cpu: 16, memory: 64Gi}
topology:
  - name: pa
    provider: onprem
    children:
      - {name: node-a, type: box2}
  - name: pb
    provider: onprem
    children:
      - {name: node-b, type: box2}
YAML
server_config "sched_delay_ms: 10"
start_server --cluster "$TEST_TMP/cluster.yaml"
start_agent node-a 2xH100
start_agent node-b 2xH100
out="$TEST_TMP/out"
mkdir -p "$out"
jq_job() { "$DROVER" get job "$1" -o json | jq -r "$2"; }
state() { jq_job "$1" .state; }
is_state() { [ "$(state "$1")" = "$2" ]; }
script() {   # script NAME BODY [SBATCH-LINE...]
	_n=$1 _b=$2
	shift 2
	{
		echo '#!/bin/sh'
		for l in "$@"; do echo "#SBATCH $l"; done
		echo '#SBATCH --gpus=1'
		printf '%s\n' "$_b"
	} >"$TEST_TMP/$_n.sh"
	echo "$TEST_TMP/$_n.sh"
}

# --- partitions are pools
for k in 1 2 3; do
	id=$("$DROVER" submit --parsable "$(script pb$k "echo \$SLURM_JOB_PARTITION >>$out/pb" -p pb)") || fail "submit -p pb"
	wait_until 30 is_state "$id" succeeded || fail "-p pb job $id: $(state "$id")"
	expect_eq "-p pb job $id's node" "$(jq_job "$id" '.placement[0].node')" node-b
done
expect_eq "SLURM_JOB_PARTITION" "$(sort -u "$out/pb")" pb
id=$("$DROVER" submit --parsable "$(script pab true -p pa,pb)") || fail "submit -p pa,pb"
wait_until 30 is_state "$id" succeeded || fail "-p pa,pb job: $(state "$id")"
# one unknown name in the list refuses the job, as Slurm does
if "$DROVER" submit "$(script bad true -p pa,nope)" >/dev/null 2>"$TEST_TMP/err"; then
	fail "-p pa,nope was accepted"
fi
grep -q "invalid partition specified: nope (the partitions are the cluster's pools: pa, pb)" "$TEST_TMP/err" ||
	fail "-p nope refusal said: $(cat "$TEST_TMP/err")"
# the tenant is the account, never the partition
t1=$("$DROVER" submit --parsable "$(script t1 true -p pa)") || fail "submit t1"
t2=$("$DROVER" submit --parsable "$(script t2 true -p pa -A team-x)") || fail "submit t2"
expect_eq "tenant of -p pa" "$(jq_job "$t1" .tenant)" default
expect_eq "tenant of -p pa -A team-x" "$(jq_job "$t2" .tenant)" team-x

# --- --begin
if "$DROVER" submit "$(script badbegin true --begin=soonish)" >/dev/null 2>"$TEST_TMP/err"; then
	fail "--begin=soonish was accepted"
fi
grep -q ':2:.*--begin.*soonish' "$TEST_TMP/err" || fail "--begin=soonish said: $(cat "$TEST_TMP/err")"
sub=$(date +%s)
B=$("$DROVER" submit --parsable "$(script begin "date +%s >$out/begin" --begin=now+4)") || fail "submit --begin"
expect_eq "reason code before the begin time" "$(jq_job "$B" .reason_code)" BeginTime
expect_eq "state before the begin time" "$(state "$B")" pending
stop_server KILL
start_server --cluster "$TEST_TMP/cluster.yaml"
expect_eq "reason code after a restart" "$(jq_job "$B" .reason_code)" BeginTime
wait_until 30 is_state "$B" succeeded || fail "--begin job: $(state "$B") $(jq_job "$B" .reason)"
started=$(cat "$out/begin")
[ $((started - sub)) -ge 4 ] || fail "--begin=now+4 started $((started - sub)) s after its submission"
# a dependency and a begin time: BeginTime once the dependency is met
D=$("$DROVER" submit --parsable "$(script both "true" --begin=now+3minutes "--dependency=afterok:$t1")") || fail "submit both"
wait_until 10 sh -c "[ \"\$("$DROVER" get job $D -o json | jq -r .reason_code)\" = BeginTime ]" ||
	fail "after its dependency, job $D: $(jq_job "$D" .reason_code)"
"$DROVER" cancel "$D" >/dev/null
echo "ok: -p pb ran on node-b only, -p nope refused, --begin=now+4 started after $((started - sub)) s"
