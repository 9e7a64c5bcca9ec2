#!/usr/bin/env bash
# The test binaries of a bundle (../shared/device/bundle.sh gathers them into target/device/) on
# the GPU machine, with TESSERA_REQUIRE_GPU=1 so that a GPU test that would skip fails instead,
# and compute-sanitizer over the GPU tests:
#   scripts/gpu-tests.sh [MODE] [FILTER]
#     all        (the default) run, then memcheck
#     run        every bundled test binary whose name contains FILTER
#     memcheck   compute-sanitizer memcheck on the GPU test binaries (gpu_*; of gpu_bitmap only its
#                small tests: the whole binary takes longer than a device call under memcheck)
#     racecheck  racecheck on gpu_query and gpu_huffman, with the first hazards' details
#     initcheck  initcheck on gpu_query
# BUNDLE=DIR takes the bundle from DIR (default target/device; it holds bin/ and tests/). Logs go
# under $OUT (the device tool brings them back); a short summary prints last. A workflow tool
# for the GPU machine: nothing at build, test or run time calls it.
set -uo pipefail
shopt -s nullglob
mode=${1:-all} filter=${2:-}
dir=$(cd "${BUNDLE:-target/device}" && pwd) || exit 2
out=${OUT:-/tmp/tessera-out}; mkdir -p "$out"
# The CLI and bench tests run the bundled programs, not the build machine's paths.
export TESSERA_BIN=$dir/bin/tessera TESSERA_BENCH_BIN=$dir/bin/tessera-bench
export TESSERA_REQUIRE_GPU=1 RUST_BACKTRACE=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/device.txt" 2>&1
summary=()
fail=0

run_tests() {
  for t in "$dir"/tests/*; do
    local name; name=$(basename "$t")
    [[ -n "$filter" && "$name" != *$filter* ]] && continue
    if timeout 300 "$t" --test-threads=1 > "$out/test-$name.log" 2>&1; then r=pass; else r="FAIL($?)"; fail=1; fi
    summary+=("$name: $r $(grep -E '^test result' "$out/test-$name.log" | tail -1)")
    [[ $r == pass ]] || summary+=("$(grep -E 'panicked|FAILED|failed' "$out/test-$name.log" | head -8)")
  done
}

# sanitize TOOL BINARY [TEST FILTER]: one compute-sanitizer run, its summary line kept.
sanitize() {
  local tool=$1 t=$2 f=${3:-} name; name=$(basename "$2")
  local log="$out/$tool-$name${f:+-$f}.log"
  timeout "${SANITIZE_S:-240}" compute-sanitizer --tool "$tool" --error-exitcode 9 "${@:4}" "$t" $f \
    --test-threads=1 > "$log" 2>&1
  local rc=$?
  [[ $rc == 0 ]] || fail=1
  summary+=("$tool $name ${f:-all}: rc=$rc $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$log" | tail -1)")
}

memcheck() {
  for t in "$dir"/tests/gpu_*; do
    [[ -n "$filter" && "$(basename "$t")" != *$filter* ]] && continue
    case $(basename "$t") in
      gpu_bitmap*) for f in gpu_decompression compression_by_heads_matches compression_of_fills; do
          sanitize memcheck "$t" "$f"
        done ;;
      *) sanitize memcheck "$t" ;;
    esac
  done
}

# Whether compute-sanitizer is here; a mode that asked only for it fails without it.
have_sanitizer() {
  command -v compute-sanitizer > /dev/null && return 0
  summary+=("compute-sanitizer is not on PATH: no sanitizer runs")
  [[ $mode == all ]] || fail=1
  return 1
}
case $mode in
  all) run_tests; have_sanitizer && memcheck ;;
  run) run_tests ;;
  memcheck) have_sanitizer && memcheck ;;
  racecheck)
    if have_sanitizer; then
      for t in "$dir"/tests/gpu_query-* "$dir"/tests/gpu_huffman-*; do
        sanitize racecheck "$t" "" --racecheck-report all --print-limit 20
        grep -E "hazard|Write Thread|Read Thread|at .*\.cu" "$out/racecheck-$(basename "$t").log" | head -30
      done
    fi ;;
  initcheck)
    if have_sanitizer; then
      for t in "$dir"/tests/gpu_query-*; do sanitize initcheck "$t"; done
    fi ;;
  *) echo "unknown mode '$mode' (all, run, memcheck, racecheck, initcheck)" >&2; exit 2 ;;
esac
echo "== $(cat "$out/device.txt")"
printf '%s\n' "${summary[@]}"
exit $fail
