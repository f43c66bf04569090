#!/usr/bin/env bash
# Installs what is missing, then configures and builds surge into build/
# (Release with debug info, -Werror). Incremental after the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build
