# slurm_nodes.sh: sbatch's -w/--nodelist, -x/--exclude and -C/--constraint
# are acted on in placement (docs/job-format.md): -w places only on the
# named nodes and, without -N, on as many nodes as it names (with a larger
# -N the named ones are required and others added; more names than -N is
# refused with sbatch's words, a missing required node at submit); -x keeps the
# job off the named nodes; -C takes node features from node labels (the
# agent's --labels: a label's key, or KEY=VALUE), with & and | and ();
# a job no node can take is refused at submit with Slurm's words; a
# malformed -C or -w is an error naming the text. A job waiting for a
# required node shows Slurm's reason: Resources while the node is busy,
# ReqNodeNotAvail, UnavailableNodes:NAME while it is drained.
. "$ROOT/tests/integration/lib.sh"

bin=$TEST_TMP/slurm-bin
mkdir -p "$bin"
for n in sbatch sacct squeue scontrol scancel; do ln -s "$DROVER" "$bin/$n"; done
PATH=$bin:$PATH
export PATH
start_server
start_agent gpu-01 2xH100 --labels ib=1
start_agent gpu-02 2xH100 --labels ib=1,fast=yes
start_agent gpu-03 2xH100
cd "$TEST_TMP" || fail "cd"

acct() { sacct -P -X -n -o State -j "$1"; }
done_ok() { [ "$(acct "$1")" = COMPLETED ]; }
nodes_of() {   # nodes_of SBATCH-OPTIONS...: the SLURM_JOB_NODELIST the job saw
	_id=$(sbatch --parsable "$@" --wrap 'echo "$SLURM_JOB_NODELIST $SLURM_NNODES"') ||
		fail "sbatch $*"
	wait_until 30 done_ok "$_id" || fail "job $_id ($*) ended '$(acct "$_id")'"
	cat "slurm-$_id.out"
}

# each of these would fit on gpu-01 (the first node) without the option
expect_eq "-w gpu-[02-03]: those two nodes" "$(nodes_of -w 'gpu-[02-03]')" "gpu-[02-03] 2"
expect_eq "-w gpu-03 --gpus=2" "$(nodes_of -w gpu-03 --gpus=2)" "gpu-03 1"
expect_eq "-x gpu-01,gpu-02" "$(nodes_of -x gpu-01,gpu-02)" "gpu-03 1"
expect_eq "-C fast" "$(nodes_of -C fast)" "gpu-02 1"
expect_eq "-C fast=yes (KEY=VALUE)" "$(nodes_of -C fast=yes)" "gpu-02 1"
expect_eq "-C 'ib&fast'" "$(nodes_of -C 'ib&fast')" "gpu-02 1"
expect_eq "-C 'nosuch|(ib&fast)'" "$(nodes_of -C 'nosuch|(ib&fast)')" "gpu-02 1"
expect_eq "-N 2 -C ib" "$(nodes_of -N 2 -C ib)" "gpu-[01-02] 2"
expect_eq "-N 2 -x gpu-02" "$(nodes_of -N 2 -x gpu-02)" "gpu-[01,03] 2"
# -w with a larger -N: the named node is required, others are added (Slurm's rule)
expect_eq "-N 2 -w gpu-03" "$(nodes_of -N 2 -w gpu-03)" "gpu-[01,03] 2"
expect_eq "-N 3 -w gpu-02" "$(nodes_of -N 3 -w gpu-02)" "gpu-[01-03] 3"

# no node can take it: refused at submit, as sbatch is
refused() {   # refused WHAT SBATCH-OPTIONS...
	_w=$1
	shift
	if sbatch --parsable "$@" --wrap true >"$TEST_TMP/out" 2>"$TEST_TMP/err"; then
		fail "$_w was accepted: job $(cat "$TEST_TMP/out")"
	fi
	grep -q "sbatch: error: Batch job submission failed: Requested node configuration is not available" \
		"$TEST_TMP/err" || fail "$_w: $(cat "$TEST_TMP/err")"
}
refused "-C nosuch" -C nosuch
grep -q "sbatch: error: .*no node of the cluster is one it may use (its node list, exclusions and features: -w, -x, -C)" \
	"$TEST_TMP/err" || fail "-C nosuch's reason: $(cat "$TEST_TMP/err")"
refused "-w gpu-09" -w gpu-09
refused "-x gpu-[01-03]" -x 'gpu-[01-03]'
refused "-w gpu-01 -C fast" -w gpu-01 -C fast
if sbatch --parsable -N 2 -w gpu-09 --wrap true >"$TEST_TMP/out" 2>"$TEST_TMP/err"; then
	fail "-N 2 -w gpu-09 was accepted: job $(cat "$TEST_TMP/out")"
