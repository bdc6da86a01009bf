# man_pages.sh: the man pages (scripts/man-pages) are built from the option
# tables and cannot drift from the parser: every command has a page whose
# OPTIONS name exactly the long options its --help shows; drover(1) lists
# every command; drover-server.conf(5) names every setting the server
# knows; every page renders with `man -l` without a warning; make install
# (DESTDIR, PREFIX) puts them where man finds them and make uninstall
# removes them.
. "$ROOT/tests/integration/lib.sh"

command -v scdoc >/dev/null || skip "scdoc is not installed (scripts/install-deps installs it)"
command -v man >/dev/null || skip "man is not installed (scripts/install-deps installs man-db)"
out="$TEST_TMP/man"
"$ROOT/scripts/man-pages" "$DROVER" "$out" || fail "scripts/man-pages failed"

cmds=$("$DROVER" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
[ -n "$cmds" ] || fail "drover --help lists no commands"
n=0
for c in $cmds; do
	page="$out/drover-$c.1"
	[ -s "$page" ] || fail "no page for drover $c"
	if grep -q '^; from --help' "$out/drover-$c.1.scd"; then
		# a face with its own parser: the page holds its --help verbatim
		"$DROVER" "$c" --help >"$TEST_TMP/help.$c"
		grep -qxF "$(head -1 "$TEST_TMP/help.$c")" "$out/drover-$c.1.scd" ||
			fail "drover-$c(1) does not hold its --help"
		grep -q "^\*$c\*" "$out/drover.1.scd" || fail "drover(1) does not list $c"
		n=$((n + 1))
		continue
	fi
	# long options: from --help's option lines, from the page's OPTIONS source
	# (--help itself is documented on every page and is no row of the tables)
	"$DROVER" "$c" --help | sed -n 's/^ *\(-[A-Za-z0-9], \)\{0,1\}--\([a-z0-9][a-z0-9-]*\).*/\2/p' | sort -u >"$TEST_TMP/help.$c"
	sed -n 's/^\(\*-[A-Za-z0-9]\*, \)\{0,1\}\*--\([a-z0-9][a-z0-9\\-]*\)\*.*/\2/p' "$out/drover-$c.1.scd" | tr -d '\\' | grep -vx help | sort -u >"$TEST_TMP/man.$c"
	# (a command of subcommands, such as bench, may have none: then neither has)
	diff "$TEST_TMP/help.$c" "$TEST_TMP/man.$c" >"$TEST_TMP/diff.$c" ||
		fail "drover-$c(1) and drover $c --help differ: $(cat "$TEST_TMP/diff.$c")"
	grep -q "^\*$c\*" "$out/drover.1.scd" || fail "drover(1) does not list $c"
	n=$((n + 1))
done
echo "$n command pages agree with their --help"

# every setting the server knows is on drover-server.conf(5)
printf 'no_such_setting_x: 1\n' >"$TEST_TMP/bad.yaml"
"$DROVER" server --config "$TEST_TMP/bad.yaml" --state "$TEST_TMP/st" --listen 127.0.0.1:1 2>"$TEST_TMP/err" &&
	fail "the server started with an unknown setting"
known=$(sed -n 's/.*expected one of: //p' "$TEST_TMP/err" | head -1 | tr -d ',')
[ -n "$known" ] || fail "no list of settings in: $(cat "$TEST_TMP/err")"
tr -d '\\' <"$out/drover-server.conf.5.scd" >"$TEST_TMP/conf5.txt"
for k in $known; do
	grep -q "\*$k\*" "$TEST_TMP/conf5.txt" ||
		fail "drover-server.conf(5) does not name the setting $k"
done
echo "drover-server.conf(5) names all $(echo $known | wc -w) settings"

for f in "$out"/*.1 "$out"/*.5; do
	w=$(MANWIDTH=80 man -l --warnings "$f" 2>&1 >/dev/null)
	[ -z "$w" ] || fail "man -l $f warns: $w"
done
for p in drover-cluster.5 drover-job.5 drover-server.conf.5 drover-tenants.5 drover.1; do
	[ -s "$out/$p" ] || fail "no $p"
done

# make install / uninstall
dest="$TEST_TMP/dest"
make -s -C "$ROOT" install-man DESTDIR="$dest" PREFIX=/usr >"$TEST_TMP/make.log" 2>&1 || fail "make install-man: $(tail -5 "$TEST_TMP/make.log")"
MANPATH="$dest/usr/share/man" man -w drover-sim >/dev/null || fail "man does not find the installed drover-sim(1)"
MANPATH="$dest/usr/share/man" man -w 5 drover-tenants >/dev/null || fail "man does not find drover-tenants(5)"
make -s -C "$ROOT" uninstall-man DESTDIR="$dest" PREFIX=/usr >>"$TEST_TMP/make.log" 2>&1 || fail "make uninstall-man"
left=$(find "$dest" -type f | wc -l)
expect_eq "files left after make uninstall-man" "$left" 0
echo "ok: $n command pages, 4 section-5 pages, drover(1); installed and removed"
