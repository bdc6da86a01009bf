# ha_cutoff.sh: a leader cut off from its database steps down, and its
# writes are refused (docs/ha.md, "The leader lease"). Two controllers on
# one real PostgreSQL (pglib.sh) with leader_lease_s 2:
#   1. the leader's connections killed (pg_terminate_backend on every
#      backend serving it): it either reconnects within its lease and still
#      leads with the same term, or steps down; either way one controller
#      leads, and every job answered 201 is in the database;
#   2. the database paused (SIGSTOP of the postmaster and every backend)
#      past the lease: a submit sent to the leader meanwhile is never
#      answered 201, the leader logs "deposed: ..." and exits 1 (the design:
#      a deposed leader exits, and its supervisor starts it again as a
#      standby); once the database resumes the standby leads with a larger
#      term, the job answered 201 before the pause is there, and the old
#      leader started again is a standby.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
. "$ROOT/tests/integration/pglib.sh"
pg_start
cp_setup "store: $PG_URL" "store_password_file: $PG_PASSWORD_FILE" "leader_lease_s: 2"
export DROVER_TOKEN="$ADMIN_TOKEN"

PORT_A=$(free_port)
PORT_B=$(free_port)
URL_A="http://127.0.0.1:$PORT_A"
URL_B="http://127.0.0.1:$PORT_B"
start_ctl() {
	eval "_p=\$PORT_$1"
	"$DROVER" server --listen "127.0.0.1:$_p" --state "$TEST_TMP/state-$1" --config "$SERVER_CONFIG" \
		>>"$TEST_TMP/ctl-$1.log" 2>&1 9>&- &
	eval "PID_$1=$!"
	track $!
	wait_until 20 curl -fsS -m 2 "http://127.0.0.1:$_p/healthz" || fail "controller $1 did not answer"
}
health() {   # health URL FIELD
	curl -sS -m 2 "$1/healthz" | python3 -c "import json,sys; print(json.load(sys.stdin)['$2'])" 2>/dev/null
}
is_leader() {
	case $(curl -sS -m 2 "$1/healthz" 2>&1) in *'"status":"ok"'*'"role":"leader"'*) return 0 ;; esac
	return 1
}
# post URL: one submit straight to that controller; prints the HTTP status
post() {
	curl -sS -m "${2:-20}" -o "$TEST_TMP/post.body" -w '%{http_code}' -X POST \
		-H "Authorization: Bearer $ADMIN_TOKEN" -H 'Content-Type: application/yaml' \
		--data-binary @"$TEST_TMP/job.yaml" "$1/v1/jobs" 2>/dev/null
}
job_in_db() {
	[ "$(pg_psql "SELECT count(*) FROM jobs WHERE id = $1" 2>/dev/null)" = 1 ]
}

start_ctl A
wait_until 10 is_leader "$URL_A" || fail "the first controller does not lead"
start_ctl B
expect_eq "the second controller's role" "$(health "$URL_B" role)" standby
pod_yaml cut 1 "true" >"$TEST_TMP/job.yaml"
term0=$(health "$URL_A" term)

# 1. Its connections killed.
code=$(post "$URL_A")
expect_eq "a submit before the cut" "$code" 201
id1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$TEST_TMP/post.body")
ports=$(ss -tnpH "( dport = :$PG_PORT )" | grep "pid=$PID_A," | awk '{print $4}' | sed 's/.*://' | paste -sd, -)
[ -n "$ports" ] || fail "no connection of controller A to the database"
killed=$(pg_psql "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE client_port IN ($ports)")
echo "killed $killed backends of controller A (client ports $ports)"
[ "$killed" -ge 1 ] || fail "no backend of controller A was terminated"
sleep 3   # more than the lease: it has reconnected and renewed, or been deposed
some_leader() { is_leader "$URL_A" || is_leader "$URL_B"; }
wait_until 15 some_leader || fail "nobody leads after A lost its connections: A $(curl -sS -m 5 "$URL_A/healthz"), B $(curl -sS -m 5 "$URL_B/healthz")"
if is_leader "$URL_A"; then
	expect_eq "A's term after reconnecting" "$(health "$URL_A" term)" "$term0"
	expect_eq "B's role while A leads" "$(health "$URL_B" role)" standby
	leader=A
	echo "1: A reconnected within its lease and leads on in term $term0"
else
	grep -q "deposed: " "$TEST_TMP/ctl-A.log" || fail "A stepped down without saying so"
	wait "$PID_A"
	start_ctl A
	leader=B
	echo "1: A stepped down; B leads"
fi
eval "lurl=\$URL_$leader lpid=\$PID_$leader"
[ $leader = A ] && surl=$URL_B || surl=$URL_A
code=$(post "$lurl")
expect_eq "a submit after the connections were killed" "$code" 201
id2=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$TEST_TMP/post.body")
job_in_db "$id1" || fail "job $id1, answered 201 before the cut, is not in the database"
job_in_db "$id2" || fail "job $id2, answered 201 after the cut, is not in the database"

# 2. The database paused past the lease.
term1=$(health "$lurl" term)
pm=$(head -1 "$PG_DIR/data/postmaster.pid")
pg_pids="$pm $(pgrep -P "$pm" | tr '\n' ' ')"
kill -STOP $pg_pids
t0=$(date +%s.%N)
post "$lurl" 30 >"$TEST_TMP/paused.code" &
post_pid=$!
if ! wait_until 10 sh -c "! kill -0 $lpid 2>/dev/null"; then
	kill -CONT $pg_pids
	fail "the leader did not step down while the database was paused"
fi
t1=$(date +%s.%N)
wait "$lpid"
st=$?
kill -CONT $pg_pids
wait "$post_pid"
code=$(cat "$TEST_TMP/paused.code")
echo "2: the leader exited $st after $(python3 -c "print('%.1f' % ($t1 - $t0))") s; its submit got HTTP ${code:-nothing}"
expect_eq "the cut-off leader's exit status" "$st" 1
[ "$code" = 201 ] && fail "the cut-off leader answered a submit 201: $(cat "$TEST_TMP/post.body")"
grep "deposed: " "$TEST_TMP/ctl-$leader.log" | tail -1
grep -q "deposed: " "$TEST_TMP/ctl-$leader.log" || fail "no deposition in the cut-off leader's log"
wait_until 20 is_leader "$surl" || fail "the standby did not lead once the database resumed"
term2=$(health "$surl" term)
[ "$term2" -gt "$term1" ] || fail "the term did not grow ($term1 -> $term2)"
job_in_db "$id2" || fail "job $id2, answered 201 before the pause, is lost"
start_ctl $leader
expect_eq "the old leader started again" "$(health "$lurl" role)" standby
echo "ok: term $term1 -> $term2; the old leader is a standby"
