#!/usr/bin/env bash
# compute-sanitizer over every gpu test (the GPU nightly gate runs it; docs/THREAT_MODEL.md):
#   memcheck  --leak-check full: out-of-bounds and misaligned device accesses, device memory not
#             freed by the end of the process; the tests' full shapes
#   racecheck shared-memory hazards; with SAMEBITS_GPU_SANITIZER_SHAPES=1, so the heaviest sweeps run
#             their reduced shape lists (tests/gpu/gpu_test_support.h: every kernel route and every
#             assertion stays, racecheck slows shared-memory kernels 100-1000x)
# Each test case is its own process (a shard), so one slow case cannot hide the others and a crash
# names its case; shards run WORKERS at a time on the one GPU, each under a time limit.
#   ci/gpu_sanitizers.sh GPU_TESTS_BINARY OUT [WORKERS] [SECONDS_PER_SHARD] [GTEST_FILTER]
# Writes OUT/sanitizers.md (one row per tool and test: clean, errors, hazards, test failure, killed,
# crash or time-out; seconds; the shard's peak host memory) and OUT/sanitizers.log (every shard's
# output, one after the other).
# The mutation suite is left out: it runs the same kernels as the engine tests, 13 times over, and
# its test-only mutants keep scratch buffers for the life of the process.
# SANITIZER_DEADLINE (seconds from the start): no shard runs past it; shards not started by then
# are reported NOT RUN (for a run that must end by a given time).
# KILLED: the test process ended by a signal before its tests reported (racecheck of an engine test
# held ~90 GB of host memory, H200 machine, 2026-12-03: a few of them side by side met the host's
# out-of-memory killer; since the engine tests under racecheck wait for their steps by a stream
# synchronize, 2-20 GiB: tests/gpu/gpu_test_support.h); such shards run again one at a time once the
# others are done. With WORKERS=1 every shard already ran alone, so a KILLED one is reported as such
# and not run again (GpuScheduleAhead.InvariantModeGivesTheSameBitsWhileDiscardingRows under
# racecheck, alone on an H100 machine of 128 GiB, 2026-12-07: killed after 234 s; its second run only
# spent the rest of the deadline).
# Peak host memory: each shard runs under GNU time (/usr/bin/time, Debian's package time; without
# it the column reads "-"), whose %M is the largest resident set of the sanitizer and of the test
# process it waits for, the test's even when a signal ends it (so a KILLED row beside the host's
# total, printed above the table, says whether the out-of-memory killer is the likely signal). A
# shard stopped by its time limit ends GNU time with it: "-".
# SANITIZER_TOOLS: the tools to run (default "memcheck racecheck"; e.g. racecheck alone where only
# its cases are to be rerun).
# THIRD_PARTY: racecheck reports hazards inside cuBLASLt's own GEMM kernels (nvjet_sm90_*, which
# default-mode linear calls): closed code that samebits cannot read or change, and racecheck cannot
# be told to skip them (--kernel-name-exclude makes the tool fail on those launches: "failed to
# handle a hardware exception", H200, compute-sanitizer 2025.3.1). A shard whose every hazard lies in
# those kernels is listed "clean (cuBLASLt's kernels only: N hazards ...)" and not counted; any
# hazard in a samebits kernel is.
THIRD_PARTY='^nvjet_'
# Exit status: 0 when every shard of both tools is clean, 1 otherwise, 2 on bad arguments; 143
# when stopped by a signal (TERM, INT, HUP), its running shards stopped with it.
set -uo pipefail
BIN="${1:?usage: ci/gpu_sanitizers.sh GPU_TESTS_BINARY OUT [WORKERS] [SECONDS_PER_SHARD] [GTEST_FILTER]}"
OUT="${2:?usage: ci/gpu_sanitizers.sh GPU_TESTS_BINARY OUT [WORKERS] [SECONDS_PER_SHARD] [GTEST_FILTER]}"
WORKERS="${3:-4}"
LIMIT="${4:-600}"
FILTER="${5:-*}"
[[ -x $BIN ]] || { echo "gpu_sanitizers: $BIN is not an executable" >&2; exit 2; }
SANITIZER="${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer"
command -v compute-sanitizer >/dev/null && SANITIZER=compute-sanitizer
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
TOOLS="${SANITIZER_TOOLS:-memcheck racecheck}"
for tool in $TOOLS; do
  [[ $tool == memcheck || $tool == racecheck ]] || { echo "gpu_sanitizers: unknown tool $tool" >&2; exit 2; }
