# server_efficiency.sh: each job's efficiency, the seff line (docs/api.md,
# "efficiency"; docs/agent.md, "Task usage"): `drover up` with fake GPUs
# runs a 2-GPU job that burns one CPU of the two it asked for and holds
# about 100 MiB of its 256 MiB, and two half-GPU jobs sharing one GPU.
#   - the job object's efficiency is live while the job runs and final
#     when it ends: GPU utilisation and framebuffer high-water mark per GPU
#     (the fake backend's busy readings), CPU time and efficiency (CPU
#     seconds over CPUs x elapsed), memory high-water mark and efficiency;
#   - on the shared GPU each job's share is its own series on the agent's
#     /metrics, and the shares sum to the GPU's own reading;
#   - `drover describe` prints the lines, `drover acct --by job` the
#     columns, and /v1/acct?by=job carries job, cost_usd and efficiency;
#   - a task over before the agent's first sample still has its CPU time
#     and memory high-water mark;
#   - after a restart the finished jobs still show them (store, acct rows).
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"

start_up
cat >"$TEST_TMP/burn.sh" <<'SH'
#!/bin/sh
#SBATCH --job-name=burn
#SBATCH --gpus=2
#SBATCH --cpus-per-task=2
#SBATCH --mem=256M
exec python3 -c '
import time
x = bytearray(100 * 1024 * 1024)
t = time.time()
while time.time() - t < 12:
    pass
'
SH
cat >"$TEST_TMP/half.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: half
  annotations:
    drover.io/gpu-fraction: "0.5"
spec:
  containers:
  - name: c
    image: busybox
    command: ["sleep", "9"]
YAML
burn=$(submit "$TEST_TMP/burn.sh")
wait_job "$burn" running 20
h1=$(submit "$TEST_TMP/half.yaml")
h2=$(submit "$TEST_TMP/half.yaml")
wait_job "$h1" running 20
wait_job "$h2" running 20

eff() { "$DROVER" get job "$1" -o json | jq -c "$2"; }
# live: the agent's figures arrive with its task states (every heartbeat)
wait_until 20 eval '[ "$(eff "$burn" ".efficiency.gpu_util_pct != null")" = true ]' ||
	fail "no live efficiency for the running job: $(eff "$burn" .efficiency)"

# the shared GPU: a share series per job; their sum is the GPU's reading
shared=$(eff "$h1" '.placement[0].gpus[0]')
expect_eq "the half-GPU jobs share a GPU" "$(eff "$h2" '.placement[0].gpus[0]')" "$shared"
curl -fsS "http://127.0.0.1:$AGENT_PORT/metrics" >"$TEST_TMP/m.txt" || fail "agent /metrics"
python3 - "$TEST_TMP/m.txt" "$shared" "$h1" "$h2" <<'PY' || fail "share series"
import re, sys
text, gpu, jobs = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3:]
def val(name, **lab):
    out = []
    for line in text.splitlines():
        m = re.match(r'(\w+)\{(.*)\} (\S+)$', line)
        if not m or m.group(1) != name:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        if all(labels.get(k) == v for k, v in lab.items()):
            out.append((labels, float(m.group(3))))
    return out
gpu_util = val("DCGM_FI_DEV_GPU_UTIL", gpu=gpu)[0][1]
gpu_fb = val("DCGM_FI_DEV_FB_USED", gpu=gpu)[0][1]
share = {l["hpc_job"]: v for l, v in val("drover_job_gpu_share", gpu=gpu)}
util = {l["hpc_job"]: v for l, v in val("drover_job_gpu_utilization_percent", gpu=gpu)}
mem = {l["hpc_job"]: v for l, v in val("drover_job_gpu_memory_used_bytes", gpu=gpu)}
assert sorted(share) == sorted(jobs), share
assert all(v == 0.5 for v in share.values()), share
assert abs(sum(util.values()) - gpu_util) < 1e-6, (util, gpu_util)
assert abs(sum(mem.values()) - gpu_fb * 1048576) < 1, (mem, gpu_fb)
assert gpu_util > 0
print("shared GPU %s: util %.0f%% = %s; framebuffer %.0f MiB = %s" % (gpu, gpu_util,
      " + ".join("%.1f" % util[j] for j in jobs), gpu_fb,
      " + ".join("%.0f" % (mem[j] / 1048576) for j in jobs)))
PY

# a task over before the first sample still has its CPU time and memory
# (the shim's rusage, the cgroup's last reading)
printf '#!/bin/sh\n#SBATCH --gpus=1\n#SBATCH --mem=200M\nexec python3 -c "x = bytearray(60 << 20)"\n' \
	>"$TEST_TMP/short.sh"
short=$(submit "$TEST_TMP/short.sh")
wait_job "$short" succeeded 30
eff "$short" '.efficiency | .cpu_s >= 0 and .mem_max_mib >= 60 and .mem_max_mib < 200
	and .mem_efficiency_pct > 29' | grep -qx true ||
	fail "a short task's efficiency: $(eff "$short" .efficiency)"
