#!/usr/bin/env bash
# The long form of the sweep test (docs/CAPACITY.md): a 6-point sweep of
# 60 s points from 0.25 C to 2 C and the SLO search with 60 s points, against
# the built-in server's queueing model of capacity C = 8000 / 296 ≈ 27.03
# RPS. Prints each sweep's answer, its folder and how long it took; the
# suite runs the same with 20 s points (tests/integration/sweep_e2e_test.cc).
#
#   bench/sweep_capacity.sh [BUILD_DIR] [OUTPUT_DIR]
#
# Bounded: every point ends after its 60 s plan, or earlier (saturated);
# each sweep is killed after 30 minutes.
set -euo pipefail
build="${1:-build}"
out="${2:-outputs/bench_sweep}"
surge="$build/surge"
model=(--sim-max-num-seqs 8 --sim-decode-ms-base 10 --sim-decode-ms-per-seq 0.5
       --sim-prefill-ms-per-token 0.01 --random-input-len 200 --random-output-len 20
       --tokenizer server --output-dir "$out")
capacity=$(awk 'BEGIN { printf "%.6f", 8000 / 296 }')
start=$(awk -v c="$capacity" 'BEGIN { printf "%.4f", 0.25 * c }')
end=$(awk -v c="$capacity" 'BEGIN { printf "%.4f", 2 * c }')
echo "model capacity C = $capacity RPS; sweep $start .. $end RPS, 6 points of 60 s"

run() {
  local began
  began=$(date +%s)
  timeout -s INT 1800 "$surge" sweep "${model[@]}" "$@" 2>&1 |
    grep -E '^(sweep|max rate|no rate)' || true
  echo "took $(( $(date +%s) - began )) s"
}

run --sweep-start "$start" --sweep-end "$end" --sweep-steps 6 --sweep-point-s 60
run --slo-search --goodput ttft:500 --goodput-fraction 0.95 --search-resolution 5% \
    --search-start-rps 16 --sweep-point-s 60
