#!/usr/bin/env bash
# The agentsbx CLI: exit codes, output passing through, configuration precedence, doctor.
set -u
cli=${1:?usage: test_cli.sh path/to/agentsbx}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The library keeps each workdir's state folder below $XDG_STATE_HOME: this run's own.
export XDG_STATE_HOME="$work/xdg-state"
passed=0
failed=0

check() { # name expected actual
  if [ "$2" == "$3" ]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL $1: expected [$2], got [$3]"; fi
}

"$cli" exec -- sh -c 'exit 7'; check "exit code" 7 $?
"$cli" exec -- true; check "success" 0 $?
"$cli" exec --timeout 300 -- sleep 30; check "timeout" 124 $?
"$cli" exec -- sh -c 'kill -TERM $$'; check "signal" 143 $?
"$cli" exec -- no-such-command-xyz 2>/dev/null; check "not found" 127 $?
"$cli" exec --config '{"bogus":1}' -- true 2>"$work/err"; check "bad config" 125 $?
grep -q "unknown key 'bogus'" "$work/err"; check "bad config message" 0 $?
"$cli" exec --config '{' -- true 2>/dev/null; check "malformed config" 125 $?
"$cli" exec 2>/dev/null; check "no command" 125 $?
"$cli" frobnicate 2>/dev/null; check "unknown command" 2 $?
"$cli" exec --nope -- true 2>/dev/null; check "unknown option" 2 $?

out=$("$cli" exec -- sh -c 'echo out; echo err >&2' 2>"$work/stderr")
check "stdout passes through" out "$out"
check "stderr passes through" err "$(cat "$work/stderr")"

echo piped | "$cli" exec --stdin -- cat >"$work/stdin-out"
check "stdin with --stdin" piped "$(cat "$work/stdin-out")"
"$cli" exec -- head -c 20000000 /dev/zero | wc -c >"$work/count"
check "large output is not capped" 20000000 "$(tr -d ' ' <"$work/count")"

mkdir "$work/ws" "$work/other"
printf '{"backend":"local","workdir":"%s","env":{"GREETING":"hi"},"timeout_ms":100}' "$work/other" >"$work/cfg.json"
out=$("$cli" exec --config @"$work/cfg.json" --workdir "$work/ws" --timeout 5000 -- \
  sh -c 'sleep 0.3; echo "$GREETING $PWD"')
check "flags override the config file" "hi $work/ws" "$out"

"$cli" doctor >"$work/doctor"; check "doctor runs" 0 $?
grep -Eq '^local +available' "$work/doctor"; check "doctor lists local" 0 $?
grep -Eq '^ns +' "$work/doctor"; check "doctor lists ns" 0 $?
grep -Eq '^  local +host$' "$work/doctor"; check "doctor: local only shares the host's network" 0 $?
# The seccomp baseline, counted: whatever Docker's profile refuses is refused, all of it.
grep -Eq '^seccomp baseline .*: [0-9]+ system calls and [0-9]+ argument rules refused$' \
  "$work/doctor"; check "doctor counts the seccomp baseline" 0 $?
grep -Eq "^  Docker's default profile refuses ([0-9]+) of the [0-9]+ system calls known for .*: all \1 refused here$" \
  "$work/doctor"; check "doctor: all of Docker's refusals held" 0 $?
grep -q "^  Docker's argument rules: all [0-9]* held here$" "$work/doctor"
check "doctor: Docker's argument rules held" 0 $?
# With an engine it can reach, doctor names the engine's runtimes and its default.
if grep -Eq '^docker +available' "$work/doctor"; then
  grep -Eq '^docker +available .*; runtimes: .*\(default\)' "$work/doctor"
  check "doctor lists the engine's runtimes" 0 $?
fi
"$cli" doctor --config '{"network":{"mode":"host"}}' >"$work/doctor-host"
check "doctor --config runs" 0 $?
grep -q 'network mode "host" — EXPOSED' "$work/doctor-host"; check "doctor reports host exposure" 0 $?
"$cli" doctor --backend ns >"$work/doctor-ns"
grep -q 'network mode "none" — no network' "$work/doctor-ns"; check "doctor: ns defaults to none" 0 $?
"$cli" exec -- sh -c 'test "$PWD" = /workspace'; check "ns is the default backend" 0 $?
"$cli" version | grep -q '^agentsbx 1\.'; check "version" 0 $?

# tools / tool: the toolbox from a shell; with --workdir a session carries over between runs.
"$cli" tools --backend local | grep -q '"name":"Bash"'; check "tools lists Bash" 0 $?
mkdir "$work/tw"
"$cli" tool --workdir "$work/tw" Bash '{"command":"mkdir -p a/b && cd a/b"}' >/dev/null
check "tool ok exits 0" 0 $?
out=$("$cli" tool --workdir "$work/tw" Bash '{"command":"pwd"}')
check "cwd carries over between runs" '{"ok":true,"output":"/workspace/a/b\n"' "${out%%,\"metadata\"*}"
"$cli" tool --workdir "$work/tw" --session s2 Bash '{"command":"pwd"}' | grep -q '"output":"/workspace\\n"'
check "another session starts at the root" 0 $?
printf 'v1\n' >"$work/tw/f.txt"
"$cli" tool --workdir "$work/tw" Read '{"file_path":"f.txt"}' >/dev/null
echo '{"file_path":"f.txt","old_string":"v1","new_string":"v2"}' |
  "$cli" tool --workdir "$work/tw" Edit - >/dev/null
check "Read in one run, Edit in the next" 0 $?
check "the edit landed" v2 "$(cat "$work/tw/f.txt")"
"$cli" tool --workdir "$work/tw" Read '{"file_path":"missing"}' >"$work/out"
check "tool error exits 1" 1 $?
grep -q 'File does not exist' "$work/out"; check "tool error printed" 0 $?
"$cli" tool --workdir "$work/tw" Read '{bad' >/dev/null; check "bad JSON is a tool error" 1 $?
"$cli" tool Bash 2>/dev/null; check "tool without args" 125 $?
"$cli" tool --session ../x Bash '{"command":"true"}' 2>/dev/null; check "bad session" 125 $?

# The git guard's warning: what a command planted for the host's git is named on stderr.
mkdir "$work/gw"
"$cli" exec --workdir "$work/gw" -- sh -c 'mkdir -p r/.git/hooks && echo x > r/.git/hooks/pre-commit' \
  2>"$work/gw-err"
check "exec with a planted hook exits 0" 0 $?
grep -q 'warning: 1 item(s) left in git repositories' "$work/gw-err" &&
  grep -q 'r/.git/hooks/pre-commit (hook' "$work/gw-err"
check "exec warns of the quarantined hook" 0 $?
test ! -e "$work/gw/r/.git/hooks/pre-commit"; check "the hook is gone" 0 $?
"$cli" tool --workdir "$work/gw" Bash '{"command":"mkdir -p s/.git/hooks && echo x > s/.git/hooks/x"}' \
  >"$work/gw-out" 2>"$work/gw-err"
grep -q 's/.git/hooks/x (hook' "$work/gw-err"; check "tool warns of the quarantined hook" 0 $?
grep -q '"git_quarantined":1' "$work/gw-out"; check "the Bash result says so" 0 $?

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
