# slurm_training_job.sh: examples/jobs/training-job.sbatch, verbatim,
# through the sbatch face as a Slurm user submits it: its `srun python
# train.py` runs drover's srun (never a real Slurm's /usr/bin/srun, which
# this machine may have) and finds `python` through the submitter's PATH,
# since --export=ALL (sbatch's default) sends sbatch's environment with the
# job; the script's own --export entries win over it; drover's credentials
# and the submitter's SLURM_* stay behind; --export=NONE sends none of it
# and a bare name in --export takes the submitter's value.
. "$ROOT/tests/integration/lib.sh"

start_server
start_agent n1 8xH100
cd "$TEST_TMP" || fail cd
mkdir -p bin
ln -s "$DROVER" bin/sbatch
ln -s "$(command -v python3)" bin/python
PATH="$TEST_TMP/bin:$PATH"
export PATH
cat >train.py <<'EOF2'
import os
e = os.environ.get
print("rank", e("RANK"), "world", e("WORLD_SIZE"), "gpus", e("CUDA_VISIBLE_DEVICES"),
      "nccl", e("NCCL_IB_DISABLE"), e("NCCL_NET_GDR_LEVEL"), "mine", e("MY_SETTING"),
      "token", e("DROVER_TOKEN"), "job", e("SLURM_JOB_ID"))
EOF2
state() { "$DROVER" get job "$1" -o json | jq -r .state; }
ended() { s=$(state "$1"); [ "$s" != pending ] && [ "$s" != scheduled ] && [ "$s" != running ]; }

# the submitter's own settings, and a stale SLURM_JOB_ID as inside another job
id=$(MY_SETTING=42 NCCL_IB_DISABLE=1 SLURM_JOB_ID=999 \
	sbatch --parsable "$ROOT/examples/jobs/training-job.sbatch") || fail "sbatch"
wait_until 60 ended "$id" || fail "job $id still '$(state "$id")'"
expect_eq "job $id ($(cat "slurm-$id.out" 2>/dev/null))" "$(state "$id")" succeeded
expect_eq "train.py's line" "$(cat "slurm-$id.out")" \
	"rank 0 world 1 gpus 0,1,2,3,4,5,6,7 nccl 0 5 mine 42 token None job $id"

# --export=NONE: only what Slurm sets; a bare name is the submitter's value
id=$(MY_SETTING=42 OTHER=7 sbatch --parsable --export=NONE,OTHER \
	--wrap 'echo "[$MY_SETTING] [$OTHER] [$SLURM_JOB_ID]"') || fail "sbatch --export=NONE"
wait_until 60 ended "$id" || fail "job $id still '$(state "$id")'"
expect_eq "--export=NONE,OTHER" "$(cat "slurm-$id.out")" "[] [7] [$id]"
echo "ok: the training example runs as under Slurm, with sbatch's environment"
