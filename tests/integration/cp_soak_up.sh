# cp_soak_up.sh: exactly-once under faults on `drover up`, CI-sized as the
# issue asks: 1,000 one-GPU jobs submitted while drover up (controller and
# agent in one process) is SIGKILLed 15 times (10 + 5) and restarted at
# once on the same state.
# Its running tasks survive each kill under their shims and are adopted:
# every answered job succeeds in its first attempt, none started twice,
# none stuck (before, each restart failed the jobs running on its node).
. "$ROOT/tests/integration/lib.sh"
TMPDIR="$TEST_TMP" "$DROVER" bench soak --up --jobs 1000 --controller-kills 10 --agent-kills 5 \
	--task-ms 200 --timeout 120 --json >"$TEST_TMP/soak.json" ||
	{ cat "$TEST_TMP/soak.json"; fail "bench soak --up failed"; }
python3 - "$TEST_TMP/soak.json" <<'PY' || fail "soak figures"
import json, sys
r = json.load(open(sys.argv[1]))
want = {"answered": 1000, "lost": 0, "started_twice": 0, "stuck": 0, "succeeded": 1000,
        "failed": 0, "requeued": 0, "ok": True}
bad = {k: (r.get(k), v) for k, v in want.items() if r.get(k) != v}
print("soak --up: %(answered)d answered, %(lost)d lost, %(started_twice)d started twice, "
      "%(stuck)d stuck, %(requeued)d requeued, %(controller_kills)d + %(agent_kills)d kills, "
      "%(seconds).1f s" % r)
if bad:
    print("got, want:", bad)
sys.exit(1 if bad else 0)
PY
