# slurm_timeout.sh: a job stopped at its time limit (#SBATCH --time) ends in
# state timeout (CONTRACTS.md §1: squeue TO, sacct TIMEOUT), its reason in
# words, not "failed (killed by signal 15)"; a job that ends within its
# limit still succeeds. (drover has no squeue face yet to show TO.)
. "$ROOT/tests/integration/lib.sh"

start_server
start_agent node-t 1xH100
printf '#!/bin/sh\n#SBATCH --time=0:02\n#SBATCH --gpus=1\nsleep 60\n' >"$TEST_TMP/long.sh"
id=$("$DROVER" submit --parsable "$TEST_TMP/long.sh") || fail "submit"
state() { "$DROVER" get job "$1" -o json | jq -r .state; }
ended() { [ "$(state "$id")" = timeout ]; }
wait_until 30 ended || fail "job $id ended '$(state "$id")', expected timeout: $("$DROVER" describe "$id")"
why=$("$DROVER" get job "$id" -o json | jq -r .reason)
case $why in
*"time limit (2 s)"*) ;;
*) fail "reason of job $id: '$why'" ;;
esac
# within its limit: succeeded, not timeout
printf '#!/bin/sh\n#SBATCH --time=0:30\n#SBATCH --gpus=1\ntrue\n' >"$TEST_TMP/short.sh"
id2=$("$DROVER" submit --parsable "$TEST_TMP/short.sh") || fail "submit"
ok2() { [ "$(state "$id2")" = succeeded ]; }
wait_until 30 ok2 || fail "job $id2 within its limit ended '$(state "$id2")'"
echo "ok: job $id timeout ($why), job $id2 succeeded"
