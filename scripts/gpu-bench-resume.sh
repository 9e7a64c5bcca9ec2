#!/usr/bin/env bash
# A long `tessera-bench gpu` run split over several device calls (each call is limited to 10
# minutes; the issue's 250 M values a set take longer than that for the whole sweep).
#
#   scripts/gpu-bench-resume.sh SECONDS PARTIAL.json|- VALUES SET...
#
# runs, until SECONDS have passed, `tessera-bench gpu --values VALUES` on the SETs (exact names)
# that PARTIAL.json does not hold yet, merged with it (`--merge`). The bench writes its JSON and
# Markdown after every set, so a run that reaches its deadline keeps the sets it finished; the
# next call passes that JSON back as PARTIAL. Results go to $OUT/results, the log to $OUT.
# A workflow tool for the GPU machine: nothing at build, test or run time calls it.
set -uo pipefail
secs=$1 partial=$2 values=$3
shift 3
out=${OUT:-/tmp/tessera-out}
mkdir -p "$out/results"
bin=${TESSERA_BENCH_BIN:-target/device/bin/tessera-bench}
# The SETs the partial JSON lacks, in order, each as an exact filter (=NAME).
if [[ "$partial" == - ]]; then
  left=("${@/#/=}")
else
  mapfile -t left < <(python3 - "$partial" "$@" <<'PY'
import json, sys
done = {x["name"] for x in json.load(open(sys.argv[1]))["sets"]}
print("\n".join("=" + s for s in sys.argv[2:] if s not in done))
PY
  )
  [[ ${#left[@]} -eq 1 && -z "${left[0]}" ]] && left=()
fi
if [[ ${#left[@]} -eq 0 ]]; then echo "every set is done"; exit 0; fi
args=(gpu --values "$values" --runs 7 --out "$out/results" --sets "$(IFS=,; echo "${left[*]}")")
[[ "$partial" != - ]] && args+=(--merge "$partial")
echo "${#left[@]} set(s) left: ${left[*]}"
timeout --signal=INT "$secs" "$bin" "${args[@]}" >> "$out/bench.log" 2>&1
rc=$?
echo "bench rc=$rc"
grep -E '^\s*\(|^[a-z0-9]' "$out/bench.log" | tail -3
exit $rc
