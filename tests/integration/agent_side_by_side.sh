# agent_side_by_side.sh: the agent next to a site's own dcgm-exporter.
#   - a taken port (--listen or --metrics-listen) is one clear line and exit 2,
#     which the systemd unit's RestartPreventExitStatus=2 does not restart;
#   - --metrics-listen puts /metrics on a listener of its own (and register
#     says where, metrics_url), --gpu-metrics off leaves DCGM_FI_* out
#     and drover's per-job share series in;
#   - --hpc-job-mapping-dir: dcgm-exporter's job mapping files, read back the
#     way dcgm-exporter 4.5.3-4.8.2 reads them (files named by GPU index, a job
#     id a line), follow the tasks, two jobs sharing a GPU both listed.
. "$ROOT/tests/integration/lib.sh"

# --- a taken port: exit 2, one line
HELD=$(free_port)
python3 -c 'import socket,sys,time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); time.sleep(60)' "$HELD" &
track $!
wait_until 10 python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$HELD" ||
	fail "the port holder did not start"
for flags in "--listen 127.0.0.1:$HELD" "--listen 127.0.0.1:0 --metrics-listen 127.0.0.1:$HELD"; do
	# shellcheck disable=SC2086
	DROVER_AGENT_TOKEN=t "$DROVER" agent --server http://127.0.0.1:1 --name busy --fake-gpus 1xH100 \
		--state "$TEST_TMP/busy" $flags >"$TEST_TMP/busy.out" 2>"$TEST_TMP/busy.err"
	expect_eq "exit status with $flags on a taken port" "$?" 2
	grep -q "127.0.0.1:$HELD: the port is taken by another process" "$TEST_TMP/busy.err" ||
		fail "no clear line for the taken port: $(cat "$TEST_TMP/busy.err")"
	expect_eq "error lines" "$(grep -c 'port is taken' "$TEST_TMP/busy.err")" 1
done
grep -q '^RestartPreventExitStatus=2$' "$ROOT/deploy/systemd/drover-agent.service" ||
	fail "the agent's unit restarts a setting that cannot work (no RestartPreventExitStatus=2)"
grep -q '^RestartPreventExitStatus=2$' "$ROOT/deploy/systemd/drover-server.service" ||
	fail "the server's unit restarts a setting that cannot work (no RestartPreventExitStatus=2)"
# the controller and drover up: the same, one line and exit 2
busy_cmd() { # WHAT CMD...: exit 2 and one line naming the taken port
	what=$1
	shift
	XDG_CONFIG_HOME="$TEST_TMP/xdg" "$@" >"$TEST_TMP/busy.out" 2>"$TEST_TMP/busy.err" </dev/null
	expect_eq "exit status of $what on a taken port" "$?" 2
	expect_eq "$what: error lines" "$(grep -c 'port is taken' "$TEST_TMP/busy.err")" 1
	grep -q "127.0.0.1:$HELD: the port is taken by another process" "$TEST_TMP/busy.err" ||
		fail "$what: no clear line for the taken port: $(cat "$TEST_TMP/busy.err")"
}
busy_cmd "drover server" "$DROVER" server --listen "127.0.0.1:$HELD" --state "$TEST_TMP/srv"
busy_cmd "drover up --listen" "$DROVER" up --listen "127.0.0.1:$HELD" --state "$TEST_TMP/up1"
busy_cmd "drover up --agent-listen" "$DROVER" up --listen "127.0.0.1:$(free_port)" \
	--agent-listen "127.0.0.1:$HELD" --state "$TEST_TMP/up2" --fake-gpus 1xH100

# --- metrics apart, GPU series off, the mapping directory
TOKEN=t0k
start_mock_controller "$TOKEN"
PL=$(free_port) PM=$(free_port)
MAP="$TEST_TMP/job-map"
DROVER_AGENT_TOKEN="$TOKEN" "$DROVER" agent --server "$CTL" --name node-s --listen "127.0.0.1:$PL" \
	--metrics-listen "127.0.0.1:$PM" --gpu-metrics off --hpc-job-mapping-dir "$MAP" \
	--fake-gpus 4xH100 --state "$TEST_TMP/a" --run-as-self >"$TEST_TMP/agent.log" 2>&1 &
