# lib.sh: helpers for integration tests (sourced). Each test runs with
# DROVER (the binary), ROOT (the repository) and TEST_TMP (a scratch dir).

# free_port: prints a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# fail MSG: print MSG and exit 1.
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# expect_eq WHAT GOT WANT
expect_eq() {
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}

# wait_for SECONDS CMD...: retry CMD every 0.1 s until it succeeds.
wait_for() {
	_n=$(( $1 * 10 ))
	shift
	while [ "$_n" -gt 0 ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
		_n=$((_n - 1))
	done
	return 1
}
