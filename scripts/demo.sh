#!/usr/bin/env bash
# README command 1: install, build, and run the main job on this machine:
# `surge run` against the built-in simulated server, 600 synthetic requests
# at 20 RPS with bursty (Gamma, burstiness 0.5) traffic, 2 workers. Prints
# the summary and the results folder. Extra arguments go to `surge run`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
exec build/surge run --num-prompts 600 --request-rate 20 --burstiness 0.5 --workers 2 \
  --random-input-len 256 --random-output-len 32 "$@"
