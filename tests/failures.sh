#!/usr/bin/env bash
# tests/failures.sh BUILDDIR - after a failed `meson test`, the failing tests'
# own words, last: each Criterion assertion that failed (file:line and its
# message), each test that failed or crashed, each test that started and
# never ended (Criterion's [RUN ] lines: CRITERION_VERBOSITY_LEVEL=1 in
# tests/meson.build), and meson's lines for suites that failed without
# Criterion's report (a script, a timeout). CI keeps only the tail of what a
# run printed; this puts the cause into that tail. Exit 0.
log="${1:?usage: tests/failures.sh BUILDDIR}/meson-logs/testlog.txt"
[ -r "$log" ] || { echo "failures.sh: no $log" >&2; exit 0; }
echo "==== failing tests (from $log) ===="
# tests that started and never ended (a suite meson timed out or killed):
# each [RUN ] line without its [PASS], [FAIL] or [SKIP] line
awk '/^\[RUN \] / { name = $3; run[name] = 1 }
     /^\[(PASS|FAIL|SKIP)\] / { name = $2; sub(/:$/, "", name); delete run[name] }
     END { for (n in run) print "[NEVER ENDED] " n }' "$log" | sort | tail -n 20
# an assertion's place and its message lines (indented), a failed or crashed
# test, Criterion's warning of a crash in setup/teardown, meson's verdicts;
# not the [----] lines of cr_log_info or Criterion's banner
grep -a -E '^\[----\] [^ ]+:[0-9]+: |^\[----\]   .*[^ ]|^\[(FAIL|CRASH)\]|^\[----\] Warning! |^ *[0-9]+/[0-9]+ .* (FAIL|TIMEOUT) ' \
	"$log" | tail -n 60
exit 0
