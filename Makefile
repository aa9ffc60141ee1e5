# holdfast - top-level entry points. `make run`: install what is missing,
# build, run the demo. `make test`: install, build, run every test suite
# (release build with -Werror, then the same suites under ASan+UBSan).

SHELL := /bin/bash
BUILD ?= build
ASAN_BUILD ?= build-asan
# The sanitizers' options of every ASan+UBSan run.
ASAN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
# Debian packages needed to build, test and benchmark. Each is checked with
# dpkg and installed only when missing (apt-get update runs once first).
# groff-base, man-db: the manual pages are checked with groff -ww and man
# --warnings; bash-completion, zsh, fish: the completions are loaded and run
# by each shell (tests/term/help.sh, tests/install); python3-pytest: the
# Python binding's tests; python3-filelock: the real py-filelock (3.9.0) that
# `make check-pyfl-mixed` runs against the front. libcurl4-openssl-dev: the etcd backend's client;
# etcd-server, etcd-client, openssl: its tests start their own etcd (TLS too);
# iproute2: the cluster suite's hosts are network namespaces joined by veths.
# tmux, make, findutils: tests/run/test_callers.c runs holdfast from each
# caller as users do (make recipes, tmux run-shell, xargs and find -exec).
# python3-venv, python3-build: tests/install/python.sh makes fresh venvs and
# runs `python3 -m build` (check-install-python).
PKGS := meson ninja-build pkg-config gcc libc6-dev libjansson-dev libcriterion-dev spin git \
	groff-base man-db bash-completion zsh fish python3-pytest python3-filelock \
	libcurl4-openssl-dev etcd-server etcd-client openssl iproute2 tmux make findutils \
	python3-venv python3-build
# clang and its sanitizer/fuzzer runtimes, for `make fuzz` only
FUZZ_PKGS := clang libclang-rt-14-dev
BENCH_PKGS := jq hyperfine liblockfile-bin lockfile-progs util-linux python3-filelock
# node and npm (for the proper-lockfile peer) only when no node is on PATH:
# a machine may have them from elsewhere, and Debian's npm conflicts with those.
NODE_PKGS := nodejs npm

# $(call apt_missing,PACKAGES): install those of PACKAGES that dpkg does not
# have (apt-get update first, once; sudo when not root); nothing when all are.
define apt_missing
missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
if [ -n "$$missing" ]; then \
  echo "installing:$$missing"; \
  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
fi
endef

.PHONY: check-install-python check-install-node check-long check-flock-mixed check-ul-flock check-plf-mixed check-pyfl-mixed check-tsan check-cluster check-callers all deps bench-deps build build-asan run test test-release test-asan test-bindings model bench bench-node fuzz fuzz-deps clean

all: build

deps:
	@$(call apt_missing,$(PKGS))

bench-deps: deps
	@$(call apt_missing,$(BENCH_PKGS) $$(command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || echo $(NODE_PKGS)))

$(BUILD)/build.ninja: | deps
	meson setup $(BUILD) --buildtype=release -Dwerror=true

$(ASAN_BUILD)/build.ninja: | deps
	meson setup $(ASAN_BUILD) --buildtype=debug -Dwerror=true -Db_sanitize=address,undefined \
	  -Db_lundef=false -Dbench=false -Dstatic_cli=false

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

build-asan: deps $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD)

run: build
	@bash demo/demo.sh $(BUILD)/holdfast

test: test-release test-asan test-bindings
	@echo "make test: all suites passed (release and ASan+UBSan)"
	@cat $(BUILD)/meson-logs/testlog.txt $(ASAN_BUILD)/meson-logs/testlog.txt | \
	  sed -n 's/.*Synthesis: Tested: [0-9]* | Passing: \([0-9]*\) | Failing: \([0-9]*\) | Crashing: \([0-9]*\).*/\1 \2 \3/p' | \
	  awk '{ p += $$1; f += $$2 + $$3 } END { print "tests: " p " passed, " f " failed" }'

# Each language's binding against the release build's library (bindings/*/test.sh).
test-bindings: build
	bash bindings/rust/test.sh $(BUILD)
	bash bindings/python/test.sh $(BUILD)
	bash bindings/node/test.sh $(BUILD)
	bash tests/cross/cross.sh $(BUILD)

