#!/usr/bin/env bash
# bench/python/run.sh BUILD_DIR - the Python binding, measured side by side
# in one run, on each file system of BENCH_FS (default /dev/shm and /tmp):
#   1. uncontended acquire+release: holdfast_locks.Lock beside the C
#      library's own cycle (bench/python/cycle.c; goal: within 2x), the
#      front (holdfast_locks.filelock.FileLock) and py-filelock's FileLock and
#      SoftFileLock (Debian's python3-filelock) - cycle.py;
#   2. the stale-lock steal race from the front: a crashed holder's lock, K
#      (16) contenders on a FIFO barrier, one try each, ROUNDS (100) rounds;
#      holders per round beside py-filelock's FileLock and SoftFileLock -
#      race.py (bench/peers' method);
#   3. the py-filelock front's cycle beside the real py-filelock (Debian's
#      3.9.0, and the current release when PYTHONPATH puts it first as
#      `filelock`, e.g. an export of 3.32.3's src/) - front.py; then the
#      mixed-tool stress (mixed.py: py-filelock and front processes on one
#      lock file under SIGKILLs, overlaps counted).
# CYCLES (2000) and CROUNDS (10) size part 1. A measurement, not a verdict:
# exits 1 only when it cannot run.
set -u
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-/usr/bin/python3}
cycle=$build/bench/python/bench-python-cycle
[ -x "$cycle" ] && [ -f "$build/libholdfast.so" ] || { echo "bench/python: build first ($cycle)"; exit 1; }
export HOLDFAST_LIB=$build/libholdfast.so
export PYTHONPATH=$here/../../bindings/python/src${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1
fl=$("$py" -c 'import filelock; print(filelock.__version__)' 2>/dev/null || echo "not installed")
echo "# python: $("$py" --version 2>&1) ($py), py-filelock $fl, libholdfast $("$py" -c 'import holdfast_locks as h; print(h.library_version())'); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
for fs in ${BENCH_FS:-/dev/shm /tmp}; do
	d=$(mktemp -d "$fs/hf-bench-python.XXXXXX") || exit 1
	echo "## $fs: uncontended acquire+release, median of ${CROUNDS:-10} rounds' medians of ${CYCLES:-2000} cycles"
	"$py" "$here/cycle.py" "$cycle" "$d" "${CYCLES:-2000}" "${CROUNDS:-10}" || status=1
	echo "## $fs: stale-lock steal race, ${K:-16} contenders on a FIFO barrier, one try each, ${ROUNDS:-100} rounds"
	"$py" "$here/race.py" "$d" "${ROUNDS:-100}" "${K:-16}" || status=1
	echo "## $fs: the py-filelock front beside py-filelock: with lock: pass, median of ${CROUNDS:-10} rounds' medians of ${CYCLES:-2000} cycles"
	"$py" "$here/front.py" "$d" "${CYCLES:-2000}" "${CROUNDS:-10}" || status=1
	rm -rf "$d"
done
echo "## mixed-tool stress: py-filelock and front processes on one FileLock, SIGKILLs, overlaps counted"
"$py" "$here/mixed.py" --workers 6 --acquisitions 3000 --kills 30 || status=1
exit $status
