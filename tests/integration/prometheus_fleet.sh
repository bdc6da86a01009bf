# prometheus_fleet.sh: a real Prometheus watching a small fleet while jobs
# run, each monitoring item answered by a PromQL query, as an operator would
# ask it. The fleet: `drover up` (node box, 8 simulated H100s, 2 fake HCAs)
# and two more agents: nv-1 on the NVML stand-in (4 GPUs, one XID 31) and
# sm-1 (2 simulated H100s) serving /metrics apart (--metrics-listen).
# Prometheus finds the agents through the controller's service discovery
# (GET /v1/prometheus/targets, a user's token) and loads
# deploy/prometheus/drover-rules.yml. Jobs: an 8-GPU one (GPU utilisation
# and memory per job, fabric traffic), two half-GPU ones sharing a GPU (each
# one's share its own series; the shares sum to the GPU's reading), one
# really OOM-killed (the cgroup memory controller, v1 on this host), one
# that cannot fit (queue depth, pending reasons). Then: promtool on the
# controller's and the agents' own series, and every panel of every
# dashboard in deploy/grafana (variables as "All") returns data (the cost
# dashboard's own test, with priced pools and budgets, is deploy_cost.sh).
. "$ROOT/tests/integration/lib.sh"

command -v prometheus >/dev/null || fail "prometheus is not installed (scripts/install-deps)"
command -v promtool >/dev/null || fail "promtool is not installed (scripts/install-deps)"

start_up --fake-hcas 2
conf="$TEST_TMP/state/config.yaml"
(umask 077 && sed -n 's/^cluster_token: *"\(.*\)"$/\1/p' "$conf" >"$TEST_TMP/agent-token")
# (without a newline: Prometheus sends a credentials file's bytes as they are)
(umask 077 && printf %s "$(sed -n 's/^  - token: *"\(.*\)"$/\1/p' "$conf" | head -1)" >"$TEST_TMP/user-token")
[ -s "$TEST_TMP/agent-token" ] && [ -s "$TEST_TMP/user-token" ] || fail "no tokens in $conf"
SERVER_URL="http://127.0.0.1:$SERVER_PORT"

mkdir -p "$TEST_TMP/lib"
${CC:-cc} -shared -fPIC -O1 -Wl,-soname,libnvidia-ml.so.1 -o "$TEST_TMP/lib/libnvidia-ml.so.1" \
	"$ROOT/tests/nvml-standin/nvml.c" || fail "cannot build the NVML stand-in"
agent() { # NAME ARGS...
	_n=$1
	shift
	"$DROVER" agent --server "$SERVER_URL" --token-file "$TEST_TMP/agent-token" --name "$_n" \
		--state "$TEST_TMP/agent-$_n" --run-as-self "$@" >"$TEST_TMP/agent-$_n.log" 2>&1 &
	track $!
}
LD_LIBRARY_PATH="$TEST_TMP/lib" agent nv-1 --listen "127.0.0.1:$(free_port)"
SM_METRICS=$(free_port)
agent sm-1 --fake-gpus 2xH100 --listen "127.0.0.1:$(free_port)" --metrics-listen "127.0.0.1:$SM_METRICS"
wait_until 20 node_is nv-1 up || fail "nv-1 did not come up: $(cat "$TEST_TMP/agent-nv-1.log")"
wait_until 20 node_is sm-1 up || fail "sm-1 did not come up: $(cat "$TEST_TMP/agent-sm-1.log")"

# --- service discovery: the controller lists the three agents' /metrics
curl -fsS -H "Authorization: Bearer $(cat "$TEST_TMP/user-token")" "$SERVER_URL/v1/prometheus/targets" \
	>"$TEST_TMP/targets.json" || fail "GET /v1/prometheus/targets"
expect_eq "http_sd targets" "$(jq -r 'map(.labels.__meta_drover_node + "=" + .targets[0]) | sort | join(" ")' "$TEST_TMP/targets.json" |
	sed 's/=127.0.0.1:[0-9]*//g')" "box nv-1 sm-1"
expect_eq "sm-1 scraped at --metrics-listen" \
	"$(jq -r '.[] | select(.labels.__meta_drover_node == "sm-1") | .targets[0]' "$TEST_TMP/targets.json")" "127.0.0.1:$SM_METRICS"

