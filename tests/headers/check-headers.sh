#!/usr/bin/env bash
# Every public header compiles alone, first in a translation unit, as strict C99 and as C++11:
# a header that leans on another it does not include, or on a GNU extension, fails here
# before it fails a user. The umbrella header also gets every SBX_*_OPTS_INIT used, which must
# stay quiet under -Wextra (no missing field initializers) in both languages.
set -euo pipefail
cc=${1:?usage: check-headers.sh CC CXX SOURCE_INCLUDE BUILD_INCLUDE}
cxx=$2   # "" when the build found no C++ compiler: the C++ half is then reported skipped
src_include=$3
build_include=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

c_flags=(-std=c99 -pedantic -Werror -Wall -Wextra -fsyntax-only)
cxx_flags=(-std=c++11 -pedantic -Werror -Wall -Wextra -fsyntax-only)
includes=(-I"$src_include" -I"$build_include")

uses_inits='
int sbx_header_test_inits(void);
int sbx_header_test_inits(void)
{
	sbx_open_opts open_opts = SBX_OPEN_OPTS_INIT;
	sbx_exec_opts exec_opts = SBX_EXEC_OPTS_INIT;
	sbx_spawn_opts spawn_opts = SBX_SPAWN_OPTS_INIT;
	sbx_stat st = SBX_STAT_INIT;
	return (int)(open_opts.size + exec_opts.size + spawn_opts.size + st.size) +
	       SBX_VERSION_CHECK(1, 0, 0);
}
'

headers=$(for dir in "$src_include" "$build_include"; do (cd "$dir/agentsbx" && ls -- *.h); done)
fail=0 count=0
for h in $(sort -u <<<"$headers"); do
  # A declaration of its own: a header of macros only would leave an empty (invalid) unit.
  body="#include <agentsbx/$h>
typedef int sbx_header_test_unit;"
  [ "$h" = agentsbx.h ] && body+=$uses_inits
  printf '%s\n' "$body" >"$work/t.c"
  cp "$work/t.c" "$work/t.cc"
  if ! "$cc" "${c_flags[@]}" "${includes[@]}" "$work/t.c" 2>"$work/err"; then
    echo "headers: agentsbx/$h does not compile alone as C99:"; cat "$work/err"; fail=1
  fi
  if [ -n "$cxx" ] && ! "$cxx" "${cxx_flags[@]}" "${includes[@]}" "$work/t.cc" 2>"$work/err"; then
    echo "headers: agentsbx/$h does not compile alone as C++11:"; cat "$work/err"; fail=1
  fi
  count=$((count + 1))
done
[ $fail -ne 0 ] && exit 1
if [ -z "$cxx" ]; then
  echo "headers: $count public headers compile alone as C99; SKIP the C++11 half: no C++ compiler"
  exit 77
fi
echo "headers: $count public headers compile alone as C99 and C++11"
