# server_state_lock.sh: one controller per state directory (issue 12). A
# second `drover server` or `drover up` on a directory a controller holds
# exits 1 with one line naming the holder's pid and address, and the first
# keeps answering with its jobs intact; once the holder is gone (SIGKILL
# included: the flock dies with its process) a new controller starts there.
. "$ROOT/tests/integration/lib.sh"

STATE="$TEST_TMP/state"

job_field() { # ID FIELD: the job's FIELD, as the server says
	"$DROVER" get job "$1" -o json | python3 -c "import json,sys; print(json.load(sys.stdin)['$2'])"
}

# second_server: a `drover server` on STATE (another port); its exit status
# in rc, its output in $TEST_TMP/second.out. timeout: one that starts is a
# failure, not a hang.
second_server() {
	timeout 10 "$DROVER" server --listen "127.0.0.1:$(free_port)" --state "$STATE" \
		--config "$SERVER_CONFIG" >"$TEST_TMP/second.out" 2>&1 9>&-
	rc=$?
}

# expect_refused WHO PID: the second one exited 1 with one line naming PID
expect_refused() {
	expect_eq "exit status of a second $1 on a held state directory" "$rc" 1
	expect_eq "what a second $1 says" "$(cat "$TEST_TMP/second.out")" \
		"drover $1: state directory $STATE is in use by pid $2 (listening on 127.0.0.1:$SERVER_PORT)"
}

# 1. drover server holds the directory; a job is acknowledged before.
start_server
first=$SERVER_PID
printf '#!/bin/sh\n#SBATCH --job-name=keepme\n#SBATCH --gpus=1\ntrue\n' >"$TEST_TMP/job.sh"
id=$("$DROVER" submit --parsable "$TEST_TMP/job.sh") || fail "submit: $id"
expect_eq "lock file mode" "$(stat -c %a "$STATE/lock")" 600

second_server
expect_refused server "$first"
timeout 10 "$DROVER" up --state "$STATE" --listen "127.0.0.1:$(free_port)" \
	--agent-listen "127.0.0.1:$(free_port)" --fake-gpus 8xH100 --name box2 \
	>"$TEST_TMP/second.out" 2>&1 9>&-
rc=$?
expect_refused up "$first"
[ -d "$STATE/agent" ] && fail "the refused drover up started its agent in $STATE/agent"

# The first still answers, with its job, and hands out the next id.
healthz || fail "the first server stopped answering"
expect_eq "job $id's name after the refusals" "$(job_field "$id" name)" keepme
expect_eq "job $id's state after the refusals" "$(job_field "$id" state)" pending
id2=$("$DROVER" submit --parsable "$TEST_TMP/job.sh") || fail "submit: $id2"
expect_eq "the next id" "$id2" $((id + 1))

# 2. SIGKILL: the file still names the dead pid, but the lock is gone.
stop_server KILL
grep -q "^pid $first\$" "$STATE/lock" || fail "lock file after SIGKILL: $(cat "$STATE/lock")"
start_server
expect_eq "job $id after a SIGKILL and a restart" "$(job_field "$id" name)" keepme
stop_server
expect_eq "lock file after a clean stop" "$(wc -c <"$STATE/lock")" 0

# 3. drover up holds it: a server is refused, naming up; after up's
# SIGKILL a server starts and the jobs are there.
start_up
second_server
expect_refused server "$UP_PID"
kill -KILL "$UP_PID"
wait "$UP_PID" 2>/dev/null
start_server
expect_eq "job $id after drover up's SIGKILL" "$(job_field "$id" name)" keepme
stop_server
echo "ok: a second server and a second up on a held state directory exit 1 naming pid $first; jobs $id, $id2 kept; a new controller starts after SIGKILL"
