#!/usr/bin/env bash
# `make run`: holdfast's locks at work, in a scratch directory.
set -u
HF=${1:-build/holdfast}
HF=$(cd "$(dirname "$HF")" && pwd)/$(basename "$HF")
export HF
here=$(cd "$(dirname "$0")" && pwd)
status=0
for part in session lock scope; do
	if [ -f "$here/$part.sh" ]; then
		bash "$here/$part.sh" || status=1
	fi
done
exit $status
