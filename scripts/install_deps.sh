#!/usr/bin/env bash
# Installs everything surge needs to build, run and test on Debian 12:
# the -dev packages (apt-get) and the pinned npm packages (plotly.js for the
# pages, playwright-core for the browser tests). Idempotent: when everything
# is present it only checks and returns in about a second.
#
# --build-only: just what building the `surge` binary needs (no chromium, no
# googletest, no browser check); the container image's build stage uses it
# (deploy/Dockerfile), together with -DSURGE_BUILD_TESTS=OFF.
# --bench: also the packages of the wire precision benchmark
# (bench/wire_precision.sh; combines with --build-only).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_ONLY=0
BENCH=0
for arg in "$@"; do
  case "$arg" in
    --build-only) BUILD_ONLY=1 ;;
    --bench) BENCH=1 ;;
    *) echo "install_deps: unknown option '$arg' (allowed: --build-only, --bench)" >&2; exit 2 ;;
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
  libsentencepiece-dev
  zlib1g-dev
)
# Only for the tests (unit, integration and browser): iproute2 makes the
# network namespaces of the multi-host test (tests/integration/netns_test.cc);
# podman, podman-compose, runc and debootstrap run the compose rig
# (scripts/compose_rig.sh) — with the CNI dnsname plugin, without which the
# containers cannot find each other by service name (podman on Debian 12 uses
# CNI; apt's --no-install-recommends leaves the plugin out);
# libbenchmark-dev builds bench/hot_paths_bench; sentencepiece's spm_train
# trains the tiny tokenizer model the token-count tests use.
TEST_APT_PACKAGES=(
  libgtest-dev libgmock-dev libbenchmark-dev sentencepiece
  chromium
  iproute2
  podman podman-compose runc debootstrap golang-github-containernetworking-plugin-dnsname
)
if [ "$BUILD_ONLY" -eq 0 ]; then APT_PACKAGES+=("${TEST_APT_PACKAGES[@]}"); fi
# Only with --bench: the end-to-end wire benchmark (bench/wire_precision.sh)
# runs nginx-light as its target, captures with dumpcap (wireshark-common,
# pulled in by tshark) and decodes with tshark, and tests with
# python3-scipy's ks_2samp; linux-perf measures where a missed target's time
# goes. nginx-light's package enables a default site on port 80 where a
# service manager runs (the benchmark never uses it: `systemctl disable --now
# nginx` turns it off).
BENCH_APT_PACKAGES=(
  nginx-light tshark python3-scipy linux-perf
)
if [ "$BENCH" -eq 1 ]; then APT_PACKAGES+=("${BENCH_APT_PACKAGES[@]}"); fi

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
  # wireshark-common asks whether non-root users may capture (a setuid
  # dumpcap); answer "no" up front so the install never stops to ask
  # (the benchmark runs as root).
  if [[ " ${missing[*]} " == *" tshark "* ]]; then
    echo "wireshark-common wireshark-common/install-setuid boolean false" \
      | $SUDO debconf-set-selections
  fi
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
