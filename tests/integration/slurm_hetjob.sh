# slurm_hetjob.sh: a heterogeneous job (#SBATCH hetjob) as Slurm runs one:
# the components are allocated together, the batch script sees
# SLURM_HET_SIZE and each component's SLURM_JOB_NODELIST_HET_GROUP_<n>
# (and _NNODES_, _JOB_ID_), `srun --het-group=N` runs on component N's
# nodes and GPUs with its node count, a plain srun on component 0, and a
# component the job does not have is refused with the components named.
. "$ROOT/tests/integration/lib.sh"

drover_links srun
start_server
start_agent gpu-01 2xH100
start_agent gpu-02 4xH100
state() { "$DROVER" get job "$1" -o json | jq -r .state; }
ended() { s=$(state "$1"); [ "$s" != pending ] && [ "$s" != scheduled ] && [ "$s" != running ]; }
T=$TEST_TMP
cat >"$T/job.sh" <<EOF2
#!/bin/sh
#SBATCH -J het
#SBATCH -N 1 --gpus-per-node=2
#SBATCH hetjob
#SBATCH -N 1 --gpus-per-node=4
echo "\$SLURM_HET_SIZE \$SLURM_JOB_NODELIST_HET_GROUP_0 \$SLURM_JOB_NODELIST_HET_GROUP_1" \
	"\$SLURM_NNODES_HET_GROUP_0 \$SLURM_NNODES_HET_GROUP_1 \$SLURM_JOB_ID_HET_GROUP_1" >"$T/env"
srun --het-group=0 sh -c 'echo \$SLURMD_NODENAME \$CUDA_VISIBLE_DEVICES \$SLURM_STEP_NUM_NODES' >"$T/g0" 2>&1
srun --het-group=1 sh -c 'echo \$SLURMD_NODENAME \$CUDA_VISIBLE_DEVICES \$SLURM_STEP_NUM_NODES' >"$T/g1" 2>&1
srun sh -c 'echo \$SLURMD_NODENAME' >"$T/plain" 2>&1
srun --het-group=2 true 2>"$T/g2.err"; echo \$? >"$T/g2.rc"
EOF2
id=$("$DROVER" submit --parsable "$T/job.sh") || fail "submit"
wait_until 60 ended "$id" || fail "job $id still '$(state "$id")'"
expect_eq "job $id" "$(state "$id")" succeeded
expect_eq "the batch script's het variables" "$(cat "$T/env")" "2 gpu-01 gpu-02 1 1 $id"
expect_eq "srun --het-group=0" "$(cat "$T/g0")" "gpu-01 0,1 1"
expect_eq "srun --het-group=1" "$(cat "$T/g1")" "gpu-02 0,1,2,3 1"
expect_eq "srun without --het-group: component 0" "$(cat "$T/plain")" "gpu-01"
expect_eq "srun --het-group=2: its status" "$(cat "$T/g2.rc")" 2
grep -q "expected 0 to 1 (the job's components)" "$T/g2.err" ||
	fail "srun --het-group=2 said: $(cat "$T/g2.err")"
echo "ok: a hetjob's components, variables and srun --het-group act as Slurm's"
