#!/bin/sh
# spec_validate.sh: `drover validate` on job files, as a user runs it:
# the seed's Pod and the equivalent batch script both give 8 GPUs and the
# NCCL environment; --json is the canonical form and reads back to the
# same bytes; bad files exit 2 with file:line:col errors, several of them;
# warnings go to stderr, never into the JSON on stdout.
set -eu
. "$ROOT/tests/integration/lib.sh"
J=$ROOT/examples/jobs
cd "$TEST_TMP"

for f in training-job.yaml training-job.sbatch; do
	"$DROVER" validate --json "$J/$f" >out.json 2>err.txt || fail "validate $f exited $?"
	python3 - "$f" <<'PY' || fail "canonical JSON of $1 is wrong"
import json, sys
j = json.load(open("out.json"))
g = j["groups"]
assert sum(x["count"] * x["gpus"] for x in g) == 8, g
env = {e["name"]: e["value"] for e in g[0]["env"]}
assert env["NCCL_IB_DISABLE"] == "0" and env["NCCL_NET_GDR_LEVEL"] == "5", env
assert j["apiVersion"] == "drover/v1" and j["kind"] == "Job"
PY
	# canonical -> model -> canonical is identical
	"$DROVER" validate --json out.json >again.json || fail "canonical of $f does not read back"
	cmp -s out.json again.json || fail "round trip of $f differs"
done

# warnings (kept, unused fields) on stderr, JSON stays clean
"$DROVER" validate --json "$J/pytorchjob-multinode.yaml" >pt.json 2>pt.err
grep -q "warning: .*tolerations: kept" pt.err || fail "no warning for tolerations"
python3 -c 'import json; json.load(open("pt.json"))' || fail "stdout is not JSON"

# several errors, each with file:line:col, exit 2
cat >bad.yaml <<'Y'
apiVersion: v1
kind: Pod
metadata:
  name: bad
spec:
  containers:
  - name: c
    image: i
    resources:
      limits:
        nvidia.com/gpu: "0.5"
        memory: 12Zi
Y
set +e
"$DROVER" validate bad.yaml >/dev/null 2>bad.err
rc=$?
set -e
expect_eq "exit code for a bad manifest" "$rc" 2
grep -q '^bad.yaml:11:26: error: spec.containers\[0\].resources.limits\["nvidia.com/gpu"\]: found "0.5"' bad.err ||
	fail "gpu error lacks position or path: $(cat bad.err)"
grep -q '^bad.yaml:12:17: error: spec.containers\[0\].resources.limits.memory' bad.err ||
	fail "memory error missing: $(cat bad.err)"

printf '#!/bin/sh\n#SBATCH --gp=2 -t 1h\n' >bad.sh
set +e
"$DROVER" validate bad.sh >/dev/null 2>badsh.err
rc=$?
set -e
expect_eq "exit code for a bad script" "$rc" 2
expect_eq "errors in bad.sh" "$(grep -c '^bad.sh:2:[0-9]*: error' badsh.err)" 2

# sbatch options after the file win over #SBATCH lines
"$DROVER" validate --json "$J/training-job.sbatch" --nodes=4 >n4.json
python3 -c 'import json; j=json.load(open("n4.json")); assert j["groups"][0]["count"] == 4' ||
	fail "command-line --nodes did not win"

# the seed example is unmodified from the seed text
grep -q 'nvidia.com/gpu: 8' "$J/training-job.yaml" || fail "seed example changed"
echo "spec_validate: ok"
