# deploy_cost.sh: the cost rules and dashboard (deploy/prometheus/
# drover-cost-rules.yml, deploy/grafana/drover-cost.json; docs/cost.md)
# against the tools that read them: promtool accepts the rules, its rule
# unit test shows the budget alerts fire on the right signals (and not on
# the others), and a real Prometheus scraping a `drover up` with a priced
# pool, a running job and a spent budget returns data for every panel's
# expression (variables substituted) and fires DroverTenantBudgetSpent.
. "$ROOT/tests/integration/lib.sh"
command -v prometheus >/dev/null || fail "prometheus is not installed (scripts/install-deps)"
D="$ROOT/deploy"
promtool check rules "$D/prometheus/drover-cost-rules.yml" || fail "promtool rejects drover-cost-rules.yml"
grep -q 'drover-cost-rules.yml' "$D/prometheus/prometheus.yml" || fail "prometheus.yml does not load the cost rules"

# promtool's own evaluator: forecast past budget for 15 m fires, a tenant
# under budget does not; spend at the budget fires at once
cp "$D/prometheus/drover-cost-rules.yml" "$TEST_TMP/"
cat >"$TEST_TMP/cost-test.yml" <<'YML'
rule_files: [drover-cost-rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'drover_tenant_budget_warning{tenant="nlp"}'
        values: '0 1x30'
      - series: 'drover_tenant_budget_warning{tenant="cv"}'
        values: '0x30'
      - series: 'drover_tenant_month_spend_dollars{tenant="nlp"}'
        values: '900 950 1000 1010x30'
      - series: 'drover_tenant_month_spend_dollars{tenant="cv"}'
        values: '10x30'
      - series: 'drover_tenant_budget_dollars{tenant="nlp"}'
        values: '1000x30'
      - series: 'drover_tenant_budget_dollars{tenant="cv"}'
        values: '500x30'
    alert_rule_test:
      - eval_time: 10m
        alertname: DroverTenantBudgetForecast
        exp_alerts: []
      - eval_time: 20m
        alertname: DroverTenantBudgetForecast
        exp_alerts:
          - exp_labels: {severity: warning, tenant: nlp}
            exp_annotations:
              summary: "Tenant nlp will pass its monthly budget at its current burn rate"
              description: "Forecast for this month (UTC) passes the tenant's budget.monthlyUsd; see drover_tenant_month_forecast_dollars."
      - eval_time: 1m
        alertname: DroverTenantBudgetSpent
        exp_alerts: []
      - eval_time: 2m
        alertname: DroverTenantBudgetSpent
        exp_alerts:
          - exp_labels: {severity: critical, tenant: nlp}
            exp_annotations:
              summary: "Tenant nlp has spent its monthly budget"
              description: "With budget.hold: true its new jobs are held (hold budget, reason code Budget) until the 1st (UTC)."
YML
(cd "$TEST_TMP" && promtool test rules cost-test.yml) || fail "promtool test rules: the budget alerts"

# a live controller: a priced pool, a tenant past a tiny budget, a job running
cat >"$TEST_TMP/cluster.yaml" <<'YAML'
kind: Cluster
name: priced
levels: [pool, node]
nodeTypes:
  box8: {gpus: 8, gpuModel: H100, cpu: 64, memory: 512Gi}
topology:
  - name: onprem-a
    provider: onprem
    pricePerGpuHour: 36
    children:
      - name: box
        type: box8
YAML
cat >"$TEST_TMP/tenants.yaml" <<'YAML'
tenants:
  team-a: {budget: {monthlyUsd: 0.001}}
YAML
start_up --cluster "$TEST_TMP/cluster.yaml"
stop_up
echo "tenants: $TEST_TMP/tenants.yaml" >>"$TEST_TMP/state/config.yaml"
start_up --cluster "$TEST_TMP/cluster.yaml"
printf '#!/bin/sh\n#SBATCH --job-name=burn\n#SBATCH --gpus=4\n#SBATCH --account=team-a\nsleep 60\n' >"$TEST_TMP/burn.sh"
id=$("$DROVER" submit --parsable "$TEST_TMP/burn.sh") || fail "submit: $id"
wait_until 30 sh -c "\"$DROVER\" get job $id -o json | grep -q '\"state\": \"running\"'" || fail "job $id did not start"
curl -fsS "$SERVER_URL/metrics" >"$TEST_TMP/metrics.txt" || fail "GET /metrics"
promtool check metrics <"$TEST_TMP/metrics.txt" || fail "promtool check metrics: $(cat "$TEST_TMP/metrics.txt" | grep -v '^#' | head -40)"

pport=$(free_port)
cat >"$TEST_TMP/prometheus.yml" <<YML
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [drover-cost-rules.yml]
scrape_configs:
  - job_name: drover
    static_configs:
      - targets: ["127.0.0.1:$SERVER_PORT"]
YML
prometheus --config.file="$TEST_TMP/prometheus.yml" --storage.tsdb.path="$TEST_TMP/prom-data" \
	--web.listen-address="127.0.0.1:$pport" >"$TEST_TMP/prometheus.log" 2>&1 &
track $!
# count EXPR: how many series the query returns now ("err" when it fails)
count() {
	curl -fsS -m 3 --get "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1" |
		python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]["result"]))' 2>/dev/null || echo err
}
has_data() { n=$(count "$1"); [ "$n" != err ] && [ "$n" -gt 0 ]; }
wait_until 30 has_data 'drover_job_info' || fail "Prometheus has no drover_job_info: $(tail -3 "$TEST_TMP/prometheus.log")"
sleep 3   # a few scrapes, so rate() and increase() have two points

# every panel's expression, variables substituted as Grafana would with "All"
exprs=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["panels"]:
    for t in p["targets"]:
        e = t["expr"].replace("$tenant", ".*").replace("$pool", ".*").replace("$__range", "5m")
        print(p["title"] + "\t" + e)' "$D/grafana/drover-cost.json")
n=0
echo "$exprs" | while IFS='	' read -r title e; do
	wait_until 20 has_data "$e" || fail "panel '$title': no data for $e (got $(count "$e"))"
	echo "panel '$title': $(count "$e") series"
done || exit 1
# the variables' queries name real label values
for v in tenant pool; do
	got=$(curl -fsS --get "http://127.0.0.1:$pport/api/v1/label/$v/values" --data-urlencode 'match[]=drover_cost_dollars_total' |
		python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)["data"]))')
	case " $got " in *" team-a "* | *" onprem-a "*) ;; *) fail "variable $v: values '$got'" ;; esac
done
wait_until 20 has_data 'ALERTS{alertname="DroverTenantBudgetSpent",tenant="team-a",alertstate="firing"}' ||
	fail "DroverTenantBudgetSpent does not fire for team-a: $(curl -fsS "http://127.0.0.1:$pport/api/v1/alerts")"
[ "$(count 'ALERTS{alertname="DroverTenantBudgetSpent",tenant!="team-a"}')" = 0 ] || fail "the alert fires for another tenant"
"$DROVER" cancel "$id" >/dev/null
echo "ok: cost rules and dashboard: promtool tests pass; every panel returns data; the budget alert fires"
