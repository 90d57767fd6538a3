#!/usr/bin/env bash
# Regenerates the seeds of the golden, results and trace fuzz targets with the samebits command, in
# whatever schema its writers emit now (run them again whenever a schema changes), then reads every
# seed back with the command that reads such files from other people (golden check, compare,
# replay), so a seed the readers refuse cannot land. The fuzzers then start from valid files and
# spend their executions past the schema checks.
#   fuzz/corpus/regenerate.sh [SAMEBITS]    (default: build/cpu/harness/samebits, `cpu` preset)
# Small scenarios keep the seeds small (each execution parses the whole input): smoke at 2 samples
# in both modes (batch and live schedules), the sampled mutation scenario (invariant mode), and
# feynman_ci's default mode at 12 samples, where 3 samples fork at token 193 (forks and several
# logit streams in the results and the golden).
set -euo pipefail
cd "$(dirname "$0")/../.."
SAMEBITS="${1:-build/cpu/harness/samebits}"
C=fuzz/corpus
mkdir -p "$C"/fuzz_golden "$C"/fuzz_results "$C"/fuzz_trace
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sb() { "$SAMEBITS" "$@" >"$tmp/log" 2>&1 || { cat "$tmp/log"; echo "regenerate: samebits $* failed" >&2; exit 1; }; }
run() { sb "$@" --threads 1 --no-progress --golden-dir "$tmp/golden"; }

run golden update scenarios/smoke.yaml --samples 2 --json "$C/fuzz_results/smoke.json"
cp "$tmp/golden/smoke/cpu.json" "$C/fuzz_golden/smoke_cpu.json"
# Traces hold every engine step: smoke and the sampled mutation scenario with less background and
# fewer tokens keep them at a few KB (smoke's own trace is 21 KB, mutation's 70 KB).
sed -e 's/^  background: 16$/  background: 3/' -e 's/^max_new_tokens: 32$/max_new_tokens: 8/' \
  scenarios/smoke.yaml >"$tmp/smoke_small.yaml"
run run "$tmp/smoke_small.yaml" --samples 2 --trace "$C/fuzz_trace/smoke_small.json"
run run "$tmp/smoke_small.yaml" --samples 2 --live --trace "$C/fuzz_trace/smoke_small_live.json"
run golden update scenarios/mutation.yaml --samples 4 --json "$C/fuzz_results/mutation.json"
cp "$tmp/golden/mutation/cpu.json" "$C/fuzz_golden/mutation_cpu.json"
sed -e 's/^  background: 24$/  background: 3/' -e 's/^max_new_tokens: 48$/max_new_tokens: 12/' \
  scenarios/mutation.yaml >"$tmp/mutation_small.yaml"
run run "$tmp/mutation_small.yaml" --samples 2 --trace "$C/fuzz_trace/mutation_small.json"
run golden update scenarios/feynman_ci.yaml --samples 12 --mode default --json "$C/fuzz_results/feynman_ci_default.json"
cp "$tmp/golden/feynman_ci/cpu.json" "$C/fuzz_golden/feynman_ci_default_cpu.json"

# Every seed reads back.
for f in "$C"/fuzz_results/*.json; do sb compare "$f" "$f"; done
for f in "$C"/fuzz_trace/*.json; do sb replay "$f"; done
for s in smoke mutation feynman_ci; do
  mode=(); [[ $s == feynman_ci ]] && mode=(--mode default)
  samples=2; [[ $s == mutation ]] && samples=4; [[ $s == feynman_ci ]] && samples=12
  run golden check "scenarios/$s.yaml" --samples "$samples" "${mode[@]}"
done
ls -l "$C"/fuzz_golden "$C"/fuzz_results "$C"/fuzz_trace