AGENT=$!
track $AGENT
q() { curl -fsS "$CTL/control/state" | jq -r "$1"; }
registered() { [ "$(q '.nodes["node-s"].registers | length')" -ge 1 ]; }
wait_until 10 registered || { cat "$TEST_TMP/agent.log"; fail "the agent did not register"; }
expect_eq "metrics_url at register" "$(q '.nodes["node-s"].registers[0].metrics_url')" "http://127.0.0.1:$PM"
expect_eq "agent_url at register" "$(q '.nodes["node-s"].registers[0].agent_url')" "http://127.0.0.1:$PL"
expect_eq "/metrics on --listen" "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PL/metrics")" 404
expect_eq "task logs on --metrics-listen" \
	"$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PM/v1/tasks/7.0/logs")" 404
curl -fsS "http://127.0.0.1:$PM/metrics" >"$TEST_TMP/m.txt" || fail "no /metrics on --metrics-listen"
grep -q '^DCGM_' "$TEST_TMP/m.txt" && fail "--gpu-metrics off still exports DCGM series"
grep -q '^drover_agent_registered{' "$TEST_TMP/m.txt" || fail "drover's own series are gone too"

task() { # ID JOB GPUS
	echo "{\"task_id\": \"$1\", \"job_id\": $2, \"epoch\": 1, \"desired\": \"run\", \"argv\": [\"sleep\", \"60\"],
	 \"env\": {}, \"gpus\": [$3], \"rank\": 0, \"world_size\": 1}"
}
assign() { curl -fsS -X POST "$CTL/control/assign" -d "{\"node\": \"node-s\", \"tasks\": [$1]}" >/dev/null; }
# dcgm-exporter's reading: files named <GPU> (or <GPU>.<instance>), a job a line
read_map() {
	python3 - "$MAP" <<'PY'
import os, re, sys
d = sys.argv[1]
out = []
for name in sorted(os.listdir(d)):
    p = os.path.join(d, name)
    if os.path.isdir(p) or not re.fullmatch(r"\d+(\.\d+)?", name):
        continue
    with open(p) as f:
        out.append("%s=%s" % (name, ",".join(f.read().splitlines())))
print(" ".join(out))
PY
}
map_is() { [ "$(read_map)" = "$1" ]; }
assign "$(task 7.0 7 '0, 1'), $(task 8.0 8 1)"
wait_until 10 map_is "0=7 1=7,8" || fail "mapping after two jobs (8 shares GPU 1): '$(read_map)'"
# drover's own share series stay with --gpu-metrics off: each job's part
# of the shared GPU 1 (docs/agent.md, "Shared GPUs")
curl -fsS "http://127.0.0.1:$PM/metrics" >"$TEST_TMP/m2.txt" || fail "no /metrics"
grep -q '^DCGM_' "$TEST_TMP/m2.txt" && fail "--gpu-metrics off exports DCGM series while tasks run"
for j in 7 8; do
	grep -q "^drover_job_gpu_share{Hostname=\"node-s\",gpu=\"1\",UUID=\"[^\"]*\",hpc_job=\"$j\"} 1$" \
		"$TEST_TMP/m2.txt" || fail "no share series of job $j on GPU 1: $(grep drover_job_gpu "$TEST_TMP/m2.txt")"
done
assign "$(task 7.0 7 '0, 1')"
wait_until 10 map_is "0=7 1=7" || fail "mapping after job 8 left: '$(read_map)'"
ls -a "$MAP" | grep -q tmp && fail "temporary files left in the mapping directory: $(ls -a "$MAP")"
assign ""
wait_until 10 map_is "" || fail "mapping after every job left: '$(read_map)'"
kill -TERM $AGENT
wait $AGENT
echo "ok: taken ports exit 2; metrics apart and GPU series off; dcgm-exporter job mapping read back"
