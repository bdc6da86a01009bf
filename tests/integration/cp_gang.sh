# cp_gang.sh: a 2-node gang (PyTorchJob, Master + Worker, 8 GPUs each)
# starts both tasks or neither: with one node taken it starts nothing and
# says why; once both nodes are free both tasks start, on different nodes,
# with the same master address and port and world size 2.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup
start_server
start_agent node-a
start_agent node-b

pod_yaml blocker 8 "$(recording_cmd blocker)" >"$TEST_TMP/blocker.yaml"
blocker=$(submit "$TEST_TMP/blocker.yaml")
wait_job "$blocker" running 60

gang_yaml gang 8 "env | grep -E '^(MASTER_ADDR|MASTER_PORT|WORLD_SIZE|RANK)=' | sort >$TEST_TMP/out/gang-env-\$DROVER_TASK_ID; $(recording_cmd gang)" \
	>"$TEST_TMP/gang.yaml"
gang=$(submit "$TEST_TMP/gang.yaml")
expect_eq "gang GPUs" "$(jf "$gang" 'int(j["gpus"])')" "16"
expect_eq "gang tasks" "$(jf "$gang" 'j["tasks"]')" "2"

# Neither: for 3 s the gang stays pending with a reason, and no task of it starts.
sleep 3
expect_eq "gang state while one node is taken" "$(jf "$gang" 'j["state"]')" "pending"
[ -n "$(jf "$gang" 'j["reason"]')" ] || fail "a pending gang must say why"
[ ! -e "$TEST_TMP/out/gang-started" ] || fail "a task of the gang started although it cannot run whole: $(cat "$TEST_TMP/out/gang-started")"
"$DROVER" queue >"$TEST_TMP/queue.txt"
cat "$TEST_TMP/queue.txt"
grep -E "^$gang +gang .*pending.*\(" "$TEST_TMP/queue.txt" >/dev/null || fail "queue does not show the gang pending with its reason"

# Both: free the node; both tasks start, on the two nodes.
"$DROVER" cancel "$blocker" >/dev/null || fail "cancel blocker"
wait_job "$gang" running 60
wait_until 10 sh -c "[ \$(sort -u $TEST_TMP/out/gang-started | wc -l) -eq 2 ]" ||
	fail "not both tasks of the gang started: $(cat "$TEST_TMP/out/gang-started" 2>/dev/null)"
expect_eq "distinct nodes" "$(jf "$gang" 'len(set(p["node"] for p in j["placement"]))')" "2"
expect_eq "GPUs per task" "$(jf "$gang" '",".join(str(len(p["gpus"])) for p in j["placement"])')" "8,8"
t0=$(jf "$gang" 'j["placement"][0]["task"]')
t1=$(jf "$gang" 'j["placement"][1]["task"]')
for t in "$t0" "$t1"; do
	wait_until 5 test -s "$TEST_TMP/out/gang-env-$t" || fail "task $t wrote no env"
done
expect_eq "same MASTER_ADDR/PORT" "$(grep MASTER "$TEST_TMP/out/gang-env-$t0")" "$(grep MASTER "$TEST_TMP/out/gang-env-$t1")"
grep -q '^WORLD_SIZE=2$' "$TEST_TMP/out/gang-env-$t0" || fail "WORLD_SIZE is not 2: $(cat "$TEST_TMP/out/gang-env-$t0")"
expect_eq "ranks" "$(cat "$TEST_TMP/out/gang-env-$t0" "$TEST_TMP/out/gang-env-$t1" | grep '^RANK=' | sort | tr '\n' ' ')" "RANK=0 RANK=1 "
echo "ok: gang $gang waited whole, then started both tasks"
