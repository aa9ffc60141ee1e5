#!/usr/bin/env bash
# bench/keeper/run.sh BUILD_DIR - a keeper's memory (memory.sh): per keeper
# and in total for 50 and 300 keepers, beside HF_BEFORE's when given.
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/memory.sh" "$@"
