#!/usr/bin/env bash
# Starts dockerd (Debian's docker.io) unless an engine already answers, and waits until it
# does. The CI machine is a fresh Debian 12 VM where nothing starts it: no systemd unit is
# assumed to run. dockerd's defaults work there (overlay2, iptables, the docker0 bridge); where
# they do not (no iptables in the kernel, say), it is started again without iptables and
# without the default bridge: the backend never needs them (its containers have no network
# by default, or the host's).
#
# It also registers gVisor (Debian's runsc package) as the runtime "runsc" in dockerd's
# daemon.json, when runsc is installed:
#   --platform=ptrace  the KVM platform hangs on a nested VM such as CI's;
#   --network=none     gVisor's own network stack refuses containers in NetworkMode "none"
#                      otherwise (the backend's default);
#   --host-uds=open    the backend's commands reach the host through Unix sockets in a bound
#                      folder: the host listens, the exec server or runner inside connects.
#                      "open" lets the sandbox connect to sockets that exist on the host and
#                      nothing more; "create" (bind/listen on host paths) is not needed, since
#                      a detached server gets its listening socket from the host as an fd.
# An engine that already runs rereads "runtimes" on SIGHUP: it is not restarted (other users
# may have containers in it).
set -euo pipefail
sock=${DOCKER_SOCK:-/var/run/docker.sock}
log=${DOCKERD_LOG:-/var/log/dockerd.log}
config=${DOCKERD_CONFIG:-/etc/docker/daemon.json}
pidfile=${DOCKERD_PIDFILE:-/var/run/docker.pid}
runsc_args='["--platform=ptrace", "--network=none", "--host-uds=open"]'

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

# Writes runtimes.runsc into daemon.json, keeping every other setting. Prints "changed" when
# the file had to change.
write_runsc_config() {
  mkdir -p "$(dirname "$config")"
  python3 - "$config" "$(command -v runsc)" "$runsc_args" <<'PY'
import json, os, sys
path, runsc, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
try:
    with open(path) as f:
        text = f.read()
    conf = json.loads(text) if text.strip() else {}
except FileNotFoundError:
    conf = {}
want = {"path": runsc, "runtimeArgs": args}
runtimes = conf.setdefault("runtimes", {})
if runtimes.get("runsc") != want:
    runtimes["runsc"] = want
    tmp = path + ".agentsbx-tmp"
    with open(tmp, "w") as f:
        json.dump(conf, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
    print("changed")
PY
}

# Whether the running engine lists runsc with our arguments.
engine_has_runsc() {
  docker info --format '{{json .Runtimes}}' 2>/dev/null | python3 -c '
import json, sys
want = json.loads(sys.argv[1])
runsc = json.load(sys.stdin).get("runsc") or {}
sys.exit(0 if runsc.get("runtimeArgs") == want else 1)' "$runsc_args"
}

# Has the running dockerd reread its configuration, and waits until it lists runsc.
reload_engine() {
  local pid
  pid=$(cat "$pidfile" 2>/dev/null || true)
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || {
    echo "start-engine.sh: no dockerd pid in $pidfile to reload" >&2; return 1; }
  kill -HUP "$pid"
  for _ in $(seq 1 60); do
    engine_has_runsc && { echo "dockerd (pid $pid) reloaded: runtime runsc registered"; return 0; }
    sleep 0.5
  done
  echo "start-engine.sh: dockerd did not pick up runtimes.runsc from $config (does it read" \
    "another --config-file?); its log:" >&2
  tail -20 "$log" >&2 || true
  return 1
}

register_runsc() {
  if ! command -v runsc >/dev/null; then
    echo "runsc not installed (apt-get install runsc): the docker suites on gVisor cannot run"
    return 0
  fi
  local changed
  changed=$(write_runsc_config)
  if engine_answers; then
    if [ -n "$changed" ] || ! engine_has_runsc; then
      reload_engine
    else
      echo "runtime runsc already registered"
    fi
  fi
}

[ "$(id -u)" -eq 0 ] || {
  engine_answers && { echo "engine already running"; exit 0; }
  echo "start-engine.sh: dockerd must be started as root" >&2; exit 1; }
register_runsc
if engine_answers; then
  echo "engine already running"
  exit 0
fi
command -v dockerd >/dev/null || { echo "start-engine.sh: dockerd missing (apt-get install docker.io)" >&2; exit 1; }
# A fresh engine reads daemon.json as it starts.
started() {
  command -v runsc >/dev/null && ! engine_has_runsc && {
    echo "start-engine.sh: dockerd started without runtimes.runsc from $config" >&2; exit 1; }
  exit 0
}
try_start && started
echo "dockerd did not come up with its defaults; trying without iptables and bridge" >&2
try_start --iptables=false --bridge=none && started
echo "start-engine.sh: dockerd did not come up; its log:" >&2
tail -40 "$log" >&2
exit 1
