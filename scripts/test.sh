#!/usr/bin/env bash
# README command 2: install, build, and run the whole test suite (unit,
# integration and browser tests). Exits non-zero when anything fails.
# Unit tests run two at a time; the integration and browser tests, which
# measure real send times, run one at a time so they do not compete for the
# two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
mkdir -p test-artifacts
ctest --test-dir build --output-on-failure --timeout 900 -j 2 -LE "integration|browser"
ctest --test-dir build --output-on-failure --timeout 900 -j 1 -L "integration|browser"
