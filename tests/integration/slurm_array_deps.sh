# slurm_array_deps.sh: #SBATCH --array and --dependency are acted on
# (CONTRACTS.md sections 2 and 4; docs/job-format.md):
#   - an array is a parent with an element per task id, each a job of its
#     own with SLURM_ARRAY_*; the %N throttle holds (from the tasks' own
#     start and end times); a failed element is final, not retried, and
#     does not stop its siblings; cancelling the parent cancels the rest;
#     a task id at or over max_array_size is refused;
#   - afterok, afternotok, afterany, after, singleton and '?' lists wait
#     for what they name (the dependent's start against its target's end),
#     one that can never be satisfied says DependencyNeverSatisfied, a
#     dependency on a job that does not exist is refused, and a waiting
#     dependency survives a controller restart; with kill_invalid_depend
#     the unsatisfiable job is cancelled.
. "$ROOT/tests/integration/lib.sh"

server_config "sched_delay_ms: 10" "max_array_size: 100"
start_server
start_agent node-a 4xH100
out="$TEST_TMP/out"
mkdir -p "$out"
jq_job() { "$DROVER" get job "$1" -o json | jq -r "$2"; }
state() { jq_job "$1" .state; }
is_state() { [ "$(state "$1")" = "$2" ]; }
code() { jq_job "$1" '.reason_code // ""'; }
script() {   # script NAME BODY [SBATCH-LINE...]
	_n=$1 _b=$2
	shift 2
	{
		echo '#!/bin/sh'
		for l in "$@"; do echo "#SBATCH $l"; done
		echo '#SBATCH --gpus=1'
		printf '%s\n' "$_b"
	} >"$TEST_TMP/$_n.sh"
	echo "$TEST_TMP/$_n.sh"
}
now='$(date +%s.%N)'

# --- an array of 6 with a throttle of 2; task 3 fails
body="echo \"\$SLURM_ARRAY_JOB_ID \$SLURM_ARRAY_TASK_ID \$SLURM_ARRAY_TASK_COUNT \$SLURM_ARRAY_TASK_MIN \$SLURM_ARRAY_TASK_MAX \$SLURM_ARRAY_TASK_STEP \$SLURM_JOB_ID\" >>$out/arr-env
echo \"s $now\" >>$out/arr-times; sleep 1; echo \"e $now\" >>$out/arr-times
[ \"\$SLURM_ARRAY_TASK_ID\" != 3 ]"
arr=$("$DROVER" submit --parsable "$(script arr "$body" --array=0-5%2 -J arr)") || fail "submit the array"
wait_until 60 is_state "$arr" failed || fail "array $arr ended '$(state "$arr")': $("$DROVER" describe "$arr")"
expect_eq "array elements" "$(jq_job "$arr" '.elements | "\(.count) \(.succeeded) \(.failed) \(.array)"')" "6 5 1 0-5%2"
case $(jq_job "$arr" .reason) in *"5 of 6 array tasks succeeded"*) ;; *) fail "array reason: $(jq_job "$arr" .reason)" ;; esac
expect_eq "array tasks started (each once)" "$(wc -l <"$out/arr-env")" 6
expect_eq "SLURM_ARRAY_TASK_ID values" "$(cut -d' ' -f2 "$out/arr-env" | sort -n | tr '\n' ' ')" "0 1 2 3 4 5 "
expect_eq "SLURM_ARRAY_JOB_ID, COUNT, MIN, MAX, STEP" \
	"$(cut -d' ' -f1,3-6 "$out/arr-env" | sort -u)" "$arr 6 0 5 1"
expect_eq "each element has its own SLURM_JOB_ID" "$(cut -d' ' -f7 "$out/arr-env" | sort -u | wc -l)" 6
for k in 1 2 3 4 5 6; do
	e=$((arr + k))
	expect_eq "element $e's array_job_id" "$(jq_job "$e" .array_job_id)" "$arr"
