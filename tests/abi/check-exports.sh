#!/usr/bin/env bash
# The library exports exactly the documented API: every SBX_API function in the public
# headers, each in a version node AGENTSBX_1 or AGENTSBX_1.N (additions), nothing else.
set -euo pipefail
lib=$1
include_dir=$2
map=$3

documented=$(grep -h '^SBX_API' "$include_dir"/*.h | grep -o '^SBX_API[^(]*(' | sed -E 's/.*[ *]([a-z_0-9]+)\($/\1/' | sort -u)
in_map=$(sed -n '/global:/,/local:/p' "$map" | grep -oE '^\s*sbx_[a-z_0-9]+' | tr -d ' \t' | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRW]$/ {print $3}' | sort -u)

fail=0
if [ "$documented" != "$in_map" ]; then
  echo "the version script and the headers disagree:"; diff <(echo "$documented") <(echo "$in_map") || true; fail=1
fi
if [ "$(echo "$exported" | sed 's/@.*//' | sort -u)" != "$documented" ]; then
  echo "exported symbols differ from the documented API:"
  diff <(echo "$documented") <(echo "$exported" | sed 's/@.*//' | sort -u) || true; fail=1
fi
if echo "$exported" | grep -vE '@@AGENTSBX_1(\.[0-9]+)?$' | grep -q .; then
  echo "symbols outside the AGENTSBX_1.x nodes:"; echo "$exported" | grep -vE '@@AGENTSBX_1(\.[0-9]+)?$'; fail=1
fi
soname=$(readelf -d "$lib" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
if [ "$soname" != "libagentsbx.so.1" ]; then
  echo "SONAME is '$soname', expected libagentsbx.so.1"; fail=1
fi
[ $fail -eq 0 ] && echo "exports: $(echo "$documented" | wc -l) documented functions, all in AGENTSBX_1.x nodes, SONAME $soname"
exit $fail
