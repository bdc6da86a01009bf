# completion.sh: `drover completion bash|zsh`. bash: the script is sourced
# and its completion function driven as bash drives it (COMP_WORDS,
# COMP_CWORD, then COMPREPLY) for a command, a flag, an option's words, a
# job file, job ids and node names from a running `drover up`, and nothing
# (quickly) from a server that is not there; every command's flags are
# exactly the long options its --help shows, so the script cannot drift
# from the option tables. zsh: the script loads after compinit, sourced
# and autoloaded from $fpath, and registers _drover for drover.
. "$ROOT/tests/integration/lib.sh"

command -v bash >/dev/null || skip "bash is not installed"
"$DROVER" completion bash >"$TEST_TMP/drover.bash" || fail "drover completion bash failed"
"$DROVER" completion zsh >"$TEST_TMP/drover.zsh" || fail "drover completion zsh failed"
"$DROVER" completion fish 2>"$TEST_TMP/err"; rc=$?
expect_eq "exit code, drover completion fish" "$rc" 2
expect_eq "drover completion fish" "$(cat "$TEST_TMP/err")" \
	"drover completion: found 'fish', expected bash or zsh (see drover completion --help)"

# comp WORD...: what bash offers for the last WORD (it may be ''), one line
cat >"$TEST_TMP/comp" <<'EOF'
#!/bin/bash
. "$1"; shift
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
_drover
printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//'
EOF
comp() { bash "$TEST_TMP/comp" "$TEST_TMP/drover.bash" "$DROVER" "$@"; }

expect_eq "drover su<Tab>" "$(comp su)" "submit"
expect_eq "drover queue --st<Tab>" "$(comp queue --st)" "--state"
expect_eq "drover queue -o <Tab>" "$(comp queue -o '')" "json wide yaml"
expect_eq "drover queue --output=y<Tab>" "$(comp queue --output = y)" "yaml"
expect_eq "drover sim --policy <Tab>" "$(comp sim --policy '')" "fair fifo las sjf"
expect_eq "drover completion <Tab>" "$(comp completion '')" "bash zsh"
expect_eq "drover describe <Tab>" "$(comp describe '')" "job node"
cd "$ROOT" || fail "no $ROOT"
expect_eq "drover submit examples/jobs/training-job.y<Tab>" \
	"$(comp submit examples/jobs/training-job.y)" "examples/jobs/training-job.yaml"
expect_eq "drover sim --cluster examples/clusters/gb<Tab>" \
	"$(comp sim --cluster examples/clusters/gb)" "examples/clusters/gb200-nvl72.yaml"
# a value that begins like an option is no positional argument
expect_eq "drover validate --json examples/jobs/hetj<Tab>" \
	"$(comp validate --json examples/jobs/hetj)" "examples/jobs/hetjob.sbatch"
cd "$TEST_TMP" || fail "no $TEST_TMP"

# every command's flags: the long options of its --help, no more, no fewer
cmds=$("$DROVER" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
expect_eq "commands offered" "$(comp '')" "$(printf '%s\n' $cmds help | sort | tr '\n' ' ' | sed 's/ $//')"
n=0
for c in $cmds; do
	"$DROVER" "$c" --help | sed -n 's/^ *\(-[A-Za-z0-9], \)\{0,1\}--\([A-Za-z0-9][A-Za-z0-9-]*\).*/--\2/p' |
		grep -vx -- --help | sort -u >"$TEST_TMP/help.$c"
	comp "$c" - | tr ' ' '\n' | grep -- '^--' | grep -vx -- --help | sort -u >"$TEST_TMP/comp.$c"
	diff "$TEST_TMP/help.$c" "$TEST_TMP/comp.$c" >"$TEST_TMP/diff.$c" ||
		fail "drover $c: completion and --help differ: $(cat "$TEST_TMP/diff.$c")"
	n=$((n + 1))
done
[ "$n" -gt 20 ] || fail "only $n commands"
echo "$n commands: completion flags agree with --help"
# the benchmarks offered are those bench --help lists
expect_eq "drover bench <Tab>" "$(comp bench '')" \
	"$("$DROVER" bench --help | awk '/^benchmarks:/ { on = 1; next } on && NF { print $1 }' | sort | tr '\n' ' ' | sed 's/ $//')"

# job ids and node names from the server; none, and quickly, without one
start_up
"$DROVER" submit "$ROOT/examples/jobs/training-job.yaml" >"$TEST_TMP/submit.out" ||
	fail "submit failed"
id=$("$DROVER" queue | awk 'NR == 2 { print $1 }')
[ -n "$id" ] || fail "no job in the queue: $("$DROVER" queue 2>&1)"
expect_eq "drover cancel <Tab>" "$(comp cancel '')" "$id"
expect_eq "drover logs -f <Tab>" "$(comp logs -f '')" "$id"
expect_eq "drover describe node <Tab>" "$(comp describe node '')" "box"
expect_eq "drover get jobs <Tab>" "$(comp get jobs '')" "$id"
t0=$(date +%s)
expect_eq "drover cancel <Tab>, no server" "$(DROVER_SERVER=http://127.0.0.1:1 comp cancel '')" ""
t1=$(date +%s)
[ $((t1 - t0)) -le 3 ] || fail "completion without a server took $((t1 - t0)) s"

# zsh: sourced after compinit, and autoloaded as _drover from $fpath
if command -v zsh >/dev/null; then
	out=$(HOME="$TEST_TMP" zsh -f -c "autoload -U compinit; compinit -u -d '$TEST_TMP/zdump';
		source '$TEST_TMP/drover.zsh' && print -r -- \${_comps[drover]}" 2>&1) ||
		fail "zsh: the sourced script failed: $out"
	expect_eq "zsh, sourced: drover's completer" "$out" "_drover"
	mkdir -p "$TEST_TMP/fpath" && cp "$TEST_TMP/drover.zsh" "$TEST_TMP/fpath/_drover"
	out=$(HOME="$TEST_TMP" zsh -f -c "fpath=('$TEST_TMP/fpath' \$fpath); autoload -U compinit;
		compinit -u -d '$TEST_TMP/zdump2'; print -r -- \${_comps[drover]}" 2>&1) ||
		fail "zsh: compinit with _drover in fpath failed: $out"
	expect_eq "zsh, from fpath: drover's completer" "$out" "_drover"
else
	fail "zsh is not installed (scripts/install-deps installs it)"
fi
echo "ok: bash completes commands, flags, words, files, job ids and nodes; zsh loads it"
