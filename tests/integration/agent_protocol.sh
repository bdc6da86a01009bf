# agent_protocol.sh: two real `drover agent` processes with simulated GPUs
# against a controller that speaks only the agent protocol of docs/api.md
# (tests/integration/mock_controller.py), so the agent's side is checked
# whatever the state of the real server:
#   - register carries the inventory (8 GPUs, NVLink matrix, HCAs, labels);
#   - a 2-node gang: each task sees exactly its GPUs, consistent ranks, one
#     master address and port, NCCL settings from the placement, the job's
#     env on top (the task writes its env to its stdout, read back through
#     the agent's task-log route);
#   - metrics follow the task (utilization and hpc_job on its GPU only);
#   - desired "stop" ends a task with SIGTERM, reported exactly;
#   - a container with no command fails at once with the reason;
#   - fencing: after a 409 the agent registers again listing what runs, and
#     kills a task the controller no longer lists;
#   - an agent SIGKILLed while its task runs: the next agent adopts the task
#     (its shim), never starts it twice, and reports its end once.
. "$ROOT/tests/integration/lib.sh"

TOKEN=cluster-secret
start_mock_controller "$TOKEN"

PA=$(free_port)
PB=$(free_port)
DROVER_AGENT_TOKEN="$TOKEN" "$DROVER" agent --server "$CTL" --name node-a --listen "127.0.0.1:$PA" \
	--fake-gpus 8xH100 --labels zone=a,rack=r1 --state "$TEST_TMP/a" --grace 2 \
	--run-as-self >"$TEST_TMP/agent-a.log" 2>&1 &
track $!
DROVER_AGENT_TOKEN="$TOKEN" "$DROVER" agent --server "$CTL" --name node-b --listen "127.0.0.1:$PB" \
	--fake-gpus 8xh100 --fake-hcas 2 --state "$TEST_TMP/b" --grace 2 \
	--run-as-self >"$TEST_TMP/agent-b.log" 2>&1 &
PID_B=$!
track "$PID_B"

