#!/usr/bin/env bash
# The whole test suite, as the README promises: dependencies, a strict build and its tests,
# the same suite as an ordinary user, a sanitizer build, valgrind on the unit tests, the ABI
# and export checks, an out-of-tree program built through pkg-config, and short fuzz runs.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)
out=${SBX_TEST_OUT:-$src/build-ci}
fuzz_seconds=${SBX_FUZZ_SECONDS:-30}

step() { printf '\n=== %s\n' "$*"; }

passed=0
failed=0
# Adds the results of the last `meson test` in build dir $1 to the totals.
count_results() {
  local counts
  counts=$(python3 - "$1/meson-logs/testlog.json" <<'PY'
import json, sys
ok = bad = 0
for line in open(sys.argv[1]):
    r = json.loads(line).get("result")
    if r in ("OK", "EXPECTEDFAIL"): ok += 1
    elif r != "SKIP": bad += 1
print(ok, bad)
PY
)
  passed=$((passed + ${counts% *}))
  failed=$((failed + ${counts#* }))
}

step "dependencies"
bash .ci/install-deps

step "the Node binding's dependency (koffi, from npm)"
(cd bindings/node && npm ci --no-audit --no-fund)

step "MCP test servers (npm, pinned by tests/mcp/package-lock.json)"
sh tests/mcp/install.sh

step "Docker engine and the docker backend's test image"
bash tests/docker/start-engine.sh
bash tests/docker/build-image.sh agentsbx-test:busybox
# The network suite's image: the clients it runs inside.
SBX_IMAGE_TOOLS="curl bash perl getent git" bash tests/docker/build-image.sh agentsbx-test:net
# The docker suites must run here: a missing engine fails them instead of skipping them.
export_require="SBX_TEST_REQUIRE=docker"

step "strict build and test suite"
rm -rf "$out"
meson setup "$out/main" -Dwerror=true -Dbuildtype=debugoptimized >/dev/null
meson compile -C "$out/main"
env "$export_require" meson test -C "$out/main" --print-errorlogs
count_results "$out/main"

step "the suite again as an ordinary user"
id sbxtest >/dev/null 2>&1 || useradd --create-home --shell /bin/sh sbxtest
chmod -R a+rwX "$out"
chmod a+x "$src" "$out" "$(dirname "$src")" 2>/dev/null || true
runuser -u sbxtest -- env HOME=/home/sbxtest TMPDIR=/tmp \
  meson test -C "$out/main" --no-rebuild --print-errorlogs --suite integration --suite bindings
count_results "$out/main"

step "sanitizers (address, undefined; leaks fail)"
meson setup "$out/asan" -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
meson compile -C "$out/asan"
# This build's helpers are not static: the image gets the libraries the two the docker
# backend binds into its containers need.
bash tests/docker/build-image.sh agentsbx-test:busybox "$out/asan/helpers/agentsbx-run" \
  "$out/asan/helpers/agentsbx-init"
SBX_IMAGE_TOOLS="curl bash perl getent git" bash tests/docker/build-image.sh agentsbx-test:net \
  "$out/asan/helpers/agentsbx-run" "$out/asan/helpers/agentsbx-init"
env "$export_require" meson test -C "$out/asan" --print-errorlogs --timeout-multiplier 3
count_results "$out/asan"

step "valgrind on the unit tests"
meson test -C "$out/main" --no-rebuild --suite unit --print-errorlogs \
  --wrap='valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --child-silent-after-fork=yes'
count_results "$out/main"

step "exported symbols and ABI baseline"
bash tests/abi/check-abi.sh "$out/main/libagentsbx.so.1"

step "an out-of-tree program built with pkg-config against an installed copy"
bash tests/pkgconfig/check.sh "$out"

step "fuzzing (${fuzz_seconds}s per target)"
CC=clang meson setup "$out/fuzz" -Dfuzz=true -Dtests=true >/dev/null
meson compile -C "$out/fuzz"
for f in "$out"/fuzz/tests/fuzz/fuzz-*; do
  [ -f "$f" ] && [ -x "$f" ] || continue
  name=$(basename "$f")
  corpus="$src/tests/fuzz/corpus/${name#fuzz-}"
  work=$(mktemp -d)
  [ -d "$corpus" ] && cp -r "$corpus"/. "$work"/
  "$f" -max_total_time="$fuzz_seconds" -rss_limit_mb=2048 "$work" >/dev/null 2>"$work.log" || {
    tail -50 "$work.log"; echo "fuzz target $name failed"; exit 1; }
  rm -rf "$work" "$work.log"
  echo "$name: clean"
done

step "no container of the docker backend left behind"
left=$(docker ps -aq --filter label=io.agentsbx.backend=docker)
if [ -n "$left" ]; then
  docker ps -a --filter label=io.agentsbx.backend=docker
  docker rm -f $left >/dev/null
  echo "containers were left behind"; failed=$((failed + 1))
fi
step "no volume of the docker backend left behind"
left=$(docker volume ls -q --filter label=io.agentsbx.backend=docker)
if [ -n "$left" ]; then
  docker volume ls --filter label=io.agentsbx.backend=docker
  docker volume rm -f $left >/dev/null
  echo "volumes were left behind"; failed=$((failed + 1))
fi

step "done"
echo "tests: $passed passed, $failed failed"
