# slurm_signal_restart.sh: sbatch --signal survives a controller restart.
# The signal a job was sent and the attempt whose --signal timer fired are
# stored with the job (docs/slurm.md, "Signals"): a controller SIGKILLed
# after the timer fired and started again neither sends the signal a
# second time nor forgets it, and the job runs on to its end.
. "$ROOT/tests/integration/lib.sh"

bin=$TEST_TMP/slurm-bin
mkdir -p "$bin"
for n in sbatch sacct; do ln -s "$DROVER" "$bin/$n"; done
PATH=$bin:$PATH
export PATH
start_server
start_agent gpu-01 1xH100
cd "$TEST_TMP" || fail "cd"

acct() { sacct -P -X -n -o State,ExitCode -j "$1"; }
completed() { [ "$(acct "$1")" = "COMPLETED|0:0" ]; }
usr1s() { grep -c "got USR1" "slurm-$1.out" 2>/dev/null; }
once() { [ "$(usr1s "$1")" = 1 ]; }

# the timer fires 3 s after the start (17 s before the 20 s limit); the
# script runs until the test lets it end
cat >r.sh <<SCRIPT
#!/bin/sh
#SBATCH --time=0:20
#SBATCH --signal=B:USR1@17
trap 'echo "got USR1"' USR1
i=0
while [ \$i -lt 150 ] && [ ! -e $TEST_TMP/stop ]; do sleep 0.1; i=\$((i + 1)); done
echo done
SCRIPT
id=$(sbatch --parsable r.sh) || fail "sbatch r.sh"
wait_until 20 once "$id" || fail "job $id got no USR1: $(cat "slurm-$id.out" 2>/dev/null)"

stop_server KILL
start_server
wait_until 20 node_is gpu-01 up || fail "gpu-01 did not come back"
expect_eq "job $id after the restart" "$(acct "$id")" "RUNNING|0:0"
# a few of the server's once-a-second signal ticks and agent syncs
sleep 4
touch "$TEST_TMP/stop"
wait_until 20 completed "$id" || fail "job $id: '$(acct "$id")'"
expect_eq "USR1 deliveries across the restart" "$(usr1s "$id")" 1
echo "ok: the --signal timer fired once across a controller SIGKILL and restart"
