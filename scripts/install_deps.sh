#!/usr/bin/env bash
# Installs everything surge needs to build, run and test on Debian 12:
# the -dev packages (apt-get) and the pinned npm packages (plotly.js for the
# pages, playwright-core for the browser tests). Idempotent: when everything
# is present it only checks and returns in about a second.
#
# --build-only: just what building the `surge` binary needs (no chromium, no
# googletest, no browser check); the container image's build stage uses it
# (deploy/Dockerfile), together with -DSURGE_BUILD_TESTS=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_ONLY=0
for arg in "$@"; do
  case "$arg" in
    --build-only) BUILD_ONLY=1 ;;
    *) echo "install_deps: unknown option '$arg' (allowed: --build-only)" >&2; exit 2 ;;
  esac
done

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libzmq3-dev cppzmq-dev
  libprotobuf-dev protobuf-compiler
  libboost-dev
  libabsl-dev
  libyaml-cpp-dev
  nlohmann-json3-dev
  libcli11-dev
  libssl-dev
)
# Only for the tests (unit, integration and browser): iproute2 makes the
# network namespaces of the multi-host test (tests/integration/netns_test.cc);
# podman, podman-compose, runc and debootstrap run the compose rig
# (scripts/compose_rig.sh) — with the CNI dnsname plugin, without which the
# containers cannot find each other by service name (podman on Debian 12 uses
# CNI; apt's --no-install-recommends leaves the plugin out);
# libbenchmark-dev builds bench/hot_paths_bench.
TEST_APT_PACKAGES=(
  libgtest-dev libgmock-dev libbenchmark-dev
  chromium
  iproute2
  podman podman-compose runc debootstrap golang-github-containernetworking-plugin-dnsname
)
if [ "$BUILD_ONLY" -eq 0 ]; then APT_PACKAGES+=("${TEST_APT_PACKAGES[@]}"); fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# Node.js: the machine's own if it has one (it may come from another source
# than Debian, whose npm package would conflict with it), else Debian's.
if ! command -v npm >/dev/null 2>&1; then missing+=(nodejs npm); fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install_deps: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm packages are pinned in package.json / package-lock.json.
if [ ! -f node_modules/plotly.js-dist-min/plotly.min.js ] || [ ! -d node_modules/playwright-core ] \
   || [ ! -d node_modules/semver ] \
   || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "install_deps: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi
# The pinned playwright-core must run on this Node.js (Debian 12's is 18):
# fail here, naming the package and the range, rather than in the browser test.
if [ "$BUILD_ONLY" -eq 0 ]; then node tests/browser/check_node_version.mjs; fi
echo "install_deps: ok"
