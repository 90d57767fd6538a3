#!/usr/bin/env bash
# Fuzzing of every reader of other people's files (fuzz/, docs/THREAT_MODEL.md). Builds the `fuzz`
# preset (clang 14, libFuzzer, ASan + UBSan, leaks checked) and runs every target on a copy of its
# seed corpus (fuzz/corpus/<target>/) as libFuzzer jobs in a pool of nproc workers.
#   ci/fuzz.sh ci [SECONDS]        each target for SECONDS (default 20): the bounded CI run
#   ci/fuzz.sh nightly [RUNS]      each target to RUNS executions (default 10000000)
# Nightly, each target's RUNS are split into FUZZ_JOBS jobs (default 32) of RUNS/FUZZ_JOBS
# executions each, sharing the target's corpus (each job picks up the others' finds). The jobs are
# queued target by target, cheapest target first: every core stays busy until the last job (a job
# is a small share of a target), and under a deadline the cheap targets complete rather than every
# target stopping part way. A job's count is exact (libFuzzer's -runs), so a target's executions
# are the sum over its jobs.
# Environment (folders from the caller's folder, absolute or relative):
#   OUT            output folder (default fuzz-out/ in the repository): summary.md, each job's log
#                  (logs/), the grown corpora (corpus/), crash, leak, timeout and out-of-memory
#                  inputs (crashes/)
#   FUZZ_BIN       folder of already built targets: no build (e.g. binaries copied to another host)
#   FUZZ_WORKERS   parallel jobs (default nproc)
#   FUZZ_JOBS      jobs per target in nightly mode (default 32)
#   FUZZ_TARGETS   space-separated subset of the targets to run (default: all of them)
#   FUZZ_DEADLINE  seconds: no job runs past this time after the start (-max_total_time); a target
#                  that stops short of RUNS is reported short and fails the run
# Exit status: 0 when every target reached its executions with nothing found, 1 otherwise, 2 when
# the build failed.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$(realpath -m -- "${OUT:-$ROOT/fuzz-out}")"
FUZZ_BIN="${FUZZ_BIN:+$(realpath -m -- "$FUZZ_BIN")}"
cd "$ROOT"
MODE="${1:-ci}"
WORKERS="${FUZZ_WORKERS:-$(nproc)}"
case "$MODE" in
  ci) SECONDS_EACH="${2:-20}"; JOBS=1 ;;
  nightly) RUNS="${2:-10000000}"; JOBS="${FUZZ_JOBS:-32}" ;;
  *) echo "usage: ci/fuzz.sh ci [SECONDS] | nightly [RUNS]" >&2; exit 2 ;;
esac
# Cheapest first, by executions per CPU second in the nightly run of 2026-12-01 (docs/THREAT_MODEL.md,
# "Last measured"): H200 host (16 vCPUs): safetensors header 21.0k, config.json 21.2k, HTTP request
# 15.6k, client responses 9.7k, golden 8.2k, results 4.4k; development machine (AMD EPYC, about twice
# as fast per core): trace 10.4k, scenario 8.0k, tokenizer files 3.9k.
TARGETS=(fuzz_safetensors_header fuzz_hf_config fuzz_http_request fuzz_client_response fuzz_golden fuzz_results
  fuzz_trace fuzz_scenario fuzz_tokenizer)
# Largest input each target generates (libFuzzer's -max_len). Every execution parses its whole
# input, so the time per execution grows with it: the limits sit just above the largest seed of each
# corpus (fuzz/corpus/regenerate.sh and text_seeds.py keep the seeds as small as their formats
# allow, a seed larger than its limit would be cut and no longer parse), about 1.5x the largest
# seed for the small formats, and never below 1 KiB.
declare -A MAX_LEN=([fuzz_hf_config]=2048 [fuzz_http_request]=2048 [fuzz_client_response]=2560
  [fuzz_safetensors_header]=1024 [fuzz_tokenizer]=3584 [fuzz_scenario]=1536 [fuzz_golden]=2048
  [fuzz_trace]=2816 [fuzz_results]=2560)
if [[ -n "${FUZZ_TARGETS:-}" ]]; then
  for t in $FUZZ_TARGETS; do
    [[ " ${TARGETS[*]} " == *" $t "* ]] || { echo "fuzz: unknown target $t (targets: ${TARGETS[*]})" >&2; exit 2; }
  done
  read -ra TARGETS <<<"$FUZZ_TARGETS"
fi

mkdir -p "$OUT"
if [[ -n "${FUZZ_BIN:-}" ]]; then
  [[ -d $FUZZ_BIN ]] || { echo "fuzz: FUZZ_BIN $FUZZ_BIN is not a folder" >&2; exit 2; }
  BIN="$FUZZ_BIN"
else
  BIN="$PWD/build/fuzz/fuzz"
  cmake --preset fuzz >"$OUT/configure.log" 2>&1 && cmake --build --preset fuzz -j"$WORKERS" >"$OUT/build.log" 2>&1 || {
    tail -20 "$OUT/configure.log" "$OUT/build.log"; echo "fuzz: build failed (logs in $OUT/)" >&2; exit 2; }
