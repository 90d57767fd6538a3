// Byte-level tokenizer of the built-in checkpoint: ids 0..255 are bytes; special tokens follow
// (BOS, EOS). Used for checkpoints without a tokenizer.json.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/tiny_qwen/text_tokenizer.h"

namespace samebits {

inline constexpr int32_t kByteVocab = 256;

struct ByteTokenizer final : TextTokenizer {
  int32_t bos_id = 256;
  int32_t eos_id = 257;
  // Bytes of text, with BOS first when add_bos.
  std::vector<int32_t> encode(std::string_view text, bool add_bos = true) const;
  // Bytes back to text; special tokens are dropped (or rendered as <bos>/<eos> when show_special).
  std::string decode(const std::vector<int32_t>& ids, bool show_special = false) const;

  // TextTokenizer: every byte string is a prompt (no UTF-8 check); BOS when add_special.
  absl::StatusOr<std::vector<int32_t>> encode_text(std::string_view text, bool add_special) const override {
    return encode(text, add_special && bos_id >= 0);
  }
  std::string token_bytes(int32_t id) const override {
    return id >= 0 && id < kByteVocab ? std::string(1, char(id)) : std::string();
  }
  bool is_special(int32_t id) const override { return id >= kByteVocab; }
  int32_t byte_token(uint8_t byte) const override { return byte; }
  int32_t prompt_bos() const override { return bos_id; }
  int32_t vocab_size() const override { return kByteVocab; }
  absl::StatusOr<ChatTemplate> chat_template() const override {
    return absl::FailedPreconditionError(
        "the model has no chat template (a byte-level checkpoint without tokenizer.json); give the prompt as text");
  }
  std::string description() const override { return "bytes (ids 0..255; no tokenizer.json)"; }
};

}  // namespace samebits
