# k8s_ttl.sh: a batch/v1 Job's ttlSecondsAfterFinished, as Kubernetes' TTL
# controller acts on it: Jobs created through the Kubernetes API; that long
# after one finished, it is gone from that API (GET 404, not listed), while
# a Job without it stays, and drover's own routes still show both (their
# records stay for job_retention_s).
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup
start_server
start_agent node-a 2xH100

# job NAME [SPEC-LINE]: two quick pods, both at once
job() {
	cat <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
spec:
  completions: 2
  parallelism: 2
  ${2:-}
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox:1.36
        command: ["sh", "-c", "sleep 0.2"]
YAML
}
code() {
	curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ADMIN_TOKEN" "$SERVER_URL$1"
}
JOBS=/apis/batch/v1/namespaces/default/jobs
# create NAME [SPEC-LINE]: POSTed to the Kubernetes API, as kubectl create does; the job id
create() {
	job "$@" | python3 -c 'import json,sys,yaml; print(json.dumps(yaml.safe_load(sys.stdin)))' >"$TEST_TMP/$1.json"
	curl -sf -H "Authorization: Bearer $ADMIN_TOKEN" -H 'Content-Type: application/json' \
		--data "@$TEST_TMP/$1.json" "$SERVER_URL$JOBS" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["labels"]["drover.dev/job-id"])' ||
		fail "POST of Job $1 failed"
}

short=$(create short "ttlSecondsAfterFinished: 4")
kept=$(create kept)
# a watch of the Jobs, as kubectl get jobs -w keeps one: the ttl's end is a DELETED event
curl -sN -H "Authorization: Bearer $ADMIN_TOKEN" "$SERVER_URL$JOBS?watch=true&timeoutSeconds=25" \
	>"$TEST_TMP/watch.out" 2>/dev/null &
track $!
wait_job "$short" succeeded 30
wait_job "$kept" succeeded 30
# just finished: still there
expect_eq "GET short, just finished" "$(code "$JOBS/short")" 200
# past its ttl: gone; the other stays
wait_until 20 sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer $ADMIN_TOKEN' '$SERVER_URL$JOBS/short')\" = 404 ]" ||
	fail "Job short is still served well past its ttl"
ended=$(python3 -c 'import sys,datetime; print(int(datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()))' "$(jf "$short" 'j["end_time"]')")
gone_after=$(( $(date +%s) - ended ))
[ "$gone_after" -ge 4 ] || fail "Job short went $gone_after s after it finished, before its ttl of 4 s"
curl -sf -H "Authorization: Bearer $ADMIN_TOKEN" "$SERVER_URL$JOBS" |
	python3 -c 'import json,sys; n=[j["metadata"]["name"] for j in json.load(sys.stdin)["items"]]; sys.exit(0 if "kept" in n and not any(x.startswith("short") for x in n) else "jobs listed: %s" % n)' ||
	fail "the Job list still has short, or lacks kept"
expect_eq "GET kept" "$(code "$JOBS/kept")" 200
deleted() {   # deleted NAME: the watch has sent a DELETED event for Job NAME
	python3 -c 'import json,sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["type"] == "DELETED" and e["object"]["metadata"]["name"] == sys.argv[2]:
        sys.exit(0)
sys.exit(1)' "$TEST_TMP/watch.out" "$1"
}
wait_until 10 deleted short || fail "the watch saw no DELETED for short: $(cut -c1-120 "$TEST_TMP/watch.out")"
deleted kept && fail "the watch saw kept DELETED"
# drover's own routes keep it
expect_eq "drover get job short" "$(jf "$short" 'j["state"]')" succeeded
echo "ok: ttlSecondsAfterFinished 4 deleted Job short from the Kubernetes API $gone_after s after it finished; kept stays"
