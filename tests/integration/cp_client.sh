# cp_client.sh: the client as a person uses it, against a real server:
# where it talks to (flags, environment, the config file), the errors and
# exit codes (0/1/2), submit vs apply, get/queue/nodes/describe/top and
# -o json|yaml|wide, and sbatch options on the command line winning over
# the script's #SBATCH lines.
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/cp_common.shlib"
cp_setup

# Nothing listens yet: the human error, exit 1.
if "$DROVER" queue 2>"$TEST_TMP/err"; then fail "queue without a server succeeded"; fi
expect_eq "unreachable message" "$(cat "$TEST_TMP/err")" \
	"drover queue: cannot reach drover at $SERVER_URL: connection refused"
"$DROVER" queue --server "$SERVER_URL"; expect_eq "exit code, unreachable" "$?" "1"
"$DROVER" queue --bogus 2>/dev/null; expect_eq "exit code, bad flag" "$?" "2"
"$DROVER" get jobs -o xml 2>/dev/null; expect_eq "exit code, bad -o" "$?" "2"

start_server

# The config file alone is enough (what drover up writes).
mkdir -p "$XDG_CONFIG_HOME/drover"
printf 'server: %s\ntoken: %s\n' "$SERVER_URL" "$ALICE_TOKEN" >"$XDG_CONFIG_HOME/drover/config"
env -u DROVER_SERVER -u DROVER_TOKEN "$DROVER" queue >/dev/null || fail "queue with only the config file"
# flags win over the environment, which wins over the file
if env -u DROVER_SERVER DROVER_TOKEN=wrong "$DROVER" queue 2>"$TEST_TMP/err"; then
	fail "a wrong DROVER_TOKEN was not used"
fi
grep -q "401" "$TEST_TMP/err" || fail "no 401 hint: $(cat "$TEST_TMP/err")"
ALICE_FILE="$TEST_TMP/alice-token"
(umask 077 && echo "$ALICE_TOKEN" >"$ALICE_FILE")
DROVER_TOKEN=wrong "$DROVER" queue --token-file "$ALICE_FILE" >/dev/null || fail "--token-file did not win"
# tokens never on a command line (CONTRACTS.md §6): --token is gone, a
# token file others may read is refused unread
"$DROVER" queue --token "$ALICE_TOKEN" 2>"$TEST_TMP/err"; expect_eq "exit code, --token" "$?" "2"
expect_eq "--token message" "$(cat "$TEST_TMP/err")" \
	"drover queue: unknown option '--token' (see drover queue --help)"
cp "$ALICE_FILE" "$TEST_TMP/lax-token" && chmod 644 "$TEST_TMP/lax-token"
"$DROVER" queue --token-file "$TEST_TMP/lax-token" 2>"$TEST_TMP/err"
expect_eq "exit code, token file 0644" "$?" "2"
grep -q "has mode 0644; a token file must be 0600 or stricter" "$TEST_TMP/err" ||
	fail "lax token file: $(cat "$TEST_TMP/err")"
DROVER_SERVER=http://127.0.0.1:1 "$DROVER" queue --server "$SERVER_URL" >/dev/null || fail "--server did not win"

# A bad config file is bad input: exit 2, file:line:col; an unreadable one: exit 1.
CFG=$XDG_CONFIG_HOME/drover/config
printf 'server: %s\ntoken: [%s]\n' "$SERVER_URL" "$ALICE_TOKEN" >"$CFG"
env -u DROVER_SERVER -u DROVER_TOKEN "$DROVER" queue 2>"$TEST_TMP/err"; rc=$?
expect_eq "exit code, bad config" "$rc" "2"
expect_eq "bad config message" "$(cat "$TEST_TMP/err")" \
	"drover queue: $CFG:2:9: error: token: found a list, expected a string"
printf 'server: %s\ntoken: "%s\n' "$SERVER_URL" "$ALICE_TOKEN" >"$CFG"
env -u DROVER_SERVER -u DROVER_TOKEN "$DROVER" nodes 2>"$TEST_TMP/err"
expect_eq "exit code, config syntax" "$?" "2"
grep -q "^drover nodes: $CFG:[0-9]*:[0-9]*: error: YAML syntax: " "$TEST_TMP/err" ||
	fail "config syntax: $(cat "$TEST_TMP/err")"
rm -f "$CFG" && mkdir "$CFG"
env -u DROVER_SERVER -u DROVER_TOKEN "$DROVER" queue 2>/dev/null
expect_eq "exit code, unreadable config" "$?" "1"
rmdir "$CFG"
printf 'server: %s\ntoken: %s\n' "$SERVER_URL" "$ALICE_TOKEN" >"$CFG"

# A job file the server rejects: exit 2, diagnostics with the file's name.
printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers: 7\n' >"$TEST_TMP/bad.yaml"
"$DROVER" submit "$TEST_TMP/bad.yaml" 2>"$TEST_TMP/err"; rc=$?
expect_eq "exit code, invalid job" "$rc" "2"
grep -q "bad.yaml" "$TEST_TMP/err" || fail "the error does not name the file: $(cat "$TEST_TMP/err")"
"$DROVER" submit "$TEST_TMP/nonexistent.yaml" 2>/dev/null; expect_eq "exit code, missing file" "$?" "2"

