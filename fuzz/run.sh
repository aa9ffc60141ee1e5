#!/bin/bash
# fuzz/run.sh BUILD_DIR [SECONDS] - run every libFuzzer target of BUILD_DIR
# (a -Dfuzz=true clang build: `make fuzz`) for SECONDS each (default 60,
# FUZZ_SECONDS), one process at a time. The seeds in fuzz/corpus/<target>/
# are read, never written: new interesting inputs go to
# BUILD_DIR/fuzz-corpus/<target>/, which is then minimised (-merge=1) into
# BUILD_DIR/fuzz-min/<target>/; a crash or failed property leaves its input
# in BUILD_DIR/fuzz-crashes/. Exit 1 when any target crashed.
set -u
build=${1:?usage: fuzz/run.sh BUILD_DIR [SECONDS]}
secs=${2:-${FUZZ_SECONDS:-60}}
src=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$build" && pwd)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
failed=()
for bin in "$build"/fuzz/*-fuzzer; do
  t=$(basename "$bin" -fuzzer)
  new="$build/fuzz-corpus/$t" min="$build/fuzz-min/$t" crashes="$build/fuzz-crashes"
  mkdir -p "$new" "$min" "$crashes"
  echo "== $t: $secs s"
  if ! "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
      -print_final_stats=1 -artifact_prefix="$crashes/$t-" "$new" "$src/corpus/$t" \
      >"$build/fuzz-$t.log" 2>&1; then
    failed+=("$t")
    grep -E 'ERROR|property failed|SUMMARY|Test unit written' "$build/fuzz-$t.log" | head -20
    continue
  fi
  grep -E '^stat::(number_of_executed_units|new_units_added)' "$build/fuzz-$t.log" | tr '\n' ' '
  echo
  "$bin" -merge=1 "$min" "$new" "$src/corpus/$t" >"$build/fuzz-$t-merge.log" 2>&1 ||
    { failed+=("$t (merge)"); continue; }
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: crashed: ${failed[*]} (inputs in $build/fuzz-crashes, logs $build/fuzz-*.log)"
  exit 1
fi
echo "fuzz: every target ran ${secs} s without a crash (minimised corpora in $build/fuzz-min)"
