#!/usr/bin/env bash
# A program outside the tree builds with `pkg-config --cflags --libs agentsbx`, both against
# an installed copy (meson install into a private prefix) and against the build tree
# (agentsbx-uninstalled.pc), and runs: the library finds its helper either way.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: check.sh OUTPUT_DIR}
prefix=$out/prefix
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

meson setup "$out/install" --prefix="$prefix" -Dtests=false >/dev/null
meson install -C "$out/install" >/dev/null
pcdir=$(dirname "$(find "$prefix" -name agentsbx.pc | head -1)")
libdir=$(dirname "$(find "$prefix" -name 'libagentsbx.so.1' | head -1)")

cp "$src/examples/c/quickstart.c" "$work/"
cd "$work"
# shellcheck disable=SC2046
cc -Wall -Werror -o quickstart-installed quickstart.c \
  $(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs agentsbx)
out_installed=$(env -u SBX_HELPER_DIR LD_LIBRARY_PATH="$libdir" ./quickstart-installed)
echo "$out_installed"
grep -q '^stdout: hello from workspace$' <<<"$out_installed"
grep -q '^exit code: 3$' <<<"$out_installed"

# shellcheck disable=SC2046
cc -Wall -Werror -o quickstart-devtree quickstart.c \
  $(PKG_CONFIG_PATH="$out/main" pkg-config --cflags --libs agentsbx)
out_dev=$(env -u SBX_HELPER_DIR LD_LIBRARY_PATH="$out/main" ./quickstart-devtree)
grep -q '^exit code: 3$' <<<"$out_dev"
echo "pkg-config: installed and build-tree builds work"