# The etcd backend on a 3-member cluster with faults (tests/etcd/test_cluster.c):
# members killed under a holder and a waiter, quorum lost and regained.
check-cluster: build build-asan
	meson test -C $(BUILD) --print-errorlogs --suite etcd-cluster || \
	  { bash tests/failures.sh $(BUILD); exit 1; }
	$(ASAN_ENV) \
	  meson test -C $(ASAN_BUILD) --print-errorlogs --timeout-multiplier 3 --suite etcd-cluster || \
	  { bash tests/failures.sh $(ASAN_BUILD); exit 1; }

# The slow suites (.ci/run runs them after `make test`): the 3-member etcd
# cluster, and ThreadSanitizer over tests/threads (the per-process caches
# read by many threads, threads of one process waiting for one lock; not a
# Criterion suite: Criterion's forking arena cannot start under TSan).
check-long: check-cluster check-model-long check-asan-slow check-asan-leaks check-tsan check-callers check-modes-long check-flock-mixed check-plf-mixed check-pyfl-mixed check-install-rust check-install-python check-install-deb check-install-node

# The Rust crate as a Rust developer installs it (tests/install/rust.sh):
# `cargo package`, then new crates with `cargo add --path` and a path
# dependency on the unpacked .crate, built offline; each binary takes and
# releases a lock in a mount namespace hiding the repository and /usr/local
# (no libholdfast anywhere), and a --features system control must fail there.
.PHONY: check-install-rust
check-install-rust: build
	bash tests/install/rust.sh $(CURDIR) $(BUILD)

# The Node package as npm users install it (tests/install/node.sh): `npm
# install` of bindings/node and of its `npm pack` tarball in fresh projects
# compiles libholdfast's C sources into the addon; used from JS and strict
# TypeScript where no build dir, /usr/local or installed libholdfast is seen.
check-install-node: deps
	bash tests/install/node.sh

# A rolling migration from flock(1) under kills (bench/peers/flock_mixed.sh):
# 8 workers alternating util-linux flock(1) and holdfast flock on one file, a
# quarter of the sections killed (the section or its wrapper); 0 overlaps.
check-flock-mixed: build
	bash bench/peers/flock_mixed.sh $(BUILD)/holdfast 8 40

# util-linux's own tests/ts/flock (their -s cases: flock, range-lock) run
# unmodified against holdfast flock, from a util-linux git directory
# (UL_GIT; the mirror by default). Not in check-long: it needs that mirror.
check-ul-flock: build
	bash tests/term/ul_flock.sh $(BUILD)/holdfast $(UL_GIT)

# A rolling migration under kills (bindings/node/test/mixed-stress.js): npm
# proper-lockfile 4.1.2 and holdfast/proper-lockfile processes, two of each,
# contend for one file for 30 s while one is SIGKILLed every 0.75-2.25 s;
# fails on any overlap of their critical sections.
check-plf-mixed: build
	cd bindings/node && { [ -f node_modules/proper-lockfile/package.json ] || \
	  npm install --no-audit --no-fund --loglevel=error >/dev/null; } && \
	  HOLDFAST_BUILD=$(CURDIR)/$(BUILD) sh build.sh && node test/mixed-stress.js 30000

# The py-filelock front's mixed-tool stress (bench/python/mixed.py): 3
# processes of the real py-filelock (Debian's python3-filelock) and 3 of
# holdfast_locks.filelock contend for one lock file, 30 of them SIGKILLed
# along the way; an overlap detector counts, and any overlap fails it.
check-pyfl-mixed: deps
	PYTHONPATH=$(CURDIR)/bindings/python/src /usr/bin/python3 bench/python/mixed.py \
	  --workers 6 --acquisitions 3000 --kills 30

# The Python binding installed as users install it (tests/install/python.sh):
# `pip install --no-index ./bindings/python` in a fresh venv of each python3,
# `python3 -m build`, then the sdist installed and each venv used in a mount
# namespace hiding the repository, /usr/local and any libholdfast; ~4 min.
check-install-python: deps
	bash tests/install/python.sh $(CURDIR)

