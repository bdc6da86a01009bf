# cli_options.sh: every command parses its options through the one table
# (include/drover/options.h). For every command `drover --help` lists, and
# every benchmark `drover bench --help` lists: `drover CMD --help`, `-h` and
# `drover help CMD` print the same text and exit 0; an unknown option is
# one uniform line and exit 2. Then --flag=value where only --flag value
# worked (drover sim --cluster=FILE), short forms, and the value errors.
set -eu
. "$ROOT/tests/integration/lib.sh"
cd "$TEST_TMP"

CL="$ROOT/examples/clusters/h100-256.yaml"
TR="$ROOT/tests/sim/philly-sample.csv"
PH="$ROOT/examples/clusters/philly.yaml"

# run OUT ERR CMD...: runs CMD, leaves its exit code in $rc
run() {
	_out=$1 _err=$2
	shift 2
	set +e
	"$@" >"$_out" 2>"$_err"
	rc=$?
	set -e
}

# check_help NAME WORDS...: --help, -h and `drover help WORDS` agree, exit 0
check_help() {
	name=$1
	shift
	run h1 e1 "$DROVER" "$@" --help
	expect_eq "$name --help exit" "$rc" 0
	run h2 e2 "$DROVER" help "$@"
	expect_eq "drover help $name exit" "$rc" 0
	cmp -s h1 h2 || fail "$name: --help and 'drover help' differ: $(diff h1 h2 | head -5)"
	run h3 e3 "$DROVER" "$@" -h
	expect_eq "$name -h exit" "$rc" 0
	cmp -s h1 h3 || fail "$name: --help and -h differ"
	head -1 h1 | grep -q "^usage: drover $name" || fail "$name help: $(head -1 h1)"
	[ ! -s e1 ] && [ ! -s e2 ] || fail "$name help wrote to stderr: $(cat e1 e2)"
}

# check_unknown NAME WORDS...: an unknown option: one line, exit 2
check_unknown() {
	name=$1
	shift
	run o e "$DROVER" "$@" --no-such-option
	expect_eq "$name unknown option exit" "$rc" 2
	expect_eq "$name unknown option" "$(cat e)" \
		"drover $name: unknown option '--no-such-option' (see drover $name --help)"
}

cmds=$("$DROVER" --help | sed -n '/^commands:/,/^$/s/^  \([a-z]*\) .*/\1/p')
[ "$(echo "$cmds" | wc -w)" -ge 16 ] || fail "commands from drover --help: $cmds"
for c in $cmds; do
	case $c in
	sbatch | squeue | sacct | scancel | sinfo | scontrol)
		# the Slurm faces (docs/slurm.md): their own usage line, Slurm's exit
		# code 1 for a bad option, and -h is squeue's and sinfo's --noheader
		run h1 e1 "$DROVER" "$c" --help
		expect_eq "$c --help exit" "$rc" 0
		run h2 e2 "$DROVER" help "$c"
		cmp -s h1 h2 || fail "$c: --help and 'drover help' differ"
		head -1 h1 | grep -q "^usage: $c " || fail "$c help: $(head -1 h1)"
		run o e "$DROVER" "$c" --no-such-option
		[ "$c" = sbatch ] && continue   # unknown options are the spec parser's
		expect_eq "$c unknown option" "$rc:$(cat e)" \
			"1:$c: unknown option '--no-such-option' (see $c --help)"
		continue
		;;
	srun | salloc)
		# srun and salloc (docs/slurm.md): Slurm's usage line and error words
		run h1 e1 "$DROVER" "$c" --help
		expect_eq "$c --help exit" "$rc" 0
		run h3 e3 "$DROVER" "$c" -h
		cmp -s h1 h3 || fail "$c: --help and -h differ"
		head -1 h1 | grep -q "^usage: $c " || fail "$c help: $(head -1 h1)"
		if [ "$c" = salloc ] && grep -q -- "--gpu-bind" h1; then
			fail "salloc --help lists srun's step options"
		fi
		run o e "$DROVER" "$c" --no-such-option
		expect_eq "$c unknown option exit" "$rc" 2
		grep -q "^s[a-z]*: error: unrecognized option '--no-such-option'" e ||
			fail "$c unknown option said: $(cat e)"
		continue
		;;
	esac
	check_help "$c" "$c"
	# submit passes options it does not know on to sbatch (a Slurm face):
	# after FILE one is an error, before a non-Slurm file too
	if [ "$c" = submit ]; then
		run o e "$DROVER" submit "$ROOT/examples/jobs/training-job.yaml" --no-such-option
		expect_eq "submit option after FILE exit" "$rc" 2
		grep -q "^drover submit: unexpected argument '--no-such-option' after the file" e ||
			fail "submit after FILE: $(cat e)"
		continue
	fi
	check_unknown "$c" "$c"
