# slurm_env.sh: a job from an #SBATCH script runs as under Slurm: the script
# (the batch step) runs once, on the first node of the allocation, and sees
# Slurm's output variables (sbatch(1)); `srun` starts a step whose tasks
# each see their own (srun(1)): SLURM_PROCID, SLURM_NODEID, SLURM_LOCALID,
# SLURM_STEP_*, CUDA_VISIBLE_DEVICES, RANK/WORLD_SIZE/LOCAL_RANK, on the
# right node. SLURM_NTASKS is nodes x --ntasks-per-node (8 here). A
# Kubernetes job sees no SLURM_ variable.
. "$ROOT/tests/integration/lib.sh"

drover_links srun
# 16 CPUs a node, so that 4 tasks of one CPU fit on each
cat >"$TEST_TMP/cluster.yaml" <<YAML
kind: Cluster
name: c
topology:
  - name: batch        # -p names a pool
    children:
      - name: "gpu-{i:02}"
        count: 2
        gpus: 4
        gpuModel: H100-SXM-80GB
        cpu: 16
        memory: 64Gi
YAML
start_server --cluster "$TEST_TMP/cluster.yaml"
start_agent gpu-02 4xH100
start_agent gpu-01 4xH100
cat >"$TEST_TMP/job.sh" <<EOF2
#!/bin/sh
#SBATCH -J envjob
#SBATCH -N 2
#SBATCH --ntasks-per-node=4
#SBATCH --gpus-per-node=4
#SBATCH -p batch
echo "\$SLURMD_NODENAME" >>"$TEST_TMP/batch.runs"
env | grep -E '^SLURMD?_' | sort >"$TEST_TMP/env.batch"
echo "\$CUDA_VISIBLE_DEVICES" >"$TEST_TMP/batch.gpus"
srun --gpus-per-task=1 sh -c 'env | grep -E "^(SLURMD?_|CUDA_VISIBLE_DEVICES=|RANK=|WORLD_SIZE=|LOCAL_RANK=)" | sort >"$TEST_TMP/env.\$SLURM_PROCID"'
EOF2
id=$("$DROVER" submit --parsable "$TEST_TMP/job.sh") || fail "submit"
state() { "$DROVER" get job "$1" -o json | jq -r .state; }
done1() { s=$(state "$id"); [ "$s" = succeeded ] || [ "$s" = failed ]; }
wait_until 30 done1 || fail "job $id still '$(state "$id")'"
expect_eq "job $id" "$(state "$id")" succeeded
expect_eq "where the batch script ran (once)" "$(cat "$TEST_TMP/batch.runs")" gpu-01
expect_eq "the batch step's GPUs (the job's on its node)" "$(cat "$TEST_TMP/batch.gpus")" "0,1,2,3"
f=$TEST_TMP/env.batch
v() { sed -n "s/^$1=//p" "$f"; }
expect_eq "SLURM_JOB_ID" "$(v SLURM_JOB_ID)" "$id"
expect_eq "SLURM_JOBID" "$(v SLURM_JOBID)" "$id"
expect_eq "SLURM_JOB_NAME" "$(v SLURM_JOB_NAME)" envjob
expect_eq "SLURM_JOB_NODELIST" "$(v SLURM_JOB_NODELIST)" "gpu-[01-02]"
expect_eq "SLURM_NODELIST" "$(v SLURM_NODELIST)" "gpu-[01-02]"
expect_eq "SLURM_JOB_NUM_NODES" "$(v SLURM_JOB_NUM_NODES)" 2
expect_eq "SLURM_NNODES" "$(v SLURM_NNODES)" 2
expect_eq "SLURM_NTASKS (-N 2 --ntasks-per-node=4)" "$(v SLURM_NTASKS)" 8
expect_eq "SLURM_NPROCS" "$(v SLURM_NPROCS)" 8
expect_eq "SLURM_NTASKS_PER_NODE" "$(v SLURM_NTASKS_PER_NODE)" 4
expect_eq "SLURM_TASKS_PER_NODE" "$(v SLURM_TASKS_PER_NODE)" "4(x2)"
expect_eq "SLURM_PROCID (batch)" "$(v SLURM_PROCID)" 0
expect_eq "SLURM_LOCALID (batch)" "$(v SLURM_LOCALID)" 0
expect_eq "SLURM_NODEID (batch)" "$(v SLURM_NODEID)" 0
expect_eq "SLURMD_NODENAME (batch)" "$(v SLURMD_NODENAME)" gpu-01
expect_eq "SLURM_GPUS_ON_NODE (batch)" "$(v SLURM_GPUS_ON_NODE)" 4
expect_eq "SLURM_JOB_GPUS (batch)" "$(v SLURM_JOB_GPUS)" "0,1,2,3"
expect_eq "SLURM_JOB_PARTITION" "$(v SLURM_JOB_PARTITION)" batch
expect_eq "SLURM_CLUSTER_NAME" "$(v SLURM_CLUSTER_NAME)" drover
expect_eq "SLURM_STEP_ID in the batch step" "$(v SLURM_STEP_ID)" ""
expect_eq "SLURM_CPUS_PER_TASK without -c" "$(v SLURM_CPUS_PER_TASK)" ""
for r in 0 1 2 3 4 5 6 7; do
	f=$TEST_TMP/env.$r
	[ -s "$f" ] || fail "step task $r wrote nothing"
	node=$((r / 4)) local=$((r % 4))
	expect_eq "SLURM_PROCID ($r)" "$(v SLURM_PROCID)" "$r"
	expect_eq "SLURM_NODEID ($r)" "$(v SLURM_NODEID)" "$node"
	expect_eq "SLURM_LOCALID ($r)" "$(v SLURM_LOCALID)" "$local"
	expect_eq "SLURMD_NODENAME ($r)" "$(v SLURMD_NODENAME)" "gpu-0$((node + 1))"
	expect_eq "SLURM_STEP_ID ($r)" "$(v SLURM_STEP_ID)" 0
	expect_eq "SLURM_STEPID ($r)" "$(v SLURM_STEPID)" 0
	expect_eq "SLURM_STEP_NUM_TASKS ($r)" "$(v SLURM_STEP_NUM_TASKS)" 8
	expect_eq "SLURM_STEP_NUM_NODES ($r)" "$(v SLURM_STEP_NUM_NODES)" 2
	expect_eq "SLURM_STEP_NODELIST ($r)" "$(v SLURM_STEP_NODELIST)" "gpu-[01-02]"
	expect_eq "SLURM_STEP_TASKS_PER_NODE ($r)" "$(v SLURM_STEP_TASKS_PER_NODE)" "4(x2)"
	expect_eq "SLURM_NTASKS ($r)" "$(v SLURM_NTASKS)" 8
	expect_eq "SLURM_JOB_ID ($r)" "$(v SLURM_JOB_ID)" "$id"
	expect_eq "SLURM_JOB_NODELIST ($r)" "$(v SLURM_JOB_NODELIST)" "gpu-[01-02]"
	expect_eq "CUDA_VISIBLE_DEVICES ($r, --gpus-per-task=1)" "$(v CUDA_VISIBLE_DEVICES)" "$local"
	expect_eq "RANK ($r)" "$(v RANK)" "$r"
	expect_eq "WORLD_SIZE ($r)" "$(v WORLD_SIZE)" 8
	expect_eq "LOCAL_RANK ($r)" "$(v LOCAL_RANK)" "$local"
done
cat >"$TEST_TMP/pod.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata: {name: plain}
spec:
  containers:
  - name: main
    image: none
    command: ["sh", "-c", "env | grep -c '^SLURM_' >$TEST_TMP/pod.count || true"]
YAML
id2=$("$DROVER" submit --parsable "$TEST_TMP/pod.yaml") || fail "submit pod"
done2() { [ "$(state "$id2")" = succeeded ]; }
wait_until 30 done2 || fail "pod job $id2 ended '$(state "$id2")'"
expect_eq "SLURM_ variables of a Kubernetes job" "$(cat "$TEST_TMP/pod.count")" 0
echo "ok: job $id ran its script once on gpu-01 ($(wc -l <"$TEST_TMP/env.batch") SLURM_ variables), its step's 8 tasks each their own; a pod none"
