# store_pg.sh: the PostgreSQL store on a real PostgreSQL 15 started here
# (pglib.sh): the store's unit tests (tests/unit/test_store.c) on it, each
# in a database of its own (UNIT_FLAVOUR=asan: the sanitizer build's).
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/pglib.sh"

pg_start
[ -x "$ROOT/build/${UNIT_FLAVOUR:-rel}/unit-tests" ] || skip "build/${UNIT_FLAVOUR:-rel}/unit-tests is not built"
DROVER_TEST_PG="$PG_ADMIN" "$ROOT/build/${UNIT_FLAVOUR:-rel}/unit-tests" --filter 'store/*' -j2 >"$TEST_TMP/unit.log" 2>&1 ||
	{ cat "$TEST_TMP/unit.log"; fail "the store's unit tests fail on PostgreSQL"; }
grep -q "Failing: 0 | Crashing: 0" "$TEST_TMP/unit.log" || { cat "$TEST_TMP/unit.log"; fail "unit tests"; }
# the PostgreSQL-only tests ran rather than skipped
grep -qE "Tested: (1[3-9]|[2-9][0-9])" "$TEST_TMP/unit.log" || { cat "$TEST_TMP/unit.log"; fail "fewer store tests ran than expected"; }
echo "store unit tests on PostgreSQL: $(tail -1 "$TEST_TMP/unit.log")"

# The API suite on the PostgreSQL store: each test on a fresh database,
# through lib.sh's DROVER_TEST_STORE (store: and store_password_file:).
for t in server_api server_idempotency; do
	url=$(pg_createdb "drover_$t")
	env -u TEST_TMP DROVER_TEST_STORE="$url" DROVER_TEST_STORE_PASSWORD_FILE="$PG_PASSWORD_FILE" \
		sh "$ROOT/tests/integration/$t.sh" >"$TEST_TMP/$t.log" 2>&1 ||
		{ tail -30 "$TEST_TMP/$t.log"; fail "$t.sh fails on the PostgreSQL store"; }
	grep -q "store: PostgreSQL" "$TEST_TMP"/../drover-it.*/server.log 2>/dev/null || true
	echo "$t.sh on PostgreSQL: ok"
done
