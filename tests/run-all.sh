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
skipped=0
skip_list=""
# The skips each phase may have on this machine, as a pattern of test names; any other skip
# fails the run, for every suite this machine can run must run. As the ordinary user the
# docker suites skip (that user may not reach the engine's socket, which would make it root's
# equal), and so do the "-root" tests, which hold the cases that need root (TEST_NEED in
# tests/support.h); under ASan the fork storm does (GCC 12's allocator is not fork-safe, see
# test_ns_security.c); under valgrind the harden tests' Landlock cases do (valgrind does not
# pass the Landlock system calls). Nothing else skips anywhere.
allowed_skips() {
  case "$1" in
    sbxtest) echo 'docker|-root$' ;;
    asan) echo 'security-forks-ns$' ;;
    valgrind) echo 'unit-harden(-root)?$' ;;
    *) echo '' ;;
  esac
}

# Adds the results of the last `meson test` in build dir $1 to the totals; a skip is counted
# as a skip (not a pass), printed with its reason and named with the phase ($2) it happened
# in, and one the phase does not allow counts as a failure. $3 names the log when meson wrote
# another (a run with --wrap=valgrind writes testlog-valgrind.json).
count_results() {
  local counts
  counts=$(python3 - "$1/meson-logs/${3:-testlog.json}" "$2" "$(allowed_skips "$2")" <<'PY'
import json, re, sys
log, phase, allowed = sys.argv[1:4]
ok = bad = skip = 0
names = []
for line in open(log):
    t = json.loads(line)
    r = t.get("result")
    if r in ("OK", "EXPECTEDFAIL"): ok += 1
    elif r == "SKIP":
        skip += 1
        name = t.get("name", "?")
        names.append(name)
        said = [l for l in ((t.get("stderr") or "") + (t.get("stdout") or "")).splitlines() if l.strip()]
        reason = said[-1] if said else "(no reason given)"
        if allowed and re.search(allowed, name):
            print(f"skip ({phase}): {name}: {reason}", file=sys.stderr)
        else:
            bad += 1
            print(f"SKIP NOT ALLOWED ({phase}): {name}: {reason}", file=sys.stderr)
    else: bad += 1
print(ok, bad, skip, ",".join(names) or "-")
PY
)
  read -r c_ok c_bad c_skip c_names <<<"$counts"
  passed=$((passed + c_ok))
  failed=$((failed + c_bad))
  skipped=$((skipped + c_skip))
  [ "$c_names" = "-" ] || skip_list="$skip_list ${2:-}:${c_names}"
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

step "the ordinary user"
# The root suites use it as another user (keeper-root, users-ns); the second run is its own.
id sbxtest >/dev/null 2>&1 || useradd --create-home --shell /bin/sh sbxtest

step "strict build and test suite"
rm -rf "$out"
meson setup "$out/main" -Dwerror=true -Dbuildtype=debugoptimized >/dev/null
meson compile -C "$out/main"
env "$export_require" meson test -C "$out/main" --print-errorlogs
count_results "$out/main" strict

step "the suite again as an ordinary user"
chmod -R a+rwX "$out"
chmod a+x "$src" "$out" "$(dirname "$src")" 2>/dev/null || true
runuser -u sbxtest -- env HOME=/home/sbxtest TMPDIR=/tmp \
  meson test -C "$out/main" --no-rebuild --print-errorlogs --suite integration --suite bindings
count_results "$out/main" sbxtest

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
count_results "$out/asan" asan

step "valgrind on the unit tests"
meson test -C "$out/main" --no-rebuild --suite unit --print-errorlogs \
  --wrap='valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --child-silent-after-fork=yes'
count_results "$out/main" valgrind testlog-valgrind.json

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
echo "tests: $passed passed, $failed failed, $skipped skipped"
# Each skip's reason was printed where its phase was counted; here are their names, by phase.
[ -z "$skip_list" ] || echo "skipped:$skip_list"
[ "$failed" -eq 0 ]
