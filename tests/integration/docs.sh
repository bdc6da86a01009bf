# docs.sh: the examples of README.md and docs/*.md run as written. Every
# fenced block tagged ```sh tested is extracted and run with `sh -e` (so
# each command must succeed) against a `drover up` of this test, from a
# directory laid out as the repository is (./drover, drover on PATH,
# examples/, ../shared/data/), with three rewrites: localhost:8080 is this
# drover up's API port, localhost:9400 its agent's metrics port, /tmp/ this
# test's directory. A block that fails names its file and line.
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
	sed -e "s|localhost:8080|127.0.0.1:$SERVER_PORT|g" -e "s|localhost:9400|127.0.0.1:$AGENT_PORT|g" \
		-e "s|/tmp/|$TEST_TMP/|g" "$TEST_TMP/blocks/$i.sh" >"$TEST_TMP/blocks/$i.run"
	(cd "$w" && PATH="$TEST_TMP/bin:$PATH" sh -e "$TEST_TMP/blocks/$i.run") >"$TEST_TMP/blocks/$i.out" 2>&1 ||
		fail "$where: the example failed: $(tail -5 "$TEST_TMP/blocks/$i.out")"
	echo "ok: $where ($(wc -l <"$TEST_TMP/blocks/$i.sh") lines)"
	i=$((i + 1))
done
echo "ok: $count doc examples ran in $(($(date +%s) - t0)) s"
