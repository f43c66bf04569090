#!/usr/bin/env bash
# Writes the CurveZMQ keys of a containerised surge run (docs/DEPLOY.md):
#   DIR/coordinator.key  DIR/coordinator.pub   the coordinator's pair
#   DIR/worker.key       DIR/worker.pub        one pair shared by every worker
#   DIR/allow/worker.pub                       the coordinator's --curve-allow dir
#   DIR/api.key                                the target's API key: a random one for
#                                              the built-in server (sim-server
#                                              --api-key-file); put your server's key
#                                              there instead for a real target
# Usage: deploy/make-keys.sh [DIR]   (default: deploy/keys)
# Environment: SURGE=path of the surge binary (default: build/surge, else
# `surge` on PATH); SURGE_KEYS_OWNER=uid:gid the files are given to so the
# image's non-root user can read them (default 10001:10001; needs root, or set
# it empty to skip). Existing key files are never overwritten (exit 1).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$here/keys}"
surge="${SURGE:-}"
if [ -z "$surge" ]; then
  if [ -x "$here/../build/surge" ]; then surge="$here/../build/surge"; else surge="surge"; fi
fi
if ! command -v "$surge" >/dev/null 2>&1; then
  echo "make-keys: no surge binary (build it with scripts/build.sh or set SURGE=...)" >&2
  exit 2
fi
"$surge" keygen --out "$dir" --name coordinator
"$surge" keygen --out "$dir" --name worker
mkdir -p "$dir/allow"
cp "$dir/worker.pub" "$dir/allow/worker.pub"
if [ -e "$dir/api.key" ]; then
  echo "make-keys: $dir/api.key exists; not overwritten" >&2
  exit 1
fi
(umask 077 && printf 'sk-surge-%s\n' "$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')" \
  > "$dir/api.key")
owner="${SURGE_KEYS_OWNER-10001:10001}"
if [ -n "$owner" ]; then
  if ! chown -R "$owner" "$dir" 2>/dev/null; then
    echo "make-keys: cannot chown $dir to $owner (the image's user): run as root, or" \
         "set SURGE_KEYS_OWNER to a uid:gid you may give files to, or set it empty" \
         "(SURGE_KEYS_OWNER=) when the files go into a Kubernetes Secret" >&2
    exit 1
  fi
fi
echo "make-keys: wrote $dir/{coordinator,worker}.{key,pub}, $dir/allow/worker.pub and $dir/api.key"
