#!/usr/bin/env python3
"""Reference fixtures for samebits' byte-level BPE tokenizer and chat templates
(tests/model/test_bpe_tokenizer.cpp, tests/model/test_chat_template.cpp).

1. Trains a small byte-level BPE tokenizer in Qwen2's format (NFC normaliser, Qwen2's split
   pattern, byte-level pre-tokenizer and decoder, merges by rank, Qwen's added tokens) with
   `tokenizers` on the project's corpus (make_corpus.py) plus a few multilingual lines written
   for this purpose, so that merges also cover multi-byte characters.
2. Saves it with a Qwen chat template beside a small random Qwen3 checkpoint whose vocabulary
   fits it (<out>/ckpt: config.json, generation_config.json, model.safetensors, tokenizer.json,
   tokenizer_config.json), as transformers' own save_pretrained writes them.
3. Reloads the folder with transformers' AutoTokenizer (what a user of transformers gets) and
   records, for a few hundred strings, its encodings, tokens and decodings; decodings of id
   sequences cut inside multi-byte characters; and chat-template renderings of several
   conversations under each template given (--template NAME=FILE), with and without the
   generation prompt and with each thinking setting.

Writes <out>/tokenizer_cases.json and <out>/chat_cases.json. Deterministic (seeded).
Needs tokenizers, transformers and torch (the H200 machine has them). The shipped fixtures came from
  python3 make_tokenizer_fixtures.py --out OUT --template qwen3=QWEN3.jinja --template qwen2_5=QWEN25.jinja
with the chat templates Qwen3 and Qwen2.5-Instruct ship in tokenizer_config.json (chat_cases.json
holds both texts under "templates"); OUT/ckpt/* then goes to ../fixtures/bpe_checkpoint/.
"""
import argparse
import json
import os
import random
import shutil
import sys

import make_corpus

QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED_NOT_SPECIAL = ["<think>", "</think>", "<tool_call>", "</tool_call>"]

# Lines written for this file: accents, other scripts, emoji, digits, so that the trained merges
# join bytes of multi-byte characters too.
MULTILINGUAL = [
    "Schrödinger wrote about the café in Zürich; Noether's théorème is naïve only in appearance.",
    "Marie Skłodowska-Curie était née à Varsovie. Ça va? Österreich, Ålesund, Ærø, façade, jalapeño.",
    "Феинман был американским физиком. Эйнштейн родился в Ульме.",
    "Η φυσική είναι ωραία. Ο Φάινμαν ήταν φυσικός.",
    "费曼是美国理论物理学家，以量子电动力学闻名。北京大学的物理系很有名。",
    "ファインマンはアメリカの物理学者です。東京大学で講義をしました。",
    "파인만은 미국의 물리학자입니다. 한국어 텍스트입니다.",
    "फाइनमैन एक अमेरिकी भौतिक विज्ञानी थे। हिन्दी पाठ।",
    "ไฟน์แมนเป็นนักฟิสิกส์ชาวอเมริกัน",
    "فاينمان فيزيائي أمريكي. العربية ١٢٣٤٥",
    "פיינמן היה פיזיקאי אמריקאי.",
    "Emoji: 😀 😂 👍🏽 👨‍👩‍👧 🇩🇪 🇯🇵 ❤️ 🚀 ✨ 🎉",
    "Numbers: 1918, 1965, 3.14159, 1,000,000, ²³, ½, Ⅻ, ٣٤٥, ९८७.",
]

