# agent_root_tasks.sh: the server's `allow_root_tasks: false` holds whatever
# the agent's flags (docs/agent.md, "--run-as-self"): an agent running as
# root with --run-as-self would run alice's task as root, so it fails the
# task with a reason naming the setting instead of starting it; with
# `allow_root_tasks: true` (lib.sh's default) the same job runs.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
[ "$(id -u)" = 0 ] || skip "needs root: only a root agent can run a task as root"

cp_setup "allow_root_tasks: false"
start_server
start_agent node-a 1xH100
pod_yaml marker 1 "touch $TEST_TMP/out/ran" >"$TEST_TMP/job.yaml"
id=$(DROVER_TOKEN=alice-t submit "$TEST_TMP/job.yaml")
wait_job "$id" failed 30
reason=$(jf "$id" 'j["reason"]')
case "$reason" in
*"would run as root on node node-a (the agent runs as root with --run-as-self) and the controller has allow_root_tasks: false"*) ;;
*) fail "job $id failed with '$reason', expected the allow_root_tasks reason" ;;
esac
[ ! -e "$TEST_TMP/out/ran" ] || fail "the task ran as root though allow_root_tasks is false"

stop_server
cp_setup
start_server
id=$(DROVER_TOKEN=alice-t submit "$TEST_TMP/job.yaml")
wait_job "$id" succeeded 40  # once node-a has registered again
[ -e "$TEST_TMP/out/ran" ] || fail "allowed, the task did not run"
echo "ok: allow_root_tasks: false refuses root tasks of a --run-as-self agent; true runs them"