done
# at most 2 at once: sweep the start (+1) and end (-1) times
peak=$(sort -k2 -n "$out/arr-times" | awk '{ n += ($1 == "s") ? 1 : -1; if (n > m) m = n } END { print m }')
[ "$peak" -le 2 ] || fail "the %2 throttle: $peak array tasks ran at once"
[ "$peak" -eq 2 ] || fail "the throttle let only $peak run at once, expected 2"
failed_el=$(for k in 1 2 3 4 5 6; do [ "$(state $((arr + k)))" = failed ] && echo $((arr + k)); done)
expect_eq "the failed element is task 3" "$(jq_job "$failed_el" .array_task_id)" 3
echo "array $arr: 6 elements, at most $peak at once, task 3 failed once, not retried"

# --- steps and lists of ids
a2=$("$DROVER" submit --parsable "$(script step "echo \$SLURM_ARRAY_TASK_ID \$SLURM_ARRAY_TASK_MIN \$SLURM_ARRAY_TASK_MAX \$SLURM_ARRAY_TASK_STEP \$SLURM_ARRAY_TASK_COUNT >>$out/step-env" --array=1-7:3)") ||
	fail "submit 1-7:3"
wait_until 60 is_state "$a2" succeeded || fail "array $a2 ended '$(state "$a2")'"
expect_eq "--array=1-7:3" "$(sort -n "$out/step-env" | tr '\n' '|')" "1 1 7 3 3|4 1 7 3 3|7 1 7 3 3|"

# --- max_array_size 100: a task id of 100 is refused, 99 accepted (not run)
if "$DROVER" submit "$(script big true --array=0-100)" >/dev/null 2>"$TEST_TMP/err"; then
	fail "--array=0-100 with max_array_size 100 was accepted"
fi
grep -q "Invalid job array specification" "$TEST_TMP/err" || fail "refusal said: $(cat "$TEST_TMP/err")"

# --- cancelling the parent cancels every element
a3=$("$DROVER" submit --parsable "$(script long "sleep 60" --array=0-3%1)") || fail "submit 0-3%1"
wait_until 30 is_state $((a3 + 1)) running || fail "the first element of $a3 did not start"
expect_eq "second element waits for its turn" "$(code $((a3 + 2)))" JobArrayTaskLimit
"$DROVER" cancel "$a3" >/dev/null || fail "cancel $a3"
for k in 1 2 3 4; do
	wait_until 15 is_state $((a3 + k)) cancelled || fail "element $((a3 + k)) is $(state $((a3 + k))) after the parent was cancelled"
done
echo "array $a3: cancelling the parent cancelled its 4 elements"

# --- dependencies
A=$("$DROVER" submit --parsable "$(script A "sleep 3; echo \"A-end $now\" >>$out/dep" -J A)") || fail "submit A"
rec() { echo "echo \"$1-start $now\" >>$out/dep"; }
B=$("$DROVER" submit --parsable "$(script B "$(rec B)" --dependency=afterok:$A)") || fail "submit B"
C=$("$DROVER" submit --parsable "$(script C "$(rec C)" --dependency=afternotok:$A)") || fail "submit C"
D=$("$DROVER" submit --parsable "$(script D "$(rec D)" --dependency=afterany:$A)") || fail "submit D"
E=$("$DROVER" submit --parsable "$(script E "$(rec E)" --dependency=after:$A)") || fail "submit E"
F=$("$DROVER" submit --parsable "$(script F "$(rec F)" "--dependency=afternotok:$A?afterok:$A")") || fail "submit F"
G=$("$DROVER" submit --parsable "$(script G "$(rec G)" --dependency=afterok:$failed_el)") || fail "submit G"
wait_until 5 sh -c "[ \"\$("$DROVER" get job $B -o json | jq -r .reason_code)\" = Dependency ]" ||
	fail "B's reason code while A runs: $(code "$B") ($(jq_job "$B" .reason))"
