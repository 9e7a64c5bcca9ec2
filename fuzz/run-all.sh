#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 600) each, two at a time, on stable Rust
# (`-s none`: no sanitizer). Crashes land in fuzz/artifacts/TARGET/; commit each one under
# testdata/fuzz-regressions/ with a test that replays it. Usage: fuzz/run-all.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-600}
python3 seeds.py
cargo fuzz build -s none
run() { cargo fuzz run -s none "$1" -- -max_total_time="$secs" -print_final_stats=1 > "logs/$1.log" 2>&1 || echo "$1 FAILED" ; }
mkdir -p logs
targets=(decode_for decode_dfor decode_rfor decode_huffman decode_lll decode_utf8 round_trip container_open decode_wah
         decode_plwah bitmap_ops orc_file)
for ((i = 0; i < ${#targets[@]}; i += 2)); do
  run "${targets[i]}" &
  [ $((i + 1)) -lt ${#targets[@]} ] && run "${targets[i+1]}" &
  wait
done
for t in "${targets[@]}"; do echo "$t: $(grep -E '^Done|stat::number_of_executed_units' "logs/$t.log" | tail -1)"; done
