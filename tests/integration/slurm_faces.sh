# slurm_faces.sh: Slurm's commands against drover, driven as an automation
# tool drives them (docs/slurm.md): links named sbatch, squeue, sacct,
# scancel, sinfo, scontrol to the one binary; submit with sbatch
# --parsable, poll `sacct -P -X -n -o JobID,State,ExitCode -j ID` and
# `squeue -h -j ID -o %T` until done, cancel with scancel; the refusal and
# --test-only lines; squeue's MinJobAge (min_job_age_s), -t S matching
# nothing (no suspend); sinfo, scontrol
# show hostnames and a drain and resume through scontrol update.
. "$ROOT/tests/integration/lib.sh"

server_config 'min_job_age_s: 3'
start_server
start_agent gpu-01 2xH100
start_agent gpu-02 2xH100
bin=$TEST_TMP/slurm-bin
mkdir -p "$bin"
# drover-slurm, where make install's links lead (drover where a build has none)
faces=$(dirname "$DROVER")/drover-slurm
[ -x "$faces" ] || faces=$DROVER
for n in sbatch squeue sacct scancel sinfo scontrol; do ln -s "$faces" "$bin/$n"; done
PATH=$bin:$PATH
export PATH
cd "$TEST_TMP" || fail "cd"

# ---- the links and drover slurm-path
expect_eq "sbatch by its name" "$(sbatch --help | head -1)" \
	"usage: sbatch [options] [SCRIPT [ARGS...]]"
expect_eq "drover sbatch" "$("$DROVER" sbatch --help | head -1)" \
	"usage: sbatch [options] [SCRIPT [ARGS...]]"
case $("$DROVER" slurm-path) in
*/lib/drover/slurm/bin) ;;
*) fail "drover slurm-path: $("$DROVER" slurm-path)" ;;
esac

# ---- a job that succeeds, polled as tools poll
cat >"$TEST_TMP/ok.sh" <<'EOF'
#!/bin/sh
#SBATCH -J okjob
#SBATCH -t 5
echo fine
EOF
id=$(sbatch --parsable "$TEST_TMP/ok.sh") || fail "sbatch --parsable"
case $id in *[!0-9]*|'') fail "sbatch --parsable printed '$id'" ;; esac
acct() { sacct -P -X -n -o JobID,State,ExitCode -j "$1"; }
done_ok() { [ "$(acct "$id")" = "$id|COMPLETED|0:0" ]; }
wait_until 30 done_ok || fail "sacct -j $id: '$(acct "$id")'"
expect_eq "squeue %T of a finished job" "$(squeue -h -j "$id" -o %T)" COMPLETED
expect_eq "squeue %t" "$(squeue -h -j "$id" -o %t)" CD
expect_eq "squeue fields" "$(squeue -h -j "$id" -o '%i|%j|%u|%P|%D|%l')" \
	"$id|okjob|ops|default|1|5:00"
# past min_job_age_s (3 s), squeue says what Slurm says
gone() { ! squeue -h -j "$id" -o %T >/dev/null 2>&1; }
wait_until 10 gone || fail "squeue still shows job $id after min_job_age_s"
out=$(squeue -h -j "$id" -o %T 2>&1); rc=$?
expect_eq "squeue of an old job" "$out" "slurm_load_jobs error: Invalid job id specified"
expect_eq "squeue exit" "$rc" 1
out=$(squeue -h -j 99999 2>&1); rc=$?
expect_eq "squeue of an unknown id" "$out:$rc" "slurm_load_jobs error: Invalid job id specified:1"
# drover's CostUSD field is the job's cost_usd (issue 14), to the cent
cost=$("$DROVER" get job "$id" -o json | jq -r .cost_usd)
expect_eq "sacct CostUSD" "$(sacct -P -X -n -o JobID,CostUSD -j "$id")" "$id|$(printf '%.2f' "$cost")"
# sacct still has it, from the store, with its batch step
expect_eq "sacct steps" "$(sacct -P -n -o JobID,JobName,State -j "$id")" \
	"$id|okjob|COMPLETED
$id.batch|batch|COMPLETED"

# its srun steps too, as ID.N lines with the command's name and the worst
# task's ExitCode (they were missing: the job's JSON had no steps)
cat >"$TEST_TMP/steps.sh" <<'EOF'
#!/bin/sh
#SBATCH -J stepjob
#SBATCH -t 5
srun true
srun sh -c 'exit 3' || true
echo done
EOF
sid=$(sbatch --parsable "$TEST_TMP/steps.sh") || fail "sbatch --parsable steps.sh"
steps_done() { [ "$(acct "$sid")" = "$sid|COMPLETED|0:0" ]; }
wait_until 30 steps_done || fail "sacct -j $sid: '$(acct "$sid")'"
expect_eq "sacct srun steps" "$(sacct -P -n -o JobID,JobName,State,ExitCode -j "$sid")" \
	"$sid|stepjob|COMPLETED|0:0
