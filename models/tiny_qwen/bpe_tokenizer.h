// Byte-level BPE from a checkpoint's tokenizer.json, encoding exactly as transformers does for
// Qwen2 and Qwen3 (tests: models/tiny_qwen/fixtures/tokenizer_cases.json, made by transformers).
// Pipeline: added tokens (<|im_start|>, <think>, ...) are cut out first, leftmost-longest, from the
// raw text (those marked normalized after normalisation); the rest is normalised (NFC, with ICU),
// split by the pre-tokenizer's pattern (PCRE2 with Unicode properties), each piece's bytes mapped
// to tokens and merged pair by pair, lowest merge rank first (leftmost on ties). Decoding joins the
// tokens' bytes; text for people goes through utf8_lossy / display_text.
// Supported tokenizer.json parts (anything else is refused, naming the field): normalizer null or
// NFC; pre_tokenizer Split (Regex or String, behavior Isolated), ByteLevel, or a Sequence of them
// (ByteLevel without add_prefix_space); model BPE without dropout, unk_token or subword affixes;
// decoder ByteLevel; post_processor null or ByteLevel. tokenizer_config.json: chat_template (or
// chat_template.jinja beside it), add_bos_token with bos_token, clean_up_tokenization_spaces.
#pragma once
#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "models/tiny_qwen/text_tokenizer.h"

namespace samebits {

// A checkpoint's tokenizer files as text (what BpeTokenizer::load reads from `dir`; `dir` names
// them in errors).
struct TokenizerFiles {
  std::string dir;
  std::string tokenizer_json;
  std::optional<std::string> tokenizer_config_json;  // absent: no tokenizer_config.json
  std::optional<std::string> chat_template_jinja;    // absent: no chat_template.jinja
};

class BpeTokenizer final : public TextTokenizer {
 public:
  // `dir` holds tokenizer.json (and optionally tokenizer_config.json, chat_template.jinja). Every
  // error is one line naming the file and the field.
  static absl::StatusOr<std::unique_ptr<BpeTokenizer>> load(const std::string& dir);
  // The same from the files' text (tests and fuzzing: nothing is read from disk).
  static absl::StatusOr<std::unique_ptr<BpeTokenizer>> from_files(const TokenizerFiles& files);
  ~BpeTokenizer() override;

  absl::StatusOr<std::vector<int32_t>> encode_text(std::string_view text, bool add_special) const override;
  std::string token_bytes(int32_t id) const override;
  bool is_special(int32_t id) const override;
  int32_t byte_token(uint8_t byte) const override { return byte_ids_[byte]; }
  int32_t prompt_bos() const override { return add_bos_ ? bos_id_ : -1; }
  int32_t vocab_size() const override { return int32_t(tokens_.size()); }
  absl::StatusOr<ChatTemplate> chat_template() const override;
  std::string description() const override;

  // Whether merged pieces are remembered across calls (on by default; off to measure the merges).
  void set_piece_cache(bool enabled) { cache_enabled_ = enabled; }

  // transformers' tokenizer.decode(ids, skip_special_tokens=...): lossy UTF-8, unknown ids dropped.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special) const;

 private:
  struct AddedToken {
    std::string content;
    int32_t id = -1;
    bool special = false, lstrip = false, rstrip = false, normalized = false;
  };
  struct Regex;  // a compiled PCRE2 pattern

  BpeTokenizer() = default;
  absl::Status parse_tokenizer_json(const TokenizerFiles& files);
  absl::Status parse_config(const TokenizerFiles& files);
  // Leftmost-longest added token at or after `from` among those with `normalized` equal to the
  // flag; returns its index in added_ or -1, and its start in *at.
  int find_added(std::string_view text, size_t from, bool normalized, size_t* at) const;
  void encode_raw_segment(std::string_view text, std::vector<int32_t>& ids) const;
  void encode_normalized(std::string_view text, std::vector<int32_t>& ids) const;
  void encode_piece(std::string_view piece, std::vector<int32_t>& ids) const;

  std::vector<std::string> tokens_;  // id -> bytes (added tokens: their decoded text)
  std::vector<uint8_t> special_;     // id -> special added token
  absl::flat_hash_map<std::string, int32_t> vocab_;  // bytes -> id (model vocabulary)
  absl::flat_hash_map<uint64_t, std::pair<int32_t, int32_t>> merges_;  // (left, right) -> (rank, merged id)
  std::array<int32_t, 256> byte_ids_{};
  std::vector<AddedToken> added_;
  std::array<bool, 256> added_first_byte_{};
  bool nfc_ = false;
  bool ignore_merges_ = false;
  std::vector<std::unique_ptr<Regex>> splits_;  // applied in order, each splitting the pieces further
  int32_t bos_id_ = -1;
  bool add_bos_ = false;
  bool clean_up_spaces_ = false;
  std::optional<ChatTemplate> chat_;
  std::string chat_error_;
  std::string dir_;
  // Pieces already merged (as the tokenizers library keeps one): prompts repeat words.
  bool cache_enabled_ = true;
  mutable std::mutex cache_mutex_;
  mutable absl::flat_hash_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace samebits
