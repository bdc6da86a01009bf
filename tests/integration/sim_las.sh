# sim_las.sh: LAS in the simulator. Without preemption it is fifo and says
# so once (stderr, config.note); with preemption, a run is preempted only
# after --min-run, and each preemption costs --preempt-cost seconds of
# work, counted in the JCT and lost_gpu_hours. A trace of long jobs filling
# the 256-GPU cluster, then short ones.
set -eu
. "$ROOT/tests/integration/lib.sh"
cd "$TEST_TMP"
CL="$ROOT/examples/clusters/h100-256.yaml"
{
	echo "name,submit_s,duration_s,tasks,gpus,preemptible"
	i=0; while [ $i -lt 32 ]; do echo "long-$i,0,100000,1,8,true"; i=$((i + 1)); done
	i=0; while [ $i -lt 16 ]; do echo "short-$i,1000,600,1,8,true"; i=$((i + 1)); done
} >t.csv
sim() { "$DROVER" sim --cluster "$CL" --trace t.csv --policy las --json "$@"; }
get() { python3 -c "import json,sys; d=json.load(open('$1')); print($2)"; }

sim >off.json 2>off.err
expect_eq "notes on stderr" "$(grep -c 'las without preemption orders like fifo' off.err)" 1
get off.json "d['config']['note']" | grep -q 'orders like fifo' || fail "no note in the JSON"
sim --policy fifo >fifo.json 2>fifo.err
[ ! -s fifo.err ] || fail "fifo wrote to stderr: $(cat fifo.err)"
expect_eq "las off = fifo" "$(get off.json "d['avg_jct_s']")" "$(get fifo.json "d['avg_jct_s']")"

# min run 12 h (the default): the short jobs cannot preempt runs of 1000 s
sim --preemption on >on.json 2>on.err
[ ! -s on.err ] || fail "stderr: $(cat on.err)"
expect_eq "no preemption before min run" "$(get on.json "d['preemptions']")" 0
sim --preemption on --min-run 500 --preempt-cost 0 >free.json
sim --preemption on --min-run 500 >cost.json
expect_eq "preemptions" "$(get free.json "d['preemptions']")" 16
expect_eq "preemptions with cost" "$(get cost.json "d['preemptions']")" 16
expect_eq "nothing lost without cost" "$(get free.json "d['lost_gpu_hours']")" 0.0
# 16 victims of 8 GPUs lose 60 s each: 16 * 8 * 60 / 3600 GPU-hours
expect_eq "lost GPU-hours" "$(get cost.json "round(d['lost_gpu_hours'], 3)")" 2.133
get cost.json "d['avg_jct_s'] > $(get free.json "d['avg_jct_s']")" | grep -qx True ||
	fail "the preemption cost is not in the JCT"
[ "$(get on.json "d['avg_jct_s'] > $(get free.json "d['avg_jct_s']")")" = True ] ||
	fail "preempting long runs did not shorten the average JCT"
echo "ok: las says it is fifo without preemption; min run and preemption cost act"