fi
grep -q "sbatch: error: Batch job submission failed: Invalid node name specified" "$TEST_TMP/err" ||
	fail "-N 2 -w gpu-09: $(cat "$TEST_TMP/err")"
refused "-N 3 -C ib" -N 3 -C ib
grep -q "needs 3 nodes it may use .*; the cluster has 2" "$TEST_TMP/err" ||
	fail "-N 3 -C ib's reason: $(cat "$TEST_TMP/err")"

# malformed: errors with the text, exit 1 as sbatch's
if sbatch -C 'ib*2' --wrap true 2>"$TEST_TMP/err"; then fail "-C 'ib*2' was accepted"; fi
grep -q 'constraint: found "ib\*2", which does not read at "\*2"' "$TEST_TMP/err" ||
	fail "-C ib*2: $(cat "$TEST_TMP/err")"
if sbatch -w 'gpu-[01' --wrap true 2>"$TEST_TMP/err"; then fail "-w 'gpu-[01' was accepted"; fi
grep -q 'nodelist: found "gpu-\[01", expected a host list' "$TEST_TMP/err" ||
	fail "-w gpu-[01: $(cat "$TEST_TMP/err")"
# more nodes named than -N allows: sbatch's own words
if sbatch -N 1 -w 'gpu-[01-02]' --wrap true 2>"$TEST_TMP/err"; then fail "-N1 -w 2 nodes accepted"; fi
grep -q 'invalid number of nodes (-N 2-1)' "$TEST_TMP/err" || fail "-N1 -w gpu-[01-02]: $(cat "$TEST_TMP/err")"
echo "-w, -x and -C placed 11 jobs where they said, refused 6 that no node could take"

# waiting for a required node: busy is Resources, drained is ReqNodeNotAvail
sq() { squeue -h -j "$1" -o "$2"; }
hog=$(sbatch --parsable -w gpu-03 --gpus=2 --wrap 'sleep 300') || fail "sbatch hog"
wait_until 30 sh -c "[ \"\$(squeue -h -j $hog -o %T)\" = RUNNING ]" || fail "the hog did not run"
busy=$(sbatch --parsable -N 2 -w gpu-03 --gpus-per-node=1 --wrap true) || fail "sbatch busy"
wait_until 30 sh -c "[ \"\$(squeue -h -j $busy -o %r)\" = Resources ]" ||
	fail "a busy required node: $(sq "$busy" '%T %r %R')"
expect_eq "squeue %R, required node busy" "$(sq "$busy" %R)" "(Resources)"
"$DROVER" get job "$busy" -o json | jq -r .reason | grep -q '; it requires node gpu-03 (-w/--nodelist)$' ||
	fail "drover's reason, required node busy: $("$DROVER" get job "$busy" -o json | jq -r .reason)"
scontrol update nodename=gpu-02 state=drain reason=maintenance || fail "drain gpu-02"
down=$(sbatch --parsable -N 2 -w gpu-02 --wrap true) || fail "sbatch down"
only=$(sbatch --parsable -w gpu-02 --wrap true) || fail "sbatch only"
wait_until 30 sh -c "[ \"\$(squeue -h -j $down -o %r)\" = ReqNodeNotAvail ]" ||
	fail "a drained required node: $(sq "$down" '%T %r %R')"
expect_eq "squeue %R, required node drained" "$(sq "$down" %R)" \
	"(ReqNodeNotAvail, UnavailableNodes:gpu-02)"
expect_eq "squeue %R, the only node it may use drained" "$(sq "$only" '%r %R')" \
	"ReqNodeNotAvail (ReqNodeNotAvail, UnavailableNodes:gpu-02)"
scontrol show job "$down" | grep -q ' Reason=ReqNodeNotAvail,_UnavailableNodes:gpu-02 ' ||
	fail "scontrol show job's Reason: $(scontrol show job "$down")"
"$DROVER" get job "$down" -o json | jq -r .reason | grep -qx \
	'UnavailableNodes:gpu-02: a node it requires (-w/--nodelist) is down or draining' ||
	fail "drover's reason: $("$DROVER" get job "$down" -o json | jq -r .reason)"
scontrol update nodename=gpu-02 state=resume || fail "resume gpu-02"
wait_until 30 done_ok "$down" || fail "job $down after gpu-02 came back: $(acct "$down")"
wait_until 30 done_ok "$only" || fail "job $only after gpu-02 came back: $(acct "$only")"
scancel "$hog" || fail "scancel the hog"
wait_until 30 done_ok "$busy" || fail "job $busy after the hog went: $(acct "$busy")"