$sid.batch|batch|COMPLETED|0:0
$sid.0|true|COMPLETED|0:0
$sid.1|sh|FAILED|3:0"

# sacct's default layout, as Slurm 22.05 prints it (sacct(1): the default fields
# JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode; JobID left in 12, the
# rest right in 10 and 8, each followed by a space): a fixture, slurm-local has
# no accounting database to compare with
expect_eq "sacct header" "$(sacct -j "$id" | head -2)" \
"JobID           JobName  Partition    Account  AllocCPUS      State ExitCode 
------------ ---------- ---------- ---------- ---------- ---------- -------- "
expect_eq "sacct row" "$(sacct -n -X -j "$id")" \
"$(printf '%-12s %10s %10s %10s %10s %10s %8s ' "$id" okjob default default 1 COMPLETED 0:0)"
expect_eq "sacct -p" "$(sacct -p -X -j "$id" -o JobID,State,ExitCode)" "JobID|State|ExitCode|
$id|COMPLETED|0:0|"

# ---- a failing job: FAILED, code:signal
fid=$(sbatch --parsable --wrap 'exit 3') || fail "sbatch --wrap"
done_f() { [ "$(acct "$fid")" = "$fid|FAILED|3:0" ]; }
wait_until 30 done_f || fail "sacct -j $fid: '$(acct "$fid")'"
expect_eq "--wrap's job name" "$(sacct -P -X -n -o JobName -j "$fid")" wrap

# ---- cancelled while running; scancel's words for finished and unknown ids
cid=$(echo '#!/bin/sh
sleep 60' | sbatch --parsable) || fail "sbatch from stdin"
running() { [ "$(squeue -h -j "$cid" -o %T)" = RUNNING ]; }
wait_until 30 running || fail "job $cid: squeue says '$(squeue -h -j "$cid" -o %T 2>&1)'"
line=$(squeue -h -j "$cid" | awk '{print $1, $2, $3, $5, $7, $8}')
case $line in
"$cid default sbatch R 1 gpu-01" | "$cid default sbatch R 1 gpu-02") ;;
*) fail "default squeue line: '$line'" ;;
esac
scancel "$cid" || fail "scancel $cid"
# CANCELLED by the uid of the canceller (the token's user, ops: 0 when no such account)
ops_uid=$(getent passwd ops | cut -d: -f3); ops_uid=${ops_uid:-0}
cancelled() { acct "$cid" | grep -q "^$cid|CANCELLED by $ops_uid|"; }
wait_until 30 cancelled || fail "sacct -j $cid after scancel: '$(acct "$cid")'"
# completing (CG) until its task is reported gone, as Slurm's, then CA
ca() { [ "$(squeue -h -j "$cid" -o %t)" = CA ]; }
wait_until 10 ca || fail "squeue %t of a cancelled job: $(squeue -h -j "$cid" -o %t)"
# Slurm 22.05: a finished or unknown id is no failure, said only with -v
out=$(scancel "$cid" 2>&1); rc=$?
expect_eq "scancel of a finished job" "$out:$rc" ":0"
out=$(scancel -v "$cid" 2>&1); rc=$?
expect_eq "scancel -v of a finished job" "$out:$rc" "scancel: Terminating job $cid
scancel: error: Kill job error on job id $cid: Job/step already completing or completed:0"
out=$(scancel -v 99999 2>&1); rc=$?
expect_eq "scancel -v of an unknown job" "$out:$rc" "scancel: Terminating job 99999
scancel: error: Kill job error on job id 99999: Invalid job id specified:0"

# ---- refused at submit, in Slurm's words and then drover's reason
out=$(sbatch -c 64 --wrap true 2>&1); rc=$?
expect_eq "refusal exit" "$rc" 1
expect_eq "refusal line" "$(echo "$out" | head -1)" \
	"sbatch: error: Batch job submission failed: Requested node configuration is not available"
echo "$out" | sed -n 2p | grep -q '^sbatch: error: .*CPU' || fail "refusal reason: $out"
# more nodes than the cluster has (two): Slurm's words for a node count
out=$(sbatch -N 3 --wrap true 2>&1); rc=$?
expect_eq "sbatch -N 3 on two nodes" "$out:$rc" "sbatch: error: Batch job submission failed: Node count specification invalid
sbatch: error: needs 3 distinct nodes that fit a task; the cluster has 2:1"

# ---- --test-only: checked, nothing stored
out=$(sbatch --test-only --wrap true 2>&1) || fail "--test-only: $out"
echo "$out" | grep -Eq '^sbatch: Job [0-9]+ to start at [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8} using 1 processors on nodes gpu-0[12] in partition default$' ||
	fail "--test-only said: $out"
tid=$(echo "$out" | sed 's/^sbatch: Job \([0-9]*\) .*/\1/')
squeue -h -j "$tid" >/dev/null 2>&1 && fail "--test-only stored job $tid"
out=$(sbatch --test-only -c 64 --wrap true 2>&1) && fail "--test-only of an impossible job passed"
echo "$out" | head -1 | grep -q 'Requested node configuration is not available' ||
	fail "--test-only refusal: $out"

