#!/usr/bin/env bash
# The qwen3_8b_burst workload (scenarios/qwen3_8b_burst.yaml: 1000 requests x 100 generated tokens,
# one burst, synthetic Qwen3-8B) through samebits in both modes and through HF transformers' eager
# generate (bench/hf_generate.py), in one call on one GPU, then a second samebits run with
# --profile for the per-op breakdown. Run from the repository root:
#   bench/qwen3_8b_side_by_side.sh BIN_DIR OUT
# BIN_DIR holds samebits and lib/ (bundled shared libraries). OUT gets the JSON results and logs;
# the side by side table is printed last.
set -uo pipefail
bin=$(cd "${1:?BIN_DIR}" && pwd); out=${2:?OUT}
mkdir -p "$out"
export LD_LIBRARY_PATH="$bin/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
sc=${SCENARIO:-scenarios/qwen3_8b_burst.yaml}
"$bin/samebits" run "$sc" --no-progress --json "$out/samebits.json" > "$out/samebits.log" 2>&1
echo "samebits run: rc=$?"
"$bin/samebits" run "$sc" --no-progress --profile --json "$out/samebits_profile.json" > "$out/samebits_profile.log" 2>&1
echo "samebits run --profile: rc=$?"
PYTHONUNBUFFERED=1 python3 "$(dirname "$0")/hf_generate.py" --json "$out/hf.json" > "$out/hf.log" 2>&1
echo "hf_generate: rc=$?"
tail -3 "$out/hf.log"
python3 "$(dirname "$0")/side_by_side_table.py" "$out/samebits.json" "$out/hf.json" "$out/samebits_profile.json"
