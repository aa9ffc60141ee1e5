#!/usr/bin/env bash
# bindings/python/test.sh [BUILD_DIR] - the Python binding's tests (pytest)
# against the library meson built (BUILD_DIR/libholdfast.so, default build).
# Debian's /usr/bin/python3 runs them (python3-pytest is installed for it);
# another interpreter: PYTHON=... bindings/python/test.sh.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
py=${PYTHON:-/usr/bin/python3}
[ -f "$build/libholdfast.so" ] || { echo "bindings/python: $build/libholdfast.so missing (build first)"; exit 1; }
"$py" -c 'import pytest' 2>/dev/null || { echo "bindings/python: $py has no pytest (apt-get install python3-pytest)"; exit 1; }
export HOLDFAST_LIB=$build/libholdfast.so
export HOLDFAST_BIN=$build/holdfast # tests/test_etcd.py: the CLI as the other holder
export PYTHONPATH=$here/src${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1
cd "$here"
exec "$py" -m pytest -q -p no:cacheprovider tests "${@:2}"
