# deploy_files.sh: the files under deploy/ are valid as the tools that read
# them see it: promtool accepts the rules and the scrape configuration, the
# rules name only metrics that drover actually exports, and the dashboard
# is JSON whose queries name only such metrics too. The systemd units: every
# --flag of their ExecStart lines is one the command knows, and
# systemd-analyze verify accepts them (when installed; no systemd runs
# here), on copies that point at this build's binary.
. "$ROOT/tests/integration/lib.sh"
cd "$ROOT/deploy" || fail "no deploy/"

promtool check rules prometheus/drover-rules.yml || fail "promtool rejects drover-rules.yml"
cp prometheus/prometheus.yml prometheus/drover-rules.yml prometheus/drover-cost-rules.yml "$TEST_TMP/"
promtool check config "$TEST_TMP/prometheus.yml" || fail "promtool rejects prometheus.yml"

for d in grafana/*.json; do
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$d" || fail "dashboard $d is not JSON"
done

# Every metric a rule or panel names must be documented as exported.
names=$(grep -ohE '\b(drover_[a-z_]+|DCGM_FI_[A-Z_]+|node_infiniband_[a-z_]+)' prometheus/drover-rules.yml prometheus/drover-cost-rules.yml grafana/*.json |
	sed -E 's/_(bucket|sum|count)$//' | sort -u)
for n in $names; do
	grep -q "$n" "$ROOT/docs/api.md" "$ROOT/docs/agent.md" || fail "$n is used in deploy/ but exported by nothing documented"
done
for u in systemd/drover-server.service systemd/drover-agent.service; do
	cmd=$(basename "$u" .service)
	cmd=${cmd#drover-}
	flags=$(sed -n '/^ExecStart=/,/[^\\]$/p' "$u" | grep -oE -- '--[a-z][a-z-]*' | sort -u)
	[ -n "$flags" ] || fail "$u: no flags found in ExecStart"
	for f in $flags; do
		"$DROVER" "$cmd" --help | grep -qE -- "(^| )$f( |$)" || fail "$u: $f is not a flag of drover $cmd"
	done
	if command -v systemd-analyze >/dev/null; then
		sed "s|/usr/local/bin/drover|$DROVER|g" "$u" >"$TEST_TMP/${u#systemd/}"
		systemd-analyze verify "$TEST_TMP/${u#systemd/}" || fail "systemd-analyze verify rejects $u"
	fi
done

echo "deploy files: ok ($(echo "$names" | wc -w) metric names checked)"
