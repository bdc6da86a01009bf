# agent_prometheus.sh: the agent's /metrics against the real tools.
#   - promtool check metrics finds nothing wrong except what dcgm-exporter's
#     own names and labels bring (camelCase modelName, a counter without
#     _total), which NVIDIA's dashboards need as they are;
#   - a real Prometheus server scrapes the agent (8 simulated GPUs, 2 HCAs,
#     a task on GPU 0) and ingests every series: per metric name, the number
#     of series it stores equals the number of samples the agent wrote.
. "$ROOT/tests/integration/lib.sh"

command -v prometheus >/dev/null || fail "prometheus is not installed (scripts/install-deps)"
command -v promtool >/dev/null || fail "promtool is not installed (scripts/install-deps)"

TOKEN=t0k
start_mock_controller "$TOKEN"
PA=$(free_port)
DROVER_AGENT_TOKEN="$TOKEN" "$DROVER" agent --server "$CTL" --name node-p --listen "127.0.0.1:$PA" \
	--fake-gpus 8xH100 --fake-hcas 2 --state "$TEST_TMP/a" --run-as-self >"$TEST_TMP/agent.log" 2>&1 &
track $!
q() { curl -fsS "$CTL/control/state" | jq -r "$1"; }
registered() { [ "$(q '.nodes["node-p"].registers | length')" -ge 1 ]; }
wait_until 10 registered || { cat "$TEST_TMP/agent.log"; fail "the agent did not register"; }
curl -fsS -X POST "$CTL/control/assign" -d '{"node": "node-p", "tasks": [{"task_id": "7.0", "job_id": 7,
 "epoch": 1, "desired": "run", "argv": ["sleep", "120"], "env": {}, "gpus": [0], "rank": 0,
 "world_size": 1}]}' >/dev/null
running() { [ "$(q '[.nodes["node-p"].reports[] | select(.state == "running")] | length')" -ge 1 ]; }
wait_until 10 running || fail "the task did not start"

# --- promtool
curl -fsS "http://127.0.0.1:$PA/metrics" >"$TEST_TMP/metrics.txt" || fail "no /metrics"
grep -q 'hpc_job="7"' "$TEST_TMP/metrics.txt" || fail "no hpc_job label for the task's GPU"
promtool check metrics <"$TEST_TMP/metrics.txt" >"$TEST_TMP/promtool.txt" 2>&1
others=$(grep -v '^DCGM_FI_' "$TEST_TMP/promtool.txt")
[ -z "$others" ] || fail "promtool finds problems beyond dcgm-exporter's names: $others"
echo "promtool: $(wc -l <"$TEST_TMP/promtool.txt") remarks, all about dcgm-exporter's own names"

# --- a real Prometheus scrape
PP=$(free_port)
cat >"$TEST_TMP/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: agent
    static_configs:
      - targets: ["127.0.0.1:$PA"]
YML
prometheus --config.file="$TEST_TMP/prometheus.yml" --storage.tsdb.path="$TEST_TMP/prom" \
	--web.listen-address="127.0.0.1:$PP" >"$TEST_TMP/prometheus.log" 2>&1 &
track $!
PROM="http://127.0.0.1:$PP"
query() { curl -fsS --get "$PROM/api/v1/query" --data-urlencode "query=$1"; }
scraped() { [ "$(query 'up{job="agent"}' | jq -r '.data.result[0].value[1]')" = 1 ]; }
wait_until 60 scraped || { tail -20 "$TEST_TMP/prometheus.log"; fail "Prometheus did not scrape the agent"; }
sleep 2
# per metric name: series in the exposition vs series Prometheus holds
grep -v '^#' "$TEST_TMP/metrics.txt" | sed 's/[{ ].*//' | sort | uniq -c | awk '{print $2, $1}' >"$TEST_TMP/want.txt"
query 'count by (__name__) ({job="agent",__name__=~"DCGM_.*|drover_.*|node_infiniband_.*"})' |
	jq -r '.data.result[] | "\(.metric.__name__) \(.value[1])"' | sort >"$TEST_TMP/got.txt"
diff "$TEST_TMP/want.txt" "$TEST_TMP/got.txt" || fail "Prometheus holds other series than the agent wrote (want < > got)"
expect_eq "dropped samples" "$(query 'scrape_samples_scraped{job="agent"} - scrape_samples_post_metric_relabeling{job="agent"}' | jq -r '.data.result[0].value[1]')" 0
expect_eq "query by dcgm labels" "$(query 'DCGM_FI_DEV_GPU_UTIL{hpc_job="7",modelName="NVIDIA H100 80GB HBM3",Hostname="node-p"}' | jq -r '.data.result[0].metric.gpu')" 0
echo "ok: Prometheus ingested $(awk '{s += $2} END {print s}' "$TEST_TMP/got.txt") series in $(wc -l <"$TEST_TMP/got.txt") families"
