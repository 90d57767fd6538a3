// Byte-level tokenizer: a byte is its own id; BOS and EOS follow the 256 bytes.
#include "models/tiny_qwen/tokenizer.h"

namespace samebits {

std::vector<int32_t> ByteTokenizer::encode(std::string_view text, bool add_bos) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() + 1);
  if (add_bos) ids.push_back(bos_id);
  for (char ch : text) ids.push_back(int32_t(static_cast<unsigned char>(ch)));
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<int32_t>& ids, bool show_special) const {
  std::string text;
  text.reserve(ids.size());
  for (int32_t id : ids) {
    if (id >= 0 && id < kByteVocab) {
      text.push_back(static_cast<char>(static_cast<unsigned char>(id)));
    } else if (show_special) {
      if (id == bos_id) {
        text += "<bos>";
      } else if (id == eos_id) {
        text += "<eos>";
      } else {
        text += "<unk:" + std::to_string(id) + ">";
      }
    }
  }
  return text;
}

}  // namespace samebits
