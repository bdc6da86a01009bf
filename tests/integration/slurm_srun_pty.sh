# slurm_srun_pty.sh: `srun --jobid=ID --overlap --pty bash`, the interactive
# step people attach to a running job, through a real pseudo-terminal
# (tests/integration/ptyrun.py is the person's terminal): a proper job step
# (SLURM_JOB_ID, SLURM_STEP_ID, SLURM_PROCID, on the job's first node or
# the one -w names), typed input, `tty` a /dev/pts device, the terminal's
# size and a resize, Ctrl-C reaching the foreground command, srun exiting
# with the shell's status; -n 2 puts task 0 on the terminal; inside a
# salloc shell too; without a terminal Slurm's two errors and a plain
# step; srun dying hangs the step's shell up; an unknown or finished job
# answered in Slurm's words, exit 1.
. "$ROOT/tests/integration/lib.sh"

drover_links srun salloc
start_server
start_agent gpu-01 4xH100
start_agent gpu-02 4xH100
PTY="$ROOT/tests/integration/ptyrun.py"
T=$TEST_TMP
cd "$T"   # the jobs' slurm-%j.out go here
# bash takes no PS1 from the environment here: an rc file sets a prompt
# that counts commands, so each step of the dialogue waits for its own
echo "PS1='ready\\#> '" >"$T/rc"
state() { "$DROVER" get job "$1" -o json | jq -r .state; }
steps() { curl -fsS -H "Authorization: Bearer $DROVER_TOKEN" "$SERVER_URL/v1/jobs/$1/steps"; }
txt() { tr -d '\r' <"$1" | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g'; }

cat >"$T/job.sh" <<EOF2
#!/bin/sh
#SBATCH -J hung-training
#SBATCH -N 2
#SBATCH --ntasks-per-node=1
sleep 300
EOF2
id=$("$DROVER" sbatch --parsable "$T/job.sh") || fail "sbatch: $id"
wait_until 30 sh -c "[ \"\$('$DROVER' get job $id -o json | jq -r .state)\" = running ]" ||
	fail "the job did not run: $("$DROVER" describe job "$id")"

# the dialogue: who am I, my terminal and its size; a resize; Ctrl-C; exit 3
rc=0
timeout 90 python3 "$PTY" 30 100 \
	--send 'ready1> ' 'echo "id=$SLURM_JOB_ID step=$SLURM_STEP_ID rank=$SLURM_PROCID node=$SLURMD_NODENAME"; tty; stty size\r' \
	--resize 'ready2> ' 40 120 \
	--send 'ready2> ' 'sleep 1; stty size; sh -c "echo sleep""ing; exec sleep 60"\r' \
	--send 'sleeping' '\x03' \
	--send 'ready3> ' 'echo after-int=$?; exit 3\r' \
	-- srun --jobid="$id" --overlap --pty bash --rcfile "$T/rc" >"$T/tty" 2>&1 || rc=$?
txt "$T/tty" >"$T/tty.txt"
expect_eq "srun --pty exits with the shell's status" "$rc" 3
grep -qx "id=$id step=0 rank=0 node=gpu-01" "$T/tty.txt" ||
	fail "the step's variables, on the job's first node: $(cat "$T/tty.txt")"
grep -qx '/dev/pts/[0-9]*' "$T/tty.txt" || fail "tty: $(cat "$T/tty.txt")"
grep -qx '30 100' "$T/tty.txt" || fail "the terminal's size: $(cat "$T/tty.txt")"
grep -qx '40 120' "$T/tty.txt" || fail "the size after a resize: $(cat "$T/tty.txt")"
grep -qx 'after-int=130' "$T/tty.txt" || fail "Ctrl-C to the foreground command: $(cat "$T/tty.txt")"
grep -qx 'srun: error: gpu-01: task 0: Exited with exit code 3' "$T/tty.txt" ||
	fail "srun's word on the exit: $(cat "$T/tty.txt")"
expect_eq "the job runs on after the interactive step" "$(state "$id")" running
expect_eq "the step's record" "$(steps "$id" | jq -c '.items[0] | [.state, .tasks[0].exit_code]')" \
	'["failed",3]'

# -w: the node named; -n 2: task 0 on the terminal, the other without one
rc=0
timeout 60 python3 "$PTY" 30 100 --send 'ready1> ' 'echo "node=$SLURMD_NODENAME step=$SLURM_STEP_ID"; exit\r' \
	-- srun --jobid="$id" --overlap -w gpu-02 --pty bash --rcfile "$T/rc" >"$T/w" 2>&1 || rc=$?
expect_eq "srun -w gpu-02 --pty: exit" "$rc" 0
txt "$T/w" | grep -qx "node=gpu-02 step=1" || fail "-w gpu-02: $(txt "$T/w")"
rc=0
timeout 60 python3 "$PTY" 30 100 --send 'ready1> ' 'echo "rank=$SLURM_PROCID of=$SLURM_STEP_NUM_TASKS"; exit\r' \
	-- srun --jobid="$id" --overlap -n 2 --pty bash --rcfile "$T/rc" >"$T/n2" 2>&1 || rc=$?
expect_eq "srun -n 2 --pty: exit" "$rc" 0
txt "$T/n2" | grep -qx "rank=0 of=2" || fail "-n 2: task 0 on the terminal: $(txt "$T/n2")"
expect_eq "-n 2: both tasks ran" "$(steps "$id" | jq -c '.items[2].tasks | map(.state)')" \
	'["succeeded","succeeded"]'

# without a terminal: Slurm's two errors, then the step as without --pty
# (a task on each of the job's two nodes)
rc=0
out=$(srun --jobid="$id" --pty sh -c 'echo plain' </dev/null 2>&1) || rc=$?
expect_eq "srun --pty without a terminal" "$out:$rc" "srun: error: ioctl(TIOCGWINSZ): Inappropriate ioctl for device
srun: error: Not using a pseudo-terminal, disregarding --pty option
plain
plain:0"

# srun going away hangs the shell up: the step ends (bash reads the end
# of its terminal and exits)
timeout 60 python3 "$PTY" 30 100 -- srun --jobid="$id" --overlap --pty bash --rcfile "$T/rc" \
	>"$T/hup" 2>&1 &
ptypid=$!
wait_until 30 grep -q 'ready1> ' "$T/hup" || fail "no prompt: $(txt "$T/hup")"
srunpid=$(pgrep -P "$ptypid") || fail "no srun below ptyrun.py $ptypid"
kill -TERM "$srunpid"
wait "$ptypid" || true
wait_until 30 sh -c "[ \"\$(curl -fsS -H 'Authorization: Bearer $DROVER_TOKEN' '$SERVER_URL/v1/jobs/$id/steps' | jq -r '.items[-1].state')\" != running ]" ||
	fail "the step's shell lived on after srun went: $(steps "$id" | jq -c '.items[-1]')"

# inside a salloc shell: srun --pty uses its allocation
rc=0
timeout 90 python3 "$PTY" 30 100 --send 'ready1> ' 'echo "in=$SLURM_JOB_ID step=$SLURM_STEP_ID"; exit 2\r' \
	-- salloc -N 1 srun --pty bash --rcfile "$T/rc" >"$T/salloc" 2>&1 || rc=$?
expect_eq "salloc srun --pty: exit" "$rc" 2
alloc=$(txt "$T/salloc" | sed -n 's/^salloc: Granted job allocation \([0-9]*\)$/\1/p')
[ -n "$alloc" ] || fail "salloc: $(txt "$T/salloc")"
txt "$T/salloc" | grep -qx "in=$alloc step=0" || fail "srun --pty in salloc: $(txt "$T/salloc")"

# an unknown job and a finished one: Slurm's words, exit 1
rc=0
out=$(timeout 30 python3 "$PTY" 30 100 -- srun --jobid=99999 --overlap --pty bash 2>&1) || rc=$?
expect_eq "srun --pty in an unknown job" "$(printf '%s' "$out" | tr -d '\r'):$rc" \
	"srun: error: Unable to confirm allocation for job 99999: Invalid job id specified
srun: Check SLURM_JOB_ID environment variable. Expired or invalid job 99999:1"
"$DROVER" scancel "$id" || fail "scancel"
wait_until 30 sh -c "[ \"\$('$DROVER' get job $id -o json | jq -r .state)\" = cancelled ]" ||
	fail "the job did not end"
rc=0
out=$(timeout 30 python3 "$PTY" 30 100 -- srun --jobid="$id" --overlap --pty bash 2>&1) || rc=$?
expect_eq "srun --pty in a finished job" "$(printf '%s' "$out" | tr -d '\r'):$rc" \
	"srun: error: Slurm job $id has expired
srun: Check SLURM_JOB_ID environment variable. Expired or invalid job $id:1"
