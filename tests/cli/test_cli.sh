#!/usr/bin/env bash
# The agentsbx CLI: exit codes, output passing through, configuration precedence, doctor.
set -u
cli=${1:?usage: test_cli.sh path/to/agentsbx}
work=$(mktemp -d)
# A bg job a failed check left running is stopped before its folder goes.
trap 'for j in "$work"/bgbase/bg/bg-*; do [ -e "$j/lock" ] && "$cli" bg kill --base-dir "$work/bgbase" "${j##*/}" >/dev/null 2>&1; done; rm -rf "$work"' EXIT
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
# --stdin streams: a line reaches the command before the next one is even written (the
# command echoes the first back, and only once that came back is the second sent).
mkfifo "$work/to-cmd" "$work/from-cmd"
"$cli" exec --stdin -- sh -c 'read a; echo "got $a"; read b; echo "got $b"' \
  <"$work/to-cmd" >"$work/from-cmd" &
streaming=$!
exec 5>"$work/to-cmd" 6<"$work/from-cmd"
echo first >&5
first=; read -r -t 60 first <&6
check "--stdin: the first line arrives before the second is sent" "got first" "$first"
echo second >&5
exec 5>&-
second=; read -r -t 60 second <&6
exec 6<&-
check "--stdin: the second line follows" "got second" "$second"
wait "$streaming"; check "--stdin: streaming exec exits 0" 0 $?
# No size limit: more than the old 64 MiB goes through.
count=$(head -c 70M /dev/zero | "$cli" exec --stdin -- wc -c)
check "--stdin: 70 MiB pass through" 73400320 "$(echo $count)"
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

# The audit record of a streamed exec counts what the command wrote, though the CLI keeps none
# of it. The state folder is wherever the library keeps it for this workdir: HOME and
# XDG_STATE_HOME point into $work, so it is somewhere below.
mkdir "$work/au" "$work/au-home"
HOME="$work/au-home" XDG_STATE_HOME="$work/au-home/state" "$cli" exec --backend local \
  --workdir "$work/au" -- sh -c 'head -c 12345 /dev/zero; head -c 678 /dev/zero >&2' \
  >/dev/null 2>&1
check "streamed exec runs" 0 $?
audit=$(find "$work/au" "$work/au-home" -name audit.jsonl | head -n 1)
record=$(grep '"kind":"exec"' "$audit" 2>/dev/null | tail -n 1)
case $record in *'"stdout_bytes":12345'*) r=0 ;; *) r=1; echo "record: $record" ;; esac
check "the audit record counts streamed stdout" 0 $r
case $record in *'"stderr_bytes":678'*) r=0 ;; *) r=1 ;; esac
check "the audit record counts streamed stderr" 0 $r

# bg: a command outliving the CLI run that started it, read and stopped by later runs.
bgc() { "$cli" bg "$1" --base-dir "$work/bgbase" "${@:2}"; }
# Reads a job until it is no longer running (20 s at most): its stdout into $2, its stderr
# and the status lines into $3.
bg_until_done() {
  : >"$2"; : >"$3"
  for _ in $(seq 200); do
    bgc output "$1" >>"$2" 2>>"$3"
    tail -n 1 "$3" | grep -q " running$" || return 0
    sleep 0.1
  done
  return 1
}
mkdir -p "$work/bgw" "$work/bgbase"
job=$(bgc start --backend local --workdir "$work/bgw" -- sh -c 'echo started; echo oops >&2; sleep 0.3; echo finished')
check "bg start exits 0" 0 $?
case "$job" in bg-*) check "bg start prints a job id" ok ok ;; *) check "bg start prints a job id" bg-ID "$job" ;; esac
bg_until_done "$job" "$work/bg-out" "$work/bg-err"; check "bg job ends" 0 $?
check "bg output has the command's stdout" "started finished" "$(tr '\n' ' ' <"$work/bg-out" | sed 's/ $//')"
grep -q '^oops$' "$work/bg-err"; check "bg output has its stderr" 0 $?
grep -q "^agentsbx bg: $job completed, exit code 0$" "$work/bg-err"; check "bg output says completed" 0 $?
check "a second read has nothing new" "" "$(bgc output "$job" 2>/dev/null)"
bgc ls | grep -q "^$job	completed, exit code 0	sh -c echo started"; check "bg ls lists the job" 0 $?
job=$(bgc start --backend local --workdir "$work/bgw" -- sh -c 'exit 3')
bg_until_done "$job" "$work/bg-out" "$work/bg-err"
grep -q "^agentsbx bg: $job failed, exit code 3$" "$work/bg-err"; check "bg output says failed" 0 $?
# A command that kills its runner: the end came without a report, and it is an end all the
# same (the keeper kept a dead job "running" for ever, and its workspace open).
job=$(bgc start --backend local --workdir "$work/bgw" -- sh -c 'kill -9 $PPID')
bg_until_done "$job" "$work/bg-out" "$work/bg-err"; check "a job whose runner died ends" 0 $?
grep -q "^agentsbx bg: $job failed, exit code -1$" "$work/bg-err"
check "bg output says the job whose runner died failed" 0 $?
bgc start --backend local --workdir "$work/bgw" -- no-such-command-xyz >/dev/null 2>&1
check "a job that cannot start is still a job" 0 $?
bgc start --backend local --workdir "$work/bgw" 2>/dev/null; check "bg start without a command" 125 $?
bgc output nope 2>"$work/bg-err"; check "bg output of a bad id" 125 $?
grep -q "'nope' is not a job id" "$work/bg-err"; check "the bad id is named" 0 $?
bgc frob 2>/dev/null; check "bg unknown subcommand" 2 $?
"$cli" tool --backend local --workdir "$work/bgw" Bash '{"command":"sleep 30","run_in_background":true}' \
  >/dev/null 2>"$work/bg-err"