done
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# Stopped (TERM, INT, HUP: an outer time limit), the script stops its shards first: each runs in a
# process group of its own (timeout's), which outlived the script before and ran on into the next
# step of the call (a benchmark on a shared GPU, H100 2026-12-06).
queue=""
stop_shards() {
  [[ -n $queue ]] && kill "$queue" 2>/dev/null
  local f
  for f in "$WORK"/running.*; do
    [[ -f $f ]] && kill -TERM -- "-$(cat "$f")" 2>/dev/null
  done
}
trap 'stop_shards; exit 143' TERM INT HUP

# Test cases, "Suite.Name" one a line (typed and parameterised names keep their suffixes).
"$BIN" --gtest_list_tests --gtest_filter="$FILTER:-GpuMutationSuite.*" |
  awk '/^[^ ]/ {suite = $1} /^  / {print suite $1}' >"$WORK/cases"
[[ -s $WORK/cases ]] || { echo "gpu_sanitizers: no test case matches $FILTER" >&2; exit 2; }

# The log of shard TOOL CASE (one file per shard; a case's "/" becomes "_").
shard_log() { echo "$WORK/$1.${2//\//_}.log"; }
# One shard: TOOL CASE. Its log ends with a line "result: ..." and "seconds: N" (and "peak host
# memory: X GiB" where GNU time reported it).
run_shard() {
  local tool="$1" case="$2" extra=() env=() mem=() log start rc result
  log=$(shard_log "$tool" "$case")
  [[ -x /usr/bin/time ]] && mem=(/usr/bin/time -f 'peak_kib: %M' -o "$log.mem")
  [[ $tool == memcheck ]] && extra=(--leak-check full)
  [[ $tool == racecheck ]] && env=(SAMEBITS_GPU_SANITIZER_SHAPES=1)
  start=$(date +%s)
  local limit=$LIMIT
  if [[ -n ${SANITIZER_DEADLINE:-} ]]; then
    local left=$((START + SANITIZER_DEADLINE - start))
    ((left < 5)) && return 0
    ((left < limit)) && limit=$left
  fi
  # (timeout leads a process group of its own, which a kill of this script's group does not reach:
  # its pid is kept in WORK while it runs, for stop_shards)
  env SAMEBITS_REQUIRE_GPU=1 "${env[@]}" timeout --kill-after=15 "$limit" "${mem[@]}" \
    "$SANITIZER" --tool "$tool" "${extra[@]}" --error-exitcode 3 \
    "$BIN" --gtest_brief=1 --gtest_filter="$case" >"$log" 2>&1 &
  local pid=$!
  echo "$pid" >"$WORK/running.$pid"
  wait "$pid"
  rc=$?
  rm -f "$WORK/running.$pid"
  if ((rc == 124 || rc == 137)); then
    result="TIME-OUT after ${limit} s"
  elif ((rc != 0 && rc != 3)) && grep -q "process didn't terminate successfully" "$log" &&
    ! grep -qE '^\[  (PASSED|FAILED)  \]' "$log"; then
    # The test process ended by a signal before its tests reported: see KILLED above.
    result="KILLED (exit $rc before the test reported$( ((WORKERS > 1)) || echo '; it ran alone, not run again'))"
  elif [[ $tool == memcheck ]] && ! grep -q '^========= ERROR SUMMARY: 0 errors' "$log"; then
    result="ERRORS: $(grep -h '^========= ERROR SUMMARY' "$log" | tail -1 | sed 's/^========= //')"
    [[ $result == "ERRORS: " ]] && result="CRASH (exit $rc, no summary)"
  elif [[ $tool == racecheck ]] && ! grep -q '^========= RACECHECK SUMMARY: 0 hazards' "$log"; then
    result="HAZARDS: $(grep -h '^========= RACECHECK SUMMARY' "$log" | tail -1 | sed 's/^========= //')"
    [[ $result == "HAZARDS: " ]] && result="CRASH (exit $rc, no summary)"
    # Hazards whose both accesses lie in cuBLASLt's own kernels (nvjet_*, default-mode linear) are
    # reported, not counted: see THIRD_PARTY above.
    local kernels
    kernels=$(grep -oE 'access at [A-Za-z_0-9]+' "$log" | sed 's/^access at //' | sort -u)
    if [[ $result == HAZARDS:* && -n $kernels ]] && ! grep -qvE "$THIRD_PARTY" <<<"$kernels" && ((rc == 0 || rc == 3)) &&
      grep -q '^\[  PASSED  \]' "$log"; then
      result="clean (cuBLASLt's kernels only: $(grep -h '^========= RACECHECK SUMMARY' "$log" | tail -1 | grep -oE '[0-9]+ hazards') in $(wc -l <<<"$kernels" | tr -d ' ') nvjet kernel(s), not counted)"
    fi
  elif ((rc != 0)); then
    result="TEST FAILED (exit $rc)"
  elif grep -q '^\[  SKIPPED \]' "$log"; then
    result="SKIPPED"
  else
    result=clean
  fi
  printf 'result: %s\nseconds: %d\n' "$result" $(($(date +%s) - start)) >>"$log"
  local kib
  kib=$(sed -n 's/^peak_kib: //p' "$log.mem" 2>/dev/null)
  [[ -n $kib ]] && awk -v k="$kib" 'BEGIN {printf "peak host memory: %.1f GiB\n", k / 1048576}' >>"$log"
  rm -f "$log.mem"
}
START=$(date +%s)
export -f run_shard shard_log
export WORK WORKERS LIMIT SANITIZER BIN START THIRD_PARTY SANITIZER_DEADLINE 2>/dev/null
# The tools' shards in one queue, slowest-looking first (the attention, linear, engine and graph tests).
for tool in $TOOLS; do sed "s/^/$tool /" "$WORK/cases"; done |
  awk '{heavy = ($2 ~ /^Gpu(Attention|Linear|Engine|Graphs)\./); print heavy ? 0 : 1, $0}' | sort -s -k1,1 | cut -d' ' -f2- |
  xargs -P "$WORKERS" -L 1 bash -c 'run_shard "$0" "$1"' &
