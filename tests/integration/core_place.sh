#!/bin/sh
# core_place.sh: the cluster and placement commands as a user runs them:
# every example cluster validates with the shape the docs promise (--json
# GPU total a plain integer); a broken cluster file exits 2 with
# file:line:col errors; `drover place` prints node:gpu lines, keeps a
# required level, refuses with a one-line reason and exit 1, and exits 2 on
# bad flags; `drover bench place --json` prints exactly the promised keys.
set -eu
. "$ROOT/tests/integration/lib.sh"
C=$ROOT/examples/clusters
cd "$TEST_TMP"

for pair in h100-256:256 gb200-nvl72:288 philly:512 multicloud:368; do
	f=${pair%%:*} want=${pair#*:}
	"$DROVER" validate --json "$C/$f.yaml" >v.json || fail "validate $f exited $?"
	got=$(python3 -c 'import json,sys; j=json.load(open("v.json")); assert isinstance(j["gpus"], int); print(j["gpus"])')
	expect_eq "$f GPUs" "$got" "$want"
	"$DROVER" validate "$C/$f.yaml" >v.txt || fail "validate (text) $f"
	grep -q "NVLink domains" v.txt || fail "no NVLink domains line for $f"
done
python3 -c 'import json; j=json.load(open("v.json")); assert len(j["pools"]) == 5 and any(p["spot"] for p in j["pools"])' ||
	fail "multicloud pools"
"$DROVER" validate --json "$C/gb200-nvl72.yaml" >g.json
python3 -c 'import json; d=json.load(open("g.json"))["nvlink_domains"]; assert d["count"]==4 and d["max_gpus"]==72, d' ||
	fail "gb200 NVLink domains"

# a broken cluster file: exit 2, every error with its position
cat >bad.yaml <<'Y'
kind: Cluster
name: bad
levels: [pool, node]
topology:
  - name: p
    children:
      - {name: "n{i}", count: 2, gpus: 80, gpuModel: H100, cpu: 8, memory: 64Gi}
      - {name: m, gpus: 8, gpuModel: Z900, cpu: 8, memory: 64Gi}
Y
set +e
"$DROVER" validate bad.yaml >out.txt 2>err.txt
rc=$?
set -e
expect_eq "bad cluster exit" "$rc" 2
grep -q '^bad.yaml:7:[0-9]*: error: topology\[0\].children\[0\].gpus: found .80., expected an integer from 0 to 64' err.txt ||
	fail "no positioned gpus error: $(cat err.txt)"
grep -q '^bad.yaml:8:[0-9]*: error: .*gpuModel: found .Z900.' err.txt || fail "no gpuModel error: $(cat err.txt)"

# placing
"$DROVER" place --cluster "$C/h100-256.yaml" --gpus 8 --tasks 2 >p.txt || fail "place 2x8"
expect_eq "tasks printed" "$(wc -l <p.txt | tr -d ' ')" 2
grep -qx 'leaf1-h100-01:0,1,2,3,4,5,6,7' p.txt || fail "first task not on the first node: $(cat p.txt)"
"$DROVER" place --cluster "$C/h100-256.yaml" --gpus 8 --tasks 16 --require leaf >p.txt
leaves=$(cut -d- -f1 p.txt | sort -u | wc -l | tr -d ' ')
expect_eq "leaves used by a leaf-required gang" "$leaves" 1
set +e
"$DROVER" place --cluster "$C/h100-256.yaml" --gpus 8 --tasks 17 --require leaf >p.txt
rc=$?
set -e
expect_eq "too big for a leaf: exit" "$rc" 1
grep -qx 'does not fit: needs 136 GPUs under one leaf; the largest leaf has 128' p.txt ||
	fail "reason: $(cat p.txt)"
"$DROVER" place --cluster "$C/gb200-nvl72.yaml" --gpus 4 --tasks 18 --require nvlink-domain >p.txt
expect_eq "NVL72 rack" "$(sed 's/-t.*//' p.txt | sort -u)" "nvl72-r1"
"$DROVER" place --cluster "$C/multicloud.yaml" --gpus 8 --region europe-west4 >p.txt
grep -q '^a3-' p.txt || fail "data residency: $(cat p.txt)"
"$DROVER" place --cluster "$C/h100-256.yaml" --gpu-milli 250 --tasks 4 >p.txt
expect_eq "four quarter-GPU tasks share one GPU" "$(sort -u p.txt)" "leaf1-h100-01:0"
"$DROVER" place --cluster "$C/h100-256.yaml" "$ROOT/examples/jobs/training-job.yaml" >p.txt ||
	fail "place the seed Pod"
expect_eq "seed Pod" "$(cat p.txt)" "leaf1-h100-01:0,1,2,3,4,5,6,7"
set +e
"$DROVER" place --cluster "$C/h100-256.yaml" --gpus nine >/dev/null 2>&1
rc=$?
"$DROVER" place --cluster "$C/h100-256.yaml" --gpus 8 --require rack >/dev/null 2>err.txt
rc2=$?
set -e
expect_eq "bad flag exit" "$rc" 2
expect_eq "unknown level exit" "$rc2" 2

# bench keys (a short run)
"$DROVER" bench place --json --ops 2000 --trials 1 >b.json
python3 - <<'PY' || fail "bench place JSON keys"
import json
r = json.load(open("b.json"))["results"]
assert [x["gpus"] for x in r] == [1024, 10240, 100352], r
for x in r:
    assert set(x) == {"gpus", "p50_us", "p99_us", "placements_per_s", "small_p99_us",
                      "large_p99_us", "fail_p99_us", "leaf_kept_share"}, x
    assert 0 <= x["leaf_kept_share"] <= 1, x
assert r[0]["large_p99_us"] is None and r[2]["large_p99_us"] is not None
# the default scorer keeps a gang under one leaf whenever one leaf has room,
# on one spine and across spines (a preferred level is searched first)
for x in r:
    assert x["leaf_kept_share"] == 1.0, x
n = json.load(open("b.json"))["nvl72"]
assert set(n) == {"gpus", "rounds", "gpus_lost_share", "steady_jobs", "steady_load",
                  "steady_events", "steady_alloc", "steady_idle_waiting_share",
                  "steady_gpus_lost_share", "steady_repack_lost_share",
                  "steady_repack_undecided"} and n["gpus"] == 288, n
assert 0 <= n["gpus_lost_share"] <= 1, n
# the steady state: many thousands of events, a busy cluster, and the
# shares nested as defined (repack-recoverable within lost within idle)
assert n["steady_jobs"] == 10000 and n["steady_events"] > 10000, n
assert 0.9 < n["steady_alloc"] <= 1, n
assert 0 <= n["steady_repack_lost_share"] <= n["steady_gpus_lost_share"] <= n["steady_idle_waiting_share"] <= 1, n
assert n["steady_repack_lost_share"] <= 0.01 and n["steady_repack_undecided"] == 0, n
PY
echo "core_place: ok"
