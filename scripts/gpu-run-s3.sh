#!/usr/bin/env bash
# Session-3 GPU calls over a bundle in target/device (see scripts/gpu-session.sh for the general
# form). Usage: scripts/gpu-run-s3.sh tests | bytes | sweep | sets
set -uo pipefail
out=${OUT:-/tmp/tessera-out}; mkdir -p "$out/results"
B=target/device/bin/tessera
export TESSERA_BIN=$PWD/$B TESSERA_REQUIRE_GPU=1 RUST_BACKTRACE=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
case $1 in
tests)
  bash scripts/gpu-session.sh tests > "$out/session.txt" 2>&1; tail -40 "$out/session.txt"
  for t in gpu_huffman gpu_query; do
    timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 target/device/tests/$t-* --test-threads=1 > "$out/racecheck-$t.log" 2>&1
    echo "racecheck $t rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$out/racecheck-$t.log" | tail -1)"
  done
  timeout 120 compute-sanitizer --tool initcheck --error-exitcode 9 target/device/tests/gpu_query-* --test-threads=1 > "$out/initcheck-q.log" 2>&1
  echo "initcheck gpu_query rc=$? $(grep 'ERROR SUMMARY' "$out/initcheck-q.log" | tail -1)"
  ;;
bytes)
  data=$(ls bench/data/* | paste -sd, -)
  timeout 200 $B bench huffman --quick --input "$data" --out "$out/results" > "$out/bench-huffman.log" 2>&1; echo "huffman rc=$?"
  timeout 200 $B bench lll --quick --input "$data" --out "$out/results" > "$out/bench-lll.log" 2>&1; echo "lll rc=$?"
  timeout 170 $B bench bitmap --quick --out "$out/results" > "$out/bench-bitmap.log" 2>&1; echo "bitmap rc=$?"
  for s in huffman lll bitmap; do echo "== $s"; tail -25 "$out/bench-$s.log" | cut -c1-400; done
  ;;
sweep)
  timeout 560 $B bench gpu --sets uniform-b --out "$out/results" > "$out/bench-gpu.log" 2>&1; echo "gpu sweep rc=$?"
  tail -45 "$out/bench-gpu.log" | cut -c1-300
  ;;
sets)
  timeout 330 $B bench gpu --sets d1-,d2-,d3-,runs-,sorted-0 --out "$out/results" > "$out/bench-gpu.log" 2>&1; echo "gpu sets rc=$?"
  tail -30 "$out/bench-gpu.log" | cut -c1-300
  timeout 250 $B bench bitmap --densities 1,4,8,12,16 --out "$out/bitmap-full" > "$out/bench-bitmap-full.log" 2>&1; echo "bitmap full rc=$?"
  tail -20 "$out/bench-bitmap-full.log" | cut -c1-300
  ;;
esac
