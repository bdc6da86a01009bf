# server_cost.sh: what jobs cost (docs/api.md, "The job object", cost_usd;
# docs/cost.md). `drover up` runs with a cluster file whose one pool sells
# its GPUs at $3.60 per GPU-hour (a micro-dollar a millisecond per GPU).
# Two jobs of tenant team-a run: cost_usd is live while one runs and final
# when it ends, equal to GPUs x seconds run x price / 3600 from the task's
# own start and end times; the half-GPU job costs half per second; the
# cost counter per tenant, user and pool and the tenant's month spend on
# /metrics are the sum of the jobs' costs; `drover describe` shows it.
# Budgets (docs/cost.md): after a restart with a tenants file giving
# team-a a spent budget with hold: true, its month spend is summed again
# from the jobs, its new job is held (hold "budget", reason_code Budget)
# while team-b's runs, the budget gauges and warning are on /metrics, and
# a restart with a raised budget lets the held job run; a job running when
# its tenant passes the budget runs to its end.
. "$ROOT/tests/integration/lib.sh"

cat >"$TEST_TMP/cluster.yaml" <<'YAML'
kind: Cluster
name: priced
levels: [pool, node]
nodeTypes:
  box8: {gpus: 8, gpuModel: H100, cpu: 64, memory: 512Gi}
topology:
  - name: onprem-a
    provider: onprem
    pricePerGpuHour: 3.60
    children:
      - name: box
        type: box8
YAML
start_up --cluster "$TEST_TMP/cluster.yaml"

job_json() { "$DROVER" get job "$1" -o json; }
# expected cost of a job from its task times: GPUs x seconds x 3.60 / 3600
want_cost() {
	job_json "$1" | python3 -c '
import json, sys, datetime
j = json.load(sys.stdin)
def t(s): return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").timestamp()
g = float(sys.argv[1])
micro = 0
for ts in j["task_states"]:
    if ts["start_time"] and ts["end_time"]:
        micro += round(g * 1000 * 3600000 * (t(ts["end_time"]) - t(ts["start_time"])) / 3600000)
print("%.6f %.6f" % (micro / 1e6, j["cost_usd"]))' "$2"
}

printf '#!/bin/sh\n#SBATCH --job-name=two\n#SBATCH --gpus=2\n#SBATCH --account=team-a\nsleep 4\n' >"$TEST_TMP/two.sh"
id=$("$DROVER" submit --parsable "$TEST_TMP/two.sh") || fail "submit: $id"
cat >"$TEST_TMP/half.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: half
  annotations:
    drover.io/gpu-fraction: "0.5"
    drover.io/tenant: team-a
spec:
  containers:
  - name: c
    image: busybox
    command: ["sleep", "3"]
YAML
hid=$("$DROVER" submit --parsable "$TEST_TMP/half.yaml") || fail "submit half: $hid"

# live: it grows while the job runs
wait_until 20 sh -c "\"$DROVER\" get job $id -o json | grep -q '\"state\": \"running\"'" ||
	fail "job $id did not start"
sleep 2
live=$(job_json "$id" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["cost_usd"] if j["state"]=="running" else "ended")')
case "$live" in
ended) echo "job $id ended before the live look; skipping it" ;;
0 | 0.0) fail "job $id runs but costs nothing yet" ;;
*) echo "job $id running, cost so far \$$live" ;;
esac
wait_until 30 sh -c "\"$DROVER\" get job $id -o json | grep -q '\"state\": \"succeeded\"'" ||
	fail "job $id did not succeed: $(job_json "$id")"
wait_until 30 sh -c "\"$DROVER\" get job $hid -o json | grep -q '\"state\": \"succeeded\"'" ||
	fail "job $hid did not succeed: $(job_json "$hid")"

set -- $(want_cost "$id" 2)
expect_eq "cost_usd of the 2-GPU job" "$2" "$1"
[ "$1" != "0.000000" ] || fail "the 2-GPU job cost nothing"
two=$2
set -- $(want_cost "$hid" 0.5)
expect_eq "cost_usd of the half-GPU job" "$2" "$1"
half=$2
# final: it does not move once the job has ended
sleep 1.5
set -- $(want_cost "$id" 2)
expect_eq "cost_usd after the end" "$2" "$two"
"$DROVER" describe job "$id" | grep -q "^Cost: *\\\$$two\$" ||
	fail "describe shows no cost line \$$two: $("$DROVER" describe job "$id" | grep -i cost)"

# the counters are the sum of the jobs' costs (they count once a second and
# when a job's last task ends)
metrics=$(curl -fsS -H "Authorization: Bearer $(sed -n 's/^token: //p' "$XDG_CONFIG_HOME/drover/config")" "$SERVER_URL/metrics")
sum=$(python3 -c "print('%.6f' % ($two + $half))")
got=$(echo "$metrics" | sed -n 's/^drover_cost_dollars_total{tenant="team-a",user="[^"]*",pool="onprem-a"} //p')
expect_eq "drover_cost_dollars_total of team-a" "$(python3 -c "print('%.6f' % $got)")" "$sum"
got=$(echo "$metrics" | sed -n 's/^drover_tenant_month_spend_dollars{tenant="team-a"} //p')
expect_eq "drover_tenant_month_spend_dollars of team-a" "$(python3 -c "print('%.6f' % $got)")" "$sum"
echo "ok: 2-GPU job \$$two, half-GPU job \$$half at \$3.60/GPU-h; counters \$$sum"

