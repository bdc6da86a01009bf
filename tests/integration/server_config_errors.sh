#!/bin/sh
# server_config_errors.sh: a bad server config (docs/api.md, "Server
# configuration") stops `drover server --config FILE` and `drover up`
# with exit 2 and every error as "file:line:col: error: field.path: found
# X, expected Y", unknown settings and the fields of `tokens` entries
# included; nothing is started or written (no state.db). The documented
# example still starts a server that answers /healthz.
. "$ROOT/tests/integration/lib.sh"

cd "$TEST_TMP"

cat >bad.yaml <<'CONF'
tokens:
  - token: "alice-secret"
    user: alice
  - token: "ops-secret"
    user: ops
    admin: yes please
    role: x
cluster_token: "agents-secret"
heartbeat_timeout_s: abc
nope: 1
CONF
"$DROVER" server --listen "127.0.0.1:$(free_port)" --state "$TEST_TMP/s1" --config bad.yaml \
	>out.txt 2>err.txt
expect_eq "server bad.yaml exit" "$?" 2
expect_eq "server bad.yaml stderr" "$(head -3 err.txt)" "drover server: bad.yaml:6:12: error: tokens[1].admin: found 'yes please', expected true or false
bad.yaml:7:5: error: tokens[1].role: found an unknown field, expected one of: token, user, admin
bad.yaml:9:22: error: heartbeat_timeout_s: found 'abc', expected an integer from 1 to 86400"
expect_eq "server bad.yaml error count" "$(wc -l <err.txt)" 4
unknown="bad.yaml:10:1: error: nope: found an unknown setting, expected one of: "
tail -1 err.txt | grep -qF "$unknown" || fail "unknown setting: $(tail -1 err.txt)"
# the settings it lists are exactly the top-level keys of the documented
# example in docs/api.md, "Server configuration"
tail -1 err.txt | sed "s/^.*expected one of: //" | tr -d ' ' | tr , '\n' | sort >listed.txt
sed -n '/^## Server configuration/,/^```$/p' "$ROOT/docs/api.md" |
	sed -n 's/^\([a-z_][a-z_]*\):.*/\1/p' | sort -u >documented.txt
[ "$(wc -l <documented.txt)" -ge 15 ] || fail "found only $(wc -l <documented.txt) settings in docs/api.md"
diff documented.txt listed.txt || fail "the settings listed differ from docs/api.md's (- docs, + listed)"
[ -e "$TEST_TMP/s1/state.db" ] && fail "a refused config still created state.db"

# a YAML syntax error and a tab that crashed libfyaml: positions too
printf 'tokens: [\n' >syntax.yaml
"$DROVER" server --state "$TEST_TMP/s2" --config syntax.yaml >out.txt 2>err.txt
expect_eq "server syntax.yaml exit" "$?" 2
grep -q "^drover server: syntax.yaml:2:1: error: YAML syntax: " err.txt || fail "syntax: $(cat err.txt)"
printf 'retry_limit: 3\n? s:\t?\n' >tab.yaml
"$DROVER" server --state "$TEST_TMP/s2" --config tab.yaml >out.txt 2>err.txt
expect_eq "server tab.yaml exit" "$?" 2
grep -q "^drover server: tab.yaml:2:5: error: found a tab in indentation" err.txt ||
	fail "tab: $(cat err.txt)"

# drover up reads STATE/config.yaml: the same message, exit 2
mkdir -p up/state
printf 'heartbeat_interval_s: 60\nheartbeat_timeout_s: 30\n' >up/state/config.yaml
XDG_CONFIG_HOME="$TEST_TMP/up/xdg" "$DROVER" up --state "$TEST_TMP/up/state" \
	--listen "127.0.0.1:$(free_port)" --agent-listen "127.0.0.1:$(free_port)" \
	>out.txt 2>err.txt
expect_eq "up exit" "$?" 2
expect_eq "up stderr" "$(cat err.txt)" "drover up: $TEST_TMP/up/state/config.yaml:2:22: error: heartbeat_timeout_s: found '30', expected more than heartbeat_interval_s (60)"
[ -e "$TEST_TMP/up/xdg/drover/config" ] && fail "drover up wrote a client config anyway"

# the documented example (docs/api.md) is accepted as it is
cat >good.yaml <<'CONF'
tokens:                       # bearer tokens of people
  - token: "alice-secret"
    user: alice
  - token: "ops-secret"
    user: ops
    admin: true               # sees and cancels every job, drains nodes
cluster_token: "agents-secret" # what agents send
open_endpoints: true          # /healthz and /metrics without a token (default true)
allow_root_tasks: false       # accept jobs whose user is root (default false)
heartbeat_interval_s: 5       # told to agents at register (default 5)
heartbeat_timeout_s: 30       # no heartbeat for this long: node down (default 30)
agent_lease_s: 60             # an agent's tasks stop this long after its last exchange (default 60)
retry_limit: 3                # requeues of a gang after node failures before it fails (default 3)
sched_delay_ms: 10            # batching window of the scheduling loop (default 10)
default_pool: default         # pool and leaf of agents the cluster file does not name
default_leaf: default
scheduler: {order: fifo, mode: backfill, preemption: true}
CONF
# ... but not while group or others may read its tokens: one line, exit 2
chmod 644 good.yaml
"$DROVER" server --listen "127.0.0.1:$(free_port)" --state "$TEST_TMP/s3" --config good.yaml \
	>out.txt 2>err.txt
expect_eq "server 0644 good.yaml exit" "$?" 2
expect_eq "server 0644 good.yaml stderr" "$(cat err.txt)" "drover server: good.yaml holds tokens and group or others may read it (mode 0644); refusing to start: chmod 600 good.yaml"
[ -e "$TEST_TMP/s3/state.db" ] && fail "a refused config still created state.db"
chmod 600 good.yaml
SERVER_CONFIG=good.yaml SERVER_STATE="$TEST_TMP/s3"
start_server
CODE=$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer ops-secret' \
	"$SERVER_URL/v1/queue")
expect_eq "ops token accepted" "$CODE" 200
echo "ok server_config_errors"
