#!/usr/bin/env bash
# The compose rig (docs/DEPLOY.md): builds deploy/Dockerfile
# with podman on a local Debian 12 base image, makes keys with
# deploy/make-keys.sh, runs deploy/docker-compose.yml with podman-compose
# (coordinator, 2 workers over CurveZMQ, the sim server asking for an API
# key that only the coordinator is given), stops one worker with `podman
# stop` mid-run (SIGTERM: it hands back what it has not sent), and checks
# that the results folder accounts for every request of the plan exactly
# once, none of them lost.
# Part of the test suite (ctest `compose_rig`, label integration; about 10-15
# minutes on 2 cores, most of it the image build). Run alone as root:
#   scripts/compose_rig.sh
# Exit 77 (ctest: skipped) with the reason where podman cannot run containers:
# not root, no cgroup filesystem (e.g. a plain chroot), or a root filesystem
# that is not a mount point (podman's layer unpacking remounts / private).
# Environment (defaults): SURGE_RIG_DIR (/var/tmp/surge-rig: base rootfs cache,
# keys, results, logs), SURGE_RIG_WORKERS (2), SURGE_RIG_REQUESTS (200),
# SURGE_RIG_RATE (50), SURGE_RIG_STOP_WORKER (1: `podman stop` the first
# worker 2 s after the start; 0: no stop), SURGE_RIG_TIMEOUT_S (900, the whole script including
# the image build), SURGE_RIG_KEEP_IMAGE (0: untag the rig's image at the end),
# SURGE_EXTRA_CA_DIR (/usr/local/share/ca-certificates: *.crt trusted by the
# image's build stage, for TLS-inspecting networks).
# Every container, the network and the image tag it made are removed by name
# at the end, also on failure or timeout. Exit 0 only when every request is
# accounted for.
set -euo pipefail
if [ -z "${SURGE_RIG_INNER:-}" ]; then
  export SURGE_RIG_INNER=1
  exec timeout -k 30 "${SURGE_RIG_TIMEOUT_S:-900}" "$0" "$@"
fi
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${SURGE_RIG_DIR:-/var/tmp/surge-rig}"
workers="${SURGE_RIG_WORKERS:-2}"
requests="${SURGE_RIG_REQUESTS:-200}"
rate="${SURGE_RIG_RATE:-50}"
stop_worker="${SURGE_RIG_STOP_WORKER:-1}"
project=surge-rig
image=localhost/surge-rig:latest
base=localhost/debian:12
t0=$SECONDS
say() { echo "compose_rig [$((SECONDS - t0)) s]: $*"; }

if [ "$(id -u)" -ne 0 ]; then echo "compose_rig: SKIP: needs root (rootful podman)" >&2; exit 77; fi
for tool in podman podman-compose runc debootstrap python3; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "compose_rig: $tool missing (apt-get install -y podman podman-compose runc debootstrap)" >&2
    exit 2
  fi
done

mkdir -p "$work"
# crun fails on these machines (cgroups hybrid mode, RLIMIT_NOFILE): runc,
# cgroupfs, no default ulimits.
cat > "$work/containers.conf" <<'EOF'
[containers]
default_ulimits = []
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
export CONTAINERS_CONF="$work/containers.conf"

# 0. Can podman run containers here at all? (Before minutes of debootstrap.)
if ! podman info > "$work/info.log" 2>&1; then
  echo "compose_rig: SKIP: podman cannot run containers on this machine: $(tail -n 1 "$work/info.log")" >&2
  exit 77
fi

