#!/usr/bin/env bash
# Session-4 GPU calls. Usage: scripts/gpu-run-s4.sh DIR MODE, where DIR holds bin/tessera and
# tests/<name>-<hash> (a bundle such as target/device, or a quick partial one) and MODE is
#   tests      every test binary in DIR/tests with TESSERA_REQUIRE_GPU=1 (ONLY=prefix: those)
#   memcheck   compute-sanitizer memcheck on the GPU test binaries (gpu_bitmap: its small tests)
#   racecheck  racecheck on gpu_query, with the first hazards' details
#   ab         the GPU integer bench on a bit-width subset
#   sweep      the whole bit-width sweep; sets: D1-D3 and the other sets
#   benches    bench lll --quick (needs bench/data) and bench bitmap at full size, 5 densities
#   bitmapq    bench bitmap --quick
set -uo pipefail
dir=$1; mode=$2
out=${OUT:-/tmp/tessera-out}; mkdir -p "$out/results"
B=$dir/bin/tessera
export TESSERA_REQUIRE_GPU=1 RUST_BACKTRACE=1 TESSERA_BIN=$(cd "$(dirname "$B")" && pwd)/tessera
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
bitmap_table() {
  grep -E '^\| 2\^' "$1" | head -16 | awk -F'|' '{print $2,$3,"comp",$12,$13,"dec",$15,$16,"AND",$18,$19,$20,"decop",$21,"OR",$22,$23,$24,$26}'
}
case $mode in
tests)
  fail=0
  for t in "$dir"/tests/${ONLY:-}*; do
    n=$(basename "$t"); timeout 300 "$t" --test-threads=1 > "$out/test-$n.log" 2>&1; rc=$?
    echo "test $n rc=$rc $(grep -E '^test result' "$out/test-$n.log" | tail -1)"
    [ $rc = 0 ] || { fail=1; grep -E 'panicked|FAILED|failed' "$out/test-$n.log" | head -8; }
  done
  exit $fail ;;
memcheck)
  for t in "$dir"/tests/gpu_*; do
    n=$(basename "$t"); filts=all
    case $n in gpu_bitmap*) filts="gpu_decompression compression_by_heads_matches compression_of_fills";; esac
    for filt in $filts; do
      f=$filt; [ "$f" = all ] && f=
      timeout ${MEMCHECK_S:-150} compute-sanitizer --tool memcheck --error-exitcode 9 "$t" $f --test-threads=1 > "$out/memcheck-$n-$filt.log" 2>&1
      echo "memcheck $n $filt rc=$? $(grep 'ERROR SUMMARY' "$out/memcheck-$n-$filt.log" | tail -1)"
    done
  done ;;
racecheck)
  t=$(ls "$dir"/tests/gpu_query-* | head -1)
  timeout 240 compute-sanitizer --tool racecheck --racecheck-report all --print-limit 20 --error-exitcode 9 "$t" --test-threads=1 > "$out/racecheck-query.log" 2>&1
  echo "racecheck gpu_query rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$out/racecheck-query.log" | tail -1)"
  grep -E "hazard|Write Thread|Read Thread|at .*\.cu" "$out/racecheck-query.log" | head -30 ;;
ab)
  timeout 400 $B bench gpu --runs 7 --sets uniform-b4,uniform-b8,uniform-b11,uniform-b12,uniform-b16,uniform-b24,d1-sorted-2^12,d1-sorted-2^24,d3-zipf-5,runs-32 --out "$out/results" > "$out/bench-ab.log" 2>&1; echo "ab rc=$?"
  tail -14 "$out/bench-ab.log" | cut -c1-260 ;;
sweep)
  timeout 560 $B bench gpu --sets uniform-b --out "$out/results" > "$out/bench-gpu.log" 2>&1; echo "gpu sweep rc=$?"
  tail -36 "$out/bench-gpu.log" | cut -c1-300 ;;
sets)
  timeout 400 $B bench gpu --sets d1-,d2-,d3-,runs-,sorted-0 --out "$out/results" > "$out/bench-gpu.log" 2>&1; echo "gpu sets rc=$?"
  tail -30 "$out/bench-gpu.log" | cut -c1-300 ;;
benches)
  data=$(ls bench/data/* | paste -sd, -)
  timeout 200 $B bench lll --quick --input "$data" --out "$out/results" > "$out/bench-lll.log" 2>&1; echo "lll rc=$?"
  tail -20 "$out/bench-lll.log" | cut -c1-200
  timeout 330 $B bench bitmap --densities 1,4,8,12,16 --out "$out/bitmap-full" > "$out/bench-bitmap-full.log" 2>&1; echo "bitmap full rc=$?"
  bitmap_table "$out/bench-bitmap-full.log" ;;
bitmapq)
  timeout 200 $B bench bitmap --quick --out "$out/results" > "$out/bench-bitmap.log" 2>&1; echo "bitmap quick rc=$?"
  bitmap_table "$out/bench-bitmap.log" ;;
esac
