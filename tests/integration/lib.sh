# lib.sh: the one library of the integration tests (POSIX sh, sourced first
# by every tests/integration/*.sh). tests/run-integration runs each test as
# `sh TEST` with DROVER (the binary), ROOT (the repository) and TEST_TMP (a
# scratch directory of its own) set; a test is a script that exits 0 on
# success, 1 on failure (fail), 77 when it cannot run here (skip).
#
# Sourcing this file sets `set -u`, gives the test a private client config
# (XDG_CONFIG_HOME under TEST_TMP; DROVER_SERVER and DROVER_TOKEN unset) and
# registers the one cleanup: an EXIT trap that stops every process the test
# started through this library or named with `track` (SIGTERM, up to 3 s,
# then SIGKILL), kills the task processes recorded under $TEST_TMP/pids and
# the task shims (drover task-shim, each with its task's process group) of
# the agents' state directories under $TEST_TMP (a stopped agent leaves its
# tasks running: docs/agent.md),
# removes what `remove_on_exit` named, and releases `need_alone` locks. A
# test never sets its own EXIT trap; `on_exit CMD` adds a step instead.
# TEST_TMP itself belongs to the runner, which removes it unless the test
# failed; a test run alone makes its own (see below).
#
# Verdicts
#   fail MSG                 print "FAIL: MSG" and exit 1
#   expect_eq WHAT GOT WANT  fail unless GOT = WANT
#   skip WHY                 print "SKIP: WHY" and exit 77 (run-integration counts it apart)
#
# Waiting: one deadline, on the clock
#   wait_until SECONDS CMD...  run CMD (output discarded) every 0.1 s until it
#                            succeeds (0) or SECONDS of wall time have passed
#                            (1). A try that takes long eats the time: on a
#                            loaded machine the wait ends when the clock says.
#
# Processes and files
#   track PID                the cleanup stops PID
#   on_exit CMD              the cleanup runs CMD (a string, eval'd)
#   remove_on_exit PATH      the cleanup removes PATH (for files outside TEST_TMP)
#   free_port                a TCP port on 127.0.0.1 that nothing listens on now
#   drover_links NAME...     links NAME -> $DROVER in $TEST_TMP/bin, first on PATH
#                            (drover dispatches on its name: srun, salloc...)
#
# Tokens: one set, used by every server a test starts (agentsim.py's defaults)
#   ADMIN_TOKEN=ops-t (user ops, admin)  ALICE_TOKEN=alice-t  BOB_TOKEN=bob-t
#   CLUSTER_TOKEN=agents-t (agents), also in CLUSTER_TOKEN_FILE (mode 0600):
#   tokens never go on a command line (CONTRACTS.md §6), so an agent gets
#   --token-file "$CLUSTER_TOKEN_FILE" or DROVER_AGENT_TOKEN, a client
#   --token-file FILE or DROVER_TOKEN
#
# A control plane
#   server_config [LINE...]  write SERVER_CONFIG ($TEST_TMP/server.yaml): the
#                            tokens above, allow_root_tasks: true (agents run
#                            --run-as-self as root), then each LINE (a setting, e.g.
#                            'retry_limit: 1'; of two LINEs with one key, the
#                            later is kept); pick SERVER_PORT and SERVER_URL
#                            (kept across restarts) and point the client at it;
#                            with DROVER_TEST_STORE set, store: (and
#                            store_password_file: DROVER_TEST_STORE_PASSWORD_FILE)
#                            come first
#                            (DROVER_SERVER, DROVER_TOKEN=$ADMIN_TOKEN); the URL
#                            is https when SERVER_SCHEME=https (the test then
#                            exports DROVER_CA_FILE, which the client, agents
#                            and the /healthz probe trust)
#   start_server [NAME=VALUE...] [ARG...]  `drover server` on SERVER_PORT with
#                            SERVER_CONFIG (server_config first if not yet; a
#                            test may set it to a file of its own), state
#                            in SERVER_STATE ($TEST_TMP/state), log appended to
#                            $TEST_TMP/server.log, the NAME=VALUEs in its
#                            environment, ARGs after ours; returns once /healthz
#                            answers the admin token (SERVER_PID)
#   stop_server [SIG]        signal it (TERM) and wait for it to go
#   start_agent NAME [SPEC [ARG...]]  `drover agent` on SERVER_URL with simulated
#                            GPUs SPEC (8xH100), the cluster token from
#                            CLUSTER_TOKEN_FILE (mode 0600), tasks run as this user, state
#                            $TEST_TMP/agent-NAME, log $TEST_TMP/agent-NAME.log;
#                            returns once the server says node NAME is up
#                            (AGENT_PID_NAME, AGENT_PORT_NAME: NAME with _ for
#                            each character but letters and digits); AGENT_SERVER,
#                            when set, is its --server instead (URL[,URL...])
#   stop_agent NAME [SIG]    signal it (TERM) and wait for it to go
#   node_is NODE STATE       succeeds when the server says NODE is in STATE
#   start_up [ARG...]        `drover up` (8 simulated H100s, node "box", API on
#                            SERVER_PORT, agent metrics on AGENT_PORT, state in
#                            $TEST_TMP/state, output in $TEST_TMP/up.out);
#                            returns once it is up and says its node is up
#   stop_up                  Ctrl-C (SIGINT); fails unless it exits 0 within 15 s
#   start_mock_controller TOKEN  tests/integration/mock_controller.py on a free
#                            port (CTL, its URL); returns once it answers
#
# Resources
#   need_alone NAME [SECONDS]  hold NAME alone until the test ends: flock on
#                            $DROVER_LOCK_DIR/NAME.lock (default /tmp/drover-test-locks,
#                            shared by every checkout on the machine), waiting up
#                            to SECONDS (240). For tests that start services on
#                            fixed ports (the Slurm of ../shared/bench/slurm),
#                            so that parallel runs never overlap.
#   need_data FILE           DATA := the first of $DROVER_DATA, $ROOT/../shared/data
#                            holding FILE; skip (saying where it looked) if none
#
# No test names an absolute path of this machine: everything is found from
# ROOT, TEST_TMP or the environment.