done

benches=$("$DROVER" bench --help | sed -n '/^benchmarks:/,$s/^  \([a-z]*\) .*/\1/p')
[ "$(echo "$benches" | wc -w)" -ge 4 ] || fail "benchmarks from drover bench --help: $benches"
for b in $benches; do
	check_help "bench $b" bench "$b"
	check_unknown "bench $b" bench "$b"
done
run o e "$DROVER" bench
expect_eq "bench without a name exit" "$rc" 2
expect_eq "bench without a name" "$(cat e)" "drover bench: which benchmark? (see drover bench --help)"

# --flag=value where only --flag value worked, the same result both ways
run a.json e "$DROVER" sim --cluster "$PH" --trace "$TR" --policy sjf --json
expect_eq "sim space form" "$rc" 0
run b.json e "$DROVER" sim --cluster="$PH" --trace="$TR" --policy=sjf --json
expect_eq "sim --cluster=FILE" "$rc" 0
python3 - a.json b.json <<'P' || fail "sim: --flag=value and --flag value disagree"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
for s in (a, b):
    s.pop("sim_wall_s", None)
assert a == b, (a, b)
P
run a.txt e "$DROVER" place --cluster "$CL" --gpus 8 --tasks 2
run b.txt e "$DROVER" place --cluster="$CL" --gpus=8 --tasks=2
expect_eq "place --gpus=8" "$rc" 0
cmp -s a.txt b.txt || fail "place: $(cat a.txt) vs $(cat b.txt)"
# short options: -ojson and -o json, bundled flags, on a client command
run o e "$DROVER" get jobs -ojson --server http://127.0.0.1:1
expect_eq "get -ojson reaches the transport" "$rc" 1
grep -q "cannot reach drover" e || fail "get -ojson: $(cat e)"
run o e "$DROVER" nodes -No json --server=http://127.0.0.1:1
expect_eq "nodes -No json reaches the transport" "$rc" 1
# -- ends the options: what follows is a positional argument
run o e "$DROVER" validate -- --json
expect_eq "validate -- --json exit" "$rc" 2
grep -q "^--json: cannot read" e || fail "validate -- --json: $(cat e)"

# the value errors, one line each, exit 2
run o e "$DROVER" sim --cluster "$PH" --trace "$TR" --policy lifo
expect_eq "bad enum exit" "$rc" 2
expect_eq "bad enum" "$(cat e)" \
	"drover sim: option '--policy': found 'lifo', expected fifo, sjf, las or fair"
run o e "$DROVER" sim --cluster
expect_eq "missing value exit" "$rc" 2
expect_eq "missing value" "$(cat e)" \
	"drover sim: option '--cluster' needs a value (see drover sim --help)"
run o e "$DROVER" place --cluster "$CL" --gpus=nine
expect_eq "bad number exit" "$rc" 2
expect_eq "bad number" "$(cat e)" \
	"drover place: option '--gpus': found 'nine', expected a whole number from 0 to 64"
run o e "$DROVER" get jobs -o xml
expect_eq "bad -o exit" "$rc" 2
expect_eq "bad -o" "$(cat e)" "drover get: option '-o': found 'xml', expected json, yaml or wide"
run o e "$DROVER" server --listen=127.0.0.1:1
expect_eq "required option exit" "$rc" 2
expect_eq "required option" "$(cat e)" \
	"drover server: option '--state' is required (see drover server --help)"
run o e "$DROVER" help no-such-command
expect_eq "help of no command exit" "$rc" 2
echo "cli_options: $(echo $cmds | wc -w) commands, $(echo $benches | wc -w) benchmarks: ok"