containers() {
  podman ps -a --format '{{.Names}}' | grep -E "^${project}_" || true
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  say "cleaning up"
  (cd "$repo/deploy" && podman-compose -p "$project" -f docker-compose.yml down -t 5 >/dev/null 2>&1) || true
  for c in $(containers); do podman rm -f -t 2 "$c" >/dev/null 2>&1 || true; done
  podman network rm -f "${project}_default" >/dev/null 2>&1 || true
  if [ "${SURGE_RIG_KEEP_IMAGE:-0}" != 1 ]; then podman rmi "$image" >/dev/null 2>&1 || true; fi
  rm -rf "$work/context"
  say "done (exit $rc, $((SECONDS - t0)) s in all)"
  exit $rc
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# 1. The base image: a local debootstrap of bookworm, cached.
if ! podman image exists "$base"; then
  if [ ! -x "$work/rootfs/bin/sh" ]; then
    say "debootstrap --variant=minbase bookworm (2-4 minutes)"
    rm -rf "$work/rootfs"
    debootstrap --variant=minbase bookworm "$work/rootfs" > "$work/debootstrap.log" 2>&1
  fi
  say "podman import $base"
  if ! tar -C "$work/rootfs" -c . | podman import - "$base" > "$work/import.log" 2>&1; then
    echo "compose_rig: SKIP: podman cannot unpack an image on this machine: $(tail -n 1 "$work/import.log")" >&2
    exit 77
  fi
fi

# 2. The image, from a copy of the tree (no local builds or modules), plus
# the extra CA certificates of this network for the build stage.
say "podman build $image"
rm -rf "$work/context" && mkdir -p "$work/context"
tar -C "$repo" --exclude=./build --exclude='./build-*' --exclude=./node_modules --exclude=./.git \
  --exclude=./outputs --exclude=./test-artifacts --exclude=./deploy/keys \
  --exclude=./deploy/results -c . | tar -C "$work/context" -x
ca_dir="${SURGE_EXTRA_CA_DIR:-/usr/local/share/ca-certificates}"
if compgen -G "$ca_dir/*.crt" >/dev/null; then cp "$ca_dir"/*.crt "$work/context/deploy/extra-ca/"; fi
if ! podman build --build-arg BASE="$base" -f deploy/Dockerfile -t "$image" "$work/context" \
    > "$work/build.log" 2>&1; then
  tail -n 30 "$work/build.log" >&2
  echo "compose_rig: image build failed (log: $work/build.log)" >&2
  exit 1
fi
say "built: $(podman run --rm "$image" --version)"

# 3. Keys with deploy/make-keys.sh, run through the image's own surge.
run_dir="$work/run"
rm -rf "$run_dir" && mkdir -p "$run_dir/results"
cat > "$work/surge-in-image" <<EOF
#!/bin/sh
exec podman run --rm --user 0:0 -v "$run_dir:$run_dir" "$image" "\$@"
EOF
chmod +x "$work/surge-in-image"
SURGE="$work/surge-in-image" "$repo/deploy/make-keys.sh" "$run_dir/keys"
chown 10001:10001 "$run_dir/results"

# 4. Up: coordinator, workers, sim server.
say "podman-compose up: $workers workers, $requests requests at $rate RPS"
export SURGE_IMAGE="$image" SURGE_WORKERS="$workers" SURGE_NUM_PROMPTS="$requests" \
  SURGE_REQUEST_RATE="$rate" SURGE_KEYS_DIR="$run_dir/keys" SURGE_RESULTS_DIR="$run_dir/results"
(cd "$repo/deploy" && podman-compose -p "$project" -f docker-compose.yml up -d \
  --scale worker="$workers") > "$work/up.log" 2>&1 || { cat "$work/up.log" >&2; exit 1; }
coordinator="${project}_surge-coordinator_1"
say "containers: $(containers | tr '\n' ' ')"
stopped=""
if [ "$stop_worker" = 1 ]; then
  # As a user's `docker stop` of one worker: SIGTERM, then SIGKILL after 10 s.
  for _ in $(seq 1 600); do
    if podman logs "$coordinator" 2>&1 | grep -q "started $requests requests"; then break; fi
    sleep 0.2
  done
  sleep 2
  stopped="$(containers | grep "_worker_" | head -n 1)"
  say "podman stop $stopped (mid-run)"
  podman stop -t 10 "$stopped" > /dev/null
fi
coordinator_rc=$(timeout 300 podman wait "$coordinator" || echo timeout)
podman logs "$coordinator" > "$work/coordinator.log" 2>&1 || true
sed -n '/surge run summary/,/^results:/p' "$work/coordinator.log"
if [ "$coordinator_rc" != 0 ]; then
  tail -n 30 "$work/coordinator.log" >&2
  echo "compose_rig: the coordinator exited $coordinator_rc" >&2
  exit 1
fi
for c in $(containers | grep "_worker_"); do
  worker_rc=$(timeout 60 podman wait "$c" || echo timeout)
  say "$c exited $worker_rc"
  # The stopped worker left on SIGTERM: 143 (128 + 15), after its Goodbye.
  want=0
  if [ "$c" = "$stopped" ]; then want=143; fi
  if [ "$worker_rc" != "$want" ]; then podman logs "$c" | tail -n 20 >&2; exit 1; fi
done
if [ -n "$stopped" ]; then grep -E "is leaving \(SIGTERM\)|left \(SIGTERM\)" "$work/coordinator.log"; fi

# 5. Every request of the plan has exactly one record in the results folder;
# with a stopped worker none is lost, and only the few already due when it
# handed them back are not sent.
python3 - "$run_dir/results" "$requests" "$stopped" <<'EOF'
import csv, glob, json, sys
root, expected, stopped = sys.argv[1], int(sys.argv[2]), sys.argv[3]
plans = glob.glob(f"{root}/*/performances/*/*_plan.csv")
if len(plans) != 1:
    sys.exit(f"compose_rig: expected one run folder under {root}, found plans {plans}")
plan = plans[0]
planned = [int(row["index"]) for row in csv.DictReader(open(plan))]
records = [json.loads(line) for line in open(plan.replace("_plan.csv", "_details.jsonl"))]
indices = [r["index"] for r in records]
ok = [r for r in records if not r.get("error")]
print(f"compose_rig: {len(planned)} planned, {len(records)} records, "
      f"{len(set(indices))} distinct indices, {len(ok)} without error")
statuses = [r.get("status", "") for r in records]
lost = statuses.count("lost")
not_sent = statuses.count("not_sent")
print(f"compose_rig: lost {lost}, not_sent {not_sent}")
if len(planned) != expected or sorted(indices) != sorted(planned):
    sys.exit("compose_rig: FAIL: the results folder does not account for every request once")
if lost != 0 or len(ok) + not_sent != expected or not_sent > (20 if stopped else 0):
    sys.exit("compose_rig: FAIL: requests lost, failed or not sent")
print(f"compose_rig: PASS: every one of the {expected} requests has exactly one record")
EOF
