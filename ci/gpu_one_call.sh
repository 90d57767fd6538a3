#!/usr/bin/env bash
# Issue 9's evidence from one device call, as bench/cuda/notes/calls.md's one-call sections take it:
#   ci/gpu_one_call.sh BIN_DIR OUT [SECONDS]
# BIN_DIR holds bench_cuda_attention, bench_cuda_matmul, gpu_tests, samebits and lib/ (the bundled
# shared libraries): ci/pack_gpu_call.sh packs them from a build into one archive, and
# ci/gpu_one_call_packed.sh ARCHIVE OUT [SECONDS] runs this call from it on the device. The steps,
# the tables' inputs first so that a call cut short still has them:
#   card            nvidia-smi's line -> OUT/gpu.txt. REQUIRE_CARD=TEXT: a card whose line lacks TEXT
#                   runs nothing (exit 3): the targets are the H200's, and a loan may give another card
#   attention1, attention2   bench_cuda_attention twice (the tables keep each row's best, and leave
#                   out a run whose copy bandwidth says the device was shared)
#   matmul          bench_cuda_matmul: the 60 cases against cuBLASLt
#   sdpa            bench/cuda/sdpa_reference.py: the library kernels on the same shapes (torch)
#   golden_feynman_ci, golden_mutation   samebits golden check --backend cuda
#   gpu_tests       GPU_TESTS_FILTER (default: all but GpuFixedExpf.*, the exp's sweep over all 2^32
#                   inputs, ~40 s, which neither attention nor matmul touches)
#   golden_feynman  the full scenario: 1000 completions in both modes
#   sanitizers      ci/gpu_sanitizers.sh, 4 shards at a time, over SANITIZER_FILTER (default: the
#                   rmsnorm, prefill, output and mixed-batch tests, the kernels changed most), both
#                   tools on the reduced shapes (SAMEBITS_GPU_SANITIZER_SHAPES=1: every kernel route,
#                   fewer sizes), with a deadline inside the step's limit so that no shard outlives it;
#                   last, with up to 200 s: under racecheck beside the other shards the prefill's
#                   chunking and prefix test takes over 100 s (cut off at 102 s on the H200, 157 s
#                   on an H100 in a sweep of 8 shards; 12-07), more than the 105 s that a shard had
#                   when the step's limit was 125
# then OUT/tables.md and OUT/tables.json: bench/cuda/one_call_tables.py over the benches, with the
# card, the gpu tests and the sanitizers below the tables (written after sdpa too).
# Each step's limit (its usual need on an H200, with room) is cut to what is left of SECONDS
# (default 570: inside the device tool's 600 s a command); a step with under 5 s left is NOT RUN.
# Logs go straight into OUT, so a call stopped from outside keeps what ran; at the end all of OUT is
# packed into OUT/one_call.tgz as well (the device tool brings back only a few files of OUT: keep
# that one there, `find "$OUT" -mindepth 1 ! -name one_call.tgz -delete`). The last lines: one a
# step (exit status, seconds, limit), then the tables' verdicts.
# Exit status: 0 every step ran and ended 0; 1 a step failed or did not run; 2 bad arguments (OUT
# must be new or empty);
# 3 the card is not the one REQUIRE_CARD names (nothing run).
set -uo pipefail
usage="usage: ci/gpu_one_call.sh BIN_DIR OUT [SECONDS]"
(($# >= 2 && $# <= 3)) || { echo "gpu_one_call: $usage" >&2; exit 2; }
[[ -d $1 ]] || { echo "gpu_one_call: BIN_DIR $1 is not a folder" >&2; exit 2; }
bin=$(cd "$1" && pwd)
budget=${3:-570}
[[ $budget =~ ^[0-9]+$ ]] && ((budget > 0)) || { echo "gpu_one_call: SECONDS $budget: a whole number above 0" >&2; exit 2; }
for b in bench_cuda_attention bench_cuda_matmul gpu_tests samebits; do
  [[ -x $bin/$b ]] || { echo "gpu_one_call: $bin/$b: no such executable" >&2; exit 2; }
done
# (a call's logs are never mixed with an earlier call's: the tables would read a stale one)
[[ ! -e $2 || -d $2 && -z $(ls -A "$2") ]] || { echo "gpu_one_call: OUT $2 is not a new or empty folder" >&2; exit 2; }
mkdir -p "$2" || { echo "gpu_one_call: OUT $2: cannot make the folder" >&2; exit 2; }
out=$(cd "$2" && pwd)
cd "$(dirname "$0")/.." || exit 2  # (the goldens and scenarios are read from the repository)
export LD_LIBRARY_PATH="$bin/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
end=$((SECONDS + budget))
steps=() failed=0

card_line=false  # (the tables name the card where nvidia-smi gave its line)
if command -v nvidia-smi >/dev/null; then
  card_line=true
  nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv,noheader \
    >"$out/gpu.txt" 2>&1
else
  echo "no nvidia-smi on this machine" >"$out/gpu.txt"
fi
echo "card: $(head -1 "$out/gpu.txt")"
if [[ -n ${REQUIRE_CARD:-} ]] && ! grep -q -- "$REQUIRE_CARD" "$out/gpu.txt"; then
  echo "gpu_one_call: the card is not an $REQUIRE_CARD (REQUIRE_CARD): nothing run" >&2
  exit 3
fi

# The limit a step of usual need LIMIT gets now: LIMIT, or what is left of the budget.
limit_now() { local left=$((end - SECONDS)); echo $(($1 < left ? $1 : left)); }
# step NAME LIMIT COMMAND...: runs COMMAND under the limit it gets now, its output in OUT/NAME.log.
step() {
  local name=$1 limit; limit=$(limit_now "$2"); shift 2
  if ((limit < 5)); then
    steps+=("$(printf '%-18s NOT RUN (the call'"'"'s %s s were spent)' "$name" "$budget")")
    failed=1
  else
    local t0=$SECONDS rc
    timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
    rc=$?
    ((rc == 0)) || failed=1
    steps+=("$(printf '%-18s rc %-3s %4s s (limit %s s)' "$name" "$rc" $((SECONDS - t0)) "$limit")")
  fi
  echo "${steps[-1]}"
}
source ci/tables_inputs.sh
tables() {  # (again after the later steps: the tests and sanitizers join the inputs)
  $card_line && table_input --gpu "$out/gpu.txt"
  table_input --sdpa "$out/sdpa.json"
  table_input --matmul "$out/matmul.log"
  table_input --gpu-tests "$out/gpu_tests.log"
  table_input --sanitizers "$out/san/sanitizers.md"
  table_input attention "$out/attention1.log"
  table_input attention "$out/attention2.log"
  write_tables "$out/tables.md" "$out/tables.json" || failed=1
}
golden() { step "golden_$1" "$2" "$bin/samebits" golden check "scenarios/$1.yaml" --backend cuda --no-progress; }

step attention1 60 "$bin/bench_cuda_attention"
step attention2 60 "$bin/bench_cuda_attention"
step matmul 90 "$bin/bench_cuda_matmul"
step sdpa 50 python3 bench/cuda/sdpa_reference.py --json "$out/sdpa.json"
tables
golden feynman_ci 40
golden mutation 40
step gpu_tests 175 "$bin/gpu_tests" --gtest_filter="${GPU_TESTS_FILTER:--GpuFixedExpf.*}"
golden feynman 60
san_limit=$(limit_now 200)
((san_limit >= 25)) || san_limit=0  # (too little left for a shard: not run)
step sanitizers "$san_limit" env SANITIZER_DEADLINE=$((san_limit - 15)) SAMEBITS_GPU_SANITIZER_SHAPES=1 \
  ci/gpu_sanitizers.sh "$bin/gpu_tests" "$out/san" 4 $((san_limit - 20)) \
  "${SANITIZER_FILTER:-GpuRmsNorm.*:GpuAttentionPrefill.*:GpuAttentionOutput.*:GpuAttention.MixedBatchMatchesCpuBackend}"
tables

echo "=== steps"
printf '%s\n' "${steps[@]}" | tee "$out/steps.txt"
echo "=== tables (OUT/tables.md)"
if grep -q '^| target ' "$out/tables.md"; then sed -n '/^| target /,$p' "$out/tables.md"; else cat "$out/tables.md"; fi
# (packed beside OUT, then moved in: tar reading the folder it writes into fails, "file changed as
# we read it", H100 2026-12-06)
packed=$(mktemp) && tar -czf "$packed" -C "$out" . && mv "$packed" "$out/one_call.tgz" || failed=1
exit $failed
