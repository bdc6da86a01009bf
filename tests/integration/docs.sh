# docs.sh: the examples of README.md and docs/*.md run as written. Every
# fenced block tagged ```sh tested is extracted and run with `sh -e` (so
# each command must succeed) against a `drover up` of this test, from a
# directory laid out as the repository is (./drover, drover on PATH,
# examples/, ../shared/data/), with three rewrites: localhost:8080 is this
# drover up's API port, localhost:9400 its agent's metrics port, /tmp/ this
# test's directory. A block that fails names its file and line.
# A block tagged ```console tested is a transcript: each line starting
# "$ " is a command, run as the sh blocks are, and the lines up to the
# next command are what it prints (stdout and stderr), compared exactly.
. "$ROOT/tests/integration/lib.sh"
need_data philly.csv

w="$TEST_TMP/w"
mkdir -p "$w" "$TEST_TMP/bin" "$TEST_TMP/shared" "$TEST_TMP/blocks"
ln -s "$DROVER" "$w/drover"
ln -s "$DROVER" "$TEST_TMP/bin/drover"
ln -s "$ROOT/examples" "$w/examples"
ln -s "$DATA" "$TEST_TMP/shared/data"

# file:line of each block's first line, and the block's text in blocks/N.sh
(cd "$ROOT" && awk -v out="$TEST_TMP/blocks" '
	/^```sh tested[ \t]*$/ { n++; f = out "/" n ".sh"; print FILENAME ":" FNR + 1 >(out "/" n ".where"); on = 1; next }
	/^```console tested[ \t]*$/ { n++; f = out "/" n ".con"; print FILENAME ":" FNR + 1 >(out "/" n ".where"); on = 1; next }
	on && /^```/ { on = 0; close(f); next }
	on { print >f }
	END { print n + 0 >(out "/count") }' README.md docs/*.md)
count=$(cat "$TEST_TMP/blocks/count")
[ "$count" -ge 3 ] || fail "only $count tested blocks in README.md and docs/"
grep -q '^README' "$TEST_TMP/blocks/1.where" || fail "the README's tour is not a tested block"

start_up
i=1
t0=$(date +%s)
while [ "$i" -le "$count" ]; do
	where=$(cat "$TEST_TMP/blocks/$i.where")
	if [ -f "$TEST_TMP/blocks/$i.con" ]; then
		sed -e "s|localhost:8080|127.0.0.1:$SERVER_PORT|g" -e "s|localhost:9400|127.0.0.1:$AGENT_PORT|g" \
			-e "s|/tmp/|$TEST_TMP/|g" "$TEST_TMP/blocks/$i.con" >"$TEST_TMP/blocks/$i.run"
		(cd "$w" && PATH="$TEST_TMP/bin:$PATH" python3 - "$TEST_TMP/blocks/$i.run" "$where") <<'PY' ||
import subprocess, sys
path, where = sys.argv[1], sys.argv[2]
file, line = where.rsplit(":", 1)
steps = []
for k, text in enumerate(open(path).read().split("\n")[:-1]):
    if text.startswith("$ "):
        steps.append([int(line) + k, text[2:], []])
    elif steps:
        steps[-1][2].append(text)
    else:
        sys.exit("%s:%s: a transcript starts with a '$ ' command" % (file, line))
for at, cmd, want in steps:
    got = subprocess.run(["sh", "-c", cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True).stdout.split("\n")
    if got and got[-1] == "":
        got.pop()
    if got != want:
        import difflib
        sys.exit("%s:%d: '%s' printed otherwise:\n%s" % (file, at, cmd, "\n".join(
            difflib.unified_diff(want, got, "the doc", "the command", lineterm=""))))
print("%d commands" % len(steps))
PY
			fail "$where: the transcript differs"
		echo "ok: $where (transcript)"
		i=$((i + 1))
		continue
	fi
	sed -e "s|localhost:8080|127.0.0.1:$SERVER_PORT|g" -e "s|localhost:9400|127.0.0.1:$AGENT_PORT|g" \
		-e "s|/tmp/|$TEST_TMP/|g" "$TEST_TMP/blocks/$i.sh" >"$TEST_TMP/blocks/$i.run"
	(cd "$w" && PATH="$TEST_TMP/bin:$PATH" sh -e "$TEST_TMP/blocks/$i.run") >"$TEST_TMP/blocks/$i.out" 2>&1 ||
		fail "$where: the example failed: $(tail -5 "$TEST_TMP/blocks/$i.out")"
	echo "ok: $where ($(wc -l <"$TEST_TMP/blocks/$i.sh") lines)"
	i=$((i + 1))
done
echo "ok: $count doc examples ran in $(($(date +%s) - t0)) s"
