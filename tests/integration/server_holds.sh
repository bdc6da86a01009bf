# server_holds.sh: holds, release, requeue and a pending job's time limit
# (CONTRACTS.md section 4; docs/api.md): sbatch -H submits held (JobHeldUser)
# and POST /v1/jobs/ID/release lets it run; an admin's hold (JobHeldAdmin) is
# not the user's to lift (403); a held job stays held across a restart; a
# running job cannot be held (409) but is requeued as a new attempt (its
# task starts again); PATCH lowers a pending job's limit for a user, raises
# it only for an admin; holding an array's parent holds its elements.
. "$ROOT/tests/integration/lib.sh"

server_config "sched_delay_ms: 10"
start_server
start_agent node-a 2xH100
out="$TEST_TMP/out"
mkdir -p "$out"
jq_job() { "$DROVER" get job "$1" -o json | jq -r "$2"; }
state() { jq_job "$1" .state; }
is_state() { [ "$(state "$1")" = "$2" ]; }
api() {   # api TOKEN METHOD PATH [BODY]: prints the HTTP code, body in $TEST_TMP/body
	curl -s -o "$TEST_TMP/body" -w '%{http_code}' -X "$2" -H "Authorization: Bearer $1" \
		-H 'Content-Type: application/json' ${4:+--data "$4"} "$SERVER_URL$3"
}
script() {   # script NAME BODY [SBATCH-LINE...]
	_n=$1 _b=$2
	shift 2
	{
		echo '#!/bin/sh'
		for l in "$@"; do echo "#SBATCH $l"; done
		printf '%s\n' "$_b"
	} >"$TEST_TMP/$_n.sh"
	echo "$TEST_TMP/$_n.sh"
}

# --- sbatch -H: held until released, also across a restart
H=$("$DROVER" submit --parsable "$(script held "echo ran >>$out/held" -H --gpus=1)") || fail "submit -H"
expect_eq "held job's hold" "$(jq_job "$H" .hold)" user
expect_eq "held job's reason code" "$(jq_job "$H" .reason_code)" JobHeldUser
sleep 2
expect_eq "held job after 2 s on an idle node" "$(state "$H")" pending
stop_server KILL
start_server
expect_eq "held job after a restart" "$(jq_job "$H" '.state + " " + .hold')" "pending user"
expect_eq "release" "$(api "$ADMIN_TOKEN" POST "/v1/jobs/$H/release")" 200
wait_until 30 is_state "$H" succeeded || fail "released job $H: $(state "$H")"
expect_eq "a released job has no hold" "$(jq_job "$H" .hold)" null
expect_eq "release of a job with nothing held" "$(api "$ADMIN_TOKEN" POST "/v1/jobs/$H/release")" 409

# --- an admin hold is the admin's to lift; holding a running job is refused
blk=$("$DROVER" submit --parsable "$(script blk "echo \$SLURM_JOB_ID >>$out/blk; sleep 30" --gpus=2)") || fail "submit blocker"
wait_until 30 is_state "$blk" running || fail "blocker did not start"
expect_eq "hold of a running job" "$(api "$ADMIN_TOKEN" POST "/v1/jobs/$blk/hold")" 409
grep -q "no longer pending" "$TEST_TMP/body" || fail "hold of a running job said: $(cat "$TEST_TMP/body")"
code=$(curl -s -o "$TEST_TMP/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $ALICE_TOKEN" \
	--data-binary @"$(script alice "echo alice >>$out/alice" --gpus=2 --time=10:00)" \
	-H 'Content-Type: text/x-shellscript' "$SERVER_URL/v1/jobs")
expect_eq "alice's submit" "$code" 201
A=$(jq -r .id "$TEST_TMP/body")
expect_eq "admin holds alice's pending job" "$(api "$ADMIN_TOKEN" POST "/v1/jobs/$A/hold")" 200
expect_eq "its reason code" "$(jq_job "$A" .reason_code)" JobHeldAdmin
expect_eq "alice releases an admin hold" "$(api "$ALICE_TOKEN" POST "/v1/jobs/$A/release")" 403
expect_eq "alice sets an admin hold" "$(api "$ALICE_TOKEN" POST "/v1/jobs/$A/hold" '{"kind":"admin"}')" 403

# --- a pending job's time limit: users lower it, admins raise it
expect_eq "alice lowers her limit" "$(api "$ALICE_TOKEN" PATCH "/v1/jobs/$A" '{"time_limit_s":300}')" 200
expect_eq "the new limit" "$(jq -r .time_limit_s "$TEST_TMP/body")" 300
expect_eq "alice raises her limit" "$(api "$ALICE_TOKEN" PATCH "/v1/jobs/$A" '{"time_limit_s":900}')" 403
expect_eq "an admin raises it" "$(api "$ADMIN_TOKEN" PATCH "/v1/jobs/$A" '{"time_limit_s":900}')" 200
expect_eq "a running job's limit" "$(api "$ADMIN_TOKEN" PATCH "/v1/jobs/$blk" '{"time_limit_s":60}')" 409
expect_eq "an unknown field" "$(api "$ADMIN_TOKEN" PATCH "/v1/jobs/$A" '{"priority":5}')" 400
expect_eq "admin releases alice's job" "$(api "$ADMIN_TOKEN" POST "/v1/jobs/$A/release")" 200

# --- requeue: the running blocker stops and runs again as attempt 2
expect_eq "requeue a running job" "$(api "$ADMIN_TOKEN" POST "/v1/jobs/$blk/requeue")" 200
wait_until 40 sh -c "[ \$(wc -l <$out/blk) -ge 2 ]" || fail "the requeued job did not start again: $(state "$blk")"
expect_eq "the requeued job's attempt" "$(jq_job "$blk" .attempt)" 2
expect_eq "requeue of a pending job" "$(api "$ADMIN_TOKEN" POST "/v1/jobs/$A/requeue")" 409
"$DROVER" cancel "$blk" >/dev/null || fail "cancel the blocker"
wait_until 30 is_state "$A" succeeded || fail "alice's job after the blocker: $(state "$A")"

# --- an array submitted held: every element held, released through the parent
P=$("$DROVER" submit --parsable "$(script arr "echo \$SLURM_ARRAY_TASK_ID >>$out/arr" -H --array=0-2 --gpus=1)") || fail "submit the held array"
for k in 1 2 3; do expect_eq "element $((P + k))'s hold" "$(jq_job $((P + k)) .hold)" user; done
expect_eq "release the array" "$(api "$ADMIN_TOKEN" POST "/v1/jobs/$P/release")" 200
wait_until 40 is_state "$P" succeeded || fail "array $P: $(state "$P")"
expect_eq "array tasks ran" "$(sort -n "$out/arr" | tr '\n' ' ')" "0 1 2 "
echo "ok: -H held across a restart; admin hold 403 for the user; requeue ran attempt 2; limits"