# The modes under kills (bench/modes/stress.sh): 6 workers loop `holdfast
# run --lock L --shared | --slots 2 | (exclusive)`, CMD logging enter/leave
# with its mode to one O_APPEND log, every 5th section SIGKILLed with its
# run; the replay counts an exclusive holder beside anyone and more than 2
# slot holders (or slots beside shared): any is a failure. Under 3 minutes.
.PHONY: check-modes-long
check-modes-long: build
	bash bench/modes/stress.sh $(BUILD)/holdfast 6 60 5

# The callers' idioms stress (tests/dirlock/test_stress_callers.c) at 5x its
# `make test` rounds: 120 acquisitions by make, python3, xargs and agent
# `bash -c` callers, a quarter of them killed in their work.
check-callers: build
	HF_STRESS_SCALE=500 meson test -C $(BUILD) --print-errorlogs --timeout-multiplier 3 dirlock-callers || \
	  { bash tests/failures.sh $(BUILD); exit 1; }

$(TSAN_BUILD)/build.ninja: | deps
	meson setup $(TSAN_BUILD) --buildtype=debug -Dwerror=true -Db_sanitize=thread \
	  -Db_lundef=false -Dbench=false -Dstatic_cli=false

check-tsan: deps $(TSAN_BUILD)/build.ninja
	ninja -C $(TSAN_BUILD)
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  meson test -C $(TSAN_BUILD) --print-errorlogs --timeout-multiplier 3 --suite threads

# A failed run ends with the failing tests' own lines (tests/failures.sh):
# CI keeps only the tail of the output.
test-release: build
	meson test -C $(BUILD) --print-errorlogs --no-suite etcd-cluster --no-suite model-long || \
	  { bash tests/failures.sh $(BUILD); exit 1; }

# The SPIN models (the directory lock at bound B1, its modes, the session
# lock) and their weakened variants
# (about 5.5 min of one core): in check-long, so make test stays under 10 minutes.
.PHONY: check-model-long
check-model-long: build
	meson test -C $(BUILD) --print-errorlogs --suite model-long || \
	  { bash tests/failures.sh $(BUILD); exit 1; }

# The programs a test executes (the CLI, shells and what they run) skip the
# leak check here (HFT_CHILD_ASAN_OPTIONS, tests/support/hft.c): its scan at
# exit costs each ASan process about 50 ms, a third of this run's time. The
# test processes themselves (the library in-process) check for leaks;
# check-asan-leaks runs the same suites with every program checked.
ASAN_SUITES = --no-suite model --no-suite etcd-cluster --no-suite etcd --no-suite slow-asan
test-asan: build-asan
	$(ASAN_ENV) \
	  HFT_CHILD_ASAN_OPTIONS=detect_leaks=0 \
	  meson test -C $(ASAN_BUILD) --print-errorlogs --timeout-multiplier 3 $(ASAN_SUITES) || \
	  { bash tests/failures.sh $(ASAN_BUILD); exit 1; }

# make test's ASan suites with the leak check in every program a test runs
# (about 5 min on 2 cores; in check-long).
.PHONY: check-asan-leaks
check-asan-leaks: build-asan
	$(ASAN_ENV) \
	  meson test -C $(ASAN_BUILD) --print-errorlogs --timeout-multiplier 3 $(ASAN_SUITES) || \
	  { bash tests/failures.sh $(ASAN_BUILD); exit 1; }

# The ASan+UBSan runs that would take make test past its 10 minutes (about
# 5.5 min of a core on 2 cores: etcd, help.sh, selftest); the release build
# runs them in make test.
.PHONY: check-asan-slow
check-asan-slow: build-asan
	$(ASAN_ENV) \
	  meson test -C $(ASAN_BUILD) --print-errorlogs --timeout-multiplier 3 \
	  --suite etcd --suite slow-asan || { bash tests/failures.sh $(ASAN_BUILD); exit 1; }

# The SPIN model of the directory lock (model/dirlock.pml): mutual exclusion,
# no leftover record and fence monotonicity at bound B1 (also with judges
# that ignore the flock), and five weakened variants that must fail. Other
# configurations: bash model/check.sh list (see model/README.md).
model: deps
	bash model/check.sh test

