# agent_prolog.sh: the site's prolog and epilog (drover agent --prolog,
# --epilog, as Slurm's Prolog/Epilog): the prolog runs before a job's
# first task on the node, with SLURM_JOB_ID and friends, and the task
# waits for it; the epilog runs once the job's tasks there are over, and
# the job's end is reported only after it; a job of any format; a prolog
# that fails drains its node with the reason and the job is requeued to
# run elsewhere; a prolog that is not an executable is refused at start.
. "$ROOT/tests/integration/lib.sh"

T=$TEST_TMP
cat >"$T/prolog" <<EOF2
#!/bin/sh
echo "prolog \$DROVER_HOOK \$SLURM_JOB_ID \$SLURMD_NODENAME" >>"$T/order"
sleep 1
EOF2
cat >"$T/epilog" <<EOF2
#!/bin/sh
sleep 1
echo "epilog \$DROVER_HOOK \$SLURM_JOB_ID \$SLURMD_NODENAME" >>"$T/order"
EOF2
cat >"$T/bad-prolog" <<EOF2
#!/bin/sh
echo "no scratch space" >&2
exit 3
EOF2
chmod 755 "$T/prolog" "$T/epilog" "$T/bad-prolog"

"$DROVER" agent --server http://127.0.0.1:1 --name x --prolog relative/prolog \
	>"$T/rel.out" 2>&1
expect_eq "a relative --prolog: exit code" "$?" 2
grep -q "prolog: 'relative/prolog': not an absolute path" "$T/rel.out" ||
	fail "a relative --prolog said: $(cat "$T/rel.out")"

start_server
start_agent good 2xH100 --prolog "$T/prolog" --epilog "$T/epilog"
state() { "$DROVER" get job "$1" -o json | jq -r .state; }
ended() { s=$(state "$1"); [ "$s" != pending ] && [ "$s" != scheduled ] && [ "$s" != running ]; }

# a Slurm script and a canonical job: prolog, task, epilog, then the end
printf '#!/bin/sh\n#SBATCH -J hooked\necho "task $SLURM_JOB_ID" >>%s/order\n' "$T" >"$T/job.sh"
id=$("$DROVER" submit --parsable "$T/job.sh") || fail "submit"
wait_until 30 ended "$id" || fail "job $id still '$(state "$id")'"
expect_eq "job $id" "$(state "$id")" succeeded
expect_eq "prolog, task, epilog, in that order, before the job's end" "$(cat "$T/order")" \
	"prolog prolog $id good
task $id
epilog epilog $id good"

# a node whose prolog fails: drained with the reason, the job runs elsewhere
start_agent bad 2xH100 --prolog "$T/bad-prolog"
mkdir -p "$T/bin"
ln -s "$DROVER" "$T/bin/scontrol"
"$T/bin/scontrol" update nodename=good state=drain reason=until-bad-is-tried ||
	fail "drain good"
cat >"$T/pod.yaml" <<'EOF2'
apiVersion: v1
kind: Pod
metadata: {name: hooked-pod}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: ["true"]
    resources: {limits: {nvidia.com/gpu: 1}}
EOF2
id=$("$DROVER" submit --parsable "$T/pod.yaml") || fail "submit a Pod"
bad_drained() { "$DROVER" get node bad -o json | jq -r .state | grep -q draining; }
wait_until 30 bad_drained || fail "node bad: $("$DROVER" get node bad -o json)"
"$DROVER" get node bad -o json | jq -r .reason |
	grep -qx "prolog $T/bad-prolog failed: exit code 3 (no scratch space)" ||
	fail "node bad's reason: $("$DROVER" get node bad -o json | jq -r .reason)"
"$T/bin/scontrol" update nodename=good state=resume || fail "resume good"
wait_until 30 ended "$id" || fail "job $id still '$(state "$id")'"
expect_eq "the requeued job" "$(state "$id")" succeeded
"$DROVER" describe job "$id" | grep -q "node bad could not start the job's task: prolog .* failed: exit code 3 (no scratch space); requeued (retry 1 of 3)" ||
	fail "job $id does not say why it was requeued: $("$DROVER" describe job "$id")"
echo "ok: prolog and epilog run around a job's tasks; a failing prolog drains and requeues"
