# cp_prometheus.sh: a real Prometheus (Debian's package), started here on a
# free port with its own config and storage, scrapes the controller; the
# query for queue depth returns the number of pending jobs the API shows,
# and promtool finds no problem in the metrics.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
command -v prometheus >/dev/null || fail "prometheus is not installed (scripts/install-deps)"
cp_setup
start_server
start_agent node-a

curl -fsS "$SERVER_URL/metrics" >"$TEST_TMP/metrics.txt" || fail "GET /metrics"
promtool check metrics <"$TEST_TMP/metrics.txt" || fail "promtool check metrics found problems"

# one job runs (8 GPUs), five wait behind it
pod_yaml hold 8 "$(recording_cmd hold)" >"$TEST_TMP/hold.yaml"
run=$(submit "$TEST_TMP/hold.yaml")
wait_job "$run" running 60
for i in 1 2 3 4 5; do submit "$TEST_TMP/hold.yaml" >/dev/null; done
api_pending=$("$DROVER" queue --state pending -o json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
expect_eq "pending in the API" "$api_pending" "5"

pport=$(free_port)
cat >"$TEST_TMP/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: drover
    static_configs:
      - targets: ["127.0.0.1:$SERVER_PORT"]
YML
prometheus --config.file="$TEST_TMP/prometheus.yml" --storage.tsdb.path="$TEST_TMP/prom-data" \
	--web.listen-address="127.0.0.1:$pport" >"$TEST_TMP/prometheus.log" 2>&1 &
track $!

query() {
	curl -fsS -m 2 --get "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1" |
		python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(int(float(r[0]["value"][1])) if r else "none")'
}
depth_is() {
	[ "$(query 'sum(drover_queue_depth)' 2>/dev/null)" = "$1" ]
}
wait_until 60 depth_is "$api_pending" || {
	tail -5 "$TEST_TMP/prometheus.log"
	fail "Prometheus says queue depth '$(query 'sum(drover_queue_depth)')', the API $api_pending"
}
# and it follows a change: cancel two pending jobs
for id in $("$DROVER" queue --state pending -o json | python3 -c 'import json,sys; print(" ".join(str(j["id"]) for j in json.load(sys.stdin)["items"][:2]))'); do
	"$DROVER" cancel "$id" >/dev/null || fail "cancel $id"
done
wait_until 30 depth_is 3 || fail "after two cancels Prometheus says '$(query 'sum(drover_queue_depth)')', want 3"
expect_eq "GPUs allocated per Prometheus" "$(query 'sum(drover_gpus{status="allocated"})')" "8"
echo "ok: Prometheus scraped queue depth $api_pending then 3, as the API shows"
