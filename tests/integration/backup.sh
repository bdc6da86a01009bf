# backup.sh: `drover backup --state DIR FILE` copies the SQLite state while
# the server runs and writes: a server started on the copy has every job
# answered before the backup; the copy is mode 0600; an existing FILE, a
# missing state and a PostgreSQL store are refused with exit 2.
. "$ROOT/tests/integration/lib.sh"
server_config
start_server
cat >"$TEST_TMP/job.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: kept}
spec:
  containers: [{name: main, image: busybox, command: ["true"]}]
YAML
ids=""
for i in 1 2 3 4 5; do
	id=$("$DROVER" submit --parsable "$TEST_TMP/job.yaml") || fail "submit"
	ids="$ids $id"
done
# writes go on during the backup
( for i in 1 2 3 4 5 6 7 8 9 10; do "$DROVER" submit --parsable "$TEST_TMP/job.yaml" >/dev/null 2>&1; done ) &
writer=$!
track $writer
"$DROVER" backup --state "$TEST_TMP/state" "$TEST_TMP/copy.db" >"$TEST_TMP/backup.out" 2>&1 ||
	{ cat "$TEST_TMP/backup.out"; fail "drover backup failed"; }
wait $writer
expect_eq "the copy's mode" "$(stat -c %a "$TEST_TMP/copy.db")" 600
"$DROVER" backup --state "$TEST_TMP/state" "$TEST_TMP/copy.db" 2>"$TEST_TMP/again.err"
expect_eq "an existing FILE: exit" "$?" 2
grep -q "copy.db: File exists" "$TEST_TMP/again.err" || fail "existing file: $(cat "$TEST_TMP/again.err")"
"$DROVER" backup --state "$TEST_TMP/nothing" "$TEST_TMP/x.db" 2>/dev/null
expect_eq "a missing state: exit" "$?" 2
"$DROVER" backup --state "$TEST_TMP/state" --store postgres://u@h/db "$TEST_TMP/y.db" 2>"$TEST_TMP/pg.err"
expect_eq "a PostgreSQL store: exit" "$?" 2
grep -q pg_dump "$TEST_TMP/pg.err" || fail "no pg_dump hint: $(cat "$TEST_TMP/pg.err")"
stop_server
# a server on the copy has the jobs
mkdir -p "$TEST_TMP/restored" && cp "$TEST_TMP/copy.db" "$TEST_TMP/restored/state.db"
SERVER_STATE="$TEST_TMP/restored" SERVER_PORT=$(free_port)
server_config
start_server
for id in $ids; do
	"$DROVER" get job "$id" -o json >/dev/null || fail "job $id is not in the backup"
done
echo "ok: backup taken while writing; jobs$ids restored"
