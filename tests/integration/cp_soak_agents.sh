# cp_soak_agents.sh: exactly-once under faults on a server and 3 agents,
# CI-sized as the issue asks (`drover bench soak` runs the full sizes):
# 1,000 one-GPU jobs submitted while the controller is SIGKILLed 10 times
# and agents 5 times,
# each restarted at once. Every answered job is found and succeeds, no
# (job, task, epoch) is started twice (the tasks' own start lines), none
# is stuck.
. "$ROOT/tests/integration/lib.sh"
TMPDIR="$TEST_TMP" "$DROVER" bench soak --jobs 1000 --controller-kills 10 --agent-kills 5 \
	--agents 3 --task-ms 100 --timeout 120 --json >"$TEST_TMP/soak.json" ||
	{ cat "$TEST_TMP/soak.json"; fail "bench soak failed"; }
python3 - "$TEST_TMP/soak.json" <<'PY' || fail "soak figures"
import json, sys
r = json.load(open(sys.argv[1]))
want = {"answered": 1000, "lost": 0, "started_twice": 0, "stuck": 0, "succeeded": 1000,
        "failed": 0, "controller_kills": 10, "agent_kills": 5, "ok": True}
bad = {k: (r.get(k), v) for k, v in want.items() if r.get(k) != v}
print("soak: %(answered)d answered, %(lost)d lost, %(started_twice)d started twice, "
      "%(stuck)d stuck, %(controller_kills)d controller and %(agent_kills)d agent kills, "
      "%(seconds).1f s" % r)
if bad:
    print("got, want:", bad)
sys.exit(1 if bad else 0)
PY
