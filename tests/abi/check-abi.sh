#!/usr/bin/env bash
# Compares the built library's ABI with the baseline in tests/abi/libagentsbx.abi. Additions
# are fine; an incompatible change fails unless the baseline is updated on purpose with
# tests/abi/update-baseline.sh (and the change is then visible in review).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lib=$1
baseline=$here/libagentsbx.abi
current=$(mktemp)
trap 'rm -f "$current"' EXIT

abidw --headers-dir "$here/../../include/agentsbx" --no-corpus-path --out-file "$current" "$lib"
set +e
abidiff --headers-dir1 "$here/../../include/agentsbx" --headers-dir2 "$here/../../include/agentsbx" \
  "$baseline" "$current"
status=$?
set -e
# abidiff's status is a bit field: 1 error, 2 usage, 4 ABI change, 8 incompatible change.
if [ $((status & 3)) -ne 0 ]; then echo "abidiff failed to run ($status)"; exit 1; fi
if [ $((status & 8)) -ne 0 ]; then
  echo "INCOMPATIBLE ABI CHANGE against tests/abi/libagentsbx.abi (see above)."
  echo "If it is deliberate, bump the SONAME or run tests/abi/update-baseline.sh."
  exit 1
fi
if [ $((status & 4)) -ne 0 ]; then echo "abi: compatible changes (additions) against the baseline"; fi
echo "abi: no incompatible change against the baseline"
