# slurm_signal.sh: signals reach a job's processes as under Slurm
# (docs/slurm.md): sbatch --signal=B:SIG@SECS reaches the batch shell that
# many seconds before the time limit, --signal=SIG@SECS the steps' tasks
# and not the batch shell; scancel -s USR1 ID signals the steps, scancel
# -s USR2 --batch ID the batch shell alone; scancel -s TERM signals
# rather than cancels (a trapping step lets the job complete); a job that is not running
# takes no signal (scancel -v says so).
. "$ROOT/tests/integration/lib.sh"

bin=$TEST_TMP/slurm-bin
mkdir -p "$bin"
for n in sbatch sacct scancel srun; do ln -s "$DROVER" "$bin/$n"; done
PATH=$bin:$PATH
export PATH
start_server
start_agent gpu-01 1xH100
cd "$TEST_TMP" || fail "cd"

acct() { sacct -P -X -n -o State,ExitCode -j "$1"; }
completed() { [ "$(acct "$1")" = "COMPLETED|0:0" ]; }
ended() { case $(acct "$1") in RUNNING*|PENDING*|'') return 1 ;; esac; }
says() { grep -q "$2" "slurm-$1.out" 2>/dev/null; }

# ---- --signal=B:USR1@4 with a 7 s limit: the shell's trap at about 3 s
cat >b.sh <<'EOF'
#!/bin/sh
#SBATCH --time=0:07
#SBATCH --signal=B:USR1@4
start=$(date +%s)
trap 'echo "got USR1 after $(( $(date +%s) - start )) s"; exit 0' USR1
while :; do sleep 0.1; done
EOF
b=$(sbatch --parsable b.sh) || fail "sbatch b.sh"

# ---- --signal=USR2@4: the step's tasks get it, the batch shell does not
cat >s.sh <<'EOF'
#!/bin/sh
#SBATCH --time=0:07
#SBATCH --signal=USR2@4
trap 'echo "the batch shell got USR2"' USR2
srun sh -c 'trap "echo step got USR2; exit 0" USR2; while :; do sleep 0.1; done'
echo "step over"
EOF
st=$(sbatch --parsable s.sh) || fail "sbatch s.sh"

# ---- scancel -s USR1 (the steps), then -s USR2 --batch (the shell)
cat >c.sh <<'EOF'
#!/bin/sh
got=0
trap 'got=1' USR2
srun sh -c 'trap "echo step USR1; exit 0" USR1; echo ready; while :; do sleep 0.1; done'
echo "step over"
while [ $got = 0 ]; do sleep 0.1; done
echo "batch USR2"
EOF
c=$(sbatch --parsable c.sh) || fail "sbatch c.sh"
wait_until 20 says "$c" ready || fail "job $c's step did not start: $(cat "slurm-$c.out")"
scancel -s USR1 "$c" || fail "scancel -s USR1 $c"
wait_until 20 says "$c" "step over" || fail "job $c's step did not end on USR1: $(cat "slurm-$c.out")"
scancel -s SIGUSR2 --batch "$c" || fail "scancel -s SIGUSR2 --batch $c"
wait_until 20 completed "$c" || fail "job $c: $(acct "$c"): $(cat "slurm-$c.out")"
# (the shell of the step says that its sleep died of the signal too: the
# step's processes all get it, as under Slurm)
expect_eq "scancel -s: steps, then the batch shell" "$(grep -v '^User defined signal' "slurm-$c.out")" "ready
step USR1
step over
batch USR2"

wait_until 20 completed "$b" || fail "job $b: $(acct "$b"): $(cat "slurm-$b.out")"
case $(cat "slurm-$b.out") in
"got USR1 after "[2345]" s") ;;   # 3 s before the limit, give or take the once-a-second tick
*) fail "--signal=B:USR1@4 with --time=0:07: $(cat "slurm-$b.out")" ;;
esac
wait_until 20 completed "$st" || fail "job $st: $(acct "$st"): $(cat "slurm-$st.out")"
expect_eq "--signal=USR2@4: the step, not the batch shell" "$(grep -v '^User defined signal' "slurm-$st.out")" "step got USR2
step over"

# ---- scancel -s TERM signals, as Slurm's: a step that traps it ends on its
# own terms and the job goes on to COMPLETED, never CANCELLED
cat >t.sh <<'EOF'
#!/bin/sh
srun sh -c 'trap "echo step TERM; exit 0" TERM; echo ready; while :; do sleep 0.1; done'
echo "after the step"
EOF
t=$(sbatch --parsable t.sh) || fail "sbatch t.sh"
wait_until 20 says "$t" ready || fail "job $t's step did not start: $(cat "slurm-$t.out")"
scancel -s TERM "$t" || fail "scancel -s TERM $t"
wait_until 20 completed "$t" || fail "job $t after scancel -s TERM: $(acct "$t"): $(cat "slurm-$t.out")"
expect_eq "scancel -s TERM: the step's trap, then the script" "$(grep -v '^Terminated' "slurm-$t.out")" "ready
step TERM
after the step"

# ---- a finished job takes no signal; said only with -v, exit 0 as Slurm's
expect_eq "scancel -s USR1 of a finished job" "$(scancel -s USR1 "$c" 2>&1; echo "rc=$?")" "rc=0"
expect_eq "scancel -v -s USR1 of a finished job" "$(scancel -v -s USR1 "$c" 2>&1 | grep error)" \
	"scancel: error: Kill job error on job id $c: Job/step already completing or completed"
if scancel -s NOSUCH "$c" 2>"$TEST_TMP/err"; then fail "scancel -s NOSUCH was accepted"; fi
expect_eq "a bad signal" "$(cat "$TEST_TMP/err")" "scancel: error: Invalid job signal: NOSUCH"
echo "signals: --signal B: and steps, scancel -s to steps and --batch, as Slurm's"
