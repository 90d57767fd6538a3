#!/usr/bin/env python3
"""Writes a Hugging Face checkpoint of the Qwen3-0.6B (or Qwen3-8B) shape with random bf16 weights:
config.json in transformers 5's spelling and model.safetensors (or shards of at most --shard-gb),
for measuring how fast samebits puts a real checkpoint onto the GPU (bench/loading/load_speed.sh).
The values are random normals scaled by 0.02 (norm weights 1), drawn on the GPU where there is one;
loading speed does not depend on them.

Needs torch and safetensors (present on the H200 machine, not in CI).
"""
import argparse
import json
import os

SHAPES = {
    # name: vocab, hidden, intermediate, layers, heads, kv heads, head_dim, tied
    "qwen3-0.6b": (151936, 1024, 3072, 28, 16, 8, 128, True),
    "qwen3-8b": (151936, 4096, 12288, 36, 32, 8, 128, False),
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out", help="checkpoint directory to create")
    p.add_argument("--shape", choices=sorted(SHAPES), default="qwen3-0.6b")
    p.add_argument("--shard-gb", type=float, default=4.0)
    a = p.parse_args()
    import torch
    from safetensors.torch import save_file

    vocab, hidden, inter, layers, heads, kv, hd, tied = SHAPES[a.shape]
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    gen = torch.Generator(device=dev).manual_seed(0)

    def rand(*shape):
        return (torch.randn(*shape, generator=gen, device=dev, dtype=torch.float32) * 0.02).to(torch.bfloat16).cpu()

    def ones(n):
        return torch.ones(n, dtype=torch.bfloat16)

    tensors = {"model.embed_tokens.weight": rand(vocab, hidden), "model.norm.weight": ones(hidden)}
    if not tied:
        tensors["lm_head.weight"] = rand(vocab, hidden)
    for i in range(layers):
        pre = f"model.layers.{i}."
        tensors[pre + "input_layernorm.weight"] = ones(hidden)
        tensors[pre + "post_attention_layernorm.weight"] = ones(hidden)
        tensors[pre + "self_attn.q_proj.weight"] = rand(heads * hd, hidden)
        tensors[pre + "self_attn.k_proj.weight"] = rand(kv * hd, hidden)
        tensors[pre + "self_attn.v_proj.weight"] = rand(kv * hd, hidden)
        tensors[pre + "self_attn.o_proj.weight"] = rand(hidden, heads * hd)
        tensors[pre + "self_attn.q_norm.weight"] = ones(hd)
        tensors[pre + "self_attn.k_norm.weight"] = ones(hd)
        tensors[pre + "mlp.gate_proj.weight"] = rand(inter, hidden)
        tensors[pre + "mlp.up_proj.weight"] = rand(inter, hidden)
        tensors[pre + "mlp.down_proj.weight"] = rand(hidden, inter)

    os.makedirs(a.out, exist_ok=True)
    config = {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": vocab,
        "hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": hd, "rms_norm_eps": 1e-6,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}, "tie_word_embeddings": tied,
        "max_position_embeddings": 40960, "dtype": "bfloat16", "bos_token_id": 151643, "eos_token_id": 151645,
        "hidden_act": "silu", "use_sliding_window": False,
    }
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    # Shards in name order, each at most --shard-gb.
    limit = int(a.shard_gb * 1e9)
    shards, current, size = [], {}, 0
    for name in sorted(tensors):
        n = tensors[name].numel() * 2
        if current and size + n > limit:
            shards.append(current)
            current, size = {}, 0
        current[name] = tensors[name]
        size += n
    shards.append(current)
    total = sum(t.numel() * 2 for t in tensors.values())
    if len(shards) == 1:
        save_file(shards[0], os.path.join(a.out, "model.safetensors"))
    else:
        weight_map = {}
        for i, shard in enumerate(shards):
            file = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
            save_file(shard, os.path.join(a.out, file))
            weight_map.update({name: file for name in shard})
        with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    print(f"{a.shape}: {len(tensors)} tensors, {total / 1e9:.2f} GB in {len(shards)} file(s) at {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
