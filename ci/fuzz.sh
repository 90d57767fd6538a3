#!/usr/bin/env bash
# Fuzzing of every reader of other people's files (fuzz/, docs/THREAT_MODEL.md). Builds the `fuzz`
# preset (clang 14, libFuzzer, ASan + UBSan, leaks checked) and runs each target in turn on a copy
# of its seed corpus (fuzz/corpus/<target>/), one process at a time.
#   ci/fuzz.sh ci [SECONDS]        each target for SECONDS (default 20): the bounded CI run
#   ci/fuzz.sh nightly [RUNS]      each target to RUNS executions (default 10000000)
# OUT (default fuzz-out/) receives each target's log, its grown corpus and any crash input, and
# summary.md: target, executions, seconds, crashes (crash, leak, timeout or out-of-memory inputs).
# Exit status: 0 when no target found anything, 1 otherwise, 2 when the build failed.
set -uo pipefail
cd "$(dirname "$0")/.."
MODE="${1:-ci}"
OUT="${OUT:-fuzz-out}"
case "$MODE" in
  ci) LIMIT=(-max_total_time="${2:-20}") ;;
  nightly) LIMIT=(-runs="${2:-10000000}") ;;
  *) echo "usage: ci/fuzz.sh ci [SECONDS] | nightly [RUNS]" >&2; exit 2 ;;
esac
TARGETS=(fuzz_scenario fuzz_golden fuzz_results fuzz_trace fuzz_hf_config fuzz_safetensors_header)
# The HTTP request parser of `samebits serve`, once it exists.
[[ -f harness/serve/openai_request.h ]] && TARGETS+=(fuzz_http_request)

mkdir -p "$OUT"
cmake --preset fuzz >"$OUT/configure.log" 2>&1 && cmake --build --preset fuzz -j"$(nproc)" >"$OUT/build.log" 2>&1 || {
  tail -20 "$OUT/configure.log" "$OUT/build.log"; echo "fuzz: build failed (logs in $OUT/)" >&2; exit 2; }

status=0
{
  echo "# samebits fuzzing ($MODE: ${LIMIT[*]})"
  echo
  echo "| target | executions | seconds | crashes |"
  echo "|---|---:|---:|---:|"
} >"$OUT/summary.md"
for t in "${TARGETS[@]}"; do
  corpus="$OUT/corpus/$t"
  mkdir -p "$corpus" "$OUT/crashes/$t"
  cp -n fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null
  start=$(date +%s)
  ./build/fuzz/fuzz/"$t" "${LIMIT[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$OUT/crashes/$t/" "$corpus" >"$OUT/$t.log" 2>&1
  rc=$?
  seconds=$(($(date +%s) - start))
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$OUT/$t.log" | grep -oE '[0-9]+$' | tail -1)
  crashes=$(find "$OUT/crashes/$t" -type f | wc -l)
  ((rc != 0 || crashes != 0)) && status=1
  echo "| $t | ${runs:-?} | $seconds | $crashes$( ((rc != 0)) && echo " (exit $rc)") |" >>"$OUT/summary.md"
  echo "fuzz: $t: ${runs:-?} executions in ${seconds}s, $crashes crash input(s), exit $rc"
done
cat "$OUT/summary.md"
exit $status