# ---- budgets
tenants() {
	cat >"$TEST_TMP/tenants.yaml" <<YAML
tenants:
  team-a: {budget: {monthlyUsd: $1, hold: true}}
  team-b: {budget: {monthlyUsd: 1000}}
YAML
}
tenants 0.005
stop_up
echo "tenants: $TEST_TMP/tenants.yaml" >>"$TEST_TMP/state/config.yaml"
start_up --cluster "$TEST_TMP/cluster.yaml"
metrics() {
	curl -fsS -H "Authorization: Bearer $(sed -n 's/^token: //p' "$XDG_CONFIG_HOME/drover/config")" "$SERVER_URL/metrics"
}
m=$(metrics)
got=$(echo "$m" | sed -n 's/^drover_tenant_month_spend_dollars{tenant="team-a"} //p')
expect_eq "team-a month spend after a restart" "$(python3 -c "print('%.6f' % $got)")" "$sum"
echo "$m" | grep -q '^drover_tenant_budget_dollars{tenant="team-a"} 0.005$' ||
	fail "no team-a budget gauge: $(echo "$m" | grep budget)"
echo "$m" | grep -q '^drover_tenant_budget_warning{tenant="team-a"} 1$' ||
	fail "team-a is past its budget but no warning: $(echo "$m" | grep budget_warning)"
echo "$m" | grep -q '^drover_tenant_budget_warning{tenant="team-b"} 0$' ||
	fail "team-b warned: $(echo "$m" | grep budget_warning)"

held=$("$DROVER" submit --parsable "$TEST_TMP/two.sh") || fail "submit: $held"
sed 's/team-a/team-b/' "$TEST_TMP/two.sh" >"$TEST_TMP/b.sh"
bid=$("$DROVER" submit --parsable "$TEST_TMP/b.sh") || fail "submit: $bid"
wait_until 30 sh -c "\"$DROVER\" get job $bid -o json | grep -q '\"state\": \"running\"'" ||
	fail "team-b's job did not start: $(job_json "$bid")"
# while it runs, team-b burns 2 x 3.60 $/h
wait_until 10 sh -c "curl -fsS -H \"Authorization: Bearer \$(sed -n 's/^token: //p' \"$XDG_CONFIG_HOME/drover/config\")\" $SERVER_URL/metrics | grep -q '^drover_tenant_burn_rate_dollars_per_hour{tenant=\"team-b\"} 7.2\$'" ||
	fail "team-b's burn rate is not 7.2: $(metrics | grep burn_rate)"
metrics | grep -q "^drover_job_info{hpc_job=\"$bid\",user=\"[^\"]*\",tenant=\"team-b\",pool=\"onprem-a\",name=\"two\",namespace=\"\",pod=\"\",container=\"\"} 1\$" ||
	fail "no drover_job_info for job $bid: $(metrics | grep job_info)"
set -- $(job_json "$held" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["state"], j["hold"], j["reason_code"])')
expect_eq "team-a's new job over budget (state hold code)" "$*" "pending budget Budget"
job_json "$held" | grep -q 'spent \$0.01 of its \$0.01 budget' ||
	fail "reason does not name the spend: $(jf_reason "$held")"
wait_until 30 sh -c "\"$DROVER\" get job $bid -o json | grep -q '\"state\": \"succeeded\"'" ||
	fail "team-b's job did not end"
expect_eq "held job after team-b's ended" "$(job_json "$held" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')" pending

# a raised budget: the hold lifts and the job runs
stop_up
tenants 100
start_up --cluster "$TEST_TMP/cluster.yaml"
wait_until 30 sh -c "\"$DROVER\" get job $held -o json | grep -q '\"state\": \"succeeded\"'" ||
	fail "held job $held did not run after the budget was raised: $(job_json "$held")"
job_json "$held" | grep -q 'budget hold released' || fail "no release event: $(job_json "$held")"

# a running job is never stopped for money: team-a's budget, $0.003 over
# its spend, is passed while its 2-GPU job ($0.002 a second) runs 4 s
spend=$(metrics | sed -n 's/^drover_tenant_month_spend_dollars{tenant="team-a"} //p')
stop_up
tenants "$(python3 -c "print('%.6f' % ($spend + 0.003))")"
start_up --cluster "$TEST_TMP/cluster.yaml"
rid=$("$DROVER" submit --parsable "$TEST_TMP/two.sh") || fail "submit: $rid"
wait_until 30 sh -c "\"$DROVER\" get job $rid -o json | grep -q '\"state\": \"running\"'" ||
	fail "team-a's job under its budget did not start: $(job_json "$rid")"
passed() {   # the month spend has reached the budget
	metrics | python3 -c '
import re, sys
t = sys.stdin.read()
g = lambda n: float(re.search(r"^drover_tenant_%s\{tenant=\"team-a\"\} (\S+)$" % n, t, re.M).group(1))
sys.exit(0 if g("month_spend_dollars") >= g("budget_dollars") else 1)'
}
wait_until 10 passed || fail "team-a's budget was not passed while job $rid ran: $(metrics | grep team-a)"
expect_eq "job $rid once its tenant passed the budget" "$(job_json "$rid" | jq -r .state)" running
wait_until 30 sh -c "\"$DROVER\" get job $rid -o json | grep -q '\"state\": \"succeeded\"'" ||
	fail "job $rid did not run to its end: $(job_json "$rid")"
stop_up
echo "ok: budget hold: job $held held at \$$sum of \$0.005, team-b ran; released at \$100"
