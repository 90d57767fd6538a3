#!/usr/bin/env python3
"""Trains the built-in tiny Qwen3 (byte-level) on the corpus of make_corpus.py and writes a
Hugging Face checkpoint (config.json + model.safetensors in bf16) that samebits and transformers
both load.

Shape: exactly samebits' builtin_config("tiny"): vocab 258 (bytes 0..255, BOS 256, EOS 257),
hidden 256, intermediate 768, 4 layers, 4 query heads, 2 kv heads, head_dim 64, rms_norm_eps 1e-6,
rope_theta 10000, tied embeddings, max_position_embeddings 1024.
Training: AdamW, bf16 autocast, fp32 master weights, linear warm-up then cosine decay to 5% of the
peak rate, sequences of SEQ bytes that start at a document's BOS half of the time (as the prompt
does at inference) and at a random byte otherwise.
"""
import argparse
import json
import math
import os
import time

import torch
import torch.nn.functional as F
from transformers import Qwen3Config, Qwen3ForCausalLM

BOS, EOS, VOCAB = 256, 257, 258


def tiny_config():
    cfg = Qwen3Config(
        vocab_size=VOCAB, hidden_size=256, intermediate_size=768, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=64, rms_norm_eps=1e-6,
        rope_theta=10000.0, tie_word_embeddings=True, max_position_embeddings=1024,
        bos_token_id=BOS, eos_token_id=EOS, pad_token_id=EOS, attention_bias=False,
        use_sliding_window=False, hidden_act="silu")
    theta = getattr(cfg, "rope_theta", None)
    if theta is None:
        theta = cfg.rope_parameters["rope_theta"]
    assert float(theta) == 10000.0, theta
    assert cfg.tie_word_embeddings and cfg.head_dim == 64
    return cfg


def load_stream(path, device):
    docs = open(path, "rb").read().split(b"\0")
    ids, starts = [], []  # every document as BOS + bytes + EOS, back to back
    for d in docs:
        starts.append(len(ids))
        ids.append(BOS)
        ids.extend(d)
        ids.append(EOS)
    t = torch.tensor(ids, dtype=torch.long, device=device)
    return t, torch.tensor(starts, dtype=torch.long, device=device)


def save_checkpoint(model, out_dir, extra):
    os.makedirs(out_dir, exist_ok=True)
    model = model.to(torch.bfloat16)
    model.save_pretrained(out_dir, safe_serialization=True)
    cfg_path = os.path.join(out_dir, "config.json")
    cfg = json.load(open(cfg_path))
    # Spell the fields both ways so that readers of transformers 4 and 5 agree.
    cfg["rope_theta"] = 10000.0
    cfg["torch_dtype"] = "bfloat16"
    cfg["architectures"] = ["Qwen3ForCausalLM"]
    cfg["samebits_training"] = extra
    json.dump(cfg, open(cfg_path, "w"), indent=2, sort_keys=True)
    for name in os.listdir(out_dir):
        print("  wrote", os.path.join(out_dir, name), os.path.getsize(os.path.join(out_dir, name)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True, help="checkpoint directory")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1918)
    ap.add_argument("--max-seconds", type=float, default=0,
                    help="if the first steps project past this, shorten the schedule to fit")
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    stream, starts = load_stream(args.corpus, device)
    n = stream.numel()
    pad = torch.full((args.seq + 1,), EOS, dtype=torch.long, device=device)
    stream = torch.cat([stream, pad])
    print(f"corpus: {starts.numel()} documents, {n} tokens; device {device}")

    model = Qwen3ForCausalLM(tiny_config()).to(device)
    params = sum(p.numel() for p in model.parameters())
    print(f"parameters: {params}")
    decay = [p for nm, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for nm, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), fused=(device == "cuda"))
    gen = torch.Generator(device=device)
    gen.manual_seed(args.seed)
    offsets = torch.arange(args.seq + 1, device=device)

    total = args.steps
    t0 = time.time()
    window = torch.zeros((), device=device)  # sum of the losses since the last report
    model.train()
    step = 0
    while step < total:
        lr_scale = min(1.0, (step + 1) / args.warmup)
        progress = min(1.0, step / max(1, total))
        lr_scale *= 0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * progress))
        for g in opt.param_groups:
            g["lr"] = args.lr * lr_scale
        doc = starts[torch.randint(0, starts.numel(), (args.batch,), device=device, generator=gen)]
        rnd = torch.randint(0, n - args.seq, (args.batch,), device=device, generator=gen)
        aligned = torch.rand(args.batch, device=device, generator=gen) < 0.5
        begin = torch.where(aligned, doc, rnd)
        seqs = stream[begin[:, None] + offsets[None, :]]
        x, y = seqs[:, :-1], seqs[:, 1:]
        with torch.autocast(device_type="cuda" if device == "cuda" else "cpu", dtype=torch.bfloat16):
            logits = model(input_ids=x).logits
        loss = F.cross_entropy(logits.float().reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        window += loss.detach()
        step += 1
        if args.max_seconds > 0 and step in (5, 25):
            if device == "cuda":
                torch.cuda.synchronize()
            if step == 5:
                t5 = time.time()
            else:
                per_step = (time.time() - t5) / 20
                fit = 25 + int((args.max_seconds - (time.time() - t0)) / per_step)
                print(f"{per_step * 1000:.1f} ms/step")
                if fit < total:
                    print(f"schedule shortened from {total} to {fit} steps to fit {args.max_seconds} s")
                    total = max(fit, 26)
        if step % 100 == 0 or step == total:
            mean = window.item() / (100 if step % 100 == 0 else step % 100)
            window.zero_()
            print(f"step {step}/{total} mean loss {mean:.4f} nats/byte, lr {args.lr * lr_scale:.2e}, "
                  f"{time.time() - t0:.1f} s", flush=True)
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.time() - t0
    final = mean
    print(f"trained {total} steps in {seconds:.1f} s, final mean loss {final:.4f} nats/byte")
    extra = {"steps": total, "batch": args.batch, "seq": args.seq, "lr": args.lr, "seed": args.seed,
             "final_loss": round(final, 4), "train_seconds": round(seconds, 1),
             "torch": torch.__version__}
    save_checkpoint(model, args.out, extra)


if __name__ == "__main__":
    main()
