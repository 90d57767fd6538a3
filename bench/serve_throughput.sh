#!/usr/bin/env bash
# Throughput through HTTP against the same workload in-process, both modes, side by side in one run:
# for each mode, `samebits serve` on a free loopback port with the scenario's workload sent to it in
# client mode, then the same workload in live mode in-process (client threads submitting with the
# same arrival timing). Prints tokens/s (all generated tokens, targets and background, over the
# wall time) from each run's JSON, and the load average before and after. Two pacings: the
# scenario's own arrival timing ("paced"), and every request sent at once ("saturated": live.step_us
# 0), which measures what the engine sustains behind HTTP.
# Usage: bench/serve_throughput.sh [SAMEBITS] [SCENARIO] [SAMPLES] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/.."
exe=${1:-build/cpu/harness/samebits}
scenario=${2:-scenarios/serve_ci.yaml}
samples=${3:-48}
threads=${4:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
rows=()
saturated="$out/saturated.yaml"
sed -e 's/^live: {\(.*\)step_us: [0-9]*}/live: {\1step_us: 0}/' "$scenario" >"$saturated"
grep -q 'step_us: 0}' "$saturated" || { echo "$scenario: no 'live: {... step_us: N}' line to saturate" >&2; exit 2; }
for pacing in paced saturated; do
[[ $pacing == paced ]] && file=$scenario || file=$saturated
for mode in default invariant; do
  "$exe" serve --mode "$mode" --port 0 --threads "$threads" >"$out/serve.log" &
  pid=$!
  for _ in $(seq 100); do grep -q listening "$out/serve.log" && break; sleep 0.1; done
  url=$(grep -o 'http://[0-9.:]*/v1' "$out/serve.log")
  "$exe" run "$file" --samples "$samples" --no-progress --target-url "$url" --json "$out/http.json" >/dev/null || true
  kill -TERM "$pid"; wait "$pid"
  "$exe" run "$file" --samples "$samples" --no-progress --in-process --live --threads "$threads" --mode "$mode" \
    --json "$out/local.json" >/dev/null || true
  rows+=("$(python3 - "$pacing" "$mode" "$out/http.json" "$out/local.json" <<'PY'
import json, sys
pacing, mode = sys.argv[1], sys.argv[2]
http, local = json.load(open(sys.argv[3]))["modes"][0], json.load(open(sys.argv[4]))["modes"][0]
print(f"| {pacing} | {mode} | {http['tokens_generated']} | {http['wall_seconds']:.2f} | {http['tokens_per_second']:.0f} | "
      f"{local['tokens_generated']} | {local['wall_seconds']:.2f} | {local['tokens_per_second']:.0f} | "
      f"{http['tokens_per_second'] / local['tokens_per_second']:.2f} |")
PY
)")
done
done
echo "scenario $scenario, $samples samples, $threads CPU threads; load average before: $load_before, after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| pacing | mode | HTTP tokens | HTTP s | HTTP tokens/s | in-process tokens | in-process s | in-process tokens/s | HTTP / in-process |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