# --- jobs
pod() { # NAME RESOURCES COMMAND [ANNOTATIONS]
	printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: %s%s}\nspec:\n  containers:\n  - name: main\n    image: none\n    command: %s\n    resources: {limits: {%s}}\n' \
		"$1" "${4:+, annotations: {$4\}}" "$3" "$2" >"$TEST_TMP/$1.yaml"
	"$DROVER" submit --parsable "$TEST_TMP/$1.yaml" || fail "submit $1"
}
BIG=$(pod big 'nvidia.com/gpu: 8' '["sleep", "90"]')
HALF1=$(pod half1 'cpu: 1' '["sleep", "90"]' '"drover.io/gpu-fraction": "0.5"')
HALF2=$(pod half2 'cpu: 1' '["sleep", "90"]' '"drover.io/gpu-fraction": "0.5"')
OOM=$(pod hog 'nvidia.com/gpu: 1, memory: 64Mi' '["python3", "-c", "x = bytearray(512 << 20); import time; time.sleep(30)"]')
WAIT=$(pod wait 'nvidia.com/gpu: 8' '["true"]')
state() { "$DROVER" get job "$1" -o json | jq -r .state; }
is() { [ "$(state "$1")" = "$2" ]; }
wait_until 30 is "$BIG" running || fail "job big: $(state "$BIG")"
wait_until 30 is "$OOM" out_of_memory || fail "job hog ended $(state "$OOM"), expected out_of_memory"

# --- Prometheus
PP=$(free_port)
cp "$ROOT/deploy/prometheus/drover-rules.yml" "$TEST_TMP/"
cat >"$TEST_TMP/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [drover-rules.yml]
scrape_configs:
  - job_name: drover-server
    static_configs:
      - targets: ["127.0.0.1:$SERVER_PORT"]
  - job_name: drover-agents
    http_sd_configs:
      - url: $SERVER_URL/v1/prometheus/targets
        refresh_interval: 1s
        authorization:
          type: Bearer  # said outright: Prometheus 2.42's http_sd sends none otherwise
          credentials_file: $TEST_TMP/user-token
    relabel_configs:
      - source_labels: [__meta_drover_node]
        target_label: node
YML
prometheus --config.file="$TEST_TMP/prometheus.yml" --storage.tsdb.path="$TEST_TMP/prom" \
	--web.listen-address="127.0.0.1:$PP" >"$TEST_TMP/prometheus.log" 2>&1 &
track $!
PROM="http://127.0.0.1:$PP"
query() { curl -fsS --get "$PROM/api/v1/query" --data-urlencode "query=$1"; }
value() { query "$1" | jq -r '.data.result[0].value[1] // empty'; }
# holds QUERY: the query returns at least one series (a comparison filters)
holds() { [ "$(query "$1" | jq '.data.result | length')" -gt 0 ]; }
ask() { # WHAT QUERY
	wait_until 30 holds "$2" || fail "$1: no answer to $2 (now: $(query "$2" | jq -c .data.result))"
	echo "ok  $1: $2 -> $(query "$2" | jq -c '[.data.result[] | .value[1]]')"
}
wait_until 30 holds 'count(up{job="drover-agents"} == 1) == 3' ||
	{ tail -5 "$TEST_TMP/prometheus.log"; fail "Prometheus did not find and scrape the 3 agents through the controller"; }

ask "GPU utilisation per job" "avg by (hpc_job) (DCGM_FI_DEV_GPU_UTIL{hpc_job=\"$BIG\"}) > 50"
ask "GPU memory per job, MiB" "sum by (hpc_job) (DCGM_FI_DEV_FB_USED{hpc_job=\"$BIG\"}) > 100000"
ask "pool label from service discovery" 'count(DCGM_FI_DEV_GPU_UTIL{pool="default"}) == 14'
ask "OOM kills on the nodes" 'sum(drover_node_oom_kills_total) == 1'
ask "the OOM-killed job's task" "drover_task_oom_kills_total{hpc_job=\"$OOM\"} == 1"
ask "jobs out of memory" 'drover_jobs{state="out_of_memory"} == 1'
# 8 busy GPUs x 5 GB/s over 2 fake HCAs of 50 GB/s: 0.4 each
ask "InfiniBand saturation" 'drover:infiniband_port_saturation:ratio{node="box"} > 0.3 < 0.5'
ask "InfiniBand link rate" 'node_infiniband_rate_bytes_per_second{device="mlx5_0"} == 5e10'
ask "XID errors, a counter" 'drover_gpu_xid_errors_total{node="nv-1",gpu="1",xid="31"} == 1'
# shared GPUs: each job's share is a series of its own beside the GPU's,
# and the shares add up to the GPU's reading, so sums over jobs count a
# shared GPU once (docs/agent.md, "Shared GPUs")
ask "each half-GPU job's share, its own series" \
	"count(drover_job_gpu_share{hpc_job=~\"$HALF1|$HALF2\"} == 0.5) == 2"
