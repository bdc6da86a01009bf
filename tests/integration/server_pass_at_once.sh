# server_pass_at_once.sh: the scheduling loop's batching window
# (sched_delay_ms, src/server/loop.c) delays only a burst: a submit that
# comes after a quiet spell (no pass for sched_delay_ms) is placed at once,
# while one that follows a pass within the window waits for it, so a burst
# still costs a handful of passes. A window of 3 s makes both plain: the
# lone submit is placed well before 3 s (before, it waited the whole
# window), the one right after it waits for the window.
. "$ROOT/tests/integration/lib.sh"

server_config "sched_delay_ms: 3000"
start_server
start_agent node-a 2xH100
job() {   # job NAME: an sbatch script of one GPU that runs a minute
	printf '#!/bin/sh\n#SBATCH --gpus=1\nsleep 60\n' >"$TEST_TMP/$1.sh"
	echo "$TEST_TMP/$1.sh"
}
placed() {
	case "$("$DROVER" get job "$1" -o json | jq -r .state)" in
	scheduled | running) return 0 ;;
	esac
	return 1
}
ms() { echo $(($(date +%s%N) / 1000000)); }

# the agent's registration was the last change: let the window pass
sleep 4
t0=$(ms)
A=$("$DROVER" submit --parsable "$(job lone)") || fail "submit lone"
wait_until 10 placed "$A" || fail "the lone job was never placed"
took=$(($(ms) - t0))
[ "$took" -lt 2000 ] || fail "the lone submit waited ${took} ms (window 3000 ms): not at once"

# right after a pass: this one is batched with the window
B=$("$DROVER" submit --parsable "$(job second)") || fail "submit second"
t1=$(ms)
sleep 1
placed "$B" && fail "the submit within the window was placed before it ended"
wait_until 10 placed "$B" || fail "the second job was never placed"
took=$(($(ms) - t1))
[ "$took" -ge 1500 ] || fail "the second submit was placed ${took} ms after: not batched"
echo "ok: lone submit placed at once, the next one batched"
