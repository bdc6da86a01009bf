# server_classes.sh: priority classes from the server config's tenants file
# (`tenants:`, docs/api.md) reach the controller's scheduler. team-a's jobs
# default to class production (1000), team-b's to scavenger (0); preemption
# is on; one 8-GPU node. A preemptible team-b job runs. A team-a job that
# names class scavenger itself does not preempt it (the job's own class
# wins over the tenant's default). A team-a job with no class gets
# production and preempts it: the victim goes running -> preempted ->
# pending and the preemptor runs.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup "tenants: tenants.yaml" "scheduler: {preemption: true}"

cat >"$TEST_TMP/tenants.yaml" <<'YAML'
priorityClasses:
  production: {value: 1000}
  scavenger: {value: 0}
tenants:
  team-a: {priorityClass: production}
  team-b: {priorityClass: scavenger}
YAML
start_server
start_agent node-a

low=$(submit_8gpu low team-b '{"preemptible": true}')
wait_job "$low" running 30

own=$(submit_8gpu own-class team-a '{"priorityClassName": "scavenger"}')
sleep 3   # passes run; a scavenger job may not preempt a scavenger job
expect_eq "team-a job of class scavenger" "$(jf "$own" 'j["state"]')" pending
expect_eq "the preemptible job beside it" "$(jf "$low" 'j["state"]')" running

high=$(submit_8gpu high team-a)
wait_job "$high" running 60
expect_eq "victim" "$(jf "$low" 'j["state"]')" pending
jf "$low" '" ".join(e["to"] for e in j["events"])' | grep -q 'running preempted pending' ||
	fail "job $low events: $(jf "$low" '[e["to"] for e in j["events"]]')"
expect_eq "team-a job of class scavenger, after" "$(jf "$own" 'j["state"]')" pending
echo "ok: tenant default classes and a job's own class decide preemption in the controller"