bench: bench-deps build
	@bash bench/run.sh $(BUILD)

bench-node: bench-deps build
	@bash bench/node/run.sh $(BUILD)

# libFuzzer over every parser (fuzz/): a clang build with the fuzzer's
# coverage and ASan+UBSan, each target FUZZ_SECONDS (60) s; new inputs go
# to $(FUZZ_BUILD)/fuzz-corpus, never into git. Fails on any crash.
fuzz-deps: deps
	@$(call apt_missing,$(FUZZ_PKGS))

$(FUZZ_BUILD)/build.ninja: | fuzz-deps
	CC=clang meson setup $(FUZZ_BUILD) --buildtype=debugoptimized -Dfuzz=true -Dtests=false \
	  -Dbench=false -Dstatic_cli=false -Db_sanitize=address,undefined -Db_lundef=false \
	  -Dc_args='-fsanitize=fuzzer-no-link -fno-sanitize-recover=all'

fuzz: fuzz-deps $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD)
	bash fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# `make install PREFIX=/some/prefix [DESTDIR=/staging]`: the CLIs, libholdfast
# (.so.0, .so, .a), the headers, holdfast.pc, the manual pages and the
# bash/zsh/fish completions, from a release build of its own ($(INSTALL_BUILD),
# configured for PREFIX: holdfast runs PREFIX/bin/holdfast-etcd for etcd).
# ldconfig runs after an install into the live system as root. `make
# uninstall` removes what the last install put there.
PREFIX ?= /usr/local
INSTALL_BUILD ?= build-install
.PHONY: install uninstall deb deb-deps check-install-deb
install: deps
	@if [ -f $(INSTALL_BUILD)/build.ninja ]; then meson configure $(INSTALL_BUILD) --prefix=$(abspath $(PREFIX)) >/dev/null; \
	else meson setup $(INSTALL_BUILD) --buildtype=release --prefix=$(abspath $(PREFIX)) -Dtests=false -Dbench=false >/dev/null; fi
	ninja -C $(INSTALL_BUILD)
	DESTDIR="$(DESTDIR)" meson install -C $(INSTALL_BUILD) --no-rebuild
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig; fi

uninstall:
	DESTDIR="$(DESTDIR)" ninja -C $(INSTALL_BUILD) uninstall

# `make deb`: holdfast, libholdfast0 and libholdfast-dev (debian/) into
# $(DEB_BUILD)/, built by dpkg-buildpackage -us -uc -b from a copy of the
# tree's files (git ls-files) in $(DEB_BUILD)/src, so nothing lands outside the
# repository; no test suite runs in it (debian/rules: -Dtests=false, an empty
# dh_auto_test). lintian then checks the result and fails on any error or
# warning (the tags overridden are explained in debian/*.lintian-overrides).
DEB_BUILD ?= build-deb
# debhelper, dpkg-dev, build-essential, fakeroot: dpkg-buildpackage and dh;
# lintian: the packages' check.
DEB_PKGS := debhelper dpkg-dev build-essential fakeroot lintian
deb-deps: deps
	@$(call apt_missing,$(DEB_PKGS))

deb: deb-deps
	rm -rf $(DEB_BUILD) && mkdir -p $(DEB_BUILD)/src
	git ls-files -z --cached --others --exclude-standard | \
	  tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C $(DEB_BUILD)/src
	cd $(DEB_BUILD)/src && DEB_BUILD_OPTIONS="nocheck $$DEB_BUILD_OPTIONS" \
	  dpkg-buildpackage -us -uc -b >../dpkg-buildpackage.log 2>&1 || \
	  { tail -40 ../dpkg-buildpackage.log; exit 1; }
	rm -rf $(DEB_BUILD)/src
	lintian --fail-on error,warning --info $(DEB_BUILD)/*.changes
	@ls -l $(DEB_BUILD)/*.deb

# The packages and make install, each tried where libholdfast was never
# installed (tests/install/deb.sh: a private mount namespace, /usr/local and
# the build trees hidden): the CLI, man -w, the completions, a C program
# built with pkg-config against the install.
check-install-deb: deb
	bash tests/install/deb.sh $(DEB_BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