expect_eq "B is pending while A runs" "$(state "$B")" pending
wait_until 30 is_state "$B" succeeded || fail "B ended '$(state "$B")': $(jq_job "$B" .reason)"
wait_until 30 is_state "$D" succeeded || fail "D ended '$(state "$D")'"
wait_until 30 is_state "$E" succeeded || fail "E ended '$(state "$E")'"
wait_until 30 is_state "$F" succeeded || fail "F (a '?' list) ended '$(state "$F")'"
t() { awk -v k="$1" '$1 == k { print $2 }' "$out/dep"; }
awk -v a="$(t A-end)" -v b="$(t B-start)" -v d="$(t D-start)" -v e="$(t E-start)" 'BEGIN {
	if (b < a) { print "FAIL: afterok B started before A ended"; exit 1 }
	if (d < a) { print "FAIL: afterany D started before A ended"; exit 1 }
	if (e >= a) { print "FAIL: after E waited for A to end"; exit 1 }
}' || fail "dependency order: $(cat "$out/dep")"
wait_until 5 sh -c "[ \"\$("$DROVER" get job $C -o json | jq -r .reason_code)\" = DependencyNeverSatisfied ]" ||
	fail "C (afternotok on a job that succeeded): $(code "$C") ($(jq_job "$C" .reason))"
wait_until 5 sh -c "[ \"\$("$DROVER" get job $G -o json | jq -r .reason_code)\" = DependencyNeverSatisfied ]" ||
	fail "G (afterok on a failed array task): $(code "$G")"
expect_eq "C never ran" "$(t C-start)" ""
echo "deps: B afterok, D afterany after A's end; E after A's start; C, G never satisfied"

# --- a dependency on a job that does not exist is refused
if "$DROVER" submit "$(script X true --dependency=afterok:99999)" >/dev/null 2>"$TEST_TMP/err"; then
	fail "afterok:99999 was accepted"
fi
grep -q "Job dependency problem" "$TEST_TMP/err" || fail "refusal said: $(cat "$TEST_TMP/err")"

# --- singleton: two jobs of one name and user run one after the other
S1=$("$DROVER" submit --parsable "$(script S1 "echo \"S1-start $now\" >>$out/dep; sleep 2; echo \"S1-end $now\" >>$out/dep" -J solo --dependency=singleton)") || fail "submit S1"
S2=$("$DROVER" submit --parsable "$(script S2 "$(rec S2)" -J solo --dependency=singleton)") || fail "submit S2"
wait_until 30 is_state "$S2" succeeded || fail "S2 ended '$(state "$S2")'"
awk -v a="$(t S1-end)" -v b="$(t S2-start)" 'BEGIN { exit !(b >= a) }' || fail "singleton S2 started before S1 ended: $(cat "$out/dep")"

# --- a waiting dependency survives a controller restart
X=$("$DROVER" submit --parsable "$(script X2 "sleep 8; echo \"X-end $now\" >>$out/dep")") || fail "submit X"
Y=$("$DROVER" submit --parsable "$(script Y "$(rec Y)" --dependency=afterok:$X)") || fail "submit Y"
wait_until 30 is_state "$X" running || fail "X did not start"
stop_server KILL
start_server
wait_until 5 sh -c "[ \"\$("$DROVER" get job $Y -o json | jq -r .reason_code)\" = Dependency ]" ||
	fail "Y after the restart: $(state "$Y") $(code "$Y")"
wait_until 40 is_state "$Y" succeeded || fail "Y ended '$(state "$Y")' after the restart"
awk -v a="$(t X-end)" -v b="$(t Y-start)" 'BEGIN { exit !(b >= a) }' || fail "Y started before X ended: $(cat "$out/dep")"

# --- kill_invalid_depend cancels what can never run
stop_server
server_config "sched_delay_ms: 10" "kill_invalid_depend: true"
start_server
wait_until 10 is_state "$C" cancelled || fail "C with kill_invalid_depend: $(state "$C")"
case $(jq_job "$C" .reason) in *DependencyNeverSatisfied*) ;; *) fail "C's reason: $(jq_job "$C" .reason)" ;; esac
echo "ok: arrays and dependencies acted on; Y waited across a restart; C cancelled by kill_invalid_depend"
