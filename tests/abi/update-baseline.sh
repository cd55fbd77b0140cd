#!/usr/bin/env bash
# Rewrites the ABI baseline from a build: only when an ABI change is deliberate.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lib=${1:?usage: update-baseline.sh path/to/libagentsbx.so.1}
abidw --headers-dir "$here/../../include/agentsbx" --no-corpus-path --out-file "$here/libagentsbx.abi" "$lib"
echo "baseline updated: $here/libagentsbx.abi"
