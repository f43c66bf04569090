#!/usr/bin/env bash
# README command 2: install, build, and run the whole test suite (unit,
# integration and browser tests). Exits non-zero when anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
mkdir -p test-artifacts
ctest --test-dir build --output-on-failure --timeout 900 -j 2