FIXED_STRINGS = [
    # ASCII
    "Tell me about Richard Feynman.", "Tell me about Richard Feynman.\n", "Who was Marie Curie?",
    "The quick brown fox jumps over the lazy dog.", "", " ", "a", "A", "hello world",
    "Hello, World!", "x=1; y=2; print(x+y)", "foo_bar-baz.qux", "#include <stdio.h>",
    "if (a && b || !c) { return -1; }", "email@example.com", "https://example.com/a?b=c&d=e",
    "C++ and C# and F#", "$100 & 50% off!!!", "...", "?!?!", "--flag=value", "@@@###",
    # contractions
    "don't", "DON'T", "I'm", "I'LL", "we've", "she'd", "it's", "they're", "'s", "'S",
    "O'Neil's", "rock'n'roll", "Feynman's diagrams", "it’s (curly)", "ma'am", "'twas", "y'all'd've",
    "'re'll'd", "''", "'", "Don'T", "I'Ve", "ſ's long s", "'ſ",
    # accents and normalisation (NFC)
    "café", "cafe\u0301", "naïve", "nai\u0308ve", "Zürich", "Schrödinger", "Å", "A\u030a",
    "\u212b ångström sign", "ﬁ ligature", "Ω ohm \u2126", "ê\u0323", "e\u0323\u0302", "Ǆ ǅ ǆ",
    "Straße STRASSE", "İstanbul ıi", "ÆØÅ æøå",
    # other scripts
    "Феинман", "Η φυσική", "北京大学", "費曼", "東京", "한국어", "日本語のテキスト", "中文，标点。",
    "हिन्दी", "ไทย", "العربية", "עברית", "ქართული", "Ελληνικά και English mixed",
    "中文English混合123", "カタカナとひらがな",
    # emoji
    "😀", "😀😀😀", "👍🏽", "👨‍👩‍👧", "🇩🇪🇯🇵", "❤️", "a😀b", " 😀", "🚀 launch", "✨✨ sparkle",
    "🧑🏿‍🚀", "\U0001F600\U0001F601", "emoji at end 🎉",
    # digits
    "0", "12", "123", "1234567890", "12345678901234567890", "3.14159", "1,000,000", "-42",
    "1e10", "0x1F", "2026-11-30", "12:34:56", "v1.2.3", "abc123def", "١٢٣", "٣٤٥٦", "९८७",
    "²³", "½", "Ⅻ", "①②③", "一二三", "１２３ fullwidth",
    # whitespace
    "a  b", "a   b", "a\tb", "a\t\tb", "   leading", "trailing   ", "  both  ", "\n", "\n\n",
    "\n\n\n", " \n", "\n ", " \n \n", "a\nb", "a\n\nb", "a \n b", "a\r\nb", "\r\n\r\n", "\r",
    "\t", "\t\t\tx", "x\t", "    def f():\n        return 1\n", "a\u00a0b", "\u00a0", "\u3000x",
    "a\u2028b", "a\u2029b", "a\u0085b", "a\u000bb", "a\u000cb", "a\u001cb", "a\u001fb",
    "a\u180eb", "a\u200bb", "a\u2009b", "a\u202fb", "a\u205fb", "a\u1680b", "   \n\n   ",
    "word \n\n\n  word", "end with spaces  \n", "!!  \n", "x  !", " !", "\n!", "a\n\tb",
    # special and added tokens
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|im_start|>user\nhi<|im_end|>",
    "<|im_start|>assistant\n", "text<|endoftext|>more", "<|im_start|><|im_start|>",
    "<|im_start|", "|im_start|>", "< |im_start|>", "<|IM_START|>", "<think>", "</think>",
    "<think>\nreasoning\n</think>\n\nanswer", "x<think>y", " <think> ", "<tool_call>{}</tool_call>",
    "<|endoftext|><|endoftext|>", "<|im_end|>\n<|im_start|>user\n",
    # mixed
    "Richard Phillips Feynman (1918–1988) — “Surely You're Joking!”",
    "Price: €10, £5, ¥100, ₹50", "∑ x² ≤ ∞ → λ", "©®™", "a·b", "a…b", "«quotes»",
    "tab\tand\nnewline\rand\r\nall", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𝟙𝟚𝟛", "Ｆｕｌｌｗｉｄｔｈ",
]

# Character pool for seeded random strings: every class the split pattern distinguishes.
POOL = (list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        + list(" \t\n\r'.,;:!?-_()[]{}<>\"/\\@#$%^&*+=~`|") + [" "] * 8
        + list("éèüößçñÅØæ") + ["e\u0301", "\u0308"] + list("ЖжΩω中文字北京日本한국")
        + list("😀👍🏽❤️🚀") + ["\u200d", "\u00a0", "\u3000", "\u2028", "\u0085"]
        + list("١٢٣²½Ⅻ") + ["'s", "'ll", "'T", "<|im_end|>", "<think>", "<|endoftext|>"])


