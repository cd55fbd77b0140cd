#!/usr/bin/env bash
# Builds the docker backend's test image without a registry: a root filesystem made of
# Debian's busybox-static (one static /bin/busybox and a link per applet), the host's dash as
# /bin/sh with the libraries it needs (a Debian image's shell: busybox's ash runs the last
# command of `sh -c` in place, which the suites' fd checks would see), an /etc/passwd with
# nobody, and empty /tmp and /workspace, imported from a tar on stdin.
# Usage: build-image.sh [TAG [PROGRAM...]]   (default agentsbx-test:busybox). Idempotent.
# The shared libraries each PROGRAM needs are added at their host paths: a sanitizer build's
# agentsbx-run is not static, and the backend binds it into the container.
# SBX_IMAGE_TOOLS="curl bash ..." also copies those host programs into the image, at their host
# paths with their libraries (perl with its base library): the network suite's image,
# agentsbx-test:net, has the clients the ns suites use.
set -euo pipefail
tag=${1:-agentsbx-test:busybox}
shift || true
busybox=/bin/busybox
[ -x "$busybox" ] || { echo "build-image.sh: $busybox missing (apt-get install busybox-static)" >&2; exit 1; }
{ ldd "$busybox" 2>&1 || true; } | grep -qE 'not a dynamic|statically linked' || {
  echo "build-image.sh: $busybox is not statically linked (install busybox-static)" >&2; exit 1; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/bin "$root"/usr/bin "$root"/sbin "$root"/usr/sbin "$root"/etc "$root"/tmp \
  "$root"/workspace "$root"/proc "$root"/dev "$root"/sys
chmod 1777 "$root"/tmp
cp "$busybox" "$root"/bin/busybox
for applet in $("$busybox" --list); do
  [ "$applet" = busybox ] && continue
  ln -sf /bin/busybox "$root/bin/$applet"
done
ln -sf /bin/env "$root"/usr/bin/env
# dash and its shared libraries at the same paths as on the host.
cp /bin/dash "$root"/bin/dash
tools=()
for tool in ${SBX_IMAGE_TOOLS:-}; do
  path=$(command -v "$tool") || { echo "build-image.sh: $tool not found" >&2; exit 1; }
  path=$(readlink -f "$path")
  mkdir -p "$root$(dirname "$path")"
  cp "$path" "$root$path"
  [ -e "$root/usr/bin/$tool" ] || ln -sf "$path" "$root/usr/bin/$tool"
  tools+=("$path")
  if [ "$tool" = perl ]; then
    # Debian's perl-base: the core modules (IO::Socket, IO::Select) every perl has.
    base=$(perl -e 'print((grep { m{/perl-base$} } @INC)[0] // "")')
    [ -n "$base" ] || { echo "build-image.sh: perl has no perl-base directory" >&2; exit 1; }
    mkdir -p "$root$(dirname "$base")"
    cp -a "$base" "$root$base"
  fi
done
for program in /bin/dash "${tools[@]}" "$@"; do
  for lib in $({ ldd "$program" 2>/dev/null || true; } | grep -o '/[^ ]*'); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
done
ln -sf dash "$root"/bin/sh
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >"$root"/etc/passwd
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root"/etc/group
tar -C "$root" --numeric-owner --owner=0 --group=0 -c . | docker import - "$tag" >/dev/null
echo "built $tag"
