#!/usr/bin/env bash
# Builds every fuzz target in fuzz/ with libFuzzer's coverage instrumentation on the stable
# toolchain (the flags cargo-fuzz passes, without a sanitizer, which needs nightly) and runs each
# for SECS seconds (default 25) from an empty corpus under $FUZZ_DIR (default /tmp/tessera-fuzz).
#   scripts/fuzz-smoke.sh [SECS] [TARGET...]
# Exit status 1 when a target finds a crash (its input is left in the corpus folder). A workflow
# tool: nothing at build, test or run time calls it.
set -uo pipefail
cd "$(dirname "$0")/../fuzz"
secs=${1:-25}; shift || true
dir=${FUZZ_DIR:-/tmp/tessera-fuzz}
triple=$(rustc -vV | sed -n 's/^host: //p')
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks"
# --target keeps RUSTFLAGS off build scripts, which must not be instrumented.
cargo build --release --target "$triple" --target-dir "$dir/target" || exit 2
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || mapfile -t targets < <(sed -n 's/^name = "\(.*\)"/\1/p' Cargo.toml | grep -v '^tessera-fuzz$')
fail=0
for t in "${targets[@]}"; do
  mkdir -p "$dir/corpus/$t"
  log=$dir/$t.log
  if "$dir/target/$triple/release/$t" -max_total_time="$secs" -rss_limit_mb=2048 \
      -artifact_prefix="$dir/corpus/$t/" "$dir/corpus/$t" > "$log" 2>&1; then
    echo "$t: ok, $(grep -E '^Done [0-9]+ runs' "$log")"
  else
    echo "$t: CRASH (see $log)"; fail=1
  fi
done
exit $fail