# ---- squeue's header and a pending job's reason
expect_eq "squeue header" "$(squeue | head -1)" \
	"             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)"
expect_eq "squeue -O" "$(squeue -O JobID,State | head -1)" \
	"$(printf '%-20s%-20s' JOBID STATE)"
out=$(squeue -o '%q' 2>&1) && fail "squeue -o %q passed: $out"

# ---- sinfo, scontrol
expect_eq "sinfo header" "$(sinfo | head -1)" "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST"
expect_eq "sinfo" "$(sinfo -h)" "default*     up   infinite      2   idle gpu-[01-02]"
expect_eq "sinfo -o" "$(sinfo -h -o '%P %D %t %N %G')" "default* 2 idle gpu-[01-02] gpu:2"
expect_eq "scontrol show hostnames" "$(scontrol show hostnames 'gpu-[01-03,07],login1' | tr '\n' ' ')" \
	"gpu-01 gpu-02 gpu-03 gpu-07 login1 "
expect_eq "scontrol show hostlist" "$(scontrol show hostlist gpu-01,gpu-02,gpu-03)" "gpu-[01-03]"
scontrol update nodename=gpu-02 state=drain reason=maint || fail "scontrol drain"
expect_eq "sinfo -N after drain" "$(sinfo -h -N -o '%N %t' | tr '\n' ' ')" "gpu-01 idle gpu-02 drain "
scontrol show node gpu-02 | grep -q 'State=IDLE+DRAIN' || fail "show node: $(scontrol show node gpu-02)"
scontrol update nodename=gpu-02 state=resume || fail "scontrol resume"
expect_eq "sinfo -N after resume" "$(sinfo -h -N -o '%N %t' | tr '\n' ' ')" "gpu-01 idle gpu-02 idle "
scontrol show job "$fid" | grep -q "^   JobState=FAILED Reason=None" || fail "show job: $(scontrol show job "$fid")"
# ---- held at submit (-H), its limit changed, released (CONTRACTS.md section 4)
hid=$(sbatch --parsable -H -t 10 --wrap true) || fail "sbatch -H"
expect_eq "held job" "$(squeue -h -j "$hid" -o '%t %r %l')" "PD JobHeldUser 10:00"
expect_eq "held job, default columns" "$(squeue -h -j "$hid" | awk '{print $NF}')" "(JobHeldUser)"
scontrol update JobId="$hid" TimeLimit=5 || fail "scontrol update TimeLimit"
expect_eq "limit after update" "$(squeue -h -j "$hid" -o %l)" "5:00"
scontrol show job "$hid" | grep -q "TimeLimit=00:05:00" || fail "show job: $(scontrol show job "$hid")"
scontrol release "$hid" || fail "scontrol release"
done_h() { [ "$(acct "$hid")" = "$hid|COMPLETED|0:0" ]; }
wait_until 30 done_h || fail "released job $hid: '$(acct "$hid")'"
out=$(scontrol hold 99999 2>&1) && fail "scontrol hold of an unknown job passed: $out"
expect_eq "scontrol hold of an unknown job" "$out" "Invalid job id specified for job 99999"
# ---- an array's pending tasks are one line, P_[first-last%N], as Slurm's
aid=$(sbatch --parsable --array=3-15%4 --wrap 'sleep 30') || fail "sbatch --array"
four() { [ "$(squeue -h -t R -o %i | grep -c "^${aid}_")" = 4 ]; }
wait_until 30 four || fail "array $aid: $(squeue -h -o '%i %t')"
expect_eq "the started tasks" "$(squeue -h -t R -o %i | grep "^${aid}_" | sort | tr '\n' ' ')" \
	"${aid}_3 ${aid}_4 ${aid}_5 ${aid}_6 "
expect_eq "the pending rest" "$(squeue -h -t PD -o '%i %K %t %r')" "${aid}_[7-15%4] 7-15%4 PD JobArrayTaskLimit"
expect_eq "squeue -r: a line each" "$(squeue -h -r -t PD -o %i | wc -l)" 9
# drover never suspends: -t S and SUSPENDED are accepted and match nothing,
# and no job shows the state S
out=$(squeue -h -t S,SUSPENDED -o %i 2>&1); rc=$?
expect_eq "squeue -t S,SUSPENDED" "$out:$rc" ":0"
expect_eq "jobs in state S" "$(squeue -h -o %t | grep -c '^S$')" 0
scancel "$aid" || fail "scancel $aid"
gone_a() { [ -z "$(squeue -h -o %i | grep "^${aid}_")" ]; }
wait_until 20 gone_a || fail "array $aid after scancel: $(squeue -h -o '%i %t')"
echo "ok: sbatch/squeue/sacct/scancel/sinfo/scontrol answered as Slurm's do (jobs $id $fid $cid)"
