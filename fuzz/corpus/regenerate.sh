#!/usr/bin/env bash
# Regenerates the seeds of the golden, results and trace fuzz targets with the samebits command, in
# whatever schema its writers emit now (run them again whenever a schema changes), then reads every
# seed back with the command that reads such files from other people (golden check, compare,
# replay), so a seed the readers refuse cannot land. The fuzzers then start from valid files and
# spend their executions past the schema checks.
#   fuzz/corpus/regenerate.sh [SAMEBITS]    (default: build/cpu/harness/samebits, `cpu` preset)
# Each execution parses the whole input, so the seeds are as small as the formats allow and stay
# under the targets' -max_len (ci/fuzz.sh): smoke cut to 4 new tokens and 1 background request,
# greedy and sampled (top-k, top-p), 2 samples, batch and live schedules, one mode per results and
# trace seed, written as compact JSON (jq -c). The goldens hold both modes. Forks take hundreds of
# tokens to appear on their own (feynman_ci: token 193, a 50 KB results file), so one results
# file and one golden get a fork written into them by hand (jq below): sample 1's completion and
# logit stream forked at token 2, with every count, digest and statistic that goes with it.
set -euo pipefail
cd "$(dirname "$0")/../.."
SAMEBITS="${1:-build/cpu/harness/samebits}"
C=fuzz/corpus
# regress_* seeds are inputs a fuzzer once found failing: kept as they are (they need not parse).
find "$C"/fuzz_golden "$C"/fuzz_results "$C"/fuzz_trace -type f ! -name 'regress_*' -delete 2>/dev/null || true
mkdir -p "$C"/fuzz_golden "$C"/fuzz_results "$C"/fuzz_trace
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sb() { "$SAMEBITS" "$@" >"$tmp/log" 2>&1 || { cat "$tmp/log"; echo "regenerate: samebits $* failed" >&2; exit 1; }; }
run() { sb "$@" --threads 1 --no-progress --golden-dir "$tmp/golden"; }
compact() { jq -c . "$1" >"$2"; }

sed -e 's/^  background: 16$/  background: 1/' -e 's/^max_new_tokens: 32$/max_new_tokens: 4/' \
  scenarios/smoke.yaml >"$tmp/tiny.yaml"
sed -e 's/^sampling: {temperature: 0}$/sampling: {temperature: 0.8, top_k: 40, top_p: 0.95, seed: 99}/' \
  -e 's/^name: smoke$/name: tiny_sampled/' "$tmp/tiny.yaml" >"$tmp/tiny_sampled.yaml"
grep -q 'top_k: 40' "$tmp/tiny_sampled.yaml" || { echo "regenerate: smoke.yaml's sampling line changed" >&2; exit 1; }

run golden update "$tmp/tiny.yaml" --samples 2
compact "$tmp/golden/smoke/cpu.json" "$C/fuzz_golden/smoke_tiny_cpu.json"
run golden update "$tmp/tiny_sampled.yaml" --samples 2 --mode invariant
compact "$tmp/golden/tiny_sampled/cpu.json" "$C/fuzz_golden/sampled_invariant_cpu.json"
for mode in default invariant; do
  run run "$tmp/tiny.yaml" --samples 2 --mode "$mode" --json "$tmp/r.json"
  compact "$tmp/r.json" "$C/fuzz_results/smoke_tiny_$mode.json"
done
jq -c '.modes[0] |= (.completions = [(.completions[0] | .count = 1), {count: 1, first_sample: 1, fork_position: 2,
    logit_streams: 1, text: "Ring", text_before: "Ri", text_main: "ch", text_this: "ng", tokens: [82, 105, 110, 103]}]
  | .streams = [(.streams[0] | .count = 1), {completion: 1, count: 1, digest: "0123456789abcdef",
    steps: (.streams[0].steps[0:16] + "00112233445566778899aabbccddeeff" + .streams[0].steps[48:64])}]
  | .samples_detail[1] |= (.completion = 1 | .stream = 1 | .first_token_divergence = 2 | .first_logit_divergence = 1)
  | .first_token_divergence = 2 | .first_logit_divergence = 1 | .samples_token_diverged = 1
  | .samples_logit_diverged = 1 | .unique_completions = 2 | .unique_logit_streams = 2)' \
  "$C/fuzz_results/smoke_tiny_default.json" >"$C/fuzz_results/fork_default.json"
jq -c '.modes.default |= (.expected = {"39e8432de25b19c5": 1, "0123456789abcdef": 1}
  | .fork_statistics = {first_logit_divergence: 1, first_token_divergence: 2, samples_logit_diverged: 1,
    samples_token_diverged: 1, forks: [{count: 1, fork_position: 2, text_before: "Ri", text_main: "ch", text_this: "ng"}]}
  | .sample_digests = "39e8432de25b19c50123456789abcdef"
  | .stream_steps["0123456789abcdef"] = "6cddf2f2ffffffffc2f957d0f6beb681"
  | .unique_completions = 2 | .unique_logit_streams = 2)' \
  "$C/fuzz_golden/smoke_tiny_cpu.json" >"$C/fuzz_golden/fork_cpu.json"
run run "$tmp/tiny_sampled.yaml" --samples 2 --mode invariant --json "$tmp/r.json"
compact "$tmp/r.json" "$C/fuzz_results/sampled_invariant.json"
run run "$tmp/tiny.yaml" --samples 1 --mode default --trace "$tmp/t.json"
compact "$tmp/t.json" "$C/fuzz_trace/smoke_tiny_batch.json"
run run "$tmp/tiny.yaml" --samples 1 --mode invariant --live --trace "$tmp/t.json"
compact "$tmp/t.json" "$C/fuzz_trace/smoke_tiny_live.json"
run run "$tmp/tiny_sampled.yaml" --samples 1 --mode invariant --trace "$tmp/t.json"
compact "$tmp/t.json" "$C/fuzz_trace/sampled_batch.json"

# Every seed reads back.
for f in "$C"/fuzz_results/*.json; do sb compare "$f" "$f"; done
for f in "$C"/fuzz_trace/*.json; do sb replay "$f"; done
cp "$C/fuzz_golden/smoke_tiny_cpu.json" "$tmp/golden/smoke/cpu.json"
run golden check "$tmp/tiny.yaml" --samples 2
cp "$C/fuzz_golden/sampled_invariant_cpu.json" "$tmp/golden/tiny_sampled/cpu.json"
run golden check "$tmp/tiny_sampled.yaml" --samples 2 --mode invariant
# The forked golden reads (exit 1: the run does not fork as it says; 2 would be a golden it cannot read).
cp "$C/fuzz_golden/fork_cpu.json" "$tmp/golden/smoke/cpu.json"
set +e
"$SAMEBITS" golden check "$tmp/tiny.yaml" --samples 2 --threads 1 --no-progress --golden-dir "$tmp/golden" >"$tmp/log" 2>&1
rc=$?
set -e
((rc == 1)) || { cat "$tmp/log"; echo "regenerate: the forked golden does not read (exit $rc)" >&2; exit 1; }
wc -c "$C"/fuzz_golden/* "$C"/fuzz_results/* "$C"/fuzz_trace/*