grep -q "the background shell ends with this run; use 'agentsbx bg start'" "$work/bg-err"
check "tool run_in_background points at bg start" 0 $?
# A command that closed its output and runs on is still killed, with all it started.
snooze="1000.$$4"
job=$(bgc start --backend local --workdir "$work/bgw" -- sh -c "exec >/dev/null 2>&1; sleep $snooze & exec sleep $snooze")
bgc kill "$job" >/dev/null; check "bg kill of a command without output" 0 $?
gone=1
for _ in $(seq 100); do pgrep -f "sleep $snooze" >/dev/null || { gone=0; break; }; sleep 0.1; done
check "its sleeps are gone" 0 $gone
# The issue's case: a dev server in a detached sandbox; a later exec (another CLI process,
# attached to the same sandbox) talks to it; bg kill stops it and nothing is left.
port=$((20000 + $$ % 20000))
dcfg='{"ns":{"detached":true,"idle_ttl_s":1}}'
mark="$work/bgd"
mkdir "$mark"; echo hello-bg >"$mark/index.html"
job=$(bgc start --config "$dcfg" --workdir "$mark" -- python3 -u -m http.server "$port" --bind 127.0.0.1)
check "bg start in a detached sandbox" 0 $?
out=$("$cli" exec --config "$dcfg" --workdir "$mark" -- sh -c "for i in \$(seq 200); do python3 -c 'import urllib.request as u; print(u.urlopen(\"http://127.0.0.1:$port/index.html\").read().decode(), end=\"\")' 2>/dev/null && exit 0; sleep 0.1; done; exit 1")
check "a later exec reaches the background server" hello-bg "$out"
bgc output "$job" >"$work/bg-out" 2>"$work/bg-err"
grep -q '"GET /index.html HTTP/1.1" 200' "$work/bg-err"; check "the server's log is read later" 0 $?
grep -q "^agentsbx bg: $job running$" "$work/bg-err"; check "the server is running" 0 $?
bgc kill "$job" >"$work/bg-kill"; check "bg kill exits 0" 0 $?
grep -q "^$job killed" "$work/bg-kill"; check "bg kill says killed" 0 $?
bgc kill "$job" 2>/dev/null; check "bg kill of an ended job" 125 $?
gone=1
for _ in $(seq 100); do pgrep -f "http.server $port" >/dev/null || { gone=0; break; }; sleep 0.1; done
check "the killed server is gone from the host" 0 $gone
# Idle and unheld, the detached sandbox stops by itself (idle_ttl_s): none of its processes
# (those whose mounts name its workdir) is left.
left=1
for _ in $(seq 100); do
  grep -ls "$mark" /proc/[0-9]*/mountinfo >/dev/null 2>&1 || { left=0; break; }; sleep 0.1
done
check "the detached sandbox is gone after its idle TTL" 0 $left

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