def random_strings(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        length = rng.choice([1, 2, 3, 5, 8, 13, 21, 34])
        out.append("".join(rng.choice(POOL) for _ in range(length)))
    return out


def corpus_strings(docs, n, seed):
    rng = random.Random(seed)
    out = []
    for doc in rng.sample(docs, n):
        lines = doc.split("\n")
        out.append(rng.choice(lines) if rng.random() < 0.5 else doc[: rng.randint(20, 400)])
    out.append(docs[0])  # one whole document
    return out


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def conversations():
    feynman = "Tell me about Richard Feynman."
    return [
        ("user_only", [{"role": "user", "content": feynman}]),
        ("system_user", [{"role": "system", "content": "You are terse."},
                         {"role": "user", "content": "Hi"}]),
        ("multi_turn", [{"role": "user", "content": "Who was Marie Curie?"},
                        {"role": "assistant", "content": "A physicist and chemist."},
                        {"role": "user", "content": "And Lise Meitner?"}]),
        ("system_multi_turn", [{"role": "system", "content": "Answer in one line."},
                               {"role": "user", "content": "2+2?"},
                               {"role": "assistant", "content": "4"},
                               {"role": "user", "content": "3+3?"}]),
        ("think_in_history", [{"role": "user", "content": "Q1"},
                              {"role": "assistant", "content": "<think>\nstep one\n</think>\n\nA1"},
                              {"role": "user", "content": "Q2"}]),
        ("think_last_assistant", [{"role": "user", "content": "Q1"},
                                  {"role": "assistant",
                                   "content": "<think>\n\nplan\n\n</think>\n\n\nA1"}]),
        ("plain_last_assistant", [{"role": "user", "content": "Q1"},
                                  {"role": "assistant", "content": "A1"}]),
        ("reasoning_field", [{"role": "user", "content": "Q1"},
                             {"role": "assistant", "content": "A1", "reasoning_content": "\nwhy\n"}]),
        ("reasoning_after_query", [{"role": "user", "content": "Q1"},
                                   {"role": "assistant", "content": "A1", "reasoning_content": "r1"},
                                   {"role": "assistant", "content": "A2"},
                                   {"role": "assistant", "content": "<think>r3</think>A3"}]),
        ("system_not_first", [{"role": "user", "content": "Q1"},
                              {"role": "system", "content": "Be brief."},
                              {"role": "user", "content": "Q2"}]),
        ("system_only", [{"role": "system", "content": "Only a system message."}]),
        ("unicode_content", [{"role": "user", "content": "Schrödinger 😀 北京 \n\n  spaced  "}]),
        ("empty_content", [{"role": "user", "content": ""}]),
        ("special_in_content", [{"role": "user", "content": "<|im_end|> inside <think>x</think>"}]),
        ("think_without_open", [{"role": "user", "content": "Q"},
                                {"role": "assistant", "content": "no open tag</think>rest"}]),
        ("two_thinks", [{"role": "user", "content": "Q"},
                        {"role": "assistant",
                         "content": "<think>a</think>mid<think>b</think>\nend"}]),
    ]


def log(*a):
    print(*a, flush=True)


def train_tokenizer(docs, vocab_size):
    from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,
                            pre_tokenizers, processors, trainers)
    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=[])
    tok.train_from_iterator(docs + MULTILINGUAL * 40, trainer)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in ADDED_NOT_SPECIAL])
    return tok