fi
for t in "${TARGETS[@]}"; do
  [[ -x "$BIN/$t" ]] || { echo "fuzz: $BIN/$t missing" >&2; exit 2; }
  for seed in fuzz/corpus/"$t"/*; do
    (($(stat -c %s "$seed") <= MAX_LEN[$t])) || { echo "fuzz: $seed is larger than $t's -max_len ${MAX_LEN[$t]}" >&2; exit 2; }
  done
  mkdir -p "$OUT/corpus/$t" "$OUT/crashes/$t" "$OUT/logs"
  cp -n fuzz/corpus/"$t"/* "$OUT/corpus/$t"/ 2>/dev/null
done

# ASan records the call stack of every allocation and free (30 frames by default); in these targets
# that is a fifth to a third of the time per execution (perf, fuzz_tokenizer and fuzz_scenario). Two
# frames keep 1.2-1.3x the executions; a crash still prints its full stack, and a leak's or a
# use-after-free's whole allocation stack comes from running the saved input (crashes/) again alone:
#   ASAN_OPTIONS=detect_leaks=1 build/fuzz/fuzz/TARGET INPUT
export ASAN_OPTIONS="${ASAN_OPTIONS:-malloc_context_size=2}"
# Known false positives of the sanitizer runtime itself (a thread start racing a leak check), by
# their glibc frames: ci/lsan_suppressions.txt says which and why.
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$PWD/ci/lsan_suppressions.txt}"
START=$(date +%s)
# One libFuzzer job: TARGET INDEX. Leaks are checked at exit of every input (ASan's
# detect_leaks, libFuzzer's -detect_leaks=1).
run_job() {
  local t="$1" i="$2" limit=()
  eval "$MAX_LEN_TABLE"  # associative arrays do not pass through the environment
  if [[ $MODE == ci ]]; then
    limit=(-max_total_time="$SECONDS_EACH")
  else
    limit=(-runs="$(((RUNS + JOBS - 1) / JOBS))")
    if [[ -n "${FUZZ_DEADLINE:-}" ]]; then
      local left=$((START + FUZZ_DEADLINE - $(date +%s)))
      ((left < 1)) && { echo "skipped: deadline" >"$OUT/logs/$t.$i.log"; return 0; }
      limit+=(-max_total_time="$left")
    fi
  fi
  "$BIN/$t" "${limit[@]}" -max_len="${MAX_LEN[$t]}" -timeout=10 -rss_limit_mb=2048 -detect_leaks=1 -print_final_stats=1 \
    -artifact_prefix="$OUT/crashes/$t/job$i-" "$OUT/corpus/$t" >"$OUT/logs/$t.$i.log" 2>&1
  echo "exit $?" >>"$OUT/logs/$t.$i.log"
}
export -f run_job
export MODE OUT BIN START JOBS SECONDS_EACH RUNS FUZZ_DEADLINE 2>/dev/null
export MAX_LEN_TABLE="$(declare -p MAX_LEN)"
for t in "${TARGETS[@]}"; do for ((i = 0; i < JOBS; i++)); do echo "$t $i"; done; done |
  xargs -P "$WORKERS" -L 1 bash -c 'run_job "$0" "$1"'
WALL=$(($(date +%s) - START))

status=0
{
  echo "# samebits fuzzing ($MODE: $([[ $MODE == ci ]] && echo "${SECONDS_EACH} s per target" || echo "$RUNS executions per target in $JOBS jobs"), $WORKERS workers, ${WALL} s)"
  echo
  echo "| target | executions | jobs | crashes | leaks | timeouts | out of memory | result |"
  echo "|---|---:|---:|---:|---:|---:|---:|---|"
} >"$OUT/summary.md"
for t in "${TARGETS[@]}"; do
  runs=0 failed_jobs=0 jobs_run=0
  for log in "$OUT"/logs/"$t".*.log; do
    grep -q '^skipped' "$log" && continue
    jobs_run=$((jobs_run + 1))
    # The final count, or the last status line where a job ended without its final stats.
    n=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1)
    [[ -z $n ]] && n=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
    runs=$((runs + ${n:-0}))
    grep -q '^exit 0$' "$log" || failed_jobs=$((failed_jobs + 1))
  done
  count() { find "$OUT/crashes/$t" -type f -name "job*-$1-*" | wc -l; }
  crashes=$(count crash) leaks=$(count leak) timeouts=$(count timeout) ooms=$(count oom)
  result=ok
  ((crashes + leaks + timeouts + ooms > 0 || failed_jobs > 0)) && result="FAILED ($failed_jobs job(s) exited non-zero)"
  [[ $MODE == nightly ]] && ((runs < RUNS)) && [[ $result == ok ]] && result="SHORT of $RUNS"
  [[ $result != ok ]] && status=1
  echo "| $t | $runs | $jobs_run | $crashes | $leaks | $timeouts | $ooms | $result |" >>"$OUT/summary.md"
done
cat "$OUT/summary.md"
exit $status
