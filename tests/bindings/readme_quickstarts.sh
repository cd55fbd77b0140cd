#!/usr/bin/env bash
# The README's quick starts, as a new user meets them: its install lines run in a scratch
# project outside the checkout (nothing of the checkout reaches it but through them), then its
# Python, Node and C programs, copied out of README.md so that they cannot drift from what
# the README shows.
#   readme_quickstarts.sh SOURCE_ROOT BUILD_ROOT
set -euo pipefail
src=${1:?usage: readme_quickstarts.sh SOURCE_ROOT BUILD_ROOT}
build=${2:?usage: readme_quickstarts.sh SOURCE_ROOT BUILD_ROOT}
# Debian's python3 and node, as the README says (not an interpreter a version manager put first).
export PATH=/usr/bin:/bin:$PATH
scratch=$(mktemp -d "${TMPDIR:-/tmp}/sbx-readme.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
case $scratch/ in "$src"/*) echo "the scratch folder is inside the checkout"; exit 1 ;; esac
marker=$scratch/.started
touch "$marker"

# The fenced block number N (from 1) of language LANG in the README's section SECTION.
block() { # SECTION LANG N
  python3 - "$src/README.md" "$1" "$2" "$3" <<'PY'
import re, sys
text, section, lang, n = open(sys.argv[1], encoding="utf-8").read(), sys.argv[2], sys.argv[3], int(sys.argv[4])
body = text.split("\n## " + section + "\n", 1)[1].split("\n## ", 1)[0]
blocks = re.findall(r"^```" + re.escape(lang) + r"\n(.*?)^```$", body, re.S | re.M)
sys.stdout.write(blocks[n - 1])
PY
}

cd "$scratch"
npm init -y >/dev/null
# The install lines, with LIBAGENTSBX the checkout; the library they point AGENTSBX_LIB at is
# the one under test.
block "Python and Node" sh 1 >install.sh
echo "--- install.sh"; cat install.sh
LIBAGENTSBX=$src bash -euo pipefail install.sh
export AGENTSBX_LIB=$build/libagentsbx.so.1
unset SBX_HELPER_DIR PYTHONPATH SBX_TEST_BUILD_ROOT   # found as an installed user finds them

block "Python and Node" python 1 >quickstart.py
out=$(.venv/bin/python quickstart.py)
echo "--- python: $out"
[ "$out" = "$(printf "b'hi\\\\n'\n/workspace")" ] || { echo "unexpected Python output"; exit 1; }
case $(.venv/bin/python -c 'import agentsbx; print(agentsbx.__file__)') in
  "$scratch"/.venv/*) ;; *) echo "agentsbx was not imported from the project's venv"; exit 1 ;;
esac

block "Python and Node" js 1 >quickstart.mjs
out=$(node quickstart.mjs)
echo "--- node: $out"
[ "$out" = "hi" ] || { echo "unexpected Node output"; exit 1; }
[ ! -L node_modules/agentsbx ] || { echo "npm linked the checkout instead of installing"; exit 1; }

block "Using it from C" c 1 >demo.c
# shellcheck disable=SC2046
cc -Wall -Werror -o demo demo.c $(PKG_CONFIG_PATH=$build pkg-config --cflags --libs agentsbx)
out=$(LD_LIBRARY_PATH=$build ./demo)
echo "--- c: $out"
[ "$out" = "$(printf 'hello\n(exit 3)')" ] || { echo "unexpected C output"; exit 1; }

# Nothing was written into the checkout's bindings (a setuptools build litters build/ there).
left=$(find "$src/bindings" -newer "$marker" -not -path '*/node_modules/*' -print)
[ -z "$left" ] || { echo "written into the checkout: $left"; exit 1; }
echo "readme quick starts: install lines, Python, Node and C work outside the checkout"
