#!/usr/bin/env python3
"""The qwen3_8b_burst workload through Hugging Face transformers' eager `generate`, for a side by
side comparison with the samebits engine (bench/qwen3_8b_side_by_side.sh).

The workload of scenarios/qwen3_8b_burst.yaml: N requests, each generating exactly NEW tokens
greedily (min_new_tokens = max_new_tokens), all at once: one static batch, SDPA attention, no
compilation, no CUDA graphs. By default every prompt has 32 token ids (the mean of the scenario's
16..48), so no row is padded: HF's best case, and the reference the issue's figures were measured
with. --varied-prompts draws the scenario's lengths (uniform 16..48, seeded) instead, with left
padding; SDPA then needs an attention mask and runs far slower (27 s instead of about 6 on an H200,
2026-11-30), which would flatter samebits.
The model has the Qwen3-8B shape with random bf16 weights initialised on the GPU (the speed of
eager generate does not depend on the values). Timed: one generate() call after a small warm-up,
between CUDA synchronisations. Writes a JSON file and prints one line.

Needs torch with CUDA and transformers (present on the H200 machine, not in CI).
"""
import argparse
import json
import random
import sys
import time


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--requests", type=int, default=1000)
    p.add_argument("--prompt", type=int, default=32, help="prompt tokens per request (no padding)")
    p.add_argument("--varied-prompts", action="store_true", help="uniform --min-prompt..--max-prompt, left padded")
    p.add_argument("--min-prompt", type=int, default=16)
    p.add_argument("--max-prompt", type=int, default=48)
    p.add_argument("--new-tokens", type=int, default=100)
    p.add_argument("--seed", type=int, default=20261130)
    p.add_argument("--json", default="", help="write the figures here")
    a = p.parse_args()
    if a.requests < 1 or a.new_tokens < 1 or a.prompt < 1 or not (1 <= a.min_prompt <= a.max_prompt):
        print("hf_generate.py: error: --requests, --new-tokens, --prompt >= 1 and 1 <= --min-prompt <= --max-prompt",
              file=sys.stderr)
        return 2
    try:
        import torch
        import transformers
        from transformers import Qwen3Config, Qwen3ForCausalLM
    except ImportError as e:
        print(f"hf_generate.py: skipped: {e}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("hf_generate.py: skipped: no CUDA device", file=sys.stderr)
        return 2

    # Qwen/Qwen3-8B's shape (models/tiny_qwen/config.cpp: qwen3-8b).
    config = Qwen3Config(vocab_size=151936, hidden_size=4096, intermediate_size=12288, num_hidden_layers=36,
                         num_attention_heads=32, num_key_value_heads=8, head_dim=128, rms_norm_eps=1e-6,
                         rope_theta=1000000.0, max_position_embeddings=40960, tie_word_embeddings=False,
                         attention_bias=False, bos_token_id=151643, eos_token_id=151645, pad_token_id=0)
    config._attn_implementation = "sdpa"
    t0 = time.perf_counter()
    torch.manual_seed(a.seed)
    with torch.device("cuda"):
        model = Qwen3ForCausalLM._from_config(config, dtype=torch.bfloat16, attn_implementation="sdpa")
    model.eval()
    torch.cuda.synchronize()
    setup = time.perf_counter() - t0

    rng = random.Random(a.seed)
    if a.varied_prompts:
        lens = [rng.randint(a.min_prompt, a.max_prompt) for _ in range(a.requests)]
    else:
        lens = [a.prompt] * a.requests
    width = max(lens)
    ids = torch.zeros((a.requests, width), dtype=torch.long)
    mask = torch.zeros((a.requests, width), dtype=torch.long)
    for i, n in enumerate(lens):  # left padding: every prompt ends at the last column
        ids[i, width - n:] = torch.tensor([rng.randrange(1, 256) for _ in range(n)])  # never the pad id 0
        mask[i, width - n:] = 1
    ids, mask = ids.cuda(), mask.cuda()

    def generate(n_rows: int, new: int):
        # Without padding no mask is passed: SDPA keeps its fastest (causal, mask-free) kernels.
        m = mask[:n_rows] if a.varied_prompts else None
        return model.generate(input_ids=ids[:n_rows], attention_mask=m, max_new_tokens=new,
                              min_new_tokens=new, do_sample=False, pad_token_id=0, use_cache=True)

    with torch.inference_mode():
        generate(8, 4)  # warm-up: kernels loaded, allocator primed
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = generate(a.requests, a.new_tokens)
        torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
    generated = int(out.shape[1] - width) * a.requests
    figures = {
        "engine": "hf_transformers_eager_generate",
        "torch": torch.__version__, "transformers": transformers.__version__,
        "device": torch.cuda.get_device_name(0),
        "requests": a.requests, "prompt_tokens": sum(lens), "varied_prompts": a.varied_prompts, "new_tokens_per_request": a.new_tokens,
        "tokens_generated": generated, "run_seconds": seconds, "tokens_per_second": generated / seconds,
        "setup_seconds": setup, "peak_gpu_bytes": torch.cuda.max_memory_allocated(),
    }
    if a.json:
        with open(a.json, "w") as f:
            json.dump(figures, f, indent=1)
    print(f"hf eager generate: {a.requests} x ({min(lens)}-{max(lens)} prompt + {a.new_tokens}) tokens in "
          f"{seconds:.2f} s ({generated / seconds:.0f} tok/s), set-up {setup:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
