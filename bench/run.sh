#!/usr/bin/env bash
# `make bench`: every benchmark under bench/, each printing its ratios.
# usage: bench/run.sh BUILD_DIR
set -u
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
status=0
for part in session dirlock modes run scope guard list wait keeper peers bindings python etcd; do
	if [ -x "$here/$part/run.sh" ]; then
		echo "== bench/$part"
		"$here/$part/run.sh" "$build" || status=1
	fi
done
exit $status
