#!/usr/bin/env bash
# The shared objects the library and the CLI name as NEEDED, against an allow-list with the
# reason for each: every process that loads them pays the loader for these and their own
# trees. A library only some features need (libcurl, libarchive, libyaml) is loaded on first
# use (src/util/lazylib.h) and must not appear here; libcrypto is not used at all.
set -euo pipefail
lib=${1:?usage: check-needed.sh LIBAGENTSBX CLI}
cli=${2:?usage: check-needed.sh LIBAGENTSBX CLI}

declare -A why=(
  [libc.so.6]="the C library"
  [ld-linux-x86-64.so.2]="the dynamic loader (named by glibc's own objects)"
  [libyajl.so.2]="JSON: configurations, the init's protocol, tool arguments and results"
  [libpcre2-8.so.0]="Grep's regular expressions"
)
# The CLI's own, besides the library's.
declare -A cli_why=(
  [libseccomp.so.2]="agentsbx doctor resolves the seccomp baseline's calls by name"
)

status=0
for obj in "$lib" "$cli"; do
  needed=$(readelf -d "$obj" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  [[ -n $needed ]] || { echo "$obj: no NEEDED entries read" >&2; exit 1; }
  while read -r so; do
    if [[ $so =~ ^lib(a|ub|t|l)san\.so\.[0-9]+$ ]]; then
      echo "$(basename "$obj"): $so (the sanitizer runtime of a -Db_sanitize build)"
    elif [[ $obj == "$cli" && -n ${cli_why[$so]+x} ]]; then
      echo "$(basename "$obj"): $so (${cli_why[$so]})"
    elif [[ -z ${why[$so]+x} ]]; then
      echo "$(basename "$obj") needs $so, which is not in the allow-list of check-needed.sh" >&2
      status=1
    else
      echo "$(basename "$obj"): $so (${why[$so]})"
    fi
  done <<<"$needed"
done
exit $status
