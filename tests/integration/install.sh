# install.sh: `make install DESTDIR=D PREFIX=/usr` lays out every file a
# Debian user expects: the binary, the Slurm command links in a directory
# of their own (that `drover slurm-path` finds from the installed binary),
# drover(1) and a page per command, the four section-5 pages where man
# finds them, bash and zsh completion that are what the binary prints, the
# systemd units pointed at PREFIX/bin/drover, the examples and deploy
# configs (the example server config starts a server); and `make
# uninstall` removes exactly that, leaving no file and no directory of
# drover's own. Runs on a copy of the tree, so that it shares no build/
# directory with the tests beside it.
. "$ROOT/tests/integration/lib.sh"

command -v scdoc >/dev/null || skip "scdoc is not installed (scripts/install-deps installs it)"
src="$TEST_TMP/src"
mkdir -p "$src"
(cd "$ROOT" && cp -R Makefile scripts docs deploy examples "$src/") || fail "cannot copy the tree"
cp "$DROVER" "$src/drover" || fail "cannot copy $DROVER"
for b in drover-slurm drover-shim; do   # the light binaries built beside it
	cp "$(dirname "$DROVER")/$b" "$src/$b" || fail "cannot copy $b from beside $DROVER"
done
dest="$TEST_TMP/dest"
# -o drover: the binary under test is the one copied, not rebuilt here
make -s -C "$src" -o drover install DESTDIR="$dest" PREFIX=/usr >"$TEST_TMP/make.log" 2>&1 ||
	fail "make install: $(tail -5 "$TEST_TMP/make.log")"
u="$dest/usr"

# the binary and the Slurm links
[ -x "$u/bin/drover" ] || fail "no $u/bin/drover"
cmp -s "$u/bin/drover" "$DROVER" || fail "the installed drover is not the built one"
for n in sbatch srun squeue sacct scancel sinfo scontrol salloc; do
	l="$u/lib/drover/slurm/bin/$n"
	[ -L "$l" ] || fail "no link $l"
	t=drover-slurm
	case $n in srun|salloc) t=drover ;; esac
	[ "$(readlink -f "$l")" = "$(readlink -f "$u/bin/$t")" ] || fail "$l does not lead to $t"
done
for b in drover-slurm drover-shim; do
	cmp -s "$u/bin/$b" "$(dirname "$DROVER")/$b" || fail "the installed $b is not the built one"
done
"$u/lib/drover/slurm/bin/sbatch" --help | grep -q '^usage: sbatch' || fail "sbatch by its link"
"$u/lib/drover/slurm/bin/squeue" --help | grep -q '^usage: squeue' || fail "squeue by its link"
expect_eq "drover slurm-path, installed" "$("$u/bin/drover" slurm-path)" "$u/lib/drover/slurm/bin"
[ ! -e "$u/bin/sbatch" ] || fail "a Slurm link in bin/ would shadow a real Slurm"

# man pages: drover(1), one per command, the four (5)s, found by man
cmds=$("$DROVER" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
for c in $cmds; do
	[ -s "$u/share/man/man1/drover-$c.1" ] || fail "no drover-$c(1)"
done
for p in man1/drover.1 man5/drover-cluster.5 man5/drover-job.5 man5/drover-server.conf.5 man5/drover-tenants.5; do
	[ -s "$u/share/man/$p" ] || fail "no $p"
done
if command -v man >/dev/null; then
	MANPATH="$u/share/man" man -w drover-completion >/dev/null || fail "man does not find drover-completion(1)"
	MANPATH="$u/share/man" man -w 5 drover-server.conf >/dev/null || fail "man does not find drover-server.conf(5)"
fi

# completion: what the binary prints, where bash-completion and zsh look
"$DROVER" completion bash | cmp -s - "$u/share/bash-completion/completions/drover" ||
	fail "the installed bash completion is not drover completion bash"
"$DROVER" completion zsh | cmp -s - "$u/share/zsh/vendor-completions/_drover" ||
	fail "the installed zsh completion is not drover completion zsh"
got=$(bash -c '. "$1"; COMP_WORDS=(drover sub); COMP_CWORD=1; _drover; echo "${COMPREPLY[*]}"' \
	_ "$u/share/bash-completion/completions/drover")
expect_eq "installed bash completion of 'drover sub'" "$got" "submit"

# systemd units, run from PREFIX/bin
for s in drover-server drover-agent; do
	f="$u/lib/systemd/system/$s.service"
	[ -s "$f" ] || fail "no $f"
	grep -q "/usr/bin/drover ${s#drover-} " "$f" || fail "$f does not start /usr/bin/drover: $(grep ExecStart "$f")"
	! grep -q /usr/local "$f" || fail "$f still names /usr/local"
done

# examples and deploy configs, as in the tree
n=0
for f in $(cd "$ROOT" && ls examples/*/* deploy/README.md deploy/prometheus/* deploy/grafana/*); do
	cmp -s "$ROOT/$f" "$u/share/doc/drover/$f" || fail "$f is not installed as share/doc/drover/$f"
	n=$((n + 1))
done
# the example server config is one the server accepts
cp "$u/share/doc/drover/examples/config/server.yaml" "$TEST_TMP/server.yaml"
chmod 600 "$TEST_TMP/server.yaml"
SERVER_CONFIG="$TEST_TMP/server.yaml" start_server
stop_server

total=$(find "$dest" \( -type f -o -type l \) | wc -l)
echo "make install: $total files and links ($n examples and configs)"

make -s -C "$src" -o drover uninstall DESTDIR="$dest" PREFIX=/usr >>"$TEST_TMP/make.log" 2>&1 ||
	fail "make uninstall: $(tail -5 "$TEST_TMP/make.log")"
left=$(find "$dest" \( -type f -o -type l \) | sed "s|^$dest||")
expect_eq "files left after make uninstall" "$left" ""
ours=$(find "$dest" -type d \( -name drover -o -name slurm \) | sed "s|^$dest||")
expect_eq "drover's directories left after make uninstall" "$ours" ""
echo "ok: make install laid out $total files; make uninstall removed them all"
