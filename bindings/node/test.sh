#!/bin/sh
# bindings/node/test.sh [BUILD_DIR] - the Node binding's tests, from a fresh
# clone: installs what is missing from npm into bindings/node/node_modules
# (git-ignored; the devDependencies of package.json, pinned by
# package-lock.json: typescript and @types/node to check the declarations,
# proper-lockfile for the bench and the front's tests against it), builds the addon against the meson build
# BUILD_DIR (default: the repository's build/), type-checks index.d.ts and
# proper-lockfile.d.ts, and runs `node --test`.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
cd "$here"
for tool in node npm; do
	command -v "$tool" >/dev/null 2>&1 ||
		{ echo "bindings/node/test.sh: $tool not found (apt-get install nodejs npm)" >&2; exit 1; }
done
missing=
for m in typescript @types/node proper-lockfile; do
	[ -f "node_modules/$m/package.json" ] || missing="$missing $m"
done
if [ -n "$missing" ]; then
	echo "bindings/node: npm install (missing:$missing)"
	npm install --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
fi
HOLDFAST_BUILD=$build sh build.sh
export HOLDFAST_BIN="$build/holdfast" # test/etcd.test.js: the CLI as the other holder
node_modules/.bin/tsc -p test/tsconfig.json
echo "bindings/node: node --test ($(node --version), libholdfast from $build)"
exec node --test --test-reporter=spec test/*.test.js
