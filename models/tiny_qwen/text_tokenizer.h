// The model's tokenizer as the harness sees it: prompt text to ids, ids back to bytes, and the
// chat template when the checkpoint has one. Two implementations: ByteTokenizer (the built-in
// checkpoint, ids are bytes) and BpeTokenizer (a checkpoint's tokenizer.json, as transformers reads
// it). Results, reports and goldens take their text from here, never from a tokenizer of their own.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "models/tiny_qwen/chat_template.h"

namespace samebits {

class TextTokenizer {
 public:
  virtual ~TextTokenizer() = default;
  // Ids of `text` as the model's own library gives them: with add_special, what
  // `tokenizer(text)` gives (BOS where the tokenizer adds one); without, what a chat template's
  // rendering is encoded with. Errors: text that is not valid UTF-8 (BPE).
  virtual absl::StatusOr<std::vector<int32_t>> encode_text(std::string_view text, bool add_special) const = 0;
  // Bytes of one token (an added token's text); empty for ids the tokenizer does not know.
  virtual std::string token_bytes(int32_t id) const = 0;
  virtual bool is_special(int32_t id) const = 0;
  // Id of the token that is exactly this one byte (background filler text).
  virtual int32_t byte_token(uint8_t byte) const = 0;
  // BOS that starts every prompt, or -1 when prompts start without one.
  virtual int32_t prompt_bos() const = 0;
  virtual int32_t vocab_size() const = 0;  // ids 0 .. vocab_size-1 are known
  // The checkpoint's chat template; an error saying why there is none (the built-in model, no
  // template in tokenizer_config.json, a template samebits does not render).
  virtual absl::StatusOr<ChatTemplate> chat_template() const = 0;
  virtual std::string description() const = 0;

  // Bytes of `ids` back to back (specials dropped when skip_special); may end inside a character.
  std::string decode_bytes(const std::vector<int32_t>& ids, bool skip_special) const;
};

// UTF-8 to valid text the way Rust's String::from_utf8_lossy (hence transformers) does it: each
// maximal invalid subsequence becomes one U+FFFD.
std::string utf8_lossy(std::string_view bytes);
// Text for people: valid UTF-8 kept, bytes that do not form a character (a fork inside a
// multi-byte character) as \xNN escapes, control bytes other than \n as '?'.
std::string display_text(std::string_view bytes);
// Length of the valid UTF-8 sequence at `s[i]`, 0 when none starts there.
int utf8_sequence_length(std::string_view s, size_t i);

}  // namespace samebits
