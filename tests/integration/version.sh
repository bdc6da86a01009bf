# version.sh: `drover version` (and --version) prints the release and the
# commit the binary is built from: in a git checkout a commit of this
# repository (git describe at build time); built from a tarball without
# .git, "commit unknown", and a packager's DROVER_COMMIT wins.
. "$ROOT/tests/integration/lib.sh"

out=$("$DROVER" version) || fail "drover version failed"
expect_eq "drover --version" "$("$DROVER" --version)" "$out"
echo "$out" | grep -Eq '^drover [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{7,}(-dirty)?|unknown)\)$' ||
	fail "drover version: '$out'"
if [ "$(git -C "$ROOT" rev-parse --show-toplevel 2>/dev/null)" = "$ROOT" ]; then
	c=$(echo "$out" | sed -n 's/.*(commit \([0-9a-f]*\).*/\1/p')
	[ -n "$c" ] || fail "built in a git checkout, but no commit: '$out'"
	git -C "$ROOT" cat-file -e "$c^{commit}" 2>/dev/null || fail "drover version names $c, no commit of $ROOT"
fi
"$DROVER" version extra 2>/dev/null; expect_eq "exit code, drover version extra" "$?" 2

# a tarball: no .git; what make would compile cmd_version.c with
t="$TEST_TMP/tarball"
mkdir -p "$t"
(cd "$ROOT" && tar cf - Makefile include src) | (cd "$t" && tar xf -) || fail "cannot copy the tree"
flags() { make -n -C "$t" "$@" build/rel/src/cmd/cmd_version.o 2>&1 | grep -o "DROVER_COMMIT=[^ ]*"; }
expect_eq "tarball build, commit" "$(flags)" "DROVER_COMMIT='\"\"'"
expect_eq "tarball build, DROVER_COMMIT=v1" "$(flags DROVER_COMMIT=v1)" "DROVER_COMMIT='\"v1\"'"
echo "ok: $out; a tarball build says commit unknown"