ask "... on one GPU" \
	"count(count by (node, gpu) (drover_job_gpu_share{hpc_job=~\"$HALF1|$HALF2\"})) == 1"
ask "a shared GPU's job utilisations sum to the GPU's" \
	'count(abs(sum by (node, gpu) (drover_job_gpu_utilization_percent) - on (node, gpu) sum by (node, gpu) (DCGM_FI_DEV_GPU_UTIL{hpc_job!=""})) < 0.001) == count(DCGM_FI_DEV_GPU_UTIL{hpc_job!=""})'
ask "... and their framebuffer to the GPU's" \
	'count(abs(sum by (node, gpu) (drover_job_gpu_memory_used_bytes) - on (node, gpu) sum by (node, gpu) (DCGM_FI_DEV_FB_USED{hpc_job!=""}) * 1048576) < 1) == count(DCGM_FI_DEV_FB_USED{hpc_job!=""})'
ask "GPUs in use summed over jobs: the busy GPUs, once each" \
	'sum(drover_job_gpu_share) == count(DCGM_FI_DEV_GPU_UTIL{hpc_job!=""})'
ask "a half-GPU job's GPU utilisation, its part only" \
	"sum(drover_job_gpu_utilization_percent{hpc_job=\"$HALF1\"}) < on () max(DCGM_FI_DEV_GPU_UTIL{hpc_job=~\"$HALF1|$HALF2\"})"
ask "queue depth" 'sum(drover_queue_depth) >= 1'
ask "pending reasons" 'sum by (reason_code) (drover_pending_jobs{reason_code!="None"}) >= 1'
ask "wait to start per tenant" 'sum by (tenant) (drover_job_wait_seconds_count) >= 3'
ask "GPUs: total = allocated + free + unavailable" \
	'sum(drover_gpus{status="total"}) == sum(drover_gpus{status=~"allocated|free|unavailable"})'
"$DROVER" nodes >/dev/null
# (its jobs run on: the panels below want data)
curl -fsS -X POST -H "Authorization: Bearer $(cat "$TEST_TMP/user-token")" -d '{"stop_tasks": false}' \
	"$SERVER_URL/v1/nodes/nv-1/drain" >/dev/null ||
	fail "drain nv-1"
ask "a drained node's idle GPUs are unavailable" 'sum(drover_gpus{status="unavailable"}) > 0'
ask "... and still total = allocated + free + unavailable" \
	'sum(drover_gpus{status="total"}) == sum(drover_gpus{status=~"allocated|free|unavailable"})'

# --- promtool on drover's own series (dcgm-exporter's names are its own choice)
curl -fsS "$SERVER_URL/metrics" >"$TEST_TMP/server.prom" || fail "controller /metrics"
promtool check metrics <"$TEST_TMP/server.prom" || fail "promtool check metrics: the controller"
for t in $(jq -r '.[].targets[0]' "$TEST_TMP/targets.json"); do
	curl -fsS "http://$t/metrics" | grep -v '^DCGM_FI_\|^# [A-Z]* DCGM_FI_' >"$TEST_TMP/agent.prom"
	promtool check metrics <"$TEST_TMP/agent.prom" || fail "promtool check metrics: the agent at $t"
done
promtool check rules "$TEST_TMP/drover-rules.yml" >/dev/null || fail "promtool check rules"

# --- every dashboard panel returns data, variables substituted as "All"
n=0
for d in "$ROOT"/deploy/grafana/*.json; do
	# the cost dashboard needs priced pools and budgets: deploy_cost.sh
	[ "$(basename "$d")" = drover-cost.json ] && continue
	jq -r '.panels[] | .title as $t | .targets[]? | "\($t)\t\(.expr)"' "$d" >"$TEST_TMP/exprs.tsv"
	while IFS="$(printf '\t')" read -r title expr; do
		e=$(echo "$expr" | sed -e 's/\$__rate_interval/1m/g' -e 's/\$__range/1h/g' -e 's/\$[a-z_]*/.*/g')
		holds "$e" || fail "$(basename "$d"): panel '$title': no data for $e"
		n=$((n + 1))
	done <"$TEST_TMP/exprs.tsv"
done
echo "ok: $n dashboard expressions return data"
