#!/usr/bin/env bash
# Starts dockerd (Debian's docker.io) unless an engine already answers, and waits until it
# does. The CI machine is a fresh Debian 12 VM where nothing starts it: no systemd unit is
# assumed to run. dockerd's defaults work there (overlay2, iptables, the docker0 bridge); where
# they do not (no iptables in the kernel, say), it is started again without iptables and
# without the default bridge: the backend never needs them (its containers have no network
# by default, or the host's).
set -euo pipefail
sock=${DOCKER_SOCK:-/var/run/docker.sock}
log=${DOCKERD_LOG:-/var/log/dockerd.log}

engine_answers() { docker version >/dev/null 2>&1; }

# Starts dockerd with the given options and waits up to 60 s; kills it again on failure.
try_start() {
  [ -S "$sock" ] && rm -f "$sock"   # a dead daemon's socket must not look like a live one
  nohup dockerd "$@" >>"$log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 120); do
    if engine_answers; then
      echo "dockerd started${*:+ with $*} (pid $pid, log: $log)"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  return 1
}

if engine_answers; then
  echo "engine already running"
  exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "start-engine.sh: dockerd must be started as root" >&2; exit 1; }
command -v dockerd >/dev/null || { echo "start-engine.sh: dockerd missing (apt-get install docker.io)" >&2; exit 1; }
try_start && exit 0
echo "dockerd did not come up with its defaults; trying without iptables and bridge" >&2
try_start --iptables=false --bridge=none && exit 0
echo "start-engine.sh: dockerd did not come up; its log:" >&2
tail -40 "$log" >&2
exit 1
