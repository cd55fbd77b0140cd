#!/usr/bin/env bash
# The keeper (backends/sandbox/keeper.h): a one-shot CLI is served by the spare a per-user
# keeper parked, the keeper holds nothing of its callers, ends by itself, serves only its own
# user and process context, and is not started when opted out. Each case has a runtime folder
# of its own (XDG_RUNTIME_DIR), so each has keepers of its own.
set -u
cli=${1:?usage: test_keeper.sh path/to/agentsbx [root]}
mode=${2:-}
work=$(mktemp -d)
chmod 755 "$work"
export XDG_STATE_HOME="$work/xdg-state" XDG_CONFIG_HOME="$work/xdg-config"
unset AGENTSBX_KEEPER AGENTSBX_KEEPER_IDLE_MS
passed=0
failed=0

check() { # name expected actual
  if [ "$2" == "$3" ]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL $1: expected [$2], got [$3]"; fi
}

run() { "$cli" exec --backend ns "$@"; }

# A runtime folder of the user's own, for one case.
runtime() { mkdir -m 700 "$work/$1"; echo "$work/$1"; }

# The keepers of a runtime folder: the processes holding one of its lock files open.
keepers() { # runtime
  local k fd
  for k in $(pgrep -x agentsbx-keeper); do
    for fd in /proc/"$k"/fd/*; do
      case $(readlink "$fd" 2>/dev/null) in "$1"/agentsbx/keeper-*.lock) echo "$k";; esac
    done
  done | sort -u
}
# A keeper's parked or served spares: its children (it is their subreaper), the outer inits.
spares() { ps -o pid= --ppid "$1" 2>/dev/null | tr -d ' '; }
alive() { kill -0 "$1" 2>/dev/null; }
descendant_of() { # pid ancestor
  local p=$1
  while [ "$p" -gt 1 ]; do
    [ "$p" = "$2" ] && return 0
    p=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null) || return 1
    [ -n "$p" ] || return 1
  done
  return 1
}
# Waits (up to 10 s) until the runtime folder has one keeper with a parked spare; prints both.
wait_spare() { # runtime
  local i k s
  for i in $(seq 100); do
    k=$(keepers "$1" | head -1)
    s=${k:+$(spares "$k" | head -1)}
    [ -n "$s" ] && { echo "$k $s"; return 0; }
    sleep 0.1
  done
  return 1
}
# A process running `sleep N` in the sandbox of spare s (waits up to 10 s).
wait_sleep_under() { # spare seconds
  local i p
  for i in $(seq 100); do
    for p in $(pgrep -x sleep); do
      grep -q "^sleep $2" <(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) &&
        descendant_of "$p" "$1" && { echo "$p"; return 0; }
    done
    sleep 0.1
  done
  return 1
}
gone_within() { # pid tenths
  local i
  for i in $(seq "$2"); do alive "$1" || return 0; sleep 0.1; done
  return 1
}
stop_keepers() { local k; for k in $(keepers "$1"); do kill "$k" 2>/dev/null; done; }

cleanup() {
  local d
  for d in "$work"/rt-*; do [ -d "$d" ] && stop_keepers "$d"; done
  rm -rf "$work"
}
trap cleanup EXIT

# As root: a spare started in one mount namespace or cgroup does not serve a caller in another.
root_namespace_and_cgroup_cases() {
  local ks keeper spare cg cgdir
  export XDG_RUNTIME_DIR=$(runtime rt-root-context)
  run -- true
  if ! ks=$(wait_spare "$XDG_RUNTIME_DIR"); then
    check "a keeper parks a spare (root context case)" yes no
    return
  fi
  read -r keeper spare <<<"$ks"
  unshare -m "$cli" exec --backend ns -- true
  check "another mount namespace: exec works" 0 $?
  check "another mount namespace: the spare is not used" yes "$(alive "$spare" && echo yes || echo no)"
  cg=$(awk -F: '$2 == "memory" {print $3}' /proc/self/cgroup)
  cgdir=/sys/fs/cgroup/memory$cg/agentsbx-keeper-test-$$
  [ -n "$cg" ] || cgdir=/sys/fs/cgroup$(awk -F: '$1 == "0" {print $3}' /proc/self/cgroup)/agentsbx-keeper-test-$$
  mkdir "$cgdir"
  check "another cgroup: made" 0 $?
  sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" exec --backend ns -- true' sh "$cgdir" "$cli"
  check "another cgroup: exec works" 0 $?
  check "another cgroup: the spare is not used" yes "$(alive "$spare" && echo yes || echo no)"
  rmdir "$cgdir" 2>/dev/null
  stop_keepers "$XDG_RUNTIME_DIR"
}

# As root: a runtime folder that is another user's is refused, and so is a socket in our own
# folder whose listener runs as another user; the CLI works without them. And a take replayed
# by another user is refused by the keeper itself.
other=sbxtest
root_user_cases() {
  export XDG_RUNTIME_DIR=$(runtime rt-planted-dir)
  install -d -m 700 -o "$other" "$XDG_RUNTIME_DIR/agentsbx"
  out=$(run -- echo works); check "another user's runtime folder: exec works" works "$out"
  check "another user's runtime folder: no keeper" "" "$(keepers "$XDG_RUNTIME_DIR")"

  export XDG_RUNTIME_DIR=$(runtime rt-planted-sock)
  run -- true
  ks=$(wait_spare "$XDG_RUNTIME_DIR")
  sock=$(ls "$XDG_RUNTIME_DIR/agentsbx" | grep 'keeper-.*\.sock$')
  stop_keepers "$XDG_RUNTIME_DIR"
  for i in $(seq 50); do [ -z "$(keepers "$XDG_RUNTIME_DIR")" ] && break; sleep 0.1; done
  install -d -m 700 -o "$other" "$work/report"
  python3 - "$XDG_RUNTIME_DIR/agentsbx/$sock" "$(id -u "$other")" "$work/report/planted" <<'EOF' &
import os, socket, sys
path, uid, report = sys.argv[1], int(sys.argv[2]), sys.argv[3]
try:
    os.unlink(path)
except FileNotFoundError:
    pass
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(path)
os.setgid(uid)
os.setuid(uid)
s.listen(8)
open(report + ".ready", "w").close()
s.settimeout(15)
got = 0
try:
    c, _ = s.accept()
    c.settimeout(3)
    try:
        got = len(c.recv(1 << 20))
    except socket.timeout:
        pass
except socket.timeout:
    got = -1
open(report, "w").write(str(got))
EOF
  planted=$!
  for i in $(seq 50); do [ -e "$work/report/planted.ready" ] && break; sleep 0.1; done
  out=$(run -- echo works); check "a planted socket of another user: exec works" works "$out"
  wait "$planted"
  check "the planted listener got no request (connected, then refused)" 0 "$(cat "$work/report/planted" 2>/dev/null)"
  check "a planted socket: no keeper started beside it" "" "$(keepers "$XDG_RUNTIME_DIR")"
  : "$ks"

  # The keeper's own check: a take replayed by another user (a request that the same keeper
  # serves when root sends it) gets nothing, even where that user can reach the socket.
  export XDG_RUNTIME_DIR=$(runtime rt-replay)
  run -- true
  wait_spare "$XDG_RUNTIME_DIR" >/dev/null
  sock=$XDG_RUNTIME_DIR/agentsbx/$(ls "$XDG_RUNTIME_DIR/agentsbx" | grep 'keeper-.*\.sock$')
  stop_keepers "$XDG_RUNTIME_DIR"
  for i in $(seq 50); do [ -z "$(keepers "$XDG_RUNTIME_DIR")" ] && break; sleep 0.1; done
  # A listener of root's in the keeper's place records what the CLI asks.
  python3 - "$sock" "$work/report/request" <<'PY' &
import os, socket, sys
try:
    os.unlink(sys.argv[1])
except FileNotFoundError:
    pass
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1])
s.listen(8)
open(sys.argv[2] + ".ready", "w").close()
s.settimeout(15)
c, _ = s.accept()
open(sys.argv[2], "wb").write(c.recv(1 << 20))
PY
  recorder=$!
  for i in $(seq 50); do [ -e "$work/report/request.ready" ] && break; sleep 0.1; done
  run -- true
  wait "$recorder"
  run -- true                                # starts the real keeper, over the stale socket
  if ks=$(wait_spare "$XDG_RUNTIME_DIR"); then
    read -r keeper spare <<<"$ks"
    chmod 711 "$XDG_RUNTIME_DIR" "$XDG_RUNTIME_DIR/agentsbx"
    chmod 666 "$sock"
    chmod 644 "$work/report/request"
    cat >"$work/replay.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.settimeout(3)
# A refusal may come before the request is even sent (the keeper closes at once).
try:
    s.send(open(sys.argv[2], "rb").read())
    data, anc, _, _ = s.recvmsg(64, socket.CMSG_SPACE(16))
except (socket.timeout, ConnectionResetError, BrokenPipeError):
    data, anc = b"", []
print(len(data), sum(len(d) // 4 for _, _, d in anc))
PY
    out=$(su "$other" -s /bin/sh -c "python3 '$work/replay.py' '$sock' '$work/report/request'" 2>&1)
    check "a replayed take from another user gets no spare" "0 0" "$out"
    check "the spare is still parked" yes "$(alive "$spare" && echo yes || echo no)"
    check "the same take from root is served (the replay is a valid take)" "12 3" \
      "$(python3 "$work/replay.py" "$sock" "$work/report/request")"
  else
    check "a keeper parks a spare (replay case)" yes no
  fi
  stop_keepers "$XDG_RUNTIME_DIR"
}

# `test_keeper.sh CLI root`: the cases that need root (meson's keeper-root). They must run
# where the suite runs as root; only another user skips them.
if [ "$mode" = root ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "SKIP: the keeper's root cases need root (another mount namespace, another cgroup," \
      "another user's runtime folder, socket and replayed take)"
    exit 77
  fi
  for need in unshare python3 su; do
    command -v "$need" >/dev/null || check "$need is installed" yes no
  done
  id sbxtest >/dev/null 2>&1 || check "the user sbxtest exists" yes no
  root_namespace_and_cgroup_cases
  root_user_cases
  echo "keeper-root: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
fi


# 1. The second CLI is served by the spare the keeper parked before it started.
export XDG_RUNTIME_DIR=$(runtime rt-served)
run -- true; check "first exec" 0 $?
if ks=$(wait_spare "$XDG_RUNTIME_DIR"); then
  read -r keeper spare <<<"$ks"
  "$cli" exec --backend ns -- sleep 3 &
  served=$!
  sleep_pid=$(wait_sleep_under "$spare" 3)
  check "the second exec runs in the spare parked before it started" yes \
    "$([ -n "$sleep_pid" ] && echo yes || echo no)"
  wait "$served"; check "the served exec exits 0" 0 $?
  check "the spare ends with its command" yes "$(gone_within "$spare" 50 && echo yes || echo no)"
  check "the keeper lives on" yes "$(alive "$keeper" && echo yes || echo no)"
  out=$(run -- echo again); check "a third exec" again "$out"
  "$cli" doctor | grep -q "^ns keeper *running for this process's context"
  check "doctor: the keeper runs" 0 $?
else
  check "a keeper parks a spare after the first exec" yes no
fi
stop_keepers "$XDG_RUNTIME_DIR"

# 2. $(agentsbx exec ...) returns at once although the CLI started a keeper: the keeper
# holds no fd of its starter (its stdout pipe would keep the substitution waiting).
export XDG_RUNTIME_DIR=$(runtime rt-pipe)
start=$(date +%s%N)
out=$(timeout 20 "$cli" exec --backend ns -- echo hi)
ms=$(( ($(date +%s%N) - start) / 1000000 ))
check "\$(exec) prints" hi "$out"
check "\$(exec) returns within 5 s" yes "$([ "$ms" -lt 5000 ] && echo yes || echo "no ($ms ms)")"
keeper=$(keepers "$XDG_RUNTIME_DIR" | head -1)
check "the exec started a keeper" yes "$([ -n "$keeper" ] && echo yes || echo no)"
if [ -n "$keeper" ]; then
  check "the keeper's stdin is /dev/null" /dev/null "$(readlink "/proc/$keeper/fd/0")"
  check "the keeper is in a session of its own" yes \
    "$([ "$(ps -o sid= -p "$keeper")" != "$(ps -o sid= -p $$)" ] && echo yes || echo no)"
fi
stop_keepers "$XDG_RUNTIME_DIR"
# The same through a named pipe: its reader ends as soon as the CLI is done with it.
export XDG_RUNTIME_DIR=$(runtime rt-fifo)
mkfifo "$work/fifo"
cat "$work/fifo" >"$work/fifo-out" &
reader=$!
run -- echo through >"$work/fifo"
check "the pipe's reader ends with the CLI" yes "$(gone_within "$reader" 30 && echo yes || echo no)"
check "the keeper holds no copy of the pipe" "" \
  "$(for k in $(keepers "$XDG_RUNTIME_DIR"); do ls -l /proc/$k/fd/; done | grep -F "$work/fifo")"
check "the pipe carried the output" through "$(cat "$work/fifo-out")"
check "the CLI started a keeper there" 1 "$(keepers "$XDG_RUNTIME_DIR" | wc -l)"
stop_keepers "$XDG_RUNTIME_DIR"

# 3. Idle past its TTL, the keeper exits with its spare and leaves no file.
export XDG_RUNTIME_DIR=$(runtime rt-ttl)
AGENTSBX_KEEPER_IDLE_MS=3000 run -- true
if ks=$(wait_spare "$XDG_RUNTIME_DIR"); then
  read -r keeper spare <<<"$ks"
  check "the keeper exits after its idle time" yes \
    "$(gone_within "$keeper" 80 && echo yes || echo no)"
  check "its spare ends with it" yes "$(gone_within "$spare" 30 && echo yes || echo no)"
  check "no socket or lock file remains" "" "$(ls "$XDG_RUNTIME_DIR/agentsbx" | grep keeper-)"
else
  check "a keeper parks a spare (short TTL)" yes no
fi

# 4. A served CLI killed mid-command: nothing of its sandbox remains, only the keeper and
# its next spare.
export XDG_RUNTIME_DIR=$(runtime rt-kill)
run -- true
if ks=$(wait_spare "$XDG_RUNTIME_DIR"); then
  read -r keeper spare <<<"$ks"
  "$cli" exec --backend ns -- sleep 30 &
  victim=$!
  sleep_pid=$(wait_sleep_under "$spare" 30)
  check "the killed CLI was served by the spare" yes "$([ -n "$sleep_pid" ] && echo yes || echo no)"
  kill -KILL "$victim"
  wait "$victim" 2>/dev/null
  check "its command ends" yes "$([ -n "$sleep_pid" ] && gone_within "$sleep_pid" 50 && echo yes || echo no)"
  check "its sandbox ends" yes "$(gone_within "$spare" 50 && echo yes || echo no)"
  check "the keeper lives on" yes "$(alive "$keeper" && echo yes || echo no)"
  next=
  for i in $(seq 50); do next=$(spares "$keeper" | grep -vx "$spare" | head -1); [ -n "$next" ] && break; sleep 0.1; done
  check "the keeper parks its next spare" yes "$([ -n "$next" ] && echo yes || echo no)"
  left=$(spares "$keeper" | grep -vx "${next:-none}" | wc -l)
  check "nothing else is left under the keeper" 0 "$left"
else
  check "a keeper parks a spare (kill case)" yes no
fi
stop_keepers "$XDG_RUNTIME_DIR"

# 5. Another context gets nothing of the first caller's: a spare started under other rlimits
# or umask does not serve, and the sandbox has the caller's own (namespaces and cgroup: the
# root cases).
export XDG_RUNTIME_DIR=$(runtime rt-context)
mkdir "$work/cwd-a" "$work/cwd-b"
(cd "$work/cwd-a" && FIRST_CALLER=leaked run -- true)
if ks=$(wait_spare "$XDG_RUNTIME_DIR"); then
  read -r keeper spare <<<"$ks"
  out=$(ulimit -Sn 900; run -- sh -c 'ulimit -n')
  check "another rlimit: the caller's own" 900 "$out"
  check "another rlimit: the first caller's spare is not used" yes "$(alive "$spare" && echo yes || echo no)"
  out=$(umask 077; run -- sh -c umask)
  check "another umask: the caller's own" 0077 "$out"
  check "another umask: the first caller's spare is not used" yes "$(alive "$spare" && echo yes || echo no)"
  # The same context, from another folder with another environment: served, and nothing of
  # the first caller (its variable, its folder) is in the sandbox.
  out=$(cd "$work/cwd-b" && FIRST_CALLER= run -- sh -c 'echo "[$FIRST_CALLER]"; pwd; { tr "\0" "\n" </proc/1/environ; } 2>/dev/null | grep -c FIRST_CALLER')
  check "the same context from elsewhere: nothing of the first caller" "[]
/workspace
0" "$out"
  check "the same context: the spare is used" yes "$(gone_within "$spare" 50 && echo yes || echo no)"
else
  check "a keeper parks a spare (context case)" yes no
fi
stop_keepers "$XDG_RUNTIME_DIR"

# 6. Eight CLIs at once, none with a keeper yet: all work, and one keeper wins.
export XDG_RUNTIME_DIR=$(runtime rt-race)
for i in 1 2 3 4 5 6 7 8; do run -- echo "ok-$i" >"$work/race-$i" 2>&1 & done
wait
ok=0
for i in 1 2 3 4 5 6 7 8; do [ "$(cat "$work/race-$i")" = "ok-$i" ] && ok=$((ok + 1)); done
check "8 CLIs at once all work" 8 "$ok"
sleep 0.5
check "one keeper for the context" 1 "$(keepers "$XDG_RUNTIME_DIR" | wc -l)"
for i in 1 2 3 4 5 6 7 8; do run -- echo "again-$i" >"$work/race-$i" 2>&1 & done
wait
ok=0
for i in 1 2 3 4 5 6 7 8; do [ "$(cat "$work/race-$i")" = "again-$i" ] && ok=$((ok + 1)); done
check "8 CLIs at once taking from a keeper all work" 8 "$ok"
stop_keepers "$XDG_RUNTIME_DIR"

# 7. Opted out, no keeper starts: the variable, and ns.prestart false or "process".
export XDG_RUNTIME_DIR=$(runtime rt-optout)
AGENTSBX_KEEPER=0 run -- true; check "AGENTSBX_KEEPER=0: exec works" 0 $?
run --config '{"ns":{"prestart":"process"}}' -- true; check "prestart process: exec works" 0 $?
run --config '{"ns":{"prestart":false}}' -- true; check "prestart false: exec works" 0 $?
sleep 0.3
check "opted out: no keeper" "" "$(keepers "$XDG_RUNTIME_DIR")"
check "opted out: no keeper file" "" "$(ls "$XDG_RUNTIME_DIR/agentsbx" 2>/dev/null | grep keeper-)"
"$cli" doctor | grep -q "^ns keeper *none running"; check "doctor: none runs" 0 $?
AGENTSBX_KEEPER=0 "$cli" doctor | grep -q "^ns keeper *off"; check "doctor: the keeper is off" 0 $?
run --config '{"ns":{"prestart":"sometimes"}}' -- true 2>"$work/err"
check "a bad prestart value" 125 $?
grep -q "ns.prestart" "$work/err"; check "the message names the key" 0 $?

echo "keeper: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
