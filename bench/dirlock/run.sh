#!/usr/bin/env bash
# bench/dirlock/run.sh BUILD_DIR - the directory lock's benchmarks, each a
# ratio measured side by side in one run, on tmpfs (/dev/shm) and on /tmp:
#   - uncontended acquire+release: the library against the bare system-call
#     sequence of the same steps (goal: within 1.5x);
#   - acquire+release with 100 000 unrelated entries beside the lock, against
#     an empty parent (goal: within 1.2x).
# Set BENCH_FS="..." to choose the file systems, ENTRIES, CYCLES, ROUNDS to
# change the sizes. Other benchmarks of this directory (contention, peers)
# have their own scripts.
set -u
build=$(cd "${1:-build}" && pwd)
status=0
for fs in ${BENCH_FS:-/dev/shm /tmp}; do
	d=$(mktemp -d "$fs/hf-bench-dirlock.XXXXXX") || exit 1
	"$build/bench/dirlock/bench-dirlock-uncontended" "$d" "${CYCLES:-2000}" "${ROUNDS:-10}" || status=1
	"$build/bench/dirlock/bench-dirlock-crowded" "$d" "${ENTRIES:-100000}" "${CYCLES:-1000}" \
		"${ROUNDS:-10}" || status=1
	rm -rf "$d"
done
exit $status
