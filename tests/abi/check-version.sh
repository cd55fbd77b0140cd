#!/usr/bin/env bash
# One version: meson.build's project version is what the loaded library reports
# (sbx_version(), sbx_version_number()), what the generated <agentsbx/version.h> says, the newest
# node of the version script (major.minor), and the Python and Node bindings' package versions.
# The version script's nodes must also be chained in order: each inherits the one before it.
set -euo pipefail
lib=${1:?usage: check-version.sh LIB MESON_VERSION VERSION_H SOURCE_ROOT}
want=${2:?}
version_h=${3:?}
src=${4:?}
map=$src/src/libagentsbx.map
fail=0
disagree() { echo "version: $1 says '$2', meson.build says '$want'"; fail=1; }

IFS=. read -r major minor patch <<<"$want"
number=$(( (major << 16) | (minor << 8) | patch ))

# A sanitizer build's library needs the ASan runtime loaded first, which an uninstrumented
# python3 does not do: preload it (and leave the interpreter's own allocations unreported).
asan_rt=$(ldd "$lib" | awk '/libasan\.so/ {print $3; exit}')
runtime=$(LD_PRELOAD=${asan_rt:-} ASAN_OPTIONS=detect_leaks=0 python3 - "$lib" <<'PY'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.sbx_version.restype = ctypes.c_char_p
print(lib.sbx_version().decode(), lib.sbx_version_number())
PY
)
read -r rt_string rt_number <<<"$runtime"
[ "$rt_string" = "$want" ] || disagree "sbx_version()" "$rt_string"
[ "$rt_number" = "$number" ] || disagree "sbx_version_number()" "$(printf '0x%06x' "$rt_number")"

h_string=$(sed -n 's/^#define SBX_VERSION_STRING "\(.*\)"$/\1/p' "$version_h")
[ "$h_string" = "$want" ] || disagree "$version_h SBX_VERSION_STRING" "$h_string"
for part in MAJOR:$major MINOR:$minor PATCH:$patch; do
  got=$(sed -n "s/^#define SBX_VERSION_${part%%:*} \([0-9]*\)$/\1/p" "$version_h")
  [ "$got" = "${part#*:}" ] || disagree "$version_h SBX_VERSION_${part%%:*}" "$got"
done

# The nodes in file order, each with the node it inherits ("-" for the first).
chain=$(awk '/^AGENTSBX_[0-9.]+ \{/ {node = $1} /^\}/ && node != "" {
  parent = $2; sub(/;$/, "", parent); if (parent == "" || parent == ";") parent = "-";
  print node, parent; node = ""}' "$map")
newest=$(tail -n 1 <<<"$chain" | cut -d' ' -f1)
[ "$newest" = "AGENTSBX_$major.$minor" ] || disagree "the newest node of src/libagentsbx.map" "$newest"
previous=-
while read -r node parent; do
  if [ "$parent" != "$previous" ]; then
    echo "version: $node inherits '$parent', expected the node before it, '$previous'"; fail=1
  fi
  if [ "$previous" != - ] && [ "$(printf '%s\n%s\n' "$previous" "$node" | sort -V | tail -n 1)" != "$node" ]; then
    echo "version: $node comes after $previous in src/libagentsbx.map"; fail=1
  fi
  previous=$node
done <<<"$chain"

py=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$src/bindings/python/pyproject.toml")
[ "$py" = "$want" ] || disagree "bindings/python/pyproject.toml" "$py"
py_init=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$src/bindings/python/agentsbx/__init__.py")
[ "$py_init" = "$want" ] || disagree "bindings/python/agentsbx/__init__.py __version__" "$py_init"
node=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' \
  "$src/bindings/node/package.json")
[ "$node" = "$want" ] || disagree "bindings/node/package.json" "$node"

[ $fail -eq 0 ] && echo "version: $want everywhere (0x$(printf '%06x' "$number"), newest node $newest, $(wc -l <<<"$chain") nodes in order)"
exit $fail
