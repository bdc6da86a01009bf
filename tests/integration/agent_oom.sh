# agent_oom.sh: a task over its memory limit is really OOM-killed (cgroup v2,
# or the v1 memory controller of hybrid hosts like this one), its job ends
# out_of_memory (CONTRACTS.md §1: squeue's OOM), and the agent's counters say
# so: drover_node_oom_kills_total on the node, drover_task_oom_kills_total for
# the task, still there after the task has ended. Skipped where no cgroup
# memory controller is usable.
. "$ROOT/tests/integration/lib.sh"

start_server
start_agent node-m 2xH100
curl -fsS -H "Authorization: Bearer $CLUSTER_TOKEN" "http://127.0.0.1:$AGENT_PORT_node_m/v1/inventory" >"$TEST_TMP/inv.json" ||
	fail "no inventory"
[ "$(jq -r .cgroup_limits "$TEST_TMP/inv.json")" = true ] ||
	skip "no cgroup memory controller here: $(jq -r .cgroup_why "$TEST_TMP/inv.json")"

cat >"$TEST_TMP/oom.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: hog}
spec:
  containers:
  - name: main
    image: none
    command: ["python3", "-c", "x = bytearray(512 << 20); import time; time.sleep(30)"]
    resources: {limits: {nvidia.com/gpu: 1, memory: 64Mi}}
YAML
id=$("$DROVER" submit --parsable "$TEST_TMP/oom.yaml") || fail "submit"
state() { "$DROVER" get job "$id" -o json | jq -r .state; }
ended() { [ "$(state)" = out_of_memory ]; }
wait_until 30 ended || fail "job $id ended '$(state)', expected out_of_memory: $("$DROVER" describe "$id")"
m() { curl -fsS "http://127.0.0.1:$AGENT_PORT_node_m/metrics"; }
counted() { m | grep -q '^drover_node_oom_kills_total{Hostname="node-m"} 1$'; }
wait_until 10 counted || fail "node OOM counter: $(m | grep oom)"
m | grep -q "^drover_task_oom_kills_total{Hostname=\"node-m\",hpc_job=\"$id\",task=\"$id.0\"} 1$" ||
	fail "the task's OOM series is gone: $(m | grep oom)"
# a second job that stays within its limit adds nothing
sed -e 's/name: hog/name: fine/' -e 's/512 << 20/8 << 20/' -e 's/time.sleep(30)/time.sleep(0)/' \
	"$TEST_TMP/oom.yaml" >"$TEST_TMP/fine.yaml"
id2=$("$DROVER" submit --parsable "$TEST_TMP/fine.yaml") || fail "submit"
ok2() { [ "$("$DROVER" get job "$id2" -o json | jq -r .state)" = succeeded ]; }
wait_until 30 ok2 || fail "job $id2 within its limit did not succeed"
expect_eq "node OOM counter after a job within its limit" \
	"$(m | sed -n 's/^drover_node_oom_kills_total{Hostname="node-m"} //p')" 1
echo "ok: job $id OOM-killed for real, out_of_memory, counted on the node and the task"
