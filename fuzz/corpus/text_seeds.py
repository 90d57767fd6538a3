#!/usr/bin/env python3
"""Writes the seeds of fuzz_tokenizer and fuzz_client_response (run from anywhere; python3 only).

fuzz_tokenizer: small tokenizer files cut from the fixture checkpoint's
(models/tiny_qwen/fixtures/bpe_checkpoint): the 256 byte tokens, the first 12 merges that stay
within them, the added tokens and the full pipeline (NFC, the Qwen split pattern, ByteLevel), each
input being tokenizer.json [NUL tokenizer_config.json [NUL chat_template.jinja]] as the target
reads it (fuzz/tokenizer_input.h). Small files keep each execution short (ci/fuzz.sh's -max_len);
the fixture's own 127 KB tokenizer.json would spend the fuzzer's time parsing one vocabulary.
fuzz_client_response: the vLLM and SGLang response fixtures of tests/serve/fixtures and samebits
serve's own shapes, each behind the byte that selects body, stream or model list."""
import json
import pathlib

root = pathlib.Path(__file__).resolve().parents[2]
fixtures = root / "models/tiny_qwen/fixtures/bpe_checkpoint"
out = root / "fuzz/corpus"


def compact(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


tok = json.loads((fixtures / "tokenizer.json").read_text())
vocab_full = tok["model"]["vocab"]
byte_tokens = sorted(vocab_full, key=vocab_full.get)[:256]
vocab = {t: i for i, t in enumerate(byte_tokens)}
merges = []
for left, right in tok["model"]["merges"]:
    if left in vocab and right in vocab:
        vocab[left + right] = len(vocab)
        merges.append([left, right])
    if len(merges) == 12:
        break
# The added tokens the Qwen templates use, with only the fields that differ from the defaults.
kept = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>")
added = [{"id": len(vocab) + k, "content": a["content"], "special": a["special"]}
         for k, a in enumerate(a for a in tok["added_tokens"] if a["content"] in kept)]
small = dict(tok, added_tokens=added, model=dict(tok["model"], vocab=vocab, merges=merges))
for key in ("version", "truncation", "padding"):
    small.pop(key, None)

seeds = {
    # The fixture's pipeline (NFC, the Qwen split pattern, ByteLevel); a template the reader does
    # not recognise (a recognised one is matched by its digest, which a mutation breaks).
    "qwen_pipeline": compact(small) + b"\0" + compact({"add_bos_token": False, "chat_template": "{{ x }}"}),
    # Merges as "a b" strings; GPT-2's ByteLevel pre-tokenizer alone; a BOS token added; stripping
    # added tokens.
    "byte_level_bos": compact(dict(small, normalizer=None, pre_tokenizer={"type": "ByteLevel", "use_regex": True},
                                   added_tokens=[dict(a, lstrip=True, rstrip=True) if a["content"] == "<think>" else a
                                                 for a in added],
                                   model=dict(small["model"], merges=[" ".join(m) for m in merges])))
    + b"\0" + compact({"add_bos_token": True, "bos_token": {"content": "<|endoftext|>"},
                       "clean_up_tokenization_spaces": True}),
    # No tokenizer_config.json; a Sequence normalizer; a String split.
    "string_split": compact(dict(small, normalizer={"type": "Sequence", "normalizers": [{"type": "NFC"}]},
                                 pre_tokenizer={"type": "Sequence", "pretokenizers": [
                                     {"type": "Split", "pattern": {"String": " "}, "behavior": "Isolated"},
                                     {"type": "ByteLevel", "use_regex": False}]})),
    # chat_template.jinja beside tokenizer_config.json (named templates in the config); ignore_merges.
    "jinja_file": compact(dict(small, model=dict(small["model"], ignore_merges=True))) + b"\0"
    + compact({"chat_template": [{"name": "default", "template": "{{ x }}"}]}) + b"\0" + b"{{ messages }}",
}
for name, data in seeds.items():
    (out / "fuzz_tokenizer" / name).write_bytes(data)

serve_fixtures = root / "tests/serve/fixtures"
digest = "0123456789abcdef"
samebits_completion = {
    "id": "cmpl-1", "object": "text_completion", "model": "m",
    "choices": [{"index": 0, "text": "Hi there", "finish_reason": "length", "token_ids": [72, 105, 32],
                 "logprobs": {"tokens": ["H", "i", " "], "token_logprobs": [-0.5, -1.25, -2.0],
                              "top_logprobs": [{"H": -0.5, "A": -1.5}, {"i": -1.25}, {" ": -2.0}],
                              "text_offset": [0, 1, 2]},
                 "samebits": {"step_digests": [digest] * 3, "digest": digest}}]}
samebits_chat_stream = b"".join(
    b"data: " + compact({"choices": [{"index": 0, "delta": {"content": c}, "token_ids": [i],
                                      "logprobs": {"content": [{"token": c, "logprob": -0.25,
                                                                "top_logprobs": [{"token": c, "logprob": -0.25}]}]},
                                      "samebits": {"step_digests": [digest]}}]}) + b"\n\n"
    for i, c in ((72, "H"), (105, "i"))) + b"data: " + compact({"choices": [], "usage": {"completion_tokens": 2}}) \
    + b"\r\n\r\ndata: [DONE]\n\n"
models = {"object": "list", "data": [
    {"id": "other", "object": "model"},
    {"id": "m", "object": "model", "created": 1, "owned_by": "samebits",
     "samebits": {"weights_digest": digest, "kernel_set_version": 3, "backend_id": "cpu", "mode": "invariant"}}]}
client = {
    "vllm_completions_token_ids": b"\x00" + (serve_fixtures / "vllm_completions_token_ids.json").read_bytes(),
    "vllm_completions_placeholders": b"\x00" + (serve_fixtures / "vllm_completions_placeholders.json").read_bytes(),
    "sglang_completions": b"\x00" + (serve_fixtures / "sglang_completions.json").read_bytes(),
    "samebits_completion": b"\x00" + compact(samebits_completion),
    "vllm_chat_placeholders": b"\x01" + (serve_fixtures / "vllm_chat_placeholders.json").read_bytes(),
    "error_body": b"\x01" + compact({"error": {"message": "bad", "type": "invalid_request_error"}}),
    # Streams: whole, and fed 3 and 32 bytes at a time.
    "vllm_completions_stream": bytes([2]) + (serve_fixtures / "vllm_completions_stream.sse").read_bytes(),
    "sglang_chat_stream": bytes([2 | 4 | (2 << 3)]) + (serve_fixtures / "sglang_chat_stream.sse").read_bytes(),
    "samebits_chat_stream": bytes([2 | 4 | (31 << 3)]) + samebits_chat_stream,
    "models": b"\x03" + compact(models),
}
for name, data in client.items():
    (out / "fuzz_client_response" / name).write_bytes(data)