queue=$!
wait "$queue"  # (in the background and waited for, so that a signal's trap runs at once)
queue=""

# KILLED shards run again, one at a time, now that the others are done (deadline permitting); the
# first try's log stays in front of the second's. With one worker they ran alone already.
for tool in $TOOLS; do
  ((WORKERS > 1)) || break
  while read -r case; do
    log=$(shard_log "$tool" "$case")
    [[ -f $log ]] && grep -q '^result: KILLED' "$log" || continue
    mv "$log" "$log.first"
    run_shard "$tool" "$case" </dev/null  # (not the case list this loop reads)
    [[ -f $log ]] || { mv "$log.first" "$log"; continue; }
    again=$(sed -n 's/^result: //p' "$log" | tail -1)
    { cat "$log.first"; echo "----- run again alone"; cat "$log"; echo "result: $again (run alone; beside other shards: $(sed -n 's/^result: //p' "$log.first" | tail -1))"; } >"$log.both"
    mv "$log.both" "$log"
  done <"$WORK/cases"
done

status=0
{
  echo "# compute-sanitizer over the gpu tests ($(basename "$BIN"); $WORKERS shards at a time, ${LIMIT} s each; $(($(date +%s) - START)) s)"
  awk '/^MemTotal:/ {printf "host memory: %.1f GiB\n", $2 / 1048576}' /proc/meminfo
  echo
  echo "| tool | test | result | seconds | peak host memory (GiB) |"
  echo "|---|---|---|---:|---:|"
} >"$OUT/sanitizers.md"
: >"$OUT/sanitizers.log"
for tool in $TOOLS; do
  clean=0 total=0
  while read -r case; do
    log=$(shard_log "$tool" "$case")
    [[ -f $log ]] || echo "result: NOT RUN (deadline)" >"$log"
    result=$(sed -n 's/^result: //p' "$log" | tail -1)
    seconds=$(sed -n 's/^seconds: //p' "$log" | tail -1)
    peak=$(sed -n 's/^peak host memory: \([0-9.]*\) GiB$/\1/p' "$log" | tail -1)
    total=$((total + 1))
    if [[ $result == clean* ]]; then clean=$((clean + 1)); else status=1; fi
    echo "| $tool | $case | ${result:-NOT RUN} | ${seconds:-} | ${peak:--} |" >>"$OUT/sanitizers.md"
    { echo "===== $tool $case"; cat "$log"; } >>"$OUT/sanitizers.log"
  done <"$WORK/cases"
  echo "$tool: $clean of $total test cases clean" >>"$WORK/totals"
done
{ echo; sed 's/^/    /' "$WORK/totals"; } >>"$OUT/sanitizers.md"
cat "$OUT/sanitizers.md"
exit $status
