# slurm_srun.sh: srun inside a job starts job steps over the allocation
# (CONTRACTS.md section 7) as Slurm's does: -l labels, -n/-N spread, GPU
# binding (--gpus-per-node, --gpu-bind closest, single:N, map_gpu:), the
# worst task's exit status, --kill-on-bad-exit, -o patterns, --export,
# stderr relayed, --container-image refused in words, -i and --mpi warned,
# two steps at once sharing the GPUs, a 2-node `srun true` within a
# second; outside a job srun allocates and runs in one go and salloc gives
# a shell in which srun uses the allocation; cancelling a job and its time
# limit stop its steps' tasks.
. "$ROOT/tests/integration/lib.sh"

drover_links srun salloc
start_server
start_agent gpu-01 4xH100
start_agent gpu-02 4xH100
state() { "$DROVER" get job "$1" -o json | jq -r .state; }
ended() { s=$(state "$1"); [ "$s" != pending ] && [ "$s" != scheduled ] && [ "$s" != running ]; }
T=$TEST_TMP
cat >"$T/job.sh" <<EOF2
#!/bin/sh
#SBATCH -J steps
#SBATCH -N 2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=4
srun -l sh -c 'echo \$SLURMD_NODENAME' >"$T/labels"
srun -n 4 --gpu-bind=closest sh -c 'echo \$SLURM_PROCID \$SLURMD_NODENAME \$CUDA_VISIBLE_DEVICES' | sort -n >"$T/closest"
srun -N 1 -n 4 --gpu-bind=single:2 sh -c 'echo \$SLURM_PROCID \$CUDA_VISIBLE_DEVICES' | sort -n >"$T/single"
srun -N 1 -n 2 --gpu-bind=map_gpu:3,1 sh -c 'echo \$SLURM_PROCID \$CUDA_VISIBLE_DEVICES' | sort -n >"$T/map"
srun --gpus-per-node=2 sh -c 'echo \$SLURM_PROCID \$CUDA_VISIBLE_DEVICES' | sort -n >"$T/gpn"
srun -N 1 sh -c 'exit 3'; echo "\$?" >"$T/rc"
a=\$(date +%s)
srun -n 2 --kill-on-bad-exit sh -c 'if [ \$SLURM_PROCID = 0 ]; then sleep 1; exit 5; fi; exec sleep 63'
echo "\$? \$((\$(date +%s) - a))" >"$T/kobe"
srun -o "$T/out-%j.%s.%t.txt" sh -c 'echo hello \$SLURM_PROCID'
FOO=bar srun -N 1 sh -c 'echo "[\$FOO]"' >"$T/export.all"
FOO=bar srun -N 1 --export=NONE sh -c 'echo "[\$FOO]"' >"$T/export.none"
srun -N 1 --export=ALL,BAZ=qux sh -c 'echo "[\$BAZ]"' >"$T/export.set"
srun -N 1 sh -c 'echo to-stderr >&2' 2>"$T/stderr"
srun --container-image=docker://ubuntu true 2>"$T/image.err"; echo "\$?" >"$T/image.rc"
a=\$(date +%s%N)
srun true
echo \$(( (\$(date +%s%N) - a) / 1000000 )) >"$T/true.ms"
srun -N 1 -i /dev/null --mpi=pmix true 2>"$T/warn.err"; echo "\$?" >"$T/warn.rc"
a=\$(date +%s%N)
srun -N 1 sh -c 'sleep 2; echo \$CUDA_VISIBLE_DEVICES' >"$T/ov1" &
srun -N 1 sh -c 'sleep 2; echo \$CUDA_VISIBLE_DEVICES' >"$T/ov2"
wait
echo \$(( (\$(date +%s%N) - a) / 1000000 )) >"$T/ov.ms"
EOF2
id=$("$DROVER" submit --parsable "$T/job.sh") || fail "submit"
wait_until 60 ended "$id" || fail "job $id still '$(state "$id")'"
expect_eq "job $id" "$(state "$id")" succeeded
expect_eq "srun -l" "$(sort "$T/labels" | tr '\n' ' ')" "0: gpu-01 1: gpu-02 "
expect_eq "srun -n 4 --gpu-bind=closest" "$(tr '\n' ' ' <"$T/closest")" \
	"0 gpu-01 0,1 1 gpu-01 2,3 2 gpu-02 0,1 3 gpu-02 2,3 "
