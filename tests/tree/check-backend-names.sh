#!/usr/bin/env bash
# The core asks a backend what it can do (capabilities and ops in agentsbx/backend.h), never
# which one it is: a built-in backend's name in src/ outside the registry of built-ins is a
# branch a plugin backend can never take. Fails, naming file and line, for every quoted
# built-in name in code under src/ (comments do not count) that is not allowed below.
#
#   check-backend-names.sh <source root>
set -euo pipefail
root=${1:?usage: check-backend-names.sh <source root>}
allow=$(dirname "$0")/backend-names.allow

# Each line of the allow list: <path relative to the root> <the quoted name>, then why.
allowed() {
	local file=$1 name=$2 path word rest
	while read -r path word rest; do
		[[ -z $path || $path == \#* ]] && continue
		[[ $path == "$file" && $word == "$name" ]] && return 0
	done <"$allow"
	return 1
}

# Blanks out /* */ and // comments but keeps the line numbers.
strip_comments() {
	perl -0777 -pe 's{/\*.*?\*/}{ my $c = $&; $c =~ s/[^\n]//g; $c }gse; s{(^|\s)//[^\n]*}{$1}gm' "$1"
}

bad=0
while IFS= read -r -d '' file; do
	rel=${file#"$root"/}
	[[ $rel == src/registry.c ]] && continue   # the registry of built-ins names them
	while IFS=: read -r line text; do
		for name in '"ns"' '"bwrap"' '"docker"' '"local"'; do
			[[ $text == *"$name"* ]] || continue
			allowed "$rel" "$name" && continue
			echo "$rel:$line: backend name $name in the core: $text" >&2
			bad=1
		done
	done < <(strip_comments "$file" | grep -n '"ns"\|"bwrap"\|"docker"\|"local"' || true)
done < <(find "$root/src" -name '*.[ch]' -print0 | sort -z)

if [[ $bad -ne 0 ]]; then
	echo "ask the backend (a SBX_BACKEND_CAP_* flag or an op in backend.h) instead" >&2
	exit 1
fi
echo "backend names: none outside the registry"
