#!/usr/bin/env bash
# `tessera-bench` runs from a bundle (../shared/device/bundle.sh gathers target/device/) on the
# GPU machine:
#   scripts/gpu-benches.sh quick SUITE...  each suite (gpu, bitmap, huffman, lll) with --quick;
#                                          huffman and lll on bench/data/ when it is there
#                                          (scripts/bench-data.sh), and nvCOMP on the same bytes
#                                          when .whl/ holds its wheels
#   scripts/gpu-benches.sh ab              gpu on a bit-width subset and one or two sets of each
#                                          other family: before and after a kernel change
#   scripts/gpu-benches.sh sweep           gpu, the whole bit-width sweep (uniform-b*)
#   scripts/gpu-benches.sh sets            gpu, the other families (D1-D3, runs, sorted)
#   scripts/gpu-benches.sh bitmap-full     bitmap at full size, densities 2^-1, -4, -8, -12, -16
# BUNDLE=DIR takes the programs from DIR/bin (default target/device). Results go to
# $OUT/results (bitmap-full: $OUT/bitmap-full), logs to $OUT; the end of each log prints last.
# A full-size gpu sweep takes longer than one device call: scripts/gpu-bench-resume.sh splits it.
# A workflow tool for the GPU machine: nothing at build, test or run time calls it.
set -uo pipefail
mode=${1:-}
case $mode in
  quick|ab|sweep|sets|bitmap-full) shift ;;
  *) echo "usage: scripts/gpu-benches.sh quick SUITE... | ab | sweep | sets | bitmap-full" >&2; exit 2 ;;
esac
dir=$(cd "${BUNDLE:-target/device}" && pwd) || exit 2
B=$dir/bin/tessera-bench
out=${OUT:-/tmp/tessera-out}; mkdir -p "$out/results"
export RUST_BACKTRACE=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
summary=()
fail=0

# bench SECONDS LOG SUITE ARGS...: one run, its exit status kept for the summary.
bench() {
  local secs=$1 log=$2; shift 2
  timeout "$secs" "$B" "$@" > "$out/$log.log" 2>&1
  local rc=$?
  [[ $rc == 0 ]] || fail=1
  summary+=("$log: rc=$rc")
}

# The bitmap suite's Markdown rows, the columns read most: sizes, compression, decompression,
# AND, decompress-operate, OR.
bitmap_table() {
  grep -E '^\| 2\^' "$1" | head -16 | awk -F'|' '{print $2,$3,"comp",$12,$13,"dec",$15,$16,"AND",$18,$19,$20,"decop",$21,"OR",$22,$23,$24,$26}'
}

case $mode in
quick)
  data=$(ls bench/data/* 2>/dev/null | paste -sd, -)
  if ls .whl/*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > "$out/pip.log" 2>&1
  fi
  for s in "$@"; do
    args=(--quick --out "$out/results")
    case $s in
      huffman|lll) args+=(--dump "/tmp/dump-$s"); [[ -n "$data" ]] && args+=(--input "$data") ;;
    esac
    bench 420 "bench-$s" "$s" "${args[@]}"
    if [[ $s == bitmap ]]; then bitmap_table "$out/bench-$s.log"; else tail -25 "$out/bench-$s.log" | cut -c1-300; fi
    if [[ ( $s == huffman || $s == lll ) && -d /tmp/site && -f bench/peers/nvcomp_bytes.py ]]; then
      PYTHONPATH=/tmp/site timeout 240 python3 bench/peers/nvcomp_bytes.py --data "/tmp/dump-$s" \
        --out "$out/results/nvcomp-$s" > "$out/nvcomp-$s.log" 2>&1
      summary+=("nvcomp $s: rc=$?")
    fi
  done ;;
ab)
  bench 400 bench-gpu-ab gpu --runs 7 --out "$out/results" \
    --sets uniform-b4,uniform-b8,uniform-b11,uniform-b12,uniform-b16,uniform-b24,d1-sorted-2^12,d1-sorted-2^24,d3-zipf-5,runs-32
  tail -14 "$out/bench-gpu-ab.log" | cut -c1-260 ;;
sweep)
  bench 560 bench-gpu-sweep gpu --sets uniform-b --out "$out/results"
  tail -40 "$out/bench-gpu-sweep.log" | cut -c1-300 ;;
sets)
  bench 400 bench-gpu-sets gpu --sets d1-,d2-,d3-,runs-,sorted-0 --out "$out/results"
  tail -30 "$out/bench-gpu-sets.log" | cut -c1-300 ;;
bitmap-full)
  bench 330 bench-bitmap-full bitmap --densities 1,4,8,12,16 --out "$out/bitmap-full"
  bitmap_table "$out/bench-bitmap-full.log" ;;
esac
printf '%s\n' "${summary[@]}"
exit $fail
