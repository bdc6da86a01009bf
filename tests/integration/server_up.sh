# server_up.sh: `drover up` as a new user meets it: it says what it runs
# on (simulated GPUs here, unless the machine has NVIDIA's), writes the
# client config so `drover submit` needs no flags, runs a job that sees
# its GPU, serves the agent's metrics, stops cleanly on Ctrl-C (SIGINT),
# and a second `drover up` on the same state still knows the job.
. "$ROOT/tests/integration/lib.sh"

start_up
grep -q 'SIMULATED GPUs' "$TEST_TMP/up.out" || fail "drover up does not say its GPUs are simulated"
grep -q '^tasks run as ' "$TEST_TMP/up.out" || fail "drover up does not say who tasks run as"
grep -q 'drover submit -$' "$TEST_TMP/up.out" || fail "no commands to try"
cfg="$XDG_CONFIG_HOME/drover/config"
[ -f "$cfg" ] || fail "no client config at $cfg"
expect_eq "client config mode" "$(stat -c %a "$cfg")" 600
grep -q "^server: http://127.0.0.1:$SERVER_PORT\$" "$cfg" || fail "client config: $(cat "$cfg")"

# A job through the client, with no flags at all.
printf '#!/bin/sh\n#SBATCH --job-name=hello\n#SBATCH --gpus=1\necho "hello from GPU $CUDA_VISIBLE_DEVICES image=${DROVER_IMAGE:-none}"\n' >"$TEST_TMP/hello.sh"
out=$("$DROVER" submit "$TEST_TMP/hello.sh") || fail "drover submit: $out"
id=$(echo "$out" | grep -o '[0-9][0-9]*' | head -1)
state() { "$DROVER" get job "$id" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
wait_until 30 sh -c "[ \"\$(\"$DROVER\" get job $id -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"state\"])')\" = succeeded ]" ||
	{ "$DROVER" describe job "$id" >&2; fail "job $id did not succeed"; }
logs=$("$DROVER" logs "$id") || fail "drover logs $id"
case "$logs" in
"hello from GPU "[0-7]" image=none") ;;
*) fail "logs of job $id: '$logs'" ;;
esac
# The one-liner drover up prints reads stdin: such a job is named "sbatch", as in Slurm.
sid=$(printf '#!/bin/sh\n#SBATCH --gpus=1\ntrue\n' | "$DROVER" submit --parsable -) || fail "submit -: $sid"
expect_eq "name of a job read from stdin" "$("$DROVER" get job "$sid" -o json |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["name"])')" sbatch
curl -fsS "http://127.0.0.1:$AGENT_PORT/metrics" | grep -q '^DCGM_FI_DEV_GPU_UTIL{' ||
	fail "no agent metrics on 127.0.0.1:$AGENT_PORT"

stop_up
grep -q 'stopped; state kept' "$TEST_TMP/up.out" || fail "no clean-stop message: $(tail -3 "$TEST_TMP/up.out")"

start_up
expect_eq "job after a second drover up" "$(state)" succeeded
stop_up
echo "ok: drover up ran job $id on a simulated GPU, wrote the client config, stopped on Ctrl-C, kept its state"
