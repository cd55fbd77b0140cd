#!/usr/bin/env bash
# Starts dockerd (Debian's docker.io) unless an engine already answers, and waits until it
# does. The CI machine is a fresh Debian 12 VM where nothing starts it: no systemd unit is
# assumed to run. dockerd's defaults work there (overlay2, iptables, the docker0 bridge); the
# backend itself never needs the bridge (its containers have no network by default).
set -euo pipefail
sock=${DOCKER_SOCK:-/var/run/docker.sock}
log=${DOCKERD_LOG:-/var/log/dockerd.log}

engine_answers() { docker version >/dev/null 2>&1; }

if engine_answers; then
  echo "engine already running"
  exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "start-engine.sh: dockerd must be started as root" >&2; exit 1; }
command -v dockerd >/dev/null || { echo "start-engine.sh: dockerd missing (apt-get install docker.io)" >&2; exit 1; }
# A socket left by a dead daemon would make the wait below succeed too early.
[ -S "$sock" ] && rm -f "$sock"
nohup dockerd >"$log" 2>&1 &
for _ in $(seq 1 120); do
  if engine_answers; then
    echo "dockerd started (log: $log)"
    exit 0
  fi
  sleep 0.5
done
echo "start-engine.sh: dockerd did not come up in 60 s; its log:" >&2
tail -40 "$log" >&2
exit 1