wait_job "$burn" succeeded 40
wait_job "$h1" succeeded 30
wait_job "$h2" succeeded 30
check_burn() {
	"$DROVER" get job "$burn" -o json | python3 -c '
import json, sys
j = json.load(sys.stdin)
e = j["efficiency"]
assert e is not None, "no efficiency"
assert len(e["gpus"]) == 2, e["gpus"]
for g in e["gpus"]:
    assert 80 <= g["util_pct"] <= 95, g          # the fake backend: 88 +- 5 when busy
    assert 57000 <= g["mem_max_mib"] <= 60000, g  # 72-73 % of 81559 MiB
assert e["gpu_mem_max_mib"] == max(g["mem_max_mib"] for g in e["gpus"]), e
assert abs(e["gpu_util_pct"] - sum(g["util_pct"] for g in e["gpus"]) / 2) < 0.02, e
assert e["cpus"] == 2, e
assert 1 <= e["cpu_s"] <= 2 * e["elapsed_s"], e
want = 100 * e["cpu_s"] / (2 * e["elapsed_s"])
assert abs(e["cpu_efficiency_pct"] - want) < 0.05, (e, want)
assert 100 <= e["mem_max_mib"] < 256, e
assert e["mem_request_mib"] == 256, e
assert abs(e["mem_efficiency_pct"] - 100 * e["mem_max_mib"] / 256) < 0.01, e
print("job %s: GPU %.1f%% / %d MiB, CPU %.2f s of 2 x %d s = %.1f%%, memory %d of 256 MiB = %.1f%%"
      % (j["id"], e["gpu_util_pct"], e["gpu_mem_max_mib"], e["cpu_s"], e["elapsed_s"],
         e["cpu_efficiency_pct"], e["mem_max_mib"], e["mem_efficiency_pct"]))
'
}
check_burn || fail "the finished job's efficiency"
# the half-GPU jobs: their share of the GPU, never more than the GPU
for h in "$h1" "$h2"; do
	eff "$h" '.efficiency.gpus[0].util_pct <= 95 and .efficiency.gpus[0].util_pct > 0' |
		grep -qx true || fail "job $h: $(eff "$h" .efficiency)"
	eff "$h" '.efficiency.cpu_efficiency_pct == null and .efficiency.mem_efficiency_pct == null' |
		grep -qx true || fail "job $h asked for no CPUs or memory: $(eff "$h" .efficiency)"
done

"$DROVER" describe job "$burn" >"$TEST_TMP/d.txt"
grep -qE '^Efficiency: +GPU utilisation [0-9.]+%, GPU memory high-water [0-9]+ MiB \(GPUs: 2\)$' \
	"$TEST_TMP/d.txt" || fail "describe: $(cat "$TEST_TMP/d.txt")"
grep -qE '^ +CPU efficiency [0-9.]+% \([0-9.]+ s of CPU over 2 CPUs x [0-9]+ s\)$' "$TEST_TMP/d.txt" ||
	fail "describe: no CPU efficiency line"
grep -qE '^ +memory efficiency [0-9.]+% \(high-water [0-9]+ MiB of 256 MiB requested\)$' \
	"$TEST_TMP/d.txt" || fail "describe: no memory efficiency line"
expect_eq "describe: a line per GPU" "$(grep -cE '^  GPU box/[0-9]+ +rank 0 +utilisation' "$TEST_TMP/d.txt")" 2

check_acct() {
	"$DROVER" acct --by job -o json >"$TEST_TMP/acct.json" || fail "acct -o json"
	jq -e --argjson id "$burn" --argjson eff "$("$DROVER" get job "$burn" -o json | jq -c .efficiency)" \
		'.items[] | select(.job == $id) | .efficiency == $eff and (.cost_usd | type) == "number"
		 and .group == ($id | tostring)' "$TEST_TMP/acct.json" >/dev/null ||
		fail "acct by job: $(cat "$TEST_TMP/acct.json")"
	"$DROVER" acct --by job >"$TEST_TMP/acct.txt" || fail "acct"
	head -1 "$TEST_TMP/acct.txt" | grep -qE '^GROUP +JOBS +GPU_HOURS +COST_USD +GPU_UTIL +GPU_MEM_MAX +CPU_EFF +MEM_EFF$' ||
		fail "acct by job header: $(head -1 "$TEST_TMP/acct.txt")"
	grep -qE "^$burn +1 +[0-9.]+ +[0-9.]+ +[0-9.]+% +[0-9]+MiB +[0-9.]+% +[0-9.]+%$" "$TEST_TMP/acct.txt" ||
		fail "acct by job row: $(cat "$TEST_TMP/acct.txt")"
	"$DROVER" acct >"$TEST_TMP/acct-t.txt"
	head -1 "$TEST_TMP/acct-t.txt" | grep -qE '^GROUP +JOBS +GPU_HOURS +COST_USD$' ||
		fail "acct by tenant keeps its four columns: $(head -1 "$TEST_TMP/acct-t.txt")"
}
check_acct
before=$(eff "$burn" .efficiency)

# a restart: the finished job's figures come back from the store
stop_up
start_up
expect_eq "efficiency after a restart" "$(eff "$burn" .efficiency)" "$before"
check_acct
echo "ok: efficiency live and final, per GPU and in all; shares on a shared GPU sum to the GPU; describe, acct, restart"