set -u

# Run alone (`ROOT=. sh tests/integration/x.sh`), a test gets ./drover and a
# TEST_TMP of its own, removed at exit if it passed, kept (and named) if not.
DROVER=${DROVER:-$ROOT/drover}
_LIB_OWN_TMP=""
if [ -z "${TEST_TMP:-}" ]; then
	TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/drover-it.XXXXXX")
	_LIB_OWN_TMP=$TEST_TMP
fi

ADMIN_TOKEN=ops-t
ALICE_TOKEN=alice-t
BOB_TOKEN=bob-t
CLUSTER_TOKEN=agents-t

export XDG_CONFIG_HOME="$TEST_TMP/xdg"
unset DROVER_SERVER DROVER_TOKEN DROVER_AGENT_TOKEN DROVER_CA_FILE
mkdir -p "$XDG_CONFIG_HOME"
CLUSTER_TOKEN_FILE="$TEST_TMP/cluster-token"
(umask 077 && echo "$CLUSTER_TOKEN" >"$CLUSTER_TOKEN_FILE")

# ---- verdicts

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

expect_eq() {
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}

skip() {
	echo "SKIP: $*"
	exit 77
}

# ---- waiting

wait_until() {
	_wu_deadline=$(($(date +%s) + $1))
	shift
	while :; do
		"$@" >/dev/null 2>&1 && return 0
		[ "$(date +%s)" -ge "$_wu_deadline" ] && return 1
		sleep 0.1
	done
}

# ---- processes, files and the cleanup

_LIB_PIDS=""
_LIB_ON_EXIT=""

track() {
	_LIB_PIDS="$_LIB_PIDS $1"
}

on_exit() {
	_LIB_ON_EXIT="$_LIB_ON_EXIT
$1"
}

remove_on_exit() {
	on_exit "rm -rf '$1'"
}

_lib_any_alive() {
	for _p in $_LIB_PIDS; do
		kill -0 "$_p" 2>/dev/null && return 0
	done
	return 1
}

