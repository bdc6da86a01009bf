# testlib.sh: the integration tests' library (lib.sh) does what its manual
# says: wait_until ends on the clock even when each try is slow; the
# cleanup stops what a test tracked and runs its on_exit steps, whatever
# way the test ends; need_alone holds a lock until the test ends, so a
# second holder waits (or gives up at its deadline); need_data and skip
# exit 77 saying why; server_config keeps the later of two settings.
. "$ROOT/tests/integration/lib.sh"
cd "$TEST_TMP"

# inner NAME SCRIPT: runs SCRIPT as a test of its own (lib.sh sourced first)
inner() {
	mkdir -p "$TEST_TMP/$1"
	{
		echo '. "$ROOT/tests/integration/lib.sh"'
		echo "$2"
	} >"$TEST_TMP/$1.sh"
	TEST_TMP="$TEST_TMP/$1" sh "$TEST_TMP/$1.sh" >"$TEST_TMP/$1.out" 2>&1
}

# --- wait_until: success at once; a deadline on the clock, however slow a try
start=$(date +%s)
wait_until 5 true || fail "wait_until 5 true failed"
n=0
counted() { n=$((n + 1)); [ "$n" -ge 3 ]; }
wait_until 5 counted || fail "wait_until did not retry"
expect_eq "tries until success" "$n" 3
start=$(date +%s)
if wait_until 2 sh -c 'sleep 1.5; false'; then fail "wait_until succeeded on a failing command"; fi
took=$(($(date +%s) - start))
[ "$took" -le 5 ] || fail "wait_until 2 took $took s with 1.5 s tries (it counts tries, not the clock)"

# --- the cleanup: tracked processes stopped, on_exit run, on success and on fail
for how in "exit 0" "fail deliberately" "kill -TERM \$\$"; do
	inner cleanup "sleep 300 & track \$!; echo \$! >\"\$TEST_TMP/pid\"
sh -c 'trap \"\" TERM; exec sleep 300' & track \$!; echo \$! >\"\$TEST_TMP/pid2\"
on_exit 'echo ran >\"\$TEST_TMP/on_exit\"'
$how"
	for f in pid pid2; do
		p=$(cat "$TEST_TMP/cleanup/$f")
		wait_until 5 sh -c "! kill -0 $p 2>/dev/null" || fail "after '$how' the tracked pid $p still runs"
	done
	expect_eq "on_exit after '$how'" "$(cat "$TEST_TMP/cleanup/on_exit")" ran
	rm -rf "$TEST_TMP/cleanup"
done

# --- need_alone: a second holder waits for the first, or gives up at its deadline
export DROVER_LOCK_DIR="$TEST_TMP/locks"
inner holder 'need_alone res; echo held >"$TEST_TMP/held"; sleep 2' &
holder=$!
wait_until 5 test -f "$TEST_TMP/holder/held" || fail "the first holder did not get the lock"
if inner impatient 'need_alone res 1'; then fail "need_alone got a lock that another test holds"; fi
grep -q "res is held by another test" "$TEST_TMP/impatient.out" || fail "need_alone: $(cat "$TEST_TMP/impatient.out")"
inner patient 'need_alone res 10; date +%s >"$TEST_TMP/got"' || fail "need_alone did not wait: $(cat "$TEST_TMP/patient.out")"
wait "$holder"
[ "$(cat "$TEST_TMP/patient/got")" -ge "$(($(stat -c %Y "$TEST_TMP/holder/held") + 1))" ] || fail "two holders at once"
inner other 'need_alone other-res 1' || fail "one lock held kept another from being taken"
unset DROVER_LOCK_DIR

# --- skip and need_data: exit 77, saying why
inner data 'DROVER_DATA=$TEST_TMP need_data no-such-file.csv; echo not reached'
expect_eq "need_data exit" "$?" 77
grep -q '^SKIP: no-such-file.csv not found' "$TEST_TMP/data.out" || fail "need_data: $(cat "$TEST_TMP/data.out")"
grep -q 'not reached' "$TEST_TMP/data.out" && fail "need_data went on without its data"

# --- server_config: the tokens, and of two lines with one key the later
(
	server_config "retry_limit: 3" "sched_delay_ms: 5" "retry_limit: 1"
	expect_eq "retry_limit lines" "$(grep -c '^retry_limit:' "$SERVER_CONFIG")" 1
	grep -q '^retry_limit: 1$' "$SERVER_CONFIG" || fail "the later retry_limit lost: $(cat "$SERVER_CONFIG")"
	grep -q '^sched_delay_ms: 5$' "$SERVER_CONFIG" || fail "sched_delay_ms lost"
	grep -q "{token: $ADMIN_TOKEN, user: ops, admin: true}" "$SERVER_CONFIG" || fail "no admin token"
	expect_eq "client server" "$DROVER_SERVER" "$SERVER_URL"
) || exit 1
echo "ok: lib.sh's wait, cleanup, locks, skip and config"
