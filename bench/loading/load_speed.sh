#!/usr/bin/env bash
# How fast a real checkpoint goes from the page cache onto the GPU (safetensors mmap -> device, no
# whole host copy): writes a Qwen3-shaped checkpoint with random bf16 weights
# (write_qwen3_checkpoint.py), then runs a short scenario on it twice with the CUDA backend; the
# second run reads the files from the page cache. The timing lines give the weights' set-up time,
# bytes and GB/s. Run from the repository root:
#   bench/loading/load_speed.sh BIN_DIR OUT [SHAPE]     (SHAPE: qwen3-0.6b (default) or qwen3-8b)
set -uo pipefail
bin=$(cd "${1:?BIN_DIR}" && pwd); out=${2:?OUT}; shape=${3:-qwen3-0.6b}
mkdir -p "$out"
export LD_LIBRARY_PATH="$bin/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
ckpt=${CKPT_DIR:-/tmp/samebits_${shape}_ckpt}
python3 "$(dirname "$0")/write_qwen3_checkpoint.py" "$ckpt" --shape "$shape" || exit 1
sc="$out/load_$shape.yaml"
sed -e "s|^model: .*|model: $ckpt|" -e 's|^name: .*|name: load_speed|' -e 's|^backend: .*|backend: cuda|' \
    -e 's|^samples: .*|samples: 2|' -e 's|^max_new_tokens: .*|max_new_tokens: 4|' \
    -e 's|^modes: .*|modes: [invariant]|' -e 's|^  background: .*|  background: 2|' scenarios/smoke.yaml > "$sc"
for i in 1 2; do
  "$bin/samebits" run "$sc" --no-progress > "$out/load_$i.log" 2>&1
  echo "load run $i: rc=$? $(grep -o 'weights [0-9.]* s ([^)]*)' "$out/load_$i.log")"
done