state() { curl -fsS "$CTL/control/state"; }
q() { state | jq -r "$1"; }
registered() { [ "$(q ".nodes[\"$1\"].registers | length")" -ge "${2:-1}" ]; }
wait_until 10 registered node-a || { cat "$TEST_TMP/agent-a.log"; fail "node-a did not register"; }
wait_until 10 registered node-b || { cat "$TEST_TMP/agent-b.log"; fail "node-b did not register"; }

# --- the inventory
expect_eq "GPUs" "$(q '.nodes["node-a"].registers[0].gpus | length')" 8
expect_eq "GPU model" "$(q '.nodes["node-a"].registers[0].gpus[3].model')" "NVIDIA H100 80GB HBM3"
expect_eq "backend" "$(q '.nodes["node-a"].registers[0].backend')" fake
expect_eq "matrix" "$(q '.nodes["node-a"].registers[0].topology.gpu_matrix[0][0:3] | join(" ")')" "X NV18 NV18"
# (the agent adds drover.io/runtime, the runtime it runs tasks with: docs/agent.md)
expect_eq "labels" "$(q '.nodes["node-a"].registers[0].labels | to_entries | map("\(.key)=\(.value)") | join(",")')" "zone=a,rack=r1,drover.io/runtime=host"
expect_eq "HCAs of node-b" "$(q '.nodes["node-b"].registers[0].topology.nics | map(.name) | join(",")')" "mlx5_0,mlx5_1"
expect_eq "HCA near GPUs" "$(q '.nodes["node-b"].registers[0].topology.nics[1].near_gpus | map(tostring) | join(",")')" "4,5,6,7"
expect_eq "agent_url" "$(q '.nodes["node-a"].registers[0].agent_url')" "http://127.0.0.1:$PA"
ADDR_A=$(q '.nodes["node-a"].registers[0].address')
ADDR_B=$(q '.nodes["node-b"].registers[0].address')
[ -n "$ADDR_A" ] || fail "no address in register"

# --- a 2-node gang
assign() { curl -fsS -X POST -d "$2" "$CTL/control/assign" >/dev/null || fail "assign $1"; }
gang_task() { # rank node gpus
	cat <<J
{"task_id": "42.$1", "job_id": 42, "job_name": "gang", "epoch": 7, "desired": "run",
 "user": "nobody-here", "runtime": "host", "image": "pytorch/pytorch:2.4", "container": "trainer",
 "argv": ["env"], "script": null, "workdir": null,
 "env": {"NCCL_NET_GDR_LEVEL": "5", "ODD": "a b \$(x) ;"},
 "gpus": $3, "gpu_milli": 1000, "cpu_milli": 1000, "mem_mib": 1024,
 "rank": $1, "world_size": 2, "local_rank": 0, "local_world_size": 1, "node_rank": $1, "nnodes": 2,
 "master_addr": "$ADDR_A", "master_port": 29507,
 "peers": [{"rank": 0, "node": "node-a", "address": "$ADDR_A"}, {"rank": 1, "node": "node-b", "address": "$ADDR_B"}],
 "time_limit_s": 0, "grace_s": 2}
J
}
assign a "{\"node\": \"node-a\", \"tasks\": [$(gang_task 0 node-a '[0,1,2,3]')]}"
assign b "{\"node\": \"node-b\", \"tasks\": [$(gang_task 1 node-b '[4,5,6,7]')]}"

exited() { # node task
	[ "$(q "[.nodes[\"$1\"].reports[] | select(.task_id == \"$2\" and .state == \"exited\")] | length")" -ge 1 ]
}
wait_until 10 exited node-a 42.0 || { cat "$TEST_TMP/agent-a.log"; fail "42.0 did not finish"; }
wait_until 10 exited node-b 42.1 || { cat "$TEST_TMP/agent-b.log"; fail "42.1 did not finish"; }
expect_eq "42.0 reports" "$(q '[.nodes["node-a"].reports[] | select(.task_id == "42.0") | .state] | join(",")')" "running,exited"
expect_eq "42.0 exit code" "$(q '.nodes["node-a"].reports[] | select(.task_id == "42.0" and .state == "exited") | .exit_code')" 0

logs() { # port task [stream]
	curl -fsS -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$1/v1/tasks/$2/logs?stream=${3:-stdout}"
}
logs "$PA" 42.0 >"$TEST_TMP/env-0" || fail "no logs for 42.0 from node-a"
logs "$PB" 42.1 >"$TEST_TMP/env-1" || fail "no logs for 42.1 from node-b"
v() { grep "^$2=" "$TEST_TMP/env-$1" | head -1 | cut -d= -f2-; }
expect_eq "GPUs of rank 0" "$(v 0 CUDA_VISIBLE_DEVICES)" "0,1,2,3"
expect_eq "GPUs of rank 1" "$(v 1 CUDA_VISIBLE_DEVICES)" "4,5,6,7"
expect_eq "NVIDIA_VISIBLE_DEVICES rank 1" "$(v 1 NVIDIA_VISIBLE_DEVICES)" "4,5,6,7"
expect_eq "ranks" "$(v 0 RANK) $(v 1 RANK)" "0 1"
expect_eq "node ranks" "$(v 0 NODE_RANK) $(v 1 NODE_RANK)" "0 1"
expect_eq "world size" "$(v 0 WORLD_SIZE) $(v 1 WORLD_SIZE)" "2 2"
expect_eq "one master" "$(v 0 MASTER_ADDR):$(v 0 MASTER_PORT)" "$(v 1 MASTER_ADDR):$(v 1 MASTER_PORT)"
expect_eq "master" "$(v 0 MASTER_ADDR):$(v 0 MASTER_PORT)" "$ADDR_A:29507"
expect_eq "JAX" "$(v 1 JAX_COORDINATOR_ADDRESS) $(v 1 JAX_PROCESS_ID) $(v 1 JAX_NUM_PROCESSES)" "$ADDR_A:29507 1 2"
expect_eq "TF_CONFIG" "$(v 1 TF_CONFIG | jq -c '[(.cluster.worker | length), .task.index]')" "[2,1]"
expect_eq "IB off without HCAs" "$(v 0 NCCL_IB_DISABLE)" "1"
expect_eq "IB HCAs" "$(v 1 NCCL_IB_HCA)" "mlx5_0,mlx5_1"
expect_eq "job env wins" "$(v 1 NCCL_NET_GDR_LEVEL)" "5"
expect_eq "no interpolation" "$(v 0 ODD)" 'a b $(x) ;'
expect_eq "DROVER_IMAGE" "$(v 0 DROVER_IMAGE)" "pytorch/pytorch:2.4"
expect_eq "logs of a task the agent never ran" \
	"$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PA/v1/tasks/99.0/logs")" 404
expect_eq "logs without the token" \
	"$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PA/v1/tasks/42.0/logs")" 401

# --- metrics follow the task
metric() { # port series-regex
	curl -fsS "http://127.0.0.1:$1/metrics" | grep -E "$2" | head -1 | awk '{print $NF}'
}
assign a '{"node": "node-a", "tasks": [{"task_id": "43.0", "job_id": 43, "epoch": 8, "desired": "run",
 "argv": ["sleep", "60"], "env": {}, "gpus": [2], "rank": 0, "world_size": 1, "local_rank": 0,
 "local_world_size": 1, "node_rank": 0, "nnodes": 1, "master_addr": "127.0.0.1", "master_port": 29508,
 "grace_s": 2}]}'