expect_eq "--gpu-bind=single:2" "$(tr '\n' ' ' <"$T/single")" "0 0 1 0 2 1 3 1 "
expect_eq "--gpu-bind=map_gpu:3,1" "$(tr '\n' ' ' <"$T/map")" "0 3 1 1 "
expect_eq "--gpus-per-node=2" "$(tr '\n' ' ' <"$T/gpn")" "0 0,1 1 0,1 "
expect_eq "srun's status: the task's exit code" "$(cat "$T/rc")" 3
set -- $(cat "$T/kobe")
expect_eq "--kill-on-bad-exit: the worst status" "$1" 5
[ "$2" -lt 20 ] || fail "--kill-on-bad-exit: srun returned after $2 s, its other task was not stopped"
expect_eq "-o %j.%s.%t, task 0" "$(cat "$T/out-$id.7.0.txt")" "hello 0"
expect_eq "-o %j.%s.%t, task 1" "$(cat "$T/out-$id.7.1.txt")" "hello 1"
expect_eq "--export default (ALL)" "$(cat "$T/export.all")" "[bar]"
expect_eq "--export=NONE" "$(cat "$T/export.none")" "[]"
expect_eq "--export=ALL,BAZ=qux" "$(cat "$T/export.set")" "[qux]"
expect_eq "stderr relayed" "$(cat "$T/stderr")" "to-stderr"
[ "$(cat "$T/image.rc")" != 0 ] || fail "--container-image without a runtime succeeded"
grep -q "container_image: node gpu-0[12] runs no container runtime (its agent runs --runtime host)" "$T/image.err" ||
	fail "--container-image: $(cat "$T/image.err")"
# -i and --mpi: warned, not acted on; the step still runs
expect_eq "srun -i --mpi" "$(cat "$T/warn.rc")" 0
grep -q -- "--input=/dev/null is not acted on" "$T/warn.err" || fail "srun -i: $(cat "$T/warn.err")"
grep -q -- "--mpi=pmix is not acted on" "$T/warn.err" || fail "srun --mpi: $(cat "$T/warn.err")"
# two steps at once share the job's GPUs: neither waits for the other
expect_eq "step 1 of two at once" "$(cat "$T/ov1")" "0,1,2,3"
expect_eq "step 2 of two at once" "$(cat "$T/ov2")" "0,1,2,3"
[ "$(cat "$T/ov.ms")" -lt 3800 ] || fail "two 2 s steps at once took $(cat "$T/ov.ms") ms: one waited"
ms=$(cat "$T/true.ms")
[ "$ms" -lt 1000 ] || fail "a 2-node srun true took $ms ms (CONTRACTS.md section 7: within a second)"

# outside a job: an allocation and its step in one go
out=$(srun -N 2 --gpus-per-node=1 -l sh -c 'echo "$SLURM_JOB_ID $SLURM_PROCID"' 2>"$T/alloc.err") ||
	fail "srun outside a job: $(cat "$T/alloc.err")"
jid=$(echo "$out" | head -1 | awk '{print $2}')
expect_eq "srun outside a job" "$(echo "$out" | sort | tr '\n' ' ')" "0: $jid 0 1: $jid 1 "
wait_until 10 ended "$jid" || fail "allocation job $jid still '$(state "$jid")'"
expect_eq "its job" "$(state "$jid")" succeeded
srun -N 1 sh -c 'exit 4' 2>/dev/null
expect_eq "srun outside a job: the task's status" "$?" 4

# salloc: a shell with SLURM_JOB_ID in which srun uses the allocation
out=$(salloc -N 1 sh -c 'srun sh -c "echo step of \$SLURM_JOB_ID on \$SLURMD_NODENAME"; echo "shell $SLURM_JOB_ID"' 2>"$T/salloc.err") ||
	fail "salloc: $(cat "$T/salloc.err")"
sid=$(echo "$out" | sed -n 's/^shell //p')
[ -n "$sid" ] || fail "salloc: no SLURM_JOB_ID in its shell: $out"
echo "$out" | grep -q "^step of $sid on gpu-0" || fail "salloc: srun in its shell: $out"
grep -q "Granted job allocation $sid" "$T/salloc.err" || fail "salloc said: $(cat "$T/salloc.err")"
wait_until 10 ended "$sid" || fail "salloc's job $sid still '$(state "$sid")' after its shell left"

# cancelling a job stops its steps' tasks; so does its time limit
cat >"$T/long.sh" <<EOF2
#!/bin/sh
#SBATCH -N 2 --gpus-per-node=1
srun sleep 61
EOF2
lid=$("$DROVER" submit --parsable "$T/long.sh") || fail "submit long"
stepping() { pgrep -f "sleep 61" >/dev/null; }
wait_until 20 stepping || fail "job $lid's step never ran"
"$DROVER" cancel "$lid" >/dev/null || fail "cancel $lid"
gone() { ! pgrep -f "sleep 61" >/dev/null; }
wait_until 20 gone || fail "job $lid cancelled, its step's tasks still run"
expect_eq "job $lid" "$(state "$lid")" cancelled
cat >"$T/limit.sh" <<EOF2
#!/bin/sh
#SBATCH -N 2 --gpus-per-node=1 --time=0:04
srun sleep 62
EOF2
tid=$("$DROVER" submit --parsable "$T/limit.sh") || fail "submit limit"
wait_until 30 ended "$tid" || fail "job $tid still '$(state "$tid")' past its limit"
expect_eq "job $tid at its limit" "$(state "$tid")" timeout
wait_until 20 eval '! pgrep -f "sleep 62" >/dev/null' || fail "job $tid timed out, its step's tasks still run"
echo "ok: steps over 2 nodes (labels, GPU binding, status, -K, -o, --export, a 2-node srun true in $ms ms), srun and salloc outside a job, steps stopped by cancel and time limit"
