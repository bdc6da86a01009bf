# drover_exec.sh: `drover exec JOB [--task N] [-i] [-t] -- CMD ARG...`
# against a real `drover up --tls` and a host task (a Slurm script): the
# command runs in the task's environment (its env and working directory),
# stdout and stderr apart, drover exits with the command's code, output
# streams while the command runs, stdin with -i reaches it line by line,
# -t gives it a terminal of the caller's size (tests/integration/ptyrun.py
# is the caller's terminal: tty, stty size, a resize, typing), and a job
# or task that is not running is refused with why.
. "$ROOT/tests/integration/lib.sh"

start_up --tls
PTY="$ROOT/tests/integration/ptyrun.py"
d() { timeout 60 "$DROVER" "$@"; }

mkdir -p "$TEST_TMP/work"
cat >"$TEST_TMP/job.sh" <<EOF2
#!/bin/sh
#SBATCH --job-name=sleeper
#SBATCH --chdir=$TEST_TMP/work
sleep 300
EOF2
id=$(d sbatch --parsable --export=ALL,MARK=mark-v "$TEST_TMP/job.sh") || fail "sbatch: $id"
wait_until 30 sh -c "'$DROVER' get jobs -o json | grep -q '\"state\": *\"running\"'" ||
	fail "the job did not run: $(d describe job "$id")"

out=$(d exec "$id" -- sh -c 'echo mark=$MARK; pwd' 2>"$TEST_TMP/err") ||
	fail "exec: $out $(cat "$TEST_TMP/err")"
expect_eq "exec in the task's env and directory" "$out" "$(printf 'mark=mark-v\n%s' "$TEST_TMP/work")"

rc=0
out=$(d exec "$id" --task 0 -- sh -c 'echo to-out; echo to-err >&2; exit 7' 2>"$TEST_TMP/err") || rc=$?
expect_eq "exec exit code" "$rc" 7
expect_eq "exec stdout" "$out" to-out
expect_eq "exec stderr" "$(cat "$TEST_TMP/err")" to-err

# output as it comes
d exec "$id" -- sh -c 'echo a; sleep 3; echo b' >"$TEST_TMP/stream" 2>&1 &
pid=$!
wait_until 30 grep -qx a "$TEST_TMP/stream" || fail "no output while the command runs"
grep -q b "$TEST_TMP/stream" && fail "a and b came together: $(cat "$TEST_TMP/stream")"
wait $pid || fail "exec a; sleep; b: $(cat "$TEST_TMP/stream")"

# stdin as it comes
mkfifo "$TEST_TMP/in"
d exec -i "$id" -- sh -c 'while read l; do echo got=$l; done; echo end' \
	<"$TEST_TMP/in" >"$TEST_TMP/answers" 2>&1 &
pid=$!
exec 3>"$TEST_TMP/in"
echo one >&3
wait_until 30 grep -qx got=one "$TEST_TMP/answers" ||
	fail "stdin did not reach the command while open: $(cat "$TEST_TMP/answers")"
echo two >&3
exec 3>&-
wait $pid || fail "exec -i: $(cat "$TEST_TMP/answers")"
expect_eq "exec -i answers" "$(cat "$TEST_TMP/answers")" "$(printf 'got=one\ngot=two\nend')"

# a terminal (the agent's own pty for a host task)
rc=0
python3 "$PTY" 25 90 --resize size-one 33 111 --send say-hi 'hi\r' -- \
	"$DROVER" exec -it "$id" -- sh -c 'tty; stty size; echo size-one; sleep 3; stty size;
		echo say-hi; read x; echo got=$x; exit 4' >"$TEST_TMP/tty" 2>&1 || rc=$?
tr -d '\r' <"$TEST_TMP/tty" >"$TEST_TMP/tty.txt"
expect_eq "exec -it exit code" "$rc" 4
grep -qx '/dev/pts/[0-9]*' "$TEST_TMP/tty.txt" || fail "tty: $(cat "$TEST_TMP/tty.txt")"
grep -qx '25 90' "$TEST_TMP/tty.txt" || fail "the first size: $(cat "$TEST_TMP/tty.txt")"
grep -qx '33 111' "$TEST_TMP/tty.txt" || fail "the size after a resize: $(cat "$TEST_TMP/tty.txt")"
grep -qx 'got=hi' "$TEST_TMP/tty.txt" || fail "typed input: $(cat "$TEST_TMP/tty.txt")"

# refusals: a task the job lacks, a command that does not exist, no command, a finished job
rc=0
out=$(d exec "$id" --task 5 -- true 2>&1) || rc=$?
expect_eq "exec in task 5 of a 1-task job: exit" "$rc" 2
echo "$out" | grep -q "task: job $id has 1 task (0..0), found 5" || fail "task 5: $out"
out=$(d exec "$id" -- /no/such/command 2>&1) && fail "a missing command ran: $out"
echo "$out" | grep -q 'exec /no/such/command: No such file' || fail "missing command: $out"
rc=0
out=$(d exec "$id" 2>&1) || rc=$?
expect_eq "exec without a command" "$rc" 2
echo "$out" | grep -q 'which command' || fail "no command: $out"
d cancel "$id" >/dev/null || fail "cancel"
wait_until 30 sh -c "! '$DROVER' get jobs -o json | grep -q '\"state\": *\"running\"'" ||
	fail "the job did not end"
out=$(d exec "$id" -- true 2>&1) && fail "exec in a cancelled job: $out"
echo "$out" | grep -q 'it is not running (the job is cancelled)' || fail "cancelled: $out"