running() { [ "$(q "[.nodes[\"$1\"].reports[] | select(.task_id == \"$2\" and .state == \"running\")] | length")" -ge 1 ]; }
wait_until 10 running node-a 43.0 || fail "43.0 did not start"
u2=$(metric "$PA" '^DCGM_FI_DEV_GPU_UTIL\{gpu="2".*hpc_job="43"')
u3=$(metric "$PA" '^DCGM_FI_DEV_GPU_UTIL\{gpu="3"')
[ -n "$u2" ] && [ "$u2" -ge 80 ] || fail "GPU 2 under job 43: utilization '$u2', expected >= 80 with hpc_job=\"43\""
expect_eq "idle GPU 3" "$u3" 0
[ "$(metric "$PA" '^DCGM_FI_DEV_FB_USED\{gpu="2"')" -gt 40000 ] || fail "GPU 2 memory does not follow the task"
curl -fsS "http://127.0.0.1:$PA/metrics" | grep -q 'gpu="3".*hpc_job' && fail "hpc_job on an idle GPU"

# --- desired stop: SIGTERM, reported exactly; the GPU goes idle again
assign a '{"node": "node-a", "tasks": [{"task_id": "43.0", "job_id": 43, "epoch": 8, "desired": "stop",
 "stop_reason": "cancelled by ops", "grace_s": 2}]}'
wait_until 10 exited node-a 43.0 || fail "43.0 did not stop"
expect_eq "signal" "$(q '.nodes["node-a"].reports[] | select(.task_id == "43.0" and .state == "exited") | .signal')" 15
expect_eq "not OOM" "$(q '.nodes["node-a"].reports[] | select(.task_id == "43.0" and .state == "exited") | .oom_killed')" false
expect_eq "idle again" "$(metric "$PA" '^DCGM_FI_DEV_GPU_UTIL\{gpu="2"')" 0

# --- no command under runtime host
assign b '{"node": "node-b", "tasks": [{"task_id": "44.0", "job_id": 44, "epoch": 9, "desired": "run",
 "argv": [], "script": null, "container": "trainer", "image": "nvcr.io/nvidia/pytorch:24.01-py3",
 "env": {}, "gpus": [0], "rank": 0, "world_size": 1}]}'
failed() { [ "$(q "[.nodes[\"$1\"].reports[] | select(.task_id == \"$2\" and .state == \"failed\")] | length")" -ge 1 ]; }
wait_until 10 failed node-b 44.0 || fail "44.0 was not reported failed"
expect_eq "reason" "$(q '.nodes["node-b"].reports[] | select(.task_id == "44.0") | .reason')" \
	'container "trainer" names no command; runtime host runs only a given command (image nvcr.io/nvidia/pytorch:24.01-py3)'

# --- a time limit stops the task (SIGTERM, then the grace)
assign b '{"node": "node-b", "tasks": [{"task_id": "46.0", "job_id": 46, "epoch": 11, "desired": "run",
 "argv": ["sleep", "60"], "env": {}, "gpus": [1], "rank": 0, "world_size": 1, "time_limit_s": 1}]}'
wait_until 10 exited node-b 46.0 || fail "46.0 outlived its time limit"
expect_eq "time limit" "$(q '.nodes["node-b"].reports[] | select(.task_id == "46.0" and .state == "exited") | "\(.signal) \(.reason)"')" "15 time limit reached"

# --- a heartbeat reply's kill list stops the task at once
assign b '{"node": "node-b", "tasks": [{"task_id": "48.0", "job_id": 48, "epoch": 13, "desired": "run",
 "argv": ["sleep", "60"], "env": {}, "gpus": [3], "rank": 0, "world_size": 1}]}'
