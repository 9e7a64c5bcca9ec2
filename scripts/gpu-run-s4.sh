#!/usr/bin/env bash
# Session-4 GPU calls. Usage: scripts/gpu-run-s4.sh DIR MODE, where DIR holds bin/tessera and
# tests/<name>-<hash> (a bundle, or a quick partial one) and MODE is
#   tests    every test binary in DIR/tests with TESSERA_REQUIRE_GPU=1, then memcheck on the GPU ones
#   ab       the fused FOR query forms side by side and RFOR on a bit-width subset
#   sweep    the whole bit-width sweep; sets: D1-D3 and the other sets
#   bitmap   bench bitmap at full size on a few densities
set -uo pipefail
dir=$1; mode=$2
out=${OUT:-/tmp/tessera-out}; mkdir -p "$out/results"
B=$dir/bin/tessera
export TESSERA_REQUIRE_GPU=1 RUST_BACKTRACE=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
case $mode in
tests)
  fail=0
  for t in "$dir"/tests/*; do
    n=$(basename "$t"); timeout 300 "$t" --test-threads=1 > "$out/test-$n.log" 2>&1; rc=$?
    echo "test $n rc=$rc $(grep -E '^test result' "$out/test-$n.log" | tail -1)"; [ $rc = 0 ] || { fail=1; grep -E 'panicked|FAILED|failed' "$out/test-$n.log" | head -8; }
  done
  for t in "$dir"/tests/gpu_*; do
    n=$(basename "$t"); filt=; case $n in gpu_bitmap*) filt=gpu_decompression;; esac
    timeout ${MEMCHECK_S:-150} compute-sanitizer --tool memcheck --error-exitcode 9 "$t" $filt --test-threads=1 > "$out/memcheck-$n.log" 2>&1
    echo "memcheck $n $filt rc=$? $(grep 'ERROR SUMMARY' "$out/memcheck-$n.log" | tail -1)"
  done
  exit $fail ;;
bitmapq)
  timeout 200 $B bench bitmap --quick --out "$out/results" > "$out/bench-bitmap.log" 2>&1; echo "bitmap quick rc=$?"
  grep -E "^\| 2\^" "$out/bench-bitmap.log" | head -16 | awk -F'|' '{print $2,$3,"comp",$12,$13,"dec",$15,$16,"AND",$18,$19,$20,"decop",$21,"OR",$22,$23,$24,$26}' ;;
ab)
  timeout 300 $B bench gpu --runs 7 --sets uniform-b4,uniform-b6,uniform-b8,uniform-b11,uniform-b12,uniform-b16,uniform-b24 --out "$out/results" > "$out/bench-ab.log" 2>&1; echo "ab rc=$?"
  tail -11 "$out/bench-ab.log" | cut -c1-260 ;;
sweep)
  timeout 560 $B bench gpu --sets uniform-b --out "$out/results" > "$out/bench-gpu.log" 2>&1; echo "gpu sweep rc=$?"
  tail -45 "$out/bench-gpu.log" | cut -c1-300 ;;
sets)
  timeout 400 $B bench gpu --sets d1-,d2-,d3-,runs-,sorted-0 --out "$out/results" > "$out/bench-gpu.log" 2>&1; echo "gpu sets rc=$?"
  tail -30 "$out/bench-gpu.log" | cut -c1-300 ;;
bitmap)
  timeout 400 $B bench bitmap --densities 1,4,8,12,16 --out "$out/bitmap-full" > "$out/bench-bitmap-full.log" 2>&1; echo "bitmap full rc=$?"
  tail -24 "$out/bench-bitmap-full.log" | cut -c1-300 ;;
esac