# submit always creates; apply creates, then leaves alone, then updates.
pod_yaml twin 8 "sleep 30" >"$TEST_TMP/twin.yaml"
a=$(submit "$TEST_TMP/twin.yaml"); b=$(submit "$TEST_TMP/twin.yaml")
[ "$a" != "$b" ] || fail "two submits gave one id"
pod_yaml applied 8 "sleep 30" >"$TEST_TMP/applied.yaml"
out=$("$DROVER" apply -f "$TEST_TMP/applied.yaml") || fail "apply create"
case "$out" in *created*) ;; *) fail "apply said '$out', want created" ;; esac
aid=$(echo "$out" | sed 's/^job \([0-9]*\).*/\1/')
out=$("$DROVER" apply -f "$TEST_TMP/applied.yaml") || fail "apply again"
case "$out" in *"job $aid "*unchanged*) ;; *) fail "apply again said '$out', want job $aid unchanged" ;; esac
pod_yaml applied 4 "sleep 30" >"$TEST_TMP/applied.yaml"
out=$("$DROVER" apply -f "$TEST_TMP/applied.yaml") || fail "apply changed"
case "$out" in *"job $aid "*configured*) ;; *) fail "apply changed said '$out', want job $aid configured" ;; esac
expect_eq "applied GPUs" "$(jf "$aid" 'int(j["gpus"])')" "4"

# Output formats (no agents: everything pends, with a reason).
"$DROVER" get jobs -o json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["items"]) == 3, d' ||
	fail "get jobs -o json"
"$DROVER" get job "$a" -o yaml >"$TEST_TMP/job.yaml" || fail "get job -o yaml"
grep -q "^name: twin$" "$TEST_TMP/job.yaml" || fail "yaml lacks name: $(head "$TEST_TMP/job.yaml")"
grep -q "^id: $a$" "$TEST_TMP/job.yaml" || fail "yaml lacks id"
"$DROVER" queue >"$TEST_TMP/queue.txt" || fail "queue"
cat "$TEST_TMP/queue.txt"
head -1 "$TEST_TMP/queue.txt" | grep -q "^ID  *NAME  *USER  *PARTITION  *STATE  *TIME  *GPUS  *NODES  *NODELIST(REASON)$" ||
	fail "queue header: $(head -1 "$TEST_TMP/queue.txt")"
grep -E "^$a +twin +ops +[^ ]+ +pending +0:00 +8 +1 +\(.+\)$" "$TEST_TMP/queue.txt" >/dev/null || fail "queue row for $a"
"$DROVER" queue -o wide | head -1 | grep -q TENANT || fail "queue -o wide has no TENANT"
"$DROVER" describe job "$a" >"$TEST_TMP/describe.txt" || fail "describe"
grep -q "^Why pending: " "$TEST_TMP/describe.txt" || fail "describe does not say why pending"
grep -q "submitted by" "$TEST_TMP/describe.txt" || fail "describe shows no events"
"$DROVER" describe job 999999 2>"$TEST_TMP/err"; expect_eq "exit code, no such job" "$?" "1"
grep -q "not found" "$TEST_TMP/err" || fail "no such job: $(cat "$TEST_TMP/err")"

# alice sees only her jobs in get, every job in queue
ALICE="--token-file $ALICE_FILE"
expect_eq "alice's jobs" "$("$DROVER" get jobs $ALICE -o json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')" "0"
"$DROVER" cancel "$a" $ALICE 2>"$TEST_TMP/err"; expect_eq "exit code, someone else's job" "$?" "1"

# Nodes and top once agents are up.
start_agent node-a
start_agent node-b
"$DROVER" nodes >"$TEST_TMP/nodes.txt" || fail "nodes"
cat "$TEST_TMP/nodes.txt"
head -1 "$TEST_TMP/nodes.txt" | grep -q "^POOL  *STATE  *NODES  *GPUS(A/F/U/T)  *MODEL  *NODELIST$" ||
	fail "nodes header"
# two up nodes of 8: allocated + free = 16, none unavailable
grep -E "^default +up +2 +([0-9]+)/([0-9]+)/0/16 +H100" "$TEST_TMP/nodes.txt" |
	awk '{ split($4, g, "/"); ok = g[1] + g[2] == 16 } END { exit !ok }' || fail "nodes summary"
"$DROVER" nodes -N | grep -q "^node-a " || fail "nodes -N"
"$DROVER" top -n 1 >"$TEST_TMP/top.txt" || fail "top"
grep -q "^node-a" "$TEST_TMP/top.txt" || fail "top shows no node-a"
grep -q "^GPUs " "$TEST_TMP/top.txt" || fail "top shows no GPU summary"
"$DROVER" describe node node-a | grep -q "^GPUs: *8 total" || fail "describe node"

# Slurm: sbatch options on the command line win over #SBATCH lines.
cat >"$TEST_TMP/job.sh" <<'SH'
#!/bin/sh
#SBATCH --job-name=from-script
#SBATCH --gres=gpu:1
#SBATCH --nodes=1
echo hi
SH
s1=$(submit "$TEST_TMP/job.sh")
expect_eq "script's own GPUs" "$(jf "$s1" 'int(j["gpus"])')" "1"
expect_eq "script's own name" "$(jf "$s1" 'j["name"]')" "from-script"
s2=$(submit --gres=gpu:2 -J from-cli "$TEST_TMP/job.sh")
expect_eq "GPUs from the command line" "$(jf "$s2" 'int(j["gpus"])')" "2"
expect_eq "name from the command line" "$(jf "$s2" 'j["name"]')" "from-cli"
"$DROVER" submit --gres=gpu:2 "$TEST_TMP/twin.yaml" 2>/dev/null; expect_eq "exit code, sbatch option on a Pod" "$?" "2"
# logs -f follows a job from before its task starts until it ends
pod_yaml chatty 1 "echo first; sleep 3; echo last" >"$TEST_TMP/chatty.yaml"
c=$(submit "$TEST_TMP/chatty.yaml")
timeout 120 "$DROVER" logs -f "$c" >"$TEST_TMP/follow.txt" || fail "logs -f failed"
expect_eq "logs -f" "$(cat "$TEST_TMP/follow.txt" | tr '\n' ' ')" "first last "
echo "ok: client behaves"
