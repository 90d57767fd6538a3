#!/usr/bin/env python3
"""Reference fixtures for samebits' parity test (tests/model/test_hf_parity.cpp): transformers'
Qwen3ForCausalLM loads the checkpoint in float32 and gives the logits of several prompts at every
position, and the greedy continuation of the Feynman prompt with each step's top-2 gap.

Writes <out>/hf_reference.json (cases, token ids, greedy tokens and gaps) and
<out>/hf_logits.f32 (all logits, float32 little-endian, cases back to back, row-major [rows, vocab]).
"""
import argparse
import json
import os

import numpy as np
import torch
import transformers

import hf_reference as ref

GREEDY_TOKENS = 64


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    model = ref.load(args.checkpoint)
    vocab = model.config.vocab_size

    feynman = ref.encode("Tell me about Richard Feynman.")
    steps = ref.greedy(model, feynman, 192, stop_at_eos=False)
    gen = [s["token"] for s in steps]
    cases = [
        ("feynman_greedy", feynman + gen),  # prompt + 192 greedy tokens: positions 0..223
        ("curie", ref.encode("Who was Marie Curie?")),
        ("fictional", ref.encode("Tell me about Elena Varga.") + list(b"Elena Varga was a")),
        ("fermi_forced", ref.encode("Tell me about Enrico Fermi.") + list(
            b"Enrico Fermi was an Italian-American physicist known for the first nuclear reactor. "
            b"He was born on September 29, 1901, in Rome.")),
        ("no_bos_text", list(b"The quick brown fox jumps over the lazy dog. 0123456789 {}[]<>")),
    ]
    os.makedirs(args.out, exist_ok=True)
    blob, meta = [], []
    offset = 0
    for name, ids in cases:
        logits = ref.all_logits(model, ids).numpy().astype("<f4")
        assert logits.shape == (len(ids), vocab)
        blob.append(logits.tobytes())
        meta.append(dict(name=name, tokens=ids, rows=len(ids), offset=offset,
                         max_abs_logit=float(np.abs(logits).max()),
                         rms_logit=float(np.sqrt((logits.astype(np.float64) ** 2).mean()))))
        offset += logits.size
    with open(os.path.join(args.out, "hf_logits.f32"), "wb") as f:
        f.write(b"".join(blob))
    head = steps[:GREEDY_TOKENS]
    doc = dict(
        about="transformers Qwen3ForCausalLM, float32 on CPU, eager attention; prompt format "
              + ref.PROMPT_FORMAT,
        transformers=transformers.__version__, torch=torch.__version__, vocab_size=vocab,
        logits_file="hf_logits.f32", cases=meta,
        greedy=dict(case="feynman_greedy", prompt_len=len(feynman),
                    tokens=[s["token"] for s in head], second=[s["second"] for s in head],
                    top2_gap=[round(s["gap"], 6) for s in head],
                    text=bytes(t for t in gen[:GREEDY_TOKENS] if t < 256).decode("latin-1")))
    with open(os.path.join(args.out, "hf_reference.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(f"fixtures: {len(cases)} cases, {offset} logits -> {args.out}")
    print("greedy 64:", repr(doc["greedy"]["text"]))
    print("smallest greedy gaps:", sorted(doc["greedy"]["top2_gap"])[:5])


if __name__ == "__main__":
    main()
