#!/usr/bin/env bash
# One GPU-machine session over a bundle made by ../shared/device/bundle.sh (target/device/):
#   scripts/gpu-session.sh tests [FILTER]   every bundled test binary with TESSERA_REQUIRE_GPU=1,
#                                           then compute-sanitizer memcheck on the GPU tests
#   scripts/gpu-session.sh bench SUITES     tessera bench SUITE --quick for each (bitmap, huffman,
#                                           lll, gpu), nvCOMP on the dumped bytes when .whl/ is here
# Logs and results go under $OUT (the device tool brings them back); a short summary prints last.
set -uo pipefail
out=${OUT:-/tmp/tessera-out}; mkdir -p "$out"
export TESSERA_BIN=$PWD/target/device/bin/tessera TESSERA_REQUIRE_GPU=1 RUST_BACKTRACE=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/device.txt" 2>&1
summary=()
case "${1:-tests}" in
tests)
  filter=${2:-}
  for t in target/device/tests/*; do
    name=$(basename "$t")
    [[ -n "$filter" && "$name" != *$filter* ]] && continue
    if timeout 300 "$t" --test-threads=1 > "$out/test-$name.log" 2>&1; then r=pass; else r="FAIL($?)"; fi
    summary+=("$name: $r $(grep -E '^test result' "$out/test-$name.log" | tail -1)")
  done
  if command -v compute-sanitizer > /dev/null; then
    for t in target/device/tests/gpu_*; do
      name=$(basename "$t")
      [[ -n "$filter" && "$name" != *$filter* ]] && continue
      timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 "$t" --test-threads=1 \
        > "$out/memcheck-$name.log" 2>&1
      summary+=("memcheck $name: rc=$? $(grep -E 'ERROR SUMMARY' "$out/memcheck-$name.log" | tail -1)")
    done
  fi
  ;;
bench)
  shift
  data=$(ls bench/data/* 2>/dev/null | paste -sd, -)
  if ls .whl/*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > "$out/pip.log" 2>&1
  fi
  for s in "$@"; do
    args=(--quick --out "$out/results")
    case $s in
      huffman|lll) args+=(--dump "/tmp/dump-$s"); [[ -n "$data" ]] && args+=(--input "$data") ;;
    esac
    timeout 420 target/device/bin/tessera bench "$s" "${args[@]}" > "$out/bench-$s.log" 2>&1
    summary+=("bench $s: rc=$?")
    if [[ ( $s == huffman || $s == lll ) && -d /tmp/site && -f bench/peers/nvcomp_bytes.py ]]; then
      PYTHONPATH=/tmp/site timeout 240 python3 bench/peers/nvcomp_bytes.py --data "/tmp/dump-$s" \
        --out "$out/results/nvcomp-$s" > "$out/nvcomp-$s.log" 2>&1
      summary+=("nvcomp $s: rc=$?")
    fi
  done
  ;;
esac
echo "== $(cat "$out/device.txt")"
printf '%s\n' "${summary[@]}"
