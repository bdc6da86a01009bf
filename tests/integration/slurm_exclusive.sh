# slurm_exclusive.sh: sbatch's and srun's --exclusive are acted on
# (docs/job-format.md): the job takes only nodes with nothing on them, is
# given every GPU and CPU of each (SLURM_GPUS_ON_NODE, SLURM_CPUS_ON_NODE,
# SLURM_JOB_CPUS_PER_NODE, SLURM_TASKS_PER_NODE and CUDA_VISIBLE_DEVICES say
# so, as Slurm's do), and no other job is placed on its nodes while it runs;
# an exclusive job waits for a node that holds another job. --exclusive=user
# is kept and warned about by name; srun --exclusive for a step is warned.
. "$ROOT/tests/integration/lib.sh"

bin=$TEST_TMP/slurm-bin
mkdir -p "$bin"
for n in sbatch sacct squeue; do ln -s "$DROVER" "$bin/$n"; done
ln -s "$DROVER" "$bin/srun"
PATH=$bin:$PATH
export PATH
start_server
start_agent gpu-01 2xH100
start_agent gpu-02 2xH100
cd "$TEST_TMP" || fail "cd"
cpus=$(getconf _NPROCESSORS_ONLN)

acct() { sacct -P -X -n -o State -j "$1"; }
done_ok() { [ "$(acct "$1")" = COMPLETED ]; }
running() { [ "$(acct "$1")" = RUNNING ]; }
pending() { [ "$(squeue -h -j "$1" -o %t)" = PD ]; }
waits_for() {   # waits_for FLAG: a --wrap body that runs until FLAG exists
	echo "while [ ! -e '$TEST_TMP/$1' ]; do sleep 0.2; done"
}

# the canonical job says it
printf '#!/bin/sh\n#SBATCH --exclusive -N 1\ntrue\n' >ex.sh
"$DROVER" validate --json ex.sh | grep -q '"exclusive": *true' ||
	fail "no \"exclusive\": true in $("$DROVER" validate --json ex.sh)"

# no GPU asked: it gets both of the node's GPUs and all its CPUs
a=$(sbatch --parsable --exclusive -w gpu-01 --wrap \
	"echo \"\$SLURM_GPUS_ON_NODE \$SLURM_CPUS_ON_NODE \$SLURM_JOB_CPUS_PER_NODE \$SLURM_TASKS_PER_NODE \$CUDA_VISIBLE_DEVICES\"; $(waits_for go-a)") ||
	fail "sbatch --exclusive"
wait_until 30 running "$a" || fail "exclusive job $a: '$(acct "$a")'"
wait_until 10 test -s "slurm-$a.out" || fail "job $a wrote nothing"
expect_eq "what the exclusive job holds" "$(head -1 "slurm-$a.out")" "2 $cpus $cpus $cpus 0,1"
# a job asking one CPU on its node waits; one free to go elsewhere runs on gpu-02
b=$(sbatch --parsable -w gpu-01 --wrap true) || fail "sbatch -w gpu-01"
c=$(sbatch --parsable --wrap 'echo "$SLURM_JOB_NODELIST"') || fail "sbatch"
wait_until 30 done_ok "$c" || fail "job $c: '$(acct "$c")'"
expect_eq "a shared job's node beside an exclusive one" "$(cat "slurm-$c.out")" gpu-02
sleep 2
pending "$b" || fail "job $b ran on gpu-01 beside exclusive job $a: '$(acct "$b")'"
touch go-a
wait_until 30 done_ok "$a" || fail "job $a: '$(acct "$a")'"
wait_until 30 done_ok "$b" || fail "job $b after the exclusive job: '$(acct "$b")'"

# an exclusive job waits for a node that holds another job's task
d=$(sbatch --parsable -w gpu-02 --gpus=1 --wrap "$(waits_for go-d)") || fail "sbatch -w gpu-02"
wait_until 30 running "$d" || fail "job $d: '$(acct "$d")'"
e=$(sbatch --parsable --exclusive -w gpu-02 --wrap true) || fail "sbatch --exclusive -w gpu-02"
sleep 2
pending "$e" || fail "exclusive job $e shared gpu-02 with job $d: '$(acct "$e")'"
touch go-d
wait_until 30 done_ok "$e" || fail "exclusive job $e after job $d: '$(acct "$e")'"

# srun outside a job allocates whole nodes too
expect_eq "srun --exclusive's GPUs" "$(srun --exclusive sh -c 'echo $SLURM_GPUS_ON_NODE' 2>/dev/null)" 2

# the kinds that share nodes with some jobs: kept, said by name
sbatch --parsable --exclusive=user --wrap true >out 2>err || fail "--exclusive=user: $(cat err)"
grep -q -- "--exclusive=user: kept, not acted on by drover" err ||
	fail "--exclusive=user's warning: $(cat err)"
sbatch --parsable --exclusive=nodes --wrap true >out 2>err &&
	fail "--exclusive=nodes was accepted: $(cat out)"
grep -q -- "found \"nodes\", expected nothing, user, mcs or topo" err ||
	fail "--exclusive=nodes's error: $(cat err)"
