# job_token.sh: credentials scoped to one job (CONTRACTS.md §7,
# docs/security.md), against a real server and agent. A job's task finds
# DROVER_JOB_TOKEN in its environment and, with it as its bearer token,
# reads its own job (200) but not another user's job, its own user's other
# job, the job list or a submit (403 each); a forged token is 401, and once
# the job is over its token is 401 too. The key is STATE/job-token.key, 0600.
. "$ROOT/tests/integration/lib.sh"

server_config "allow_root_tasks: true"
start_server
start_agent node-a 2xH100
ST=${SERVER_STATE:-$TEST_TMP/state}
expect_eq "key mode" "$(stat -c %a "$ST/job-token.key")" 600

# a job of bob's and another of ops' own
other=$(printf '#!/bin/sh\n#SBATCH --gpus=1\ntrue\n' | DROVER_TOKEN=$BOB_TOKEN "$DROVER" submit - |
	sed -n 's/^submitted job \([0-9]*\).*/\1/p')
mine=$(printf '#!/bin/sh\n#SBATCH --gpus=1\ntrue\n' | "$DROVER" submit - |
	sed -n 's/^submitted job \([0-9]*\).*/\1/p')
[ -n "$other" ] && [ -n "$mine" ] || fail "submits printed no ids"

cat >"$TEST_TMP/job.sh" <<EOF
#!/bin/sh
#SBATCH --gpus=1
code() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer \$DROVER_JOB_TOKEN" "\$@"; }
echo "own \$(code $SERVER_URL/v1/jobs/\$DROVER_JOB_ID)"
echo "other \$(code $SERVER_URL/v1/jobs/$other)"
echo "mine \$(code $SERVER_URL/v1/jobs/$mine)"
echo "list \$(code $SERVER_URL/v1/jobs)"
echo "submit \$(code -X POST -H 'Content-Type: application/json' -d '{}' $SERVER_URL/v1/jobs)"
echo "agent \$(code -X POST -d '{}' $SERVER_URL/v1/agent/sync)"
t=\$DROVER_JOB_TOKEN
case \$t in *0) f=\${t%?}1 ;; *) f=\${t%?}0 ;; esac
echo "forged \$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer \$f" $SERVER_URL/v1/jobs/\$DROVER_JOB_ID)"
echo "token \$DROVER_JOB_TOKEN"
EOF
id=$("$DROVER" submit "$TEST_TMP/job.sh" | sed -n 's/^submitted job \([0-9]*\).*/\1/p')
[ -n "$id" ] || fail "submit printed no id"
wait_until 20 sh -c "\"$DROVER\" get job $id -o json | jq -e '.state == \"succeeded\"'" ||
	fail "job $id did not succeed: $("$DROVER" get job "$id" -o json)"
"$DROVER" logs "$id" >"$TEST_TMP/out" || fail "no logs"
for want in "own 200" "other 403" "mine 403" "list 403" "submit 403" "agent 403" "forged 401"; do
	grep -qx "$want" "$TEST_TMP/out" || fail "want '$want' in: $(cat "$TEST_TMP/out")"
done
tok=$(sed -n 's/^token //p' "$TEST_TMP/out")
case $tok in "drvj1.$id."*) ;; *) fail "token '$tok'" ;; esac

# over with its job
got=$(curl -s -o "$TEST_TMP/after" -w '%{http_code}' -H "Authorization: Bearer $tok" "$SERVER_URL/v1/jobs/$id")
expect_eq "token after the job" "$got" 401
grep -q "is over" "$TEST_TMP/after" || fail "after: $(cat "$TEST_TMP/after")"
# the job as the API shows it does not hold the token
"$DROVER" get job "$id" -o json | grep -qF "$tok" && fail "the job shows its token"

# a restarted controller takes the token of a job that still runs
id2=$(printf '#!/bin/sh\n#SBATCH --gpus=1\necho "token $DROVER_JOB_TOKEN"\nsleep 60\n' | "$DROVER" submit - |
	sed -n 's/^submitted job \([0-9]*\).*/\1/p')
wait_until 20 sh -c "\"$DROVER\" logs $id2 2>/dev/null | grep -q '^token '" || fail "job $id2 printed no token"
tok2=$("$DROVER" logs "$id2" | sed -n 's/^token //p')
stop_server
start_server
got=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok2" "$SERVER_URL/v1/jobs/$id2")
expect_eq "a running job's token after a restart" "$got" 200
"$DROVER" cancel "$id2" >/dev/null || fail "cancel $id2"

# a key file others may read stops the server, naming it
stop_server
chmod 644 "$ST/job-token.key"
timeout 10 "$DROVER" server --listen "127.0.0.1:$(free_port)" --state "$ST" \
	--config "$SERVER_CONFIG" >"$TEST_TMP/lax.log" 2>&1 && fail "a 0644 job-token.key was taken"
grep -q "job-token.key" "$TEST_TMP/lax.log" || fail "lax key: $(cat "$TEST_TMP/lax.log")"
exit 0
