# drover: one plain GNU Makefile (Redis/LMDB style).
#
#   make            build ./drover (and build/rel/libdrover.a)
#   make run        install missing Debian packages, build, run the main job
#   make test       install missing packages, build, run every test suite
#   make fuzz       run each libFuzzer target for a while (FUZZ_SECONDS)
#   make install    install drover into $(PREFIX)/bin (DESTDIR too), the Slurm
#                   links, man pages, bash and zsh completion, systemd units,
#                   examples and deploy configs (see "make install" below)
#   make uninstall  remove exactly what make install put there
#
# Sources are found by wildcard: a new .c in src/<layer>/ joins libdrover.a,
# a new .c in src/cmd/ joins the binary, a new tests/unit/*.c joins the unit
# test binary. Header dependencies are generated (-MMD).

PREFIX ?= /usr/local
CC ?= cc
PKGS := libfyaml jansson libmicrohttpd libcurl gnutls sqlite3 libpq zlib
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN := -Wall -Wextra -Wshadow -Wno-unused-parameter -Wno-sign-compare -Wstrict-prototypes
CFLAGS ?= -O2 -g
ALL_CFLAGS := -std=gnu11 $(WARN) -Iinclude $(PKG_CFLAGS) $(CFLAGS) -D_GNU_SOURCE \
	-include drover/banned.h -fno-omit-frame-pointer
LIBS := $(PKG_LIBS) -lm -ldl -lpthread
# The light binaries (src/lite/): drover-slurm, the Slurm faces tools call
# once per job, and drover-shim, each task's parent. Linked --as-needed and
# without libcurl, each loads only the libraries its code calls (jansson's
# and libfyaml's; libc only), not libpq's, SQLite's, libmicrohttpd's or
# libcurl's: a process start costs less. drover-slurm talks plain http
# itself (src/http/http_plain.c) and loads libcurl (CURL_SONAME, the
# library -lcurl names here) only for https:// (src/lite/curl_dl.c).
LITE_LIBS := -Wl,--as-needed $(filter-out -lcurl,$(LIBS))
LITE := drover-slurm drover-shim
CURL_SONAME := $(shell objdump -p $$(pkg-config --variable=libdir libcurl)/libcurl.so \
	2>/dev/null | awk '/SONAME/ { print $$2 }')

# The first goal: plain `make` builds ./drover.
all: drover

