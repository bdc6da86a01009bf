# pglib.sh: a real PostgreSQL 15 for a test (sourced after lib.sh).
#
#   pg_start                 initdb and pg_ctl, as the postgres user through
#                            runuser, in a private directory with a port of its
#                            own; skips (saying what is missing) where that
#                            cannot run. Sets PG_BIN, PG_DIR, PG_PORT,
#                            PG_ADMIN (libpq keywords for the postgres
#                            superuser over the private socket), PG_URL
#                            (postgres://drover@127.0.0.1:PORT/drover: no
#                            password) and PG_PASSWORD_FILE (mode 0600): TCP
#                            connections need the password (scram-sha-256).
#                            The cleanup stops the server and removes it.
#   pg_createdb NAME         a fresh database NAME owned by drover; prints its URL
#   pg_psql SQL              runs SQL as the superuser on database drover
#   pg_stop [MODE]           pg_ctl stop (-m fast by default)

pg_start() {
	PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
	[ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/pg_ctl" ] ||
		skip "needs PostgreSQL 15's initdb and pg_ctl in $PG_BIN (scripts/install-deps installs postgresql-15)"
	id postgres >/dev/null 2>&1 || skip "needs the postgres user (made by the postgresql-15 package)"
	command -v runuser >/dev/null 2>&1 || skip "needs runuser (util-linux) to run initdb as postgres"
	[ "$(id -u)" = 0 ] || skip "needs root to run initdb as the postgres user (runuser)"
	PG_DIR=$(mktemp -d /tmp/drover-pg.XXXXXX)
	remove_on_exit "$PG_DIR"
	chown postgres "$PG_DIR"
	PG_PORT=$(free_port)
	runuser -u postgres -- "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres --auth-local=trust \
		--auth-host=scram-sha-256 --no-sync >"$TEST_TMP/initdb.log" 2>&1 ||
		skip "initdb cannot run here: $(tail -3 "$TEST_TMP/initdb.log")"
	cat >>"$PG_DIR/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$PG_DIR'
max_connections = 200
fsync = on
synchronous_commit = on
log_lock_waits = on
deadlock_timeout = 500ms
log_min_duration_statement = 1000
CONF
	on_exit "runuser -u postgres -- '$PG_BIN/pg_ctl' -D '$PG_DIR/data' -m immediate stop >/dev/null 2>&1"
	runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 30 \
		start >"$TEST_TMP/pg_ctl.log" 2>&1 ||
		skip "PostgreSQL cannot start here: $(tail -5 "$PG_DIR/server.log" 2>/dev/null)"
	PG_ADMIN="host=$PG_DIR port=$PG_PORT user=postgres"
	PG_DB=postgres pg_psql "CREATE ROLE drover LOGIN PASSWORD 'drover-pw'" >/dev/null || fail "cannot create role drover"
	PG_DB=postgres pg_psql "CREATE DATABASE drover OWNER drover" >/dev/null ||
		fail "cannot create database drover"
	PG_PASSWORD_FILE="$TEST_TMP/pg-password"
	(umask 077 && echo "drover-pw" >"$PG_PASSWORD_FILE")
	PG_URL="postgres://drover@127.0.0.1:$PG_PORT/drover"
}

pg_psql() {
	"$PG_BIN/psql" "$PG_ADMIN dbname=${PG_DB:-drover}" -qAtX -v ON_ERROR_STOP=1 -c "$1"
}

pg_createdb() {
	PG_DB=postgres pg_psql "CREATE DATABASE $1 OWNER drover" >/dev/null || fail "cannot create database $1"
	echo "postgres://drover@127.0.0.1:$PG_PORT/$1"
}

pg_stop() {
	runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m "${1:-fast}" -w stop >/dev/null 2>&1
}
