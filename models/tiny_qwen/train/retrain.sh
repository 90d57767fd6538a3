#!/usr/bin/env bash
# Retrains the built-in checkpoint and regenerates its reference fixtures in place.
# Needs python3 with torch, transformers (5.x tested; 4.x should work), safetensors and numpy;
# a CUDA GPU for training (about one minute on an H200), the CPU for the float32 references.
# Usage: models/tiny_qwen/train/retrain.sh [steps]   (from anywhere)
set -euo pipefail
export PYTHONUNBUFFERED=1
here="$(cd "$(dirname "$0")" && pwd)"
model_dir="$(dirname "$here")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$here"
python3 make_corpus.py --out "$work/corpus.bin"
python3 train.py --corpus "$work/corpus.bin" --out "$work/checkpoint" --steps "${1:-2500}" --max-seconds 170
python3 make_fixtures.py --checkpoint "$work/checkpoint" --out "$model_dir/fixtures"
python3 near_ties.py --checkpoint "$work/checkpoint" --out "$model_dir/fixtures/near_ties.json"
cp "$work/checkpoint/config.json" "$work/checkpoint/generation_config.json" \
   "$work/checkpoint/model.safetensors" "$model_dir/checkpoint/"
echo "checkpoint and fixtures updated in $model_dir; goldens that depend on the weights digest must be refreshed"
