# deploy_files.sh: the files under deploy/ are valid as the tools that read
# them see it: promtool accepts the rules and the scrape configuration, the
# rules name only metrics that drover actually exports, and the dashboard
# is JSON whose queries name only such metrics too.
. "$ROOT/tests/integration/lib.sh"
cd "$ROOT/deploy" || fail "no deploy/"

promtool check rules prometheus/drover-rules.yml || fail "promtool rejects drover-rules.yml"
cp prometheus/prometheus.yml prometheus/drover-rules.yml "$TEST_TMP/"
promtool check config "$TEST_TMP/prometheus.yml" || fail "promtool rejects prometheus.yml"

python3 -c 'import json,sys; json.load(open(sys.argv[1]))' grafana/drover-overview.json ||
	fail "dashboard is not JSON"

# Every metric a rule or panel names must be documented as exported.
names=$(grep -ohE '\b(drover_[a-z_]+|DCGM_FI_[A-Z_]+)' prometheus/drover-rules.yml grafana/drover-overview.json |
	sed -E 's/_(bucket|sum|count)$//' | sort -u)
for n in $names; do
	grep -q "$n" "$ROOT/docs/api.md" "$ROOT/docs/agent.md" || fail "$n is used in deploy/ but exported by nothing documented"
done
echo "deploy files: ok ($(echo "$names" | wc -w) metric names checked)"
