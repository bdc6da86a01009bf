# cli_cost.sh: `drover cost` (docs/cost.md) on the shipped assumptions
# file: the text and JSON agree with the hand-checked figures (break-even
# month 18 against reserved, 12 against on-demand), every sensitivity row
# has a month; the H200 and B200 files give docs/cost.md's table (B200
# against spot: never); a bad file exits 2 naming file:line:col and the unknown key;
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

# docs/cost.md's table of the shipped files: H200 and B200 (spot: never)
"$DROVER" cost --json examples/cost/h200.yaml | jq -e '.break_even_months_by_cloud ==
	{"onDemand": 17, "reserved": 26, "spot": 43} and .monthly_onprem_usd == 183545.71' >/dev/null ||
	fail "h200.yaml's figures: $("$DROVER" cost --json examples/cost/h200.yaml)"
"$DROVER" cost --json examples/cost/b200.yaml | jq -e '.break_even_months_by_cloud ==
	{"onDemand": 9, "reserved": 24, "spot": null} and .monthly_onprem_usd == 241583.36' >/dev/null ||
	fail "b200.yaml's figures: $("$DROVER" cost --json examples/cost/b200.yaml)"

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
# --html: the cumulative cost curves, one self-contained page
"$DROVER" cost --html "$TEST_TMP/cost.html" >"$TEST_TMP/html.out" || fail "--html failed"
grep -q "^cost curves written to $TEST_TMP/cost.html$" "$TEST_TMP/html.out" || fail "no line for --html"
python3 - "$TEST_TMP/cost.html" <<'PY' || fail "the cost page"
import re, sys, xml.dom.minidom
t = open(sys.argv[1]).read()
# self-contained: nothing fetched, no script (the one URL is the SVG namespace)
assert "<script" not in t and " src=" not in t and " href=" not in t, "not self-contained"
assert re.findall(r'https?://[^"]*', t) == ["http://www.w3.org/2000/svg"], re.findall(r'https?://[^"]*', t)
svg = re.search(r"<svg.*?</svg>", t, re.S).group(0)
doc = xml.dom.minidom.parseString(svg)
lines = doc.getElementsByTagName("polyline")
assert len(lines) == 4, len(lines)   # on-prem and the three cloud prices
pts = [[tuple(map(float, p.split(","))) for p in l.getAttribute("points").split()] for l in lines]
# months 0..78: a quarter past the last break-even (spot, month 62)
assert all(len(p) == 79 for p in pts), [len(p) for p in pts]
bottom = pts[1][0][1]                       # a cloud curve starts at $0
assert pts[0][0][1] < bottom, "on-prem starts at the capex, above $0"
# each curve grows; owning starts above renting at reserved and ends below it
assert all(p[k][1] >= p[k + 1][1] for p in pts for k in range(78))
assert pts[0][78][1] > pts[2][78][1] and pts[0][1][1] < pts[2][1][1]
for m in (12, 18, 62):
    assert ">month %d</text>" % m in t, m   # the break-even markers
assert "Break-even against reserved: <b>month 18</b>" in t
assert "<td>cloud reserved at $4.92/GPU-h</td><td>321807</td><td>18</td>" in t
PY
mkdir "$TEST_TMP/ro" && chmod 555 "$TEST_TMP/ro"
if [ "$(id -u)" != 0 ]; then
	"$DROVER" cost --html "$TEST_TMP/ro/c.html" >/dev/null 2>"$TEST_TMP/err3"
	expect_eq "--html into a folder it cannot write" "$?" 1
fi
"$DROVER" cost --html "$TEST_TMP/no-such-dir/c.html" >/dev/null 2>"$TEST_TMP/err3"
expect_eq "--html into a missing folder" "$?" 1
grep -q "^drover cost: --html $TEST_TMP/no-such-dir/c.html: No such file or directory$" "$TEST_TMP/err3" ||
	fail "--html error: $(cat "$TEST_TMP/err3")"

# the H200 and B200 files: every figure has its source or says estimate,
# and the figures checked by hand in docs/cost.md
for f in examples/cost/h200.yaml examples/cost/b200.yaml; do
	# (the comment on the figure's line, or right above it)
	awk '/^[ ]*[a-zA-Z]+: [0-9a-z.]+/ && !/#/ && !prev { bad = bad " " NR }
		{ prev = /^[ ]*#/ } END { if (bad) { print FILENAME ":" bad; exit 1 } }' \
		"$f" || fail "$f: figures without a source or 'estimate' on their line"
done
"$DROVER" cost --json examples/cost/h200.yaml | jq -e '.break_even_months == 26
	and .break_even_months_by_cloud == {"onDemand": 17, "reserved": 26, "spot": 43}
	and .monthly_onprem_usd == 183545.71 and .onprem_usd_per_gpu_hour == 2.8062' >/dev/null ||
	fail "h200: $("$DROVER" cost --json examples/cost/h200.yaml)"
"$DROVER" cost --json examples/cost/b200.yaml | jq -e '.break_even_months == 24
	and .break_even_months_by_cloud == {"onDemand": 9, "reserved": 24, "spot": null}
	and .monthly_onprem_usd == 241583.36' >/dev/null ||
	fail "b200: $("$DROVER" cost --json examples/cost/b200.yaml)"
exit 0
