# cli_cost.sh: `drover cost` (docs/cost.md) on the shipped assumptions
# file: the text and JSON agree with the hand-checked figures (break-even
# month 18 against reserved, 12 against on-demand), every sensitivity row
# has a month; a bad file exits 2 naming file:line:col and the unknown key;
# --from-sim takes the utilisation from a drover sim --json output.
. "$ROOT/tests/integration/lib.sh"
cd "$ROOT" || fail "no repository"
J=$("$DROVER" cost --json) || fail "drover cost --json failed"
echo "$J" | jq -e '.break_even_months == 18 and .break_even_months_by_cloud.onDemand == 12
	and .monthly_onprem_usd == 166879.04 and .monthly_cloud_usd.reserved == 321807.36
	and (.sensitivity | length) == 10
	and ([.sensitivity[] | select(.vary == "utilisation" and .utilisation == 0.3)][0].break_even_months == 71)' \
	>/dev/null || fail "unexpected figures: $J"
"$DROVER" cost examples/cost/h100.yaml | grep -q '^break-even against reserved: 18$' || fail "text output"
"$DROVER" cost | grep -q 'pricePerGpuHour: 2.55' || fail "no pricePerGpuHour line"

sed 's/^pue: 1.4 .*/pue: 1.4\npowerPrice: 0.2/' examples/cost/h100.yaml >"$TEST_TMP/bad.yaml"
"$DROVER" cost "$TEST_TMP/bad.yaml" >"$TEST_TMP/out" 2>"$TEST_TMP/err"
[ $? -eq 2 ] || fail "a bad file did not exit 2"
grep -q "bad.yaml:16:1: error: powerPrice: found the unknown key 'powerPrice'" "$TEST_TMP/err" ||
	fail "error does not name file:line:col and the key: $(cat "$TEST_TMP/err")"
[ -s "$TEST_TMP/out" ] && fail "a bad file printed results"

# never within the horizon: cloud cheaper than power alone
sed 's/^  reserved: 4.92/  reserved: 0.1/' examples/cost/h100.yaml >"$TEST_TMP/cheap.yaml"
"$DROVER" cost --json "$TEST_TMP/cheap.yaml" | jq -e '.break_even_months == null' >/dev/null ||
	fail "expected null break-even"
"$DROVER" cost "$TEST_TMP/cheap.yaml" | grep -q 'against reserved: never (within 120 months)' ||
	fail "expected never"

echo '{"gpu_alloc_ratio": 0.35, "jobs": 3}' >"$TEST_TMP/sim.json"
"$DROVER" cost --json --from-sim "$TEST_TMP/sim.json" | jq -e '.utilisation == 0.35' >/dev/null ||
	fail "--from-sim did not take gpu_alloc_ratio"
echo '{"jobs": 3}' >"$TEST_TMP/nosim.json"
"$DROVER" cost --from-sim "$TEST_TMP/nosim.json" 2>/dev/null
[ $? -eq 2 ] || fail "--from-sim without gpu_alloc_ratio did not exit 2"
(cd "$TEST_TMP" && "$DROVER" cost) 2>"$TEST_TMP/err2" && fail "no default file should exit 2"
grep -q 'give FILE' "$TEST_TMP/err2" || fail "no hint when the default file is missing"
exit 0
