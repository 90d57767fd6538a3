// Byte-level tokenizer: ids 0..255 are bytes; special tokens follow (BOS, EOS).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace samebits {

inline constexpr int32_t kByteVocab = 256;

struct ByteTokenizer {
  int32_t bos_id = 256;
  int32_t eos_id = 257;
  // Bytes of text, with BOS first when add_bos.
  std::vector<int32_t> encode(std::string_view text, bool add_bos = true) const;
  // Bytes back to text; special tokens are dropped (or rendered as <bos>/<eos> when show_special).
  std::string decode(const std::vector<int32_t>& ids, bool show_special = false) const;
};

}  // namespace samebits
