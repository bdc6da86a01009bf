# slurm_requeue.sh: --no-requeue and the default on a node failure, as
# Slurm's (CONTRACTS.md section 1): the node of two running batch jobs
# dies (its agent is killed; heartbeat timeout and agent lease short); the
# one submitted with --no-requeue ends NODE_FAIL (squeue NF, sacct
# NODE_FAIL), the other goes back to pending to run again (Slurm's
# default, JobRequeue=1), its reason saying it was requeued.
. "$ROOT/tests/integration/lib.sh"

bin=$TEST_TMP/slurm-bin
mkdir -p "$bin"
for n in sbatch sacct squeue; do ln -s "$DROVER" "$bin/$n"; done
PATH=$bin:$PATH
export PATH
server_config "heartbeat_interval_s: 1" "heartbeat_timeout_s: 2" "agent_lease_s: 2" \
	"sched_delay_ms: 5"
start_server
start_agent gpu-01 2xH100
cd "$TEST_TMP" || fail "cd"

nr=$(sbatch --parsable --no-requeue -G 1 --wrap 'sleep 120') || fail "sbatch --no-requeue"
rq=$(sbatch --parsable -G 1 --wrap 'sleep 120') || fail "sbatch"
running() { [ "$(squeue -h -j "$1" -o %T)" = RUNNING ]; }
wait_until 20 running "$nr" || fail "job $nr: $(squeue -h -j "$nr" -o %T)"
wait_until 20 running "$rq" || fail "job $rq: $(squeue -h -j "$rq" -o %T)"
stop_agent gpu-01 KILL
nf() { [ "$(sacct -P -X -n -o State -j "$nr")" = NODE_FAIL ]; }
wait_until 30 nf || fail "job $nr after its node died: $(sacct -P -X -n -o State,Reason -j "$nr")"
expect_eq "squeue %t of the --no-requeue job" "$(squeue -h -j "$nr" -o %t)" NF
case $("$DROVER" get job "$nr" -o json | jq -r .reason) in
*"not requeued (--no-requeue)"*) ;;
*) fail "job $nr's reason: $("$DROVER" get job "$nr" -o json | jq -r .reason)" ;;
esac
pending() { [ "$(squeue -h -j "$rq" -o %T)" = PENDING ]; }
wait_until 10 pending || fail "job $rq (requeue by default): $(squeue -h -j "$rq" -o %T)"
case $("$DROVER" get job "$rq" -o json | jq -r '[.events[].reason] | join(" ")') in
*"requeued"*) ;;
*) fail "job $rq's events: $("$DROVER" get job "$rq" -o json | jq -c .events)" ;;
esac
echo "node failure: --no-requeue job $nr NODE_FAIL, job $rq requeued"
