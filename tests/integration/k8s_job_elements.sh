# k8s_job_elements.sh: a batch/v1 Job runs as Kubernetes runs it, as a
# parent with one element per pod (CONTRACTS.md §2), on a real server and
# agent: an Indexed Job with completions 4 and parallelism 2 runs 4 pods,
# never more than 2 at once and 2 at some time, with indexes 0-3 seen by
# the pods themselves (JOB_COMPLETION_INDEX, $(VAR) in args and env, $$ escaping,
# HOSTNAME job-INDEX); a pod that always fails runs 1 + backoffLimit times
# and the Job fails BackoffLimitExceeded; a pod that fails once and then
# succeeds (restartPolicy OnFailure) leaves the Job succeeded with one
# failure counted; a Job past
# its activeDeadlineSeconds fails DeadlineExceeded and its pod is stopped;
# a suspended Job runs nothing until released; a restart of the server
# keeps a Job's state; a Pod's own deadline and grace period are kept.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup
start_server
start_agent node-a 8xH100
OUT=$TEST_TMP/out
cd "$TEST_TMP"

# job_yaml NAME COMPLETIONS PARALLELISM BACKOFF MODE EXTRA-SPEC-LINE CMD ARGS-JSON
job_yaml() {
	_cmd=$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$7")
	cat <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
spec:
  completions: $2
  parallelism: $3
  backoffLimit: $4
  completionMode: $5
  $6
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox:1.36
        command: ["sh", "-c", $_cmd, "sh"]
        args: $8
        env:
        - name: BASE
          value: "$1"
        - name: WHO
          value: "\$(BASE)-pod"
        resources:
          limits:
            nvidia.com/gpu: 1
YAML
}

# 1. Indexed, 4 completions, 2 at a time. Each pod records its index as it
# sees it three ways, and the times it started and ended.
cmd='i=$JOB_COMPLETION_INDEX; echo "$i $1 $2 $HOSTNAME $WHO" >'"$OUT"'/idx-$i; echo "start $(date +%s.%N)" >>'"$OUT"'/span-$i; sleep 2; echo "end $(date +%s.%N)" >>'"$OUT"'/span-$i'
job_yaml sweep 4 2 0 Indexed "" "$cmd" '["$(JOB_COMPLETION_INDEX)", "$$(JOB_COMPLETION_INDEX)"]' >sweep.yaml
"$DROVER" validate sweep.yaml >/dev/null || fail "validate sweep.yaml"
id=$(submit sweep.yaml)
expect_eq "elements of the parent" "$(jf "$id" 'j["elements"]["count"], j["elements"]["parallelism"]')" "4 2"
# the elements beyond the parallelism wait with their reason code
expect_eq "the parent holds no GPU" "$(jf "$id" 'j["gpus"]')" "0"
"$DROVER" describe job "$id" | grep -q '^Pods: .*of 4 succeeded.*parallelism 2.*Indexed' ||
	fail "describe lacks the pods line: $("$DROVER" describe job "$id")"
expect_eq "third element's code" "$(jf $((id + 3)) 'j["reason_code"]')" "JobArrayTaskLimit"
expect_eq "element's parent" "$(jf $((id + 3)) 'j["array_job_id"], j["completion_index"]')" "$id 2"
wait_job "$id" succeeded 90
expect_eq "parent counts" "$(jf "$id" 'j["elements"]["succeeded"], j["elements"]["failed"]')" "4 0"
for i in 0 1 2 3; do
	[ -f "$OUT/idx-$i" ] || fail "no pod ran with index $i: $(ls "$OUT")"
	expect_eq "pod $i saw" "$(cat "$OUT/idx-$i")" "$i $i \$(JOB_COMPLETION_INDEX) sweep-$i sweep-pod"
	expect_eq "pod $i ran once" "$(grep -c start "$OUT/span-$i")" "1"