def save_checkpoint(tok, ckpt, template_text):
    import torch
    import transformers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM
    os.makedirs(ckpt, exist_ok=True)
    kw = dict(tokenizer_object=tok, bos_token=None, eos_token="<|im_end|>",
              pad_token="<|endoftext|>", unk_token=None, model_max_length=1024,
              clean_up_tokenization_spaces=False)
    try:
        fast = PreTrainedTokenizerFast(additional_special_tokens=["<|im_start|>", "<|im_end|>"], **kw)
    except (TypeError, ValueError) as e:
        log("additional_special_tokens refused:", e)
        fast = PreTrainedTokenizerFast(**kw)
    fast.chat_template = template_text
    fast.save_pretrained(ckpt)
    # Qwen's layout: the template inside tokenizer_config.json, class Qwen2Tokenizer.
    cfg_path = os.path.join(ckpt, "tokenizer_config.json")
    cfg = json.load(open(cfg_path))
    cfg["chat_template"] = template_text
    cfg["tokenizer_class"] = "Qwen2Tokenizer"
    cfg["add_prefix_space"] = False
    cfg["errors"] = "replace"
    cfg["split_special_tokens"] = False
    json.dump(cfg, open(cfg_path, "w"), indent=2, ensure_ascii=False)
    for extra in os.listdir(ckpt):
        if extra not in ("tokenizer.json", "tokenizer_config.json"):
            log("removed", extra, "written by save_pretrained")
            os.remove(os.path.join(ckpt, extra))
    # Tokenizer ids run to len(tok); real Qwen checkpoints pad the embedding past it.
    n = tok.get_vocab_size(with_added_tokens=True)
    vocab = (n + 127) // 128 * 128
    torch.manual_seed(1918)
    config = Qwen3Config(vocab_size=vocab, hidden_size=128, intermediate_size=256,
                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                         head_dim=64, max_position_embeddings=1024, rms_norm_eps=1e-6,
                         tie_word_embeddings=True, rope_theta=1000000.0,
                         bos_token_id=tok.token_to_id("<|endoftext|>"),
                         eos_token_id=tok.token_to_id("<|im_end|>"),
                         pad_token_id=tok.token_to_id("<|endoftext|>"))
    model = Qwen3ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(ckpt, safe_serialization=True)
    log("checkpoint:", sorted(os.listdir(ckpt)), "vocab", vocab, "tokenizer", n,
        "transformers", transformers.__version__)


def encode_cases(hf, raw, strings):
    cases, raw_mismatch = [], 0
    for s in strings:
        ids = hf.encode(s, add_special_tokens=False)
        with_special = hf.encode(s)
        raw_ids = raw.encode(s).ids
        if raw_ids != ids:
            raw_mismatch += 1
        case = dict(text=s, ids=ids, tokens=hf.convert_ids_to_tokens(ids),
                          ids_add_special=with_special,
                          decoded=hf.decode(ids, skip_special_tokens=False),
                    decoded_skip_special=hf.decode(ids, skip_special_tokens=True))
        if raw_ids != ids:
            case["raw_tokenizers_ids"] = raw_ids
        cases.append(case)
    return cases, raw_mismatch


def partial_decode_cases(hf, strings):
    """Id sequences cut inside multi-byte characters: single byte tokens and cut encodings."""
    b2u = bytes_to_unicode()
    out = []
    for s in strings:
        data = s.encode("utf-8")
        if len(data) == len(s):
            continue
        byte_ids = hf.convert_tokens_to_ids([b2u[b] for b in data])
        for cut in range(1, min(len(byte_ids), 12) + 1):
            ids = byte_ids[:cut]
            out.append(dict(ids=ids, decoded=hf.decode(ids, skip_special_tokens=False)))
        ids = hf.encode(s, add_special_tokens=False)
        for cut in range(1, len(ids)):
            out.append(dict(ids=ids[:cut], decoded=hf.decode(ids[:cut], skip_special_tokens=False)))
    return out