LAYERS := base proto core spec store metrics http server agent sim client bench
LIB_SRC := $(foreach d,$(LAYERS),$(wildcard src/$(d)/*.c))
CMD_SRC := $(wildcard src/cmd/*.c)
UNIT_SRC := $(wildcard tests/unit/*.c)
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)

# A stand-in libnvidia-ml.so.1 with known answers (tests/nvml-standin/):
# the nvml GPU backend's tests dlopen it through the real loader path.
NVML_STANDIN := build/nvml-standin/libnvidia-ml.so.1
$(NVML_STANDIN): tests/nvml-standin/nvml.c
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC -O1 -Wall -Wl,-soname,libnvidia-ml.so.1 -o $@ $<

# Build flavours: rel (the shipped binary) and asan (ASan+UBSan, tests).
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined

define flavour
$(1)_OBJ := $$(patsubst %.c,build/$(1)/%.o,$$(LIB_SRC))
$(1)_CMD_OBJ := $$(patsubst %.c,build/$(1)/%.o,$$(CMD_SRC))
$(1)_UNIT_OBJ := $$(patsubst %.c,build/$(1)/%.o,$$(UNIT_SRC))
$(1)_LITE_OBJ := $$(patsubst %.c,build/$(1)/%.o,$$(wildcard src/lite/*.c))
build/$(1)/%.o: %.c
	@mkdir -p $$(dir $$@)
	$$(CC) $$(ALL_CFLAGS) $(2) -MMD -MP -c $$< -o $$@
build/$(1)/libdrover.a: $$($(1)_OBJ)
	@rm -f $$@
	ar rcs $$@ $$^
build/$(1)/drover: $$($(1)_CMD_OBJ) build/$(1)/libdrover.a
	$$(CC) $(2) -o $$@ $$($(1)_CMD_OBJ) build/$(1)/libdrover.a $$(LIBS)
build/$(1)/drover-%: build/$(1)/src/lite/%_main.o build/$(1)/libdrover.a
	$$(CC) $(2) -o $$@ $$(filter %.o,$$^) build/$(1)/libdrover.a $$(LITE_LIBS)
build/$(1)/drover-slurm: build/$(1)/src/lite/curl_dl.o
build/$(1)/src/lite/curl_dl.o: ALL_CFLAGS += -DDRV_CURL_SONAME='"$(or $(CURL_SONAME),libcurl.so.4)"'
build/$(1)/unit-tests: $$($(1)_UNIT_OBJ) build/$(1)/libdrover.a | $(NVML_STANDIN)
	$$(CC) $(2) -o $$@ $$($(1)_UNIT_OBJ) build/$(1)/libdrover.a $$(LIBS) -lcriterion
-include $$($(1)_OBJ:.o=.d) $$($(1)_CMD_OBJ:.o=.d) $$($(1)_UNIT_OBJ:.o=.d) \
	$$($(1)_LITE_OBJ:.o=.d)
endef

$(eval $(call flavour,rel,))
$(eval $(call flavour,asan,$(SAN_FLAGS)))

.PHONY: all run test deps install uninstall clean fuzz test-unit test-asan test-golden \
	test-integration test-fuzz check-deps

drover: build/rel/drover $(LITE:%=build/rel/%)
	@# by rename, not over the file: a ./drover that runs (a test, a
	@# server) makes cp fail with "Text file busy"
	cp build/rel/drover drover.new && mv -f drover.new drover
	for b in $(LITE); do cp build/rel/$$b $$b.new && mv -f $$b.new $$b; done

# `drover version`: the commit it is built from. git describe at build time
# when this directory is a git checkout's top (a tarball unpacked inside
# some other repository is not), else DROVER_COMMIT as a packager gives it,
# else none ("commit unknown"). build/commit changes only when the commit
# does, so only main's objects are rebuilt then.
DROVER_COMMIT ?= $(shell [ "$$(git -C $(CURDIR) rev-parse --show-toplevel 2>/dev/null)" = \
	"$(CURDIR)" ] && git -C $(CURDIR) describe --always --dirty 2>/dev/null)
build/commit: FORCE
	@mkdir -p build
	@echo '$(DROVER_COMMIT)' | cmp -s - $@ || echo '$(DROVER_COMMIT)' >$@
build/rel/src/cmd/cmd_version.o build/asan/src/cmd/cmd_version.o: build/commit
build/rel/src/cmd/cmd_version.o build/asan/src/cmd/cmd_version.o: \
	ALL_CFLAGS += -DDROVER_COMMIT='"$(DROVER_COMMIT)"'
FORCE:

deps:
	@./scripts/install-deps

# The main job: the all-in-one controller + local agent when it exists;
# until then, validate an example cluster and place an 8-GPU job on it.
run: deps
	@$(MAKE) --no-print-directory drover
	@./scripts/run-main $(ARGS)

test: deps
	@$(MAKE) --no-print-directory drover build/rel/unit-tests build/asan/unit-tests build/asan/drover
	@./scripts/run-tests

test-unit: build/rel/unit-tests
	./build/rel/unit-tests

test-asan: build/asan/unit-tests
	./build/asan/unit-tests

test-golden: drover
	@./tests/golden/run

test-integration: drover
	@./tests/run-integration

# --- fuzzing: clang + libFuzzer over an instrumented library build ---------
FUZZ_CC := clang
FUZZ_FLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
# The fuzz targets read specs, cluster and tenants files, options and the
# agent protocol: the layers base, proto, core and spec, which may use no
# layer above them (scripts/check-layers), so the instrumented library is
# those alone, a quarter of the code (the fuzz build was the suite's
# slowest step after the integration tests).
FUZZ_LAYERS := base proto core spec
fuzz_OBJ := $(patsubst %.c,build/fuzz/%.o,$(foreach d,$(FUZZ_LAYERS),$(wildcard src/$(d)/*.c)))
build/fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(ALL_CFLAGS) -Wno-unknown-warning-option $(FUZZ_FLAGS) -MMD -MP -c $< -o $@
build/fuzz/libdrover.a: $(fuzz_OBJ)
	@rm -f $@
	ar rcs $@ $^
build/fuzz/bin/%: tests/fuzz/%.c build/fuzz/libdrover.a
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(ALL_CFLAGS) -Wno-unknown-warning-option -fsanitize=fuzzer,address,undefined \
		-o $@ $< build/fuzz/libdrover.a $(LIBS)
-include $(fuzz_OBJ:.o=.d)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,build/fuzz/bin/%,$(FUZZ_SRC))
FUZZ_SECONDS ?= 60

fuzz-build: $(FUZZ_BINS)

fuzz: $(FUZZ_BINS)
	@./tests/run-fuzz $(FUZZ_SECONDS)

test-fuzz: $(FUZZ_BINS)
	@./tests/run-fuzz 3

# The Slurm faces (docs/slurm.md): links named as Slurm's commands, in a
# directory of their own, so that a real Slurm is never shadowed unless a
# user puts it in PATH (drover slurm-path prints it).
SLURM_LINK_DIR := lib/drover/slurm/bin
SLURM_LINKS := sbatch srun squeue sacct scancel sinfo scontrol salloc
build/rel/src/cmd/cmd_slurm.o build/asan/src/cmd/cmd_slurm.o: \
	ALL_CFLAGS += -DDROVER_PREFIX='"$(PREFIX)"'

# --- make install / uninstall (DESTDIR, PREFIX): the binary, the Slurm
# links, the man pages, bash and zsh completion, the systemd units (their
# ExecStart pointed at $(PREFIX)/bin/drover) and the examples and deploy
# configs under $(DOCDIR). uninstall removes exactly the files install
# puts, from the same lists, and then the directories of drover's own that
# are left empty; tests/integration/install.sh checks both.
BINDIR ?= $(PREFIX)/bin
UNITDIR ?= $(PREFIX)/lib/systemd/system
DOCDIR ?= $(PREFIX)/share/doc/drover
UNITS := $(wildcard deploy/systemd/*.service)
DOC_FILES := $(wildcard examples/*/* deploy/README.md deploy/prometheus/* deploy/grafana/*)

install: install-bin install-units install-examples
install-bin: drover
	install -d $(DESTDIR)$(BINDIR)
	install -m 755 drover $(LITE) $(DESTDIR)$(BINDIR)/
	install -d $(DESTDIR)$(PREFIX)/$(SLURM_LINK_DIR)
	for n in $(SLURM_LINKS); do t=drover-slurm; case $$n in srun|salloc) t=drover ;; esac; \
		ln -sfn ../../../../bin/$$t $(DESTDIR)$(PREFIX)/$(SLURM_LINK_DIR)/$$n; done
install-units:
	install -d $(DESTDIR)$(UNITDIR)
	for u in $(UNITS); do \
		sed 's|/usr/local/bin/drover|$(BINDIR)/drover|g' $$u >$(DESTDIR)$(UNITDIR)/$${u##*/} && \
		chmod 644 $(DESTDIR)$(UNITDIR)/$${u##*/} || exit 1; done
install-examples:
	for f in $(DOC_FILES); do install -D -m 644 $$f $(DESTDIR)$(DOCDIR)/$$f || exit 1; done

uninstall: uninstall-bin uninstall-units uninstall-examples
uninstall-bin:
	rm -f $(DESTDIR)$(BINDIR)/drover $(LITE:%=$(DESTDIR)$(BINDIR)/%)
	for n in $(SLURM_LINKS); do rm -f $(DESTDIR)$(PREFIX)/$(SLURM_LINK_DIR)/$$n; done
	-rmdir $(DESTDIR)$(PREFIX)/$(SLURM_LINK_DIR) $(DESTDIR)$(PREFIX)/lib/drover/slurm \
		$(DESTDIR)$(PREFIX)/lib/drover 2>/dev/null
uninstall-units:
	for u in $(UNITS); do rm -f $(DESTDIR)$(UNITDIR)/$${u##*/}; done
uninstall-examples:
	for f in $(DOC_FILES); do rm -f $(DESTDIR)$(DOCDIR)/$$f; done
	-[ ! -d $(DESTDIR)$(DOCDIR) ] || find $(DESTDIR)$(DOCDIR) -depth -type d -empty -delete

.PHONY: install-bin install-units install-examples uninstall-bin uninstall-units \
	uninstall-examples

clean:
	rm -rf build drover $(LITE)

# --- man pages: drover(1), drover-CMD(1) from each command's option table
# (drover CMD --help-man), and docs/man/*.5.scd; scdoc turns them into roff
MANDIR ?= $(PREFIX)/share/man
MAN5_SRC := $(wildcard docs/man/*.5.scd)

man: build/man/.stamp

build/man/.stamp: drover scripts/man-pages $(MAN5_SRC)
	@rm -rf build/man
	./scripts/man-pages ./drover build/man
	@touch $@

install: install-man
install-man: man
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5
	install -m 644 build/man/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 644 build/man/*.5 $(DESTDIR)$(MANDIR)/man5/

uninstall: uninstall-man
uninstall-man:
	rm -f $(DESTDIR)$(MANDIR)/man1/drover.1 $(DESTDIR)$(MANDIR)/man1/drover-*.1 \
		$(DESTDIR)$(MANDIR)/man5/drover-*.5

.PHONY: man install-man uninstall uninstall-man

# --- shell completion: printed by the binary from its option tables
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/vendor-completions

build/completion/drover: drover
	@mkdir -p $(dir $@)
	./drover completion bash >$@.tmp && mv $@.tmp $@
build/completion/_drover: drover
	@mkdir -p $(dir $@)
	./drover completion zsh >$@.tmp && mv $@.tmp $@

install: install-completion
install-completion: build/completion/drover build/completion/_drover
	install -d $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR)
	install -m 644 build/completion/drover $(DESTDIR)$(BASHCOMPDIR)/drover
	install -m 644 build/completion/_drover $(DESTDIR)$(ZSHCOMPDIR)/_drover

uninstall: uninstall-completion
uninstall-completion:
	rm -f $(DESTDIR)$(BASHCOMPDIR)/drover $(DESTDIR)$(ZSHCOMPDIR)/_drover

.PHONY: install-completion uninstall-completion