wait_until 10 running node-b 48.0 || fail "48.0 did not start"
curl -fsS -X POST "$CTL/control/kill" -d '{"node": "node-b", "kill": [{"task_id": "48.0", "epoch": 13, "reason": "stale epoch"}]}' >/dev/null
wait_until 10 exited node-b 48.0 || fail "48.0 survived a heartbeat kill"
expect_eq "heartbeat kill" "$(q '.nodes["node-b"].reports[] | select(.task_id == "48.0" and .state == "exited") | "\(.signal) \(.reason)"')" "9 stale epoch"

# --- fencing: the session goes stale; the agent registers again, listing the
# running task; the controller's list no longer has it; the agent kills it.
assign a '{"node": "node-a", "tasks": [{"task_id": "45.0", "job_id": 45, "epoch": 10, "desired": "run",
 "argv": ["sleep", "60"], "env": {}, "gpus": [5], "rank": 0, "world_size": 1}]}'
wait_until 10 running node-a 45.0 || fail "45.0 did not start"
curl -fsS -X POST -d '{"node": "node-a"}' "$CTL/control/expire" >/dev/null
wait_until 10 registered node-a 2 || fail "node-a did not register again after a 409"
expect_eq "running list" "$(q '.nodes["node-a"].registers[1].running | map("\(.task_id)@\(.epoch)") | join(",")')" "45.0@10"
assign a '{"node": "node-a", "tasks": []}'
wait_until 10 exited node-a 45.0 || fail "45.0 was not killed once unlisted"
expect_eq "fenced by SIGKILL" "$(q '.nodes["node-a"].reports[] | select(.task_id == "45.0" and .state == "exited") | .signal')" 9
[ "$(q '.nodes["node-a"].heartbeats')" -ge 1 ] || fail "no heartbeats"
expect_eq "heartbeat GPUs" "$(q '.nodes["node-a"].last_heartbeat.gpus | length')" 8

# --- an agent killed with SIGKILL leaves its task running under its shim;
# the next agent on the node adopts it (listed at register, never started
# a second time) and reports its end exactly once
assign b '{"node": "node-b", "tasks": [{"task_id": "47.0", "job_id": 47, "epoch": 12, "desired": "run",
 "argv": ["sleep", "300"], "env": {}, "gpus": [2], "rank": 0, "world_size": 1}]}'
wait_until 10 running node-b 47.0 || fail "47.0 did not start"
tpid=$(q '.nodes["node-b"].reports[] | select(.task_id == "47.0" and .state == "running") | .pid')
nreg=$(q '.nodes["node-b"].registers | length')
kill -KILL "$PID_B"
sleep 0.3
kill -0 "$tpid" 2>/dev/null || fail "the task died with its agent (it should outlive a SIGKILL of it)"
DROVER_AGENT_TOKEN="$TOKEN" "$DROVER" agent --server "$CTL" --name node-b --listen none \
	--fake-gpus 8xh100 --state "$TEST_TMP/b" --run-as-self >"$TEST_TMP/agent-b2.log" 2>&1 &
track $!
wait_until 10 registered node-b $((nreg + 1)) || fail "the restarted agent did not register"
expect_eq "the restarted agent lists the adopted task" \
	"$(q ".nodes[\"node-b\"].registers[$nreg].running | map(\"\(.task_id)@\(.epoch) \(.pid)\") | join(\",\")")" "47.0@12 $tpid"
grep -q "task 47.0 (epoch 12) adopted: its shim (pid $tpid) still runs it" "$TEST_TMP/agent-b2.log" ||
	fail "the restarted agent did not say it adopted 47.0: $(cat "$TEST_TMP/agent-b2.log")"
sleep 1
kill -0 "$tpid" 2>/dev/null || fail "the adopted task was stopped"
grep -q "task 47.0 (epoch 12) started" "$TEST_TMP/agent-b2.log" && fail "the restarted agent started 47.0@12 a second time"
# the task ends (SIGTERM to the task itself): reported once, by the new agent
kill -TERM $(cat "/proc/$tpid/task/$tpid/children") || fail "no task under the shim $tpid"
wait_until 10 sh -c "[ \"\$(curl -fsS $CTL/control/state | jq '[.nodes[\"node-b\"].reports[] | select(.task_id == \"47.0\" and .state == \"exited\" and .signal == 15)] | length')\" = 1 ]" ||
	fail "the restarted agent did not report 47.0's end (SIGTERM)"
sleep 1
expect_eq "47.0's end reported exactly once" \
	"$(q '[.nodes["node-b"].reports[] | select(.task_id == "47.0" and .state == "exited")] | length')" 1

echo "ok: agent protocol"
