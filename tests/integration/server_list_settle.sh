# server_list_settle.sh: a job that finishes while a listing reads the store
# is still in that listing. GET /v1/jobs reads the finished jobs' rows with
# the server's lock released, then walks memory for the rest; a job whose
# final record was written (and which then left memory) in between was in
# neither, and dropped out of the page: the CI soak (cp_soak_agents) once
# counted such a job "lost". With every store listing slowed after its read
# (DROVER_STORE_SLOW=list_jobs:1500), a job ends during a listing: the
# listing must hold it, and a listing after it too.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup
start_server DROVER_STORE_SLOW=list_jobs:1500
grep -q 'slow store armed: list_jobs' "$TEST_TMP/server.log" ||
	fail "the slow store is not armed: $(tail -5 "$TEST_TMP/server.log")"
start_agent node-a

pod_yaml short 1 "sleep 0.4" >"$TEST_TMP/short.yaml"
pod_yaml first 1 "true" >"$TEST_TMP/first.yaml"
first=$(submit "$TEST_TMP/first.yaml")
wait_job "$first" succeeded 60
id=$(submit "$TEST_TMP/short.yaml")
wait_job "$id" running 60
list() {
	curl -fsS -H "Authorization: Bearer $ADMIN_TOKEN" "$SERVER_URL/v1/jobs?limit=100" |
		python3 -c 'import json,sys; print(" ".join("%d:%s" % (j["id"], j["state"]) for j in json.load(sys.stdin)["items"]))'
}
during=$(list) || fail "GET /v1/jobs failed"
wait_job "$id" succeeded 30
after=$(list) || fail "GET /v1/jobs failed"
echo "listing while job $id ended: $during; after: $after"
case " $during " in
*" $id:"*) ;;
*) fail "job $id, which ended during the listing, is not in it: '$during'" ;;
esac
case " $after " in
*" $id:succeeded "*) ;;
*) fail "job $id is not listed succeeded after it ended: '$after'" ;;
esac
echo ok