def chat_cases(hf, templates):
    out = []
    for name, text in templates:
        for conv_name, messages in conversations():
            for gen in (False, True):
                for thinking in (None, False, True):
                    kw = {} if thinking is None else {"enable_thinking": thinking}
                    try:
                        rendered = hf.apply_chat_template(messages, chat_template=text,
                                                          add_generation_prompt=gen,
                                                          tokenize=False, **kw)
                        ids = hf.encode(rendered, add_special_tokens=False)
                        err = None
                    except Exception as e:  # recorded: the C++ side must refuse too
                        rendered, ids, err = None, None, f"{type(e).__name__}: {e}"
                    out.append(dict(template=name, conversation=conv_name, messages=messages,
                                    add_generation_prompt=gen, enable_thinking=thinking,
                                    rendered=rendered, ids=ids, error=err))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--vocab-size", type=int, default=2048)
    ap.add_argument("--template", action="append", default=[],
                    help="NAME=FILE: a chat template to render; the first goes into the checkpoint")
    ap.add_argument("--dry-run", action="store_true",
                    help="only build the string and conversation lists (no tokenizers needed)")
    args = ap.parse_args()
    templates = []
    for spec in args.template:
        name, path = spec.split("=", 1)
        templates.append((name, open(path, encoding="utf-8").read()))
    docs = list(make_corpus.documents(1918, 4_000_000))
    strings = FIXED_STRINGS + MULTILINGUAL + corpus_strings(docs, 60, 7) + random_strings(160, 11)
    log(f"corpus {len(docs)} documents; {len(strings)} strings; {len(conversations())} conversations")
    if args.dry_run:
        return
    import tokenizers
    import transformers
    from transformers import AutoTokenizer
    os.makedirs(args.out, exist_ok=True)
    ckpt = os.path.join(args.out, "ckpt")
    tok = train_tokenizer(docs, args.vocab_size)
    log("trained: vocab", tok.get_vocab_size(), "tokenizers", tokenizers.__version__)
    save_checkpoint(tok, ckpt, templates[0][1] if templates else None)
    try:
        hf = AutoTokenizer.from_pretrained(ckpt)
    except Exception as e:  # keep the run: fall back to the generic fast tokenizer class
        log("AutoTokenizer with Qwen2Tokenizer failed:", type(e).__name__, e)
        cfg_path = os.path.join(ckpt, "tokenizer_config.json")
        cfg = json.load(open(cfg_path))
        cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
        json.dump(cfg, open(cfg_path, "w"), indent=2, ensure_ascii=False)
        hf = AutoTokenizer.from_pretrained(ckpt)
    log("reloaded as", type(hf).__name__)
    from tokenizers import Tokenizer
    raw = Tokenizer.from_file(os.path.join(ckpt, "tokenizer.json"))
    enc, raw_mismatch = encode_cases(hf, raw, strings)
    partial = partial_decode_cases(hf, strings)
    vocab_n = raw.get_vocab_size(with_added_tokens=True)
    extra_decodes = [dict(ids=ids, decoded=hf.decode(ids, skip_special_tokens=skip), skip_special=skip)
                     for ids in ([vocab_n, 5], [vocab_n + 3], [0, vocab_n, 1],
                                 [hf.convert_tokens_to_ids("<|im_start|>"), 70, 71])
                     for skip in (False, True)]
    doc = dict(about="transformers AutoTokenizer over ckpt/ (trained by make_tokenizer_fixtures.py)",
               transformers=transformers.__version__, tokenizers=tokenizers.__version__,
               tokenizer_class=type(hf).__name__, vocab_size=vocab_n,
               raw_tokenizers_mismatches=raw_mismatch, encode=enc, partial_decode=partial,
               out_of_range_decode=extra_decodes)
    json.dump(doc, open(os.path.join(args.out, "tokenizer_cases.json"), "w"), ensure_ascii=True,
              indent=0)
    chats = chat_cases(hf, templates)
    default_render = None
    try:
        default_render = hf.apply_chat_template(conversations()[0][1], add_generation_prompt=True,
                                                tokenize=False)
    except Exception as e:
        log("default template failed:", e)
    json.dump(dict(templates={n: t for n, t in templates}, checkpoint_template=templates[0][0]
                   if templates else None, checkpoint_default_render=default_render, cases=chats),
              open(os.path.join(args.out, "chat_cases.json"), "w"), ensure_ascii=True, indent=0)
    errors = sum(c["error"] is not None for c in chats)
    log(f"encode cases {len(enc)} (raw tokenizers differ on {raw_mismatch}); partial decodes "
        f"{len(partial)}; chat cases {len(chats)} ({errors} errors)")
    total_tokens = sum(len(c["ids"]) for c in enc)
    log(f"tokens over all strings: {total_tokens}; bytes: {sum(len(c['text'].encode()) for c in enc)}")


if __name__ == "__main__":
    sys.exit(main())
