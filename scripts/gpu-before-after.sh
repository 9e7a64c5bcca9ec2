#!/usr/bin/env bash
# Quick benches of every suite on the GPU machine, before and after a change, in one call:
#   scripts/gpu-before-after.sh BEFORE_BIN AFTER_BIN [SUITE...]
# BEFORE_BIN and AFTER_BIN are programs that run a suite as `PROG SUITE --quick --out DIR`
# (`tessera-bench`, or an older `tessera bench` wrapped by a script); $BENCH_ARGS is added to
# every run (e.g. `--values 50000000 --bytes 268435456`). Each suite runs before, then after, in
# the same call; results go to $OUT/ba/{before,after} and one log per suite to $OUT, the
# tables printed last.
# A workflow tool for the GPU machine: nothing at build, test or run time calls it.
set -uo pipefail
before=$1 after=$2; shift 2
suites=("$@"); [[ ${#suites[@]} -gt 0 ]] || suites=(gpu bitmap huffman lll)
out=${OUT:-/tmp/tessera-out}
mkdir -p "$out/ba/before" "$out/ba/after"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
for s in "${suites[@]}"; do
  log=$out/ba-$s.log
  : > "$log"
  for run in before after; do
    prog=$before; [[ $run == after ]] && prog=$after
    echo "=== $s $run: $prog" >> "$log"
    # shellcheck disable=SC2086
    timeout "${SUITE_SECS:-150}" "$prog" "$s" --quick ${BENCH_ARGS:-} --out "$out/ba/$run" >> "$log" 2>&1
    echo "=== rc=$?" >> "$log"
  done
done
for s in "${suites[@]}"; do echo "## $s"; grep -E "^=== |GB/s|%" "$out/ba-$s.log" | tail -40 | cut -c1-220; done
