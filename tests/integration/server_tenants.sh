# server_tenants.sh: the server config's `tenants:` setting (docs/api.md,
# "Server configuration"): a tenants file (docs/simulator.md, "Tenants
# file"), named relative to the config file, gives the controller's
# scheduler its quotas. Tenant team-a has a quota of 8 GPUs: of three
# 8-GPU jobs of team-a exactly one runs and the other two wait with a
# reason naming the quota, while an 8-GPU job of team-b starts on the
# other node. A user limited to no running job waits with
# QOSMaxJobsPerUserLimit. A bad tenants file stops `drover server` with exit 2 and the
# parser's file:line:col message, before anything listens.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup "tenants: tenants.yaml" # relative: next to the config file

cat >"$TEST_TMP/tenants.yaml" <<'YAML'
kind: Tenants
tenants:
  team-a:
    quota: 8
  team-b:
    weight: 2
users:
  alice: {maxRunningJobs: 0}
YAML

start_server
grep -q "tenants from $TEST_TMP/tenants.yaml: 2 tenants" "$TEST_TMP/server.log" ||
	fail "the server did not say it read the tenants file: $(cat "$TEST_TMP/server.log")"
start_agent node-a
start_agent node-b

job() { submit_8gpu "$1" "$2"; }

a1=$(job a1 team-a)
a2=$(job a2 team-a)
a3=$(job a3 team-a)
expect_eq "tenant kept" "$(jf "$a1" 'j["tenant"]')" "team-a"

# exactly one of team-a's jobs runs; the other two wait on the quota
wait_until 60 sh -c "
	n=0
	for id in $a1 $a2 $a3; do
		\"$DROVER\" get job \$id -o json | grep -q '\"state\": *\"running\"' && n=\$((n+1))
	done
	[ \$n -ge 1 ]" || fail "no job of team-a started"
sleep 2   # a pass or two more: nothing else of team-a may start
running=""
pending=""
for id in $a1 $a2 $a3; do
	st=$(jf "$id" 'j["state"]')
	case "$st" in
	running) running="$running $id" ;;
	pending) pending="$pending $id" ;;
	*) fail "job $id of team-a is $st, expected running or pending" ;;
	esac
done
expect_eq "team-a jobs running" "$(echo $running | wc -w)" "1"
expect_eq "team-a jobs pending" "$(echo $pending | wc -w)" "2"
for id in $pending; do
	reason=$(jf "$id" 'j["reason"]')
	echo "job $id pending: $reason"
	case "$reason" in
	*quota*) ;;
	*) fail "job $id waits, but its reason does not name the quota: '$reason'" ;;
	esac
done

# another tenant is not held back by team-a's quota: node-b is free
b1=$(job b1 team-b)
wait_job "$b1" running 60
expect_eq "team-b tenant" "$(jf "$b1" 'j["tenant"]')" "team-b"
for id in $pending; do
	expect_eq "job $id still pending after team-b started" "$(jf "$id" 'j["state"]')" "pending"
done
echo "ok: team-a quota 8 GPUs: 1 running, 2 pending on the quota; team-b's job started"

# the file's per-user limits hold the jobs of that user, with their own code
c1=$(submit_8gpu c1 team-b '{"user": "alice"}')
wait_until 10 sh -c "\"$DROVER\" get job $c1 -o json | grep -q '\"reason_code\": *\"QOSMaxJobsPerUserLimit\"'" ||
	fail "alice's job: $(jf "$c1" 'j["reason_code"], j["reason"]')"
expect_eq "alice's reason" "$(jf "$c1" 'j["reason"]')" "its user runs 0 jobs; the limit per user is 0"

# A bad tenants file: exit 2, the parser's file:line:col message, nothing started.
cat >"$TEST_TMP/bad-tenants.yaml" <<'YAML'
tenants:
  team-a:
    quota: lots
YAML
sed 's/^tenants: .*/tenants: bad-tenants.yaml/' "$SERVER_CONFIG" >"$TEST_TMP/bad.yaml"
BADPORT=$(free_port)
"$DROVER" server --listen "127.0.0.1:$BADPORT" --state "$TEST_TMP/bad-state" \
	--config "$TEST_TMP/bad.yaml" >"$TEST_TMP/bad.out" 2>"$TEST_TMP/bad.err" &
BADPID=$!
track "$BADPID"
wait "$BADPID"
rc=$?
cat "$TEST_TMP/bad.err"
expect_eq "exit status with a bad tenants file" "$rc" "2"
grep -Eq "^drover server: $TEST_TMP/bad-tenants.yaml:3:[0-9]+: error: tenants\.team-a\.quota" "$TEST_TMP/bad.err" ||
	grep -Eq "^$TEST_TMP/bad-tenants.yaml:3:[0-9]+: error: " "$TEST_TMP/bad.err" ||
	fail "no file:line:col error for the tenants file: $(cat "$TEST_TMP/bad.err")"
curl -fsS -m 2 "http://127.0.0.1:$BADPORT/healthz" >/dev/null 2>&1 && fail "a server with a bad tenants file answers"
[ -s "$TEST_TMP/bad.out" ] && fail "a server with a bad tenants file printed: $(cat "$TEST_TMP/bad.out")"

# and one that cannot be read
sed 's/^tenants: .*/tenants: missing.yaml/' "$SERVER_CONFIG" >"$TEST_TMP/missing-conf.yaml"
"$DROVER" server --listen "127.0.0.1:$BADPORT" --state "$TEST_TMP/bad-state" \
	--config "$TEST_TMP/missing-conf.yaml" >/dev/null 2>"$TEST_TMP/missing.err"
expect_eq "exit status with a missing tenants file" "$?" "2"
grep -q "$TEST_TMP/missing.yaml:.*cannot read" "$TEST_TMP/missing.err" || fail "missing tenants file not named: $(cat "$TEST_TMP/missing.err")"
echo "ok: a bad tenants file stops the server with exit 2: $(head -1 "$TEST_TMP/bad.err")"
