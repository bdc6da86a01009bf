# server_reasons.sh: every pending job says why it waits, with the current
# numbers, also the jobs a scheduling pass never reached (it stopped at the
# first blocked job because nothing else could fit). Before, those kept
# the reason they were submitted with ("submitted by root").
. "$ROOT/tests/integration/lib.sh"
start_up

job() { printf '#!/bin/sh\n#SBATCH --gpus=%s\n#SBATCH -J %s\nsleep 60\n' "$1" "$2" |
	"$DROVER" submit --parsable - || fail "submit $2"; }
field() { "$DROVER" get job "$1" -o json | python3 -c "import json,sys; print(json.load(sys.stdin)['$2'])"; }

a=$(job 4 a)
wait_until 15 sh -c "[ \"\$(\"$DROVER\" get job $a -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"state\"])')\" = running ]" ||
	fail "job a did not start"
b=$(job 8 b)   # blocked: 4 of 8 GPUs free
d=$(job 8 d)   # behind b
c=$(job 4 c)   # fits beside a: the node is full
wait_until 15 sh -c "[ \"\$(\"$DROVER\" get job $c -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"state\"])')\" = running ]" ||
	fail "job c did not start"
# the periodic pass (every 5 s with jobs pending) stops at b: nothing fits
sleep 6
for id in "$b" "$d"; do
	expect_eq "state of job $id" "$(field "$id" state)" pending
	r=$(field "$id" reason)
	case "$r" in
	"needs 8 GPUs"*"0 GPUs free"*) ;;
	*) fail "job $id: reason '$r', want the current 'needs 8 GPUs ... 0 GPUs free ...'" ;;
	esac
	expect_eq "reason_code of job $id" "$(field "$id" reason_code)" Resources
done
expect_eq "reason_code of running job $a" "$(field "$a" reason_code)" None
"$DROVER" queue | grep -q "^$d .*(needs 8 GPUs" || fail "drover queue: $("$DROVER" queue)"
echo "ok: pending jobs show the scheduler's current reason, also those a pass did not reach"
