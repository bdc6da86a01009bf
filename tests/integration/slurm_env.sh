# slurm_env.sh: a job from an #SBATCH script sees Slurm's output variables
# (sbatch(1), OUTPUT ENVIRONMENT VARIABLES) in each task: two nodes, one
# task each, the node list hostlist-compressed; a Kubernetes job sees none.
. "$ROOT/tests/integration/lib.sh"

# -p names a pool: the nodes agents bring join the default pool, named batch here
server_config "default_pool: batch"
start_server
start_agent gpu-01 1xH100
start_agent gpu-02 1xH100
cat >"$TEST_TMP/job.sh" <<EOF2
#!/bin/sh
#SBATCH -J envjob
#SBATCH -N 2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=1
#SBATCH -p batch
env | grep '^SLURM_' | sort >"$TEST_TMP/env.\$SLURM_PROCID"
EOF2
id=$("$DROVER" submit --parsable "$TEST_TMP/job.sh") || fail "submit"
state() { "$DROVER" get job "$1" -o json | jq -r .state; }
done1() { [ "$(state "$id")" = succeeded ]; }
wait_until 30 done1 || fail "job $id ended '$(state "$id")': $("$DROVER" describe "$id")"
for r in 0 1; do
	f=$TEST_TMP/env.$r
	[ -s "$f" ] || fail "task $r wrote no SLURM_ variables"
	v() { sed -n "s/^$1=//p" "$f"; }
	expect_eq "SLURM_JOB_ID ($r)" "$(v SLURM_JOB_ID)" "$id"
	expect_eq "SLURM_JOBID ($r)" "$(v SLURM_JOBID)" "$id"
	expect_eq "SLURM_JOB_NAME ($r)" "$(v SLURM_JOB_NAME)" envjob
	expect_eq "SLURM_JOB_NODELIST ($r)" "$(v SLURM_JOB_NODELIST)" "gpu-[01-02]"
	expect_eq "SLURM_NODELIST ($r)" "$(v SLURM_NODELIST)" "gpu-[01-02]"
	expect_eq "SLURM_JOB_NUM_NODES ($r)" "$(v SLURM_JOB_NUM_NODES)" 2
	expect_eq "SLURM_NNODES ($r)" "$(v SLURM_NNODES)" 2
	expect_eq "SLURM_NTASKS ($r)" "$(v SLURM_NTASKS)" 2
	expect_eq "SLURM_NPROCS ($r)" "$(v SLURM_NPROCS)" 2
	expect_eq "SLURM_PROCID ($r)" "$(v SLURM_PROCID)" "$r"
	expect_eq "SLURM_LOCALID ($r)" "$(v SLURM_LOCALID)" 0
	expect_eq "SLURM_NODEID ($r)" "$(v SLURM_NODEID)" "$r"
	expect_eq "SLURM_TASKS_PER_NODE ($r)" "$(v SLURM_TASKS_PER_NODE)" "1(x2)"
	expect_eq "SLURM_GPUS_ON_NODE ($r)" "$(v SLURM_GPUS_ON_NODE)" 1
	expect_eq "SLURM_JOB_PARTITION ($r)" "$(v SLURM_JOB_PARTITION)" batch
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
echo "ok: job $id's two tasks saw Slurm's variables ($(wc -l <"$TEST_TMP/env.0") each); a pod none"
