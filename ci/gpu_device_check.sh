#!/usr/bin/env bash
# Runs prebuilt CUDA test and bench binaries on a GPU machine and writes logs and JSON into OUT:
#   ci/gpu_device_check.sh BIN_DIR OUT [tests|sanitizer|memcheck-linear|bench-matmul|bench-matmul-sweep|bench-attention|sdpa-reference|engine|all]...
# ATTENTION_BASELINE=DIR (optional): bench-attention also runs DIR/bench_cuda_attention (an older build,
# DIR/lib beside it) and prints both side by side (bench/cuda/attention_side_by_side.py summary; its
# `run` alternates any number of builds over several rounds). MATMUL_BASELINE=DIR: likewise for bench-matmul
# (DIR/bench_cuda_matmul first, then this build's; bench/cuda/matmul_side_by_side.py joins the logs).
# BIN_DIR holds gpu_tests, bench_cuda_matmul, bench_cuda_attention, samebits and lib/ (bundled shared
# libraries, ../shared/tools/bundle-libs). Each step has its own time limit; a failing step does
# not stop the others. Everything is packed into OUT/results.tgz (one file to copy back from the GPU machine).
# With bench-attention, OUT/tables.md (and tables.json): issue 9's tables and target verdicts
# (bench/cuda/one_call_tables.py, with the matmul log and the library reference where they ran).
# The last lines printed are a short table of the steps' results.
set -uo pipefail
bin=$(cd "${1:?BIN_DIR}" && pwd); dest=${2:?OUT}; shift 2
mkdir -p "$dest"
out=$(mktemp -d)
export LD_LIBRARY_PATH="$bin/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
steps=("$@"); [[ ${#steps[@]} -eq 0 ]] && steps=(all)
summary=()
note() { summary+=("$(printf '%-22s %s' "$1" "$2")"); }
run_step() {  # name limit_seconds command...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  note "$name" "rc=$rc $((SECONDS - t0))s $(grep -E '^\[  (PASSED|FAILED|SKIPPED) \]|ERROR SUMMARY|geometric-mean' "$out/$name.log" | tr '\n' ' ' | cut -c1-160)"
}
want() { [[ " ${steps[*]} " == *" $1 "* || " ${steps[*]} " == *" all "* ]]; }

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader > "$out/gpu.txt" 2>&1
if want tests; then
  for suite in GpuPointwise GpuRmsNorm GpuLinear GpuAttention; do
    run_step "tests_$suite" 150 "$bin/gpu_tests" --gtest_filter="$suite.*" --gtest_output="json:$out/tests_$suite.json"
  done
fi
if want memcheck-linear; then
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  run_step memcheck_linear 150 "$cs" --tool memcheck --error-exitcode 9 "$bin/gpu_tests" \
    --gtest_filter='GpuLinear.MatchesCpuBackend:GpuLinear.InvariantEveryTileConfigurationGivesTheSameBits:GpuLinear.ConfigurationTestSeesAPlantedKOrderChange'
fi
if want sanitizer; then
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  run_step memcheck 150 "$cs" --tool memcheck --error-exitcode 9 "$bin/gpu_tests" \
    --gtest_filter='GpuPointwise.*:GpuRmsNorm.MatchesCpuBackend:GpuLinear.MatchesCpuBackend:GpuAttention.MixedBatchMatchesCpuBackend:GpuAttention.Bad*:GpuAttention.RunToRunAndHostMirrorsDoNotMatter:GpuAttention.DecodeKernelEqualsGeneralKernelBitwise'
  run_step racecheck 120 "$cs" --tool racecheck --error-exitcode 9 "$bin/gpu_tests" \
    --gtest_filter='GpuRmsNorm.MatchesCpuBackend:GpuLinear.MatchesCpuBackend:GpuAttention.MixedBatchMatchesCpuBackend:GpuAttention.RunToRunAndHostMirrorsDoNotMatter:GpuPointwise.SampleEqualsCpu:GpuPointwise.KvWrite*'
fi
if want bench-matmul; then
  if [[ -n "${MATMUL_BASELINE:-}" ]]; then
    base=$(cd "$MATMUL_BASELINE" && pwd)
    LD_LIBRARY_PATH="$base/lib:/usr/local/cuda/lib64" run_step bench_matmul_baseline 420 "$base/bench_cuda_matmul"
  fi
  run_step bench_matmul 420 "$bin/bench_cuda_matmul" --benchmark_out="$out/bench_matmul.json" --benchmark_out_format=json
  if [[ -n "${MATMUL_BASELINE:-}" ]]; then
    python3 "$(dirname "$0")/../bench/cuda/matmul_side_by_side.py" "$out/bench_matmul_baseline.log" \
      "$out/bench_matmul.log" > "$out/matmul_compare.txt" 2>&1
  fi
fi
if want bench-matmul-sweep; then
  run_step bench_matmul 240 "$bin/bench_cuda_matmul" --sweep --benchmark_out="$out/bench_matmul.json" --benchmark_out_format=json
fi
if want bench-attention; then
  run_step bench_attention 100 "$bin/bench_cuda_attention" --benchmark_out="$out/bench_attention.json" --benchmark_out_format=json
  if [[ -n "${ATTENTION_BASELINE:-}" ]]; then
    base=$(cd "$ATTENTION_BASELINE" && pwd)
    LD_LIBRARY_PATH="$base/lib:/usr/local/cuda/lib64" run_step bench_attention_baseline 100 "$base/bench_cuda_attention"
    python3 "$(dirname "$0")/../bench/cuda/attention_side_by_side.py" summary --json "$out/attention_compare.json" \
      "baseline=$out/bench_attention_baseline.log" "new=$out/bench_attention.log" > "$out/attention_compare.txt" 2>&1
  fi
fi
if want sdpa-reference; then
  # The library reference for the prefill and decode rows (bench/cuda/sdpa_reference.py: torch's
  # attention backends on the same shapes and floors), where torch is installed; printed with the benches.
  run_step sdpa_reference 150 python3 "$(dirname "$0")/../bench/cuda/sdpa_reference.py" --json "$out/sdpa_reference.json"
fi
if want engine; then
  # The engine on the GPU (run from the repository root: the builtin checkpoint is found there):
  # CUDA goldens written to OUT/golden/<scenario>/<backend id>.json and checked again (run to run),
  # then synthetic Qwen3-0.6B and Qwen3-8B shapes (weights filled on the device).
  sb="$bin/samebits"
  "$sb" info > "$out/engine_info.log" 2>&1
  for sc in feynman_ci feynman; do
    run_step "golden_update_$sc" 240 "$sb" golden update "scenarios/$sc.yaml" --backend cuda --no-progress \
      --golden-dir "$dest/golden"
    run_step "golden_check_$sc" 240 "$sb" golden check "scenarios/$sc.yaml" --backend cuda --no-progress \
      --golden-dir "$dest/golden" --json "$out/golden_check_$sc.json"
  done
  for m in qwen3-0.6b qwen3-8b; do
    run_step "synthetic_$m" 200 "$sb" run scenarios/smoke.yaml --backend cuda --model "synthetic:$m" --samples 4 \
      --no-progress --json "$out/synthetic_$m.json"
  done
  for f in "$out"/golden_*.log "$out"/synthetic_*.log; do echo "--- $(basename "$f")"; grep -E "^(default|invariant) |golden|main completion|error" "$f" | head -8; done
fi
echo "=== gpu: $(cat "$out/gpu.txt")"
for f in "$out"/bench_matmul.log "$out"/bench_attention.log; do
  [[ -f $f ]] && sed -n '/^N  \|^attention /,$p' "$f" | tail -80
done
[[ -f "$out/sdpa_reference.log" ]] && cat "$out/sdpa_reference.log"
[[ -f "$out/attention_compare.txt" ]] && cat "$out/attention_compare.txt"
[[ -f "$out/matmul_compare.txt" ]] && cat "$out/matmul_compare.txt"
if [[ -f "$out/bench_attention.log" ]]; then
  # Issue 9's tables and each target's verdict from this call's logs (bench/cuda/one_call_tables.py).
  source "$(dirname "$0")/tables_inputs.sh"
  command -v nvidia-smi >/dev/null && table_input --gpu "$out/gpu.txt"
  table_input --sdpa "$out/sdpa_reference.json"
  table_input --matmul "$out/bench_matmul.log"
  for f in "$out"/tests_*.log; do table_input --gpu-tests "$f"; done
  table_input attention "$out/bench_attention.log"
  write_tables "$out/tables.md" "$out/tables.json"
  cat "$out/tables.md"
fi
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
tar -czf "$dest/results.tgz" -C "$out" .
