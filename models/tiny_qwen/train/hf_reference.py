"""Shared by make_fixtures.py and near_ties.py: the checkpoint in transformers' Qwen3ForCausalLM,
in float32 on the CPU (no TF32, no reduced-precision shortcuts), and exact greedy decoding."""
import torch
from transformers import Qwen3ForCausalLM

BOS, EOS = 256, 257
PROMPT_FORMAT = "BOS + the bytes of the question + '\\n'"


def load(checkpoint_dir):
    torch.set_float32_matmul_precision("highest")
    try:
        model = Qwen3ForCausalLM.from_pretrained(checkpoint_dir, dtype=torch.float32,
                                                 attn_implementation="eager")
    except TypeError:  # transformers 4 spells it torch_dtype
        model = Qwen3ForCausalLM.from_pretrained(checkpoint_dir, torch_dtype=torch.float32,
                                                 attn_implementation="eager")
    model.eval()
    assert next(model.parameters()).dtype == torch.float32
    return model


def encode(question):
    return [BOS] + list((question + "\n").encode())


@torch.no_grad()
def all_logits(model, ids):
    """fp32 logits [len(ids), vocab] for every position of one sequence."""
    return model(input_ids=torch.tensor([ids])).logits[0].float()


@torch.no_grad()
def greedy(model, prompt_ids, max_new, stop_at_eos=True):
    """Greedy tokens with each step's top-2 gap (nats). Every step recomputes the whole sequence
    (no KV cache), so each step's logits are those of one full prefill."""
    ids, out = list(prompt_ids), []
    for _ in range(max_new):
        logits = all_logits(model, ids)[-1]
        top = torch.topk(logits, 2)
        tok = int(top.indices[0])
        # argmax ties go to the lowest id, as samebits' sampler does
        if float(top.values[0]) == float(top.values[1]):
            tok = min(tok, int(top.indices[1]))
        out.append(dict(token=tok, second=int(top.indices[1]),
                        gap=float(top.values[0] - top.values[1])))
        ids.append(tok)
        if stop_at_eos and tok == EOS:
            break
    return out


def show(tok):
    if tok == BOS:
        return "<bos>"
    if tok == EOS:
        return "<eos>"
    return bytes([tok]).decode("latin-1")