done
expect_eq "pods" "$(ls "$OUT" | grep -c '^idx-')" "4"
# the most pods that ran at one time, from their own start and end times
most=$(cat "$OUT"/span-* | python3 -c '
import sys
ev = []
for line in sys.stdin:
    k, t = line.split()
    ev.append((float(t), 1 if k == "start" else -1))
ev.sort(key=lambda e: (e[0], e[1]))
n = m = 0
for _, d in ev:
    n += d
    m = max(m, n)
print(m)')
expect_eq "pods at once at most" "$most" "2"

# 2. A pod that always fails: 1 + backoffLimit 2 = 3 attempts, then the Job
# fails BackoffLimitExceeded.
job_yaml always-fails 1 1 2 NonIndexed "" 'echo try >>'"$OUT"'/fails; exit 3' '[]' >fail.yaml
fid=$(submit fail.yaml)
wait_job "$fid" failed 90
expect_eq "attempts" "$(wc -l <"$OUT/fails")" "3"
jf "$fid" 'j["reason"]' | grep -q '^BackoffLimitExceeded: 3 pod failures, backoffLimit 2' ||
	fail "reason: $(jf "$fid" 'j["reason"]')"
expect_eq "element's last state" "$(jf $((fid + 1)) 'j["state"], j["exit_code"]')" "failed 3"

# 3. Fails once, then succeeds: the Job succeeds with one failure counted.
# Its pods say restartPolicy OnFailure: retried under backoffLimit as Never is.
job_yaml flaky 1 1 3 NonIndexed "" 'if [ -f '"$OUT"'/flaky ]; then exit 0; fi; touch '"$OUT"'/flaky; exit 1' '[]' |
	sed 's/restartPolicy: Never/restartPolicy: OnFailure/' >flaky.yaml
grep -q 'restartPolicy: OnFailure' flaky.yaml || fail "flaky.yaml: no OnFailure"
kid=$(submit flaky.yaml)
wait_job "$kid" succeeded 60
expect_eq "flaky counts" "$(jf "$kid" 'j["elements"]["succeeded"], j["elements"]["failed"]')" "1 1"
jf $((kid + 1)) '[e["reason"] for e in j["events"]]' | grep -q 'retried: pod failure 1 of the Job' ||
	fail "no retry event: $(jf $((kid + 1)) 'j["events"]')"

# 4. The Job's activeDeadlineSeconds: failed DeadlineExceeded, pod stopped.
job_yaml slow 1 1 0 NonIndexed "activeDeadlineSeconds: 2" 'echo $$ >'"$OUT"'/slow.pid; exec sleep 60' '[]' >slow.yaml
did=$(submit slow.yaml)
wait_job "$did" failed 30
jf "$did" 'j["reason"]' | grep -q '^DeadlineExceeded' || fail "reason: $(jf "$did" 'j["reason"]')"
wait_job $((did + 1)) cancelled 10
pid=$(cat "$OUT/slow.pid")
wait_until 15 sh -c "! kill -0 $pid" || fail "the pod past the Job's deadline still runs"
# 5. spec.suspend: true holds every pod (JobHeldUser, hold "suspend") until
# POST /v1/jobs/ID/release; then they run.
job_yaml held 2 2 0 Indexed "suspend: true" 'touch '"$OUT"'/held-$JOB_COMPLETION_INDEX' '[]' >held.yaml
hid=$(submit held.yaml)
expect_eq "suspended Job's hold" "$(jf "$hid" 'j["hold"]')" "suspend"
expect_eq "its pods' code" "$(jf $((hid + 1)) 'j["reason_code"]')" "JobHeldUser"
expect_eq "the Job's own code and reason" "$(jf "$hid" 'j["reason_code"], j["reason"].split(":")[0]')" "JobHeldUser pod $((hid + 1)) (index 0)"
sleep 1.5
[ ! -e "$OUT/held-0" ] && [ ! -e "$OUT/held-1" ] || fail "a pod of a suspended Job ran"
expect_eq "still pending" "$(jf "$hid" 'j["state"]')" "pending"
code=$(curl -s -o release.json -w '%{http_code}' -X POST -H "Authorization: Bearer $ADMIN_TOKEN" \
	"$SERVER_URL/v1/jobs/$hid/release")
expect_eq "release answer" "$code" "200"
wait_job "$hid" succeeded 60
[ -e "$OUT/held-0" ] && [ -e "$OUT/held-1" ] || fail "the resumed Job's pods did not run"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $ADMIN_TOKEN" \
	"$SERVER_URL/v1/jobs/$hid/release")
expect_eq "release of a finished Job" "$code" "409"
# 8 (before 6, whose restart it does not need). spec.parallelism and
# spec.suspend change after submission by apply (CONTRACTS.md §4): a
# suspended Job of parallelism 1 is applied again unsuspended with
# parallelism 3, and its 3 pods run at once.
cmd8='echo "start $(date +%s.%N)" >>'"$OUT"'/p8-$JOB_COMPLETION_INDEX; sleep 2; echo "end $(date +%s.%N)" >>'"$OUT"'/p8-$JOB_COMPLETION_INDEX'
job_yaml widen 3 1 0 Indexed "suspend: true" "$cmd8" '[]' >widen.yaml
wid=$(submit widen.yaml)
sed 's/parallelism: 1/parallelism: 3/; s/suspend: true/suspend: false/' widen.yaml >widen2.yaml
"$DROVER" apply -f widen2.yaml >apply.out 2>&1 || fail "apply: $(cat apply.out)"
expect_eq "parallelism after apply" "$(jf "$wid" 'j["elements"]["parallelism"], j["hold"]')" "3 None"
wait_job "$wid" succeeded 60
most8=$(cat "$OUT"/p8-* | python3 -c '
import sys
ev = sorted((float(t), 1 if k == "start" else -1) for k, t in (l.split() for l in sys.stdin))
n = m = 0
for _, d in ev:
    n += d
    m = max(m, n)
print(m)')
expect_eq "pods at once after widening" "$most8" "3"
job_yaml other 2 1 0 Indexed "suspend: true" "true" '[]' >other.yaml
oid=$(submit other.yaml)
sed 's/image: busybox:1.36/image: busybox:1.37/' other.yaml >other2.yaml
if "$DROVER" apply -f other2.yaml >apply2.out 2>&1; then fail "a Job's image changed by apply"; fi
grep -q "only parallelism and suspend change" apply2.out || fail "apply refusal: $(cat apply2.out)"
"$DROVER" cancel "$oid" >/dev/null

# 6. The server restarts while a Job runs: the parent, its counts and the
# gates of its waiting elements come back from the store.
job_yaml restart 3 1 0 Indexed "" 'echo $JOB_COMPLETION_INDEX >>'"$OUT"'/restart; sleep 1' '[]' >restart.yaml
rid=$(submit restart.yaml)
wait_until 30 test -s "$OUT/restart" || fail "the first pod did not start"
stop_server
start_server
wait_job "$rid" succeeded 60
expect_eq "indexes after a restart" "$(sort "$OUT/restart" | tr '\n' ' ')" "0 1 2 "
expect_eq "counts after a restart" "$(jf "$rid" 'j["elements"]["succeeded"], j["elements"]["failed"]')" "3 0"
# 7. A Pod's activeDeadlineSeconds is its time limit and its
# terminationGracePeriodSeconds the grace between SIGTERM and SIGKILL: a pod
# that ignores SIGTERM is killed about 1 s after it.
cat >grace.yaml <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: grace
spec:
  activeDeadlineSeconds: 2
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox:1.36
    command: ["sh", "-c", "trap 'date +%s.%N >$OUT/grace-term' TERM; echo \$\$ >$OUT/grace.pid; while :; do sleep 0.1; done"]
YAML
gid=$(submit grace.yaml)
wait_job "$gid" timeout 30
[ -s "$OUT/grace-term" ] || fail "the pod saw no SIGTERM"
wait_until 10 sh -c "! kill -0 $(cat "$OUT/grace.pid")" || fail "the pod outlived its grace"
ended=$(jf "$gid" 'j["task_states"][0]["end_time"]')
echo "grace: SIGTERM at $(cat "$OUT/grace-term"), ended $ended"
echo "ok: Indexed 4x2 ran 0-3 two at a time; backoff, retry and deadline as Kubernetes"