_lib_cleanup() {
	_lc_status=$?
	for _p in $_LIB_PIDS; do
		kill -TERM "$_p" 2>/dev/null
	done
	[ -n "$_LIB_PIDS" ] && wait_until 3 eval '! _lib_any_alive'
	for _p in $_LIB_PIDS; do
		kill -KILL "$_p" 2>/dev/null
	done
	# task processes the tests started through agents (they record their pids)
	for _f in "$TEST_TMP"/pids/*; do
		[ -f "$_f" ] && kill -KILL "$(cat "$_f")" 2>/dev/null
	done
	# tasks the agents left running under their shims, by their pid files
	for _f in "$TEST_TMP"/*/tasks/*/*.pid "$TEST_TMP"/*/*/tasks/*/*.pid; do
		[ -f "$_f" ] || continue
		_p=$(cat "$_f")
		{ tr '\0' ' ' <"/proc/$_p/cmdline"; } 2>/dev/null | grep -q ' task-shim ' &&
			kill -KILL "-$_p" 2>/dev/null
	done
	eval "$_LIB_ON_EXIT"
	if [ -n "$_LIB_OWN_TMP" ]; then
		if [ "$_lc_status" -eq 0 ]; then rm -rf "$_LIB_OWN_TMP"; else echo "files kept in $_LIB_OWN_TMP" >&2; fi
	fi
	return 0
}
trap _lib_cleanup EXIT
trap 'exit 1' INT TERM

drover_links() {
	mkdir -p "$TEST_TMP/bin"
	for _n; do ln -sf "$DROVER" "$TEST_TMP/bin/$_n"; done
	case ":$PATH:" in *":$TEST_TMP/bin:"*) ;; *) PATH="$TEST_TMP/bin:$PATH" ;; esac
	export PATH
}

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# ---- a control plane

server_config() {
	SERVER_CONFIG="$TEST_TMP/server.yaml"
	cat >"$SERVER_CONFIG" <<CONF
tokens:
  - {token: $ALICE_TOKEN, user: alice}
  - {token: $BOB_TOKEN, user: bob}
  - {token: $ADMIN_TOKEN, user: ops, admin: true}
cluster_token: $CLUSTER_TOKEN
CONF
	# the tests run as root with agents --run-as-self: every task runs as
	# root, which the agent refuses unless the server allows it
	set -- "allow_root_tasks: true" "$@"
	# DROVER_TEST_STORE (a postgres:// URL, with DROVER_TEST_STORE_PASSWORD_FILE):
	# the same test on the PostgreSQL store (store_pg.sh runs suites so)
	[ -n "${DROVER_TEST_STORE:-}" ] && set -- "store: $DROVER_TEST_STORE" \
		${DROVER_TEST_STORE_PASSWORD_FILE:+"store_password_file: $DROVER_TEST_STORE_PASSWORD_FILE"} "$@"
	_sc_i=0
	for _l; do # a LINE is written unless a later one sets the same key
		_sc_i=$((_sc_i + 1)) _sc_j=0 _sc_later=""
		for _m; do
			_sc_j=$((_sc_j + 1))
			[ "$_sc_j" -gt "$_sc_i" ] && [ "${_m%%:*}" = "${_l%%:*}" ] && _sc_later=1
		done
		[ -n "$_sc_later" ] || echo "$_l" >>"$SERVER_CONFIG"
	done
	chmod 600 "$SERVER_CONFIG"   # it holds tokens: a looser one is refused
	SERVER_PORT=${SERVER_PORT:-$(free_port)}
	SERVER_URL="${SERVER_SCHEME:-http}://127.0.0.1:$SERVER_PORT"
	export DROVER_SERVER="$SERVER_URL" DROVER_TOKEN="$ADMIN_TOKEN"
}

# healthz: /healthz answers, open or (open_endpoints: false) to the admin token
healthz() {
	curl -fsS -m 2 ${DROVER_CA_FILE:+--cacert "$DROVER_CA_FILE"} "$SERVER_URL/healthz" >/dev/null ||
		curl -fsS -m 2 ${DROVER_CA_FILE:+--cacert "$DROVER_CA_FILE"} \
			-H "Authorization: Bearer $ADMIN_TOKEN" "$SERVER_URL/healthz" >/dev/null
}

# start_server: the leading NAME=VALUE arguments stay in front for env; our
# own arguments go after them, the test's remaining ones after ours.
start_server() {
	[ -n "${SERVER_CONFIG:-}" ] || server_config
	SERVER_PORT=${SERVER_PORT:-$(free_port)}
	SERVER_URL="${SERVER_SCHEME:-http}://127.0.0.1:$SERVER_PORT"
	_ss_n=0
	for _a; do
		case $_a in [A-Za-z_]*=*) _ss_n=$((_ss_n + 1)) ;; *) break ;; esac
	done
	_ss_i=0
	for _a; do
		[ "$_ss_i" -eq "$_ss_n" ] && set -- "$@" "$DROVER" server --listen "127.0.0.1:$SERVER_PORT" \
			--state "${SERVER_STATE:-$TEST_TMP/state}" --config "$SERVER_CONFIG"
		set -- "$@" "$_a"
		shift
		_ss_i=$((_ss_i + 1))
	done
	[ "$_ss_i" -eq "$_ss_n" ] && set -- "$@" "$DROVER" server --listen "127.0.0.1:$SERVER_PORT" \
		--state "${SERVER_STATE:-$TEST_TMP/state}" --config "$SERVER_CONFIG"
	env "$@" >>"$TEST_TMP/server.log" 2>&1 9>&- &
	SERVER_PID=$!
	track "$SERVER_PID"
	wait_until 20 healthz || { tail -20 "$TEST_TMP/server.log" >&2; fail "server did not answer /healthz on $SERVER_URL"; }
}

stop_server() {
	kill "-${1:-TERM}" "$SERVER_PID" 2>/dev/null
	wait "$SERVER_PID" 2>/dev/null
	return 0
}

node_is() {
	[ "$("$DROVER" get node "$1" -o json 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])' 2>/dev/null)" = "$2" ]
}

# start_agent keeps the agent's pid in AGENT_PID_<NAME> and its port in
# AGENT_PORT_<NAME>, NAME with every character but letters and digits as _
_lib_agent_var() {
	echo "$1" | tr -c 'A-Za-z0-9\n' _
}

start_agent() {
	_sa_name=$1
	_sa_spec=${2:-8xH100}
	shift
	[ $# -gt 0 ] && shift
	_sa_port=$(free_port)
	"$DROVER" agent --server "${AGENT_SERVER:-$SERVER_URL}" --token-file "$CLUSTER_TOKEN_FILE" --name "$_sa_name" \
		--listen "127.0.0.1:$_sa_port" --fake-gpus "$_sa_spec" --run-as-self \
		--state "$TEST_TMP/agent-$_sa_name" "$@" >>"$TEST_TMP/agent-$_sa_name.log" 2>&1 9>&- &
	track $!
	eval "AGENT_PID_$(_lib_agent_var "$_sa_name")=$! AGENT_PORT_$(_lib_agent_var "$_sa_name")=$_sa_port"
	wait_until 20 node_is "$_sa_name" up ||
		{ tail -20 "$TEST_TMP/agent-$_sa_name.log" >&2; fail "node $_sa_name did not come up"; }
}

stop_agent() {
	eval "_sa_pid=\$AGENT_PID_$(_lib_agent_var "$1")"
	kill "-${2:-TERM}" "$_sa_pid" 2>/dev/null
	wait "$_sa_pid" 2>/dev/null
	return 0
}

start_up() {
	SERVER_PORT=${SERVER_PORT:-$(free_port)}
	SERVER_URL="${SERVER_SCHEME:-http}://127.0.0.1:$SERVER_PORT"
	AGENT_PORT=${AGENT_PORT:-$(free_port)}
	"$DROVER" up --state "$TEST_TMP/state" --listen "127.0.0.1:$SERVER_PORT" \
		--agent-listen "127.0.0.1:$AGENT_PORT" --fake-gpus 8xH100 --name box "$@" \
		>"$TEST_TMP/up.out" 2>&1 9>&- &
	UP_PID=$!
	track "$UP_PID"
	wait_until 30 grep -qE '^drover is up: https?://127.0.0.1:' "$TEST_TMP/up.out" ||
		{ cat "$TEST_TMP/up.out" >&2; fail "drover up did not come up"; }
	wait_until 15 grep -q '^node box: 8 x H100-SXM-80GB, up' "$TEST_TMP/up.out" ||
		{ cat "$TEST_TMP/up.out" >&2; fail "drover up did not report its node"; }
}

stop_up() {
	kill -INT "$UP_PID"
	wait_until 15 eval "! kill -0 $UP_PID" || fail "drover up did not stop within 15 s of SIGINT"
	wait "$UP_PID"
	expect_eq "drover up exit status after Ctrl-C" "$?" 0
}

start_mock_controller() {
	_mc_port=$(free_port)
	CTL="http://127.0.0.1:$_mc_port"
	python3 "$ROOT/tests/integration/mock_controller.py" "$_mc_port" "$1" >"$TEST_TMP/mock.log" 2>&1 9>&- &
	track $!
	wait_until 10 curl -fsS "$CTL/control/state" || fail "mock controller did not start"
}

# ---- resources

need_alone() {
	_na_dir=${DROVER_LOCK_DIR:-/tmp/drover-test-locks}
	mkdir -p "$_na_dir" && chmod 1777 "$_na_dir" 2>/dev/null
	exec 9>>"$_na_dir/$1.lock"
	flock -w "${2:-240}" 9 || fail "$1 is held by another test (waited ${2:-240} s for $_na_dir/$1.lock)"
}

need_data() {
	for _nd in "${DROVER_DATA:-}" "$ROOT/../shared/data"; do
		if [ -n "$_nd" ] && [ -f "$_nd/$1" ]; then
			DATA=$_nd
			return 0
		fi
	done
	skip "$1 not found (looked in \$DROVER_DATA and \$ROOT/../shared/data)"
}
