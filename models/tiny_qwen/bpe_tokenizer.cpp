// Byte-level BPE from tokenizer.json (see the header for the pipeline and what is supported).
#include "models/tiny_qwen/bpe_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/input_file.h"
#include "nlohmann/json.hpp"

namespace samebits {

using nlohmann::json;

namespace {

// GPT-2's byte-to-character table: printable bytes stand for themselves, the others for U+0100 on.
struct ByteLevelAlphabet {
  std::array<uint32_t, 256> char_of{};                  // byte -> code point
  absl::flat_hash_map<uint32_t, uint8_t> byte_of;       // code point -> byte
  ByteLevelAlphabet() {
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae);
      char_of[b] = printable ? b : next++;
      byte_of[char_of[b]] = uint8_t(b);
    }
  }
};
const ByteLevelAlphabet& alphabet() {
  static const ByteLevelAlphabet a;
  return a;
}

// Next code point of valid UTF-8 at s[*i] (advancing *i).
uint32_t next_code_point(std::string_view s, size_t* i) {
  const int len = utf8_sequence_length(s, *i);
  const auto at = [&](size_t k) { return uint32_t(static_cast<unsigned char>(s[*i + k])); };
  uint32_t cp = len == 1 ? at(0) : len == 2 ? at(0) & 0x1f : len == 3 ? at(0) & 0x0f : at(0) & 0x07;
  for (int k = 1; k < len; ++k) cp = (cp << 6) | (at(size_t(k)) & 0x3f);
  *i += size_t(len > 0 ? len : 1);
  return cp;
}

// The tokenizers library's ByteLevel decoding of one token: its characters mapped back to bytes,
// or its own UTF-8 when a character is outside the alphabet. Sets *byte_level accordingly.
std::string byte_level_bytes(std::string_view token, bool* byte_level) {
  std::string out;
  for (size_t i = 0; i < token.size();) {
    const auto it = alphabet().byte_of.find(next_code_point(token, &i));
    if (it == alphabet().byte_of.end()) {
      *byte_level = false;
      return std::string(token);
    }
    out.push_back(char(it->second));
  }
  *byte_level = true;
  return out;
}

bool valid_utf8(std::string_view s, size_t* bad) {
  for (size_t i = 0; i < s.size();) {
    const int len = utf8_sequence_length(s, i);
    if (len == 0) {
      *bad = i;
      return false;
    }
    i += size_t(len);
  }
  return true;
}

std::string nfc(std::string_view text) {
  bool ascii = true;
  for (char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(text);
  UErrorCode err = U_ZERO_ERROR;
  const UNormalizer2* norm = unorm2_getNFCInstance(&err);
  std::vector<UChar> src(text.size() + 1);
  int32_t src_len = 0;
  u_strFromUTF8(src.data(), int32_t(src.size()), &src_len, text.data(), int32_t(text.size()), &err);
  if (U_FAILURE(err) || !norm) return std::string(text);
  if (unorm2_quickCheck(norm, src.data(), src_len, &err) == UNORM_YES && U_SUCCESS(err)) return std::string(text);
  err = U_ZERO_ERROR;
  std::vector<UChar> dst(size_t(src_len) * 3 + 16);
  const int32_t dst_len = unorm2_normalize(norm, src.data(), src_len, dst.data(), int32_t(dst.size()), &err);
  if (U_FAILURE(err)) return std::string(text);
  std::string out(size_t(dst_len) * 3 + 4, '\0');
  int32_t out_len = 0;
  err = U_ZERO_ERROR;
  u_strToUTF8(out.data(), int32_t(out.size()), &out_len, dst.data(), dst_len, &err);
  if (U_FAILURE(err)) return std::string(text);
  out.resize(size_t(out_len));
  return out;
}

// Python's str.replace family as transformers' clean_up_tokenization applies it.
std::string clean_up_tokenization(std::string text) {
  static const std::pair<const char*, const char*> kRules[] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) {
    std::string out;
    const std::string_view f(from);
    size_t pos = 0;
    for (size_t hit; (hit = text.find(f, pos)) != std::string::npos; pos = hit + f.size()) {
      out.append(text, pos, hit - pos);
      out += to;
    }
    out.append(text, pos);
    text = std::move(out);
  }
  return text;
}

std::string describe(const json& j) {
  std::string s = j.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// Typed reads of a tokenizer file's fields. nlohmann's value() throws on a field of another type
// (and on a value that is not an object); these give one error naming the file and the field.
class FieldReader {
 public:
  explicit FieldReader(std::string path) : path_(std::move(path)) {}
  absl::Status fail(const std::string& field, const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": ", field, ": ", what));
  }
  // obj[key] when obj is an object holding key with a non-null value; else nullptr.
  static const json* find(const json& obj, const char* key) {
    if (!obj.is_object()) return nullptr;
    const auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }
  // A boolean field; `fallback` when absent or null.
  absl::Status flag(const json& obj, const char* key, bool fallback, const std::string& field, bool* out) const {
    const json* v = find(obj, key);
    if (v && !v->is_boolean()) return fail(field, absl::StrCat(describe(*v), " is not true or false"));
    *out = v ? v->get<bool>() : fallback;
    return absl::OkStatus();
  }
  // A string field; "" when absent or null.
  absl::Status text(const json& obj, const char* key, const std::string& field, std::string* out) const {
    const json* v = find(obj, key);
    if (v && !v->is_string()) return fail(field, absl::StrCat(describe(*v), " is not a string"));
    *out = v ? v->get<std::string>() : std::string();
    return absl::OkStatus();
  }
  // An object field (a part of the pipeline); nullptr when absent or null.
  absl::Status object(const json& obj, const char* key, const std::string& field, const json** out) const {
    const json* v = find(obj, key);
    if (v && !v->is_object()) return fail(field, absl::StrCat(describe(*v), " is not an object"));
    *out = v;
    return absl::OkStatus();
  }
  // A list field; nullptr when absent or null.
  absl::Status list(const json& obj, const char* key, const std::string& field, const json** out) const {
    const json* v = find(obj, key);
    if (v && !v->is_array()) return fail(field, absl::StrCat(describe(*v), " is not a list"));
    *out = v;
    return absl::OkStatus();
  }

 private:
  std::string path_;
};

}  // namespace

// A PCRE2 pattern compiled for UTF-8 with Unicode properties, JIT-compiled where available.
struct BpeTokenizer::Regex {
  pcre2_code* code = nullptr;
  ~Regex() { pcre2_code_free(code); }
  // Appends the pieces of `text` to `out`: each match, and each stretch between matches.
  void split(std::string_view text, std::vector<std::string_view>& out) const {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
    size_t pos = 0, last = 0;
    while (pos < text.size()) {
      int rc = pcre2_jit_match(code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), pos,
                               PCRE2_NO_UTF_CHECK, md, nullptr);
      if (rc == PCRE2_ERROR_JIT_BADOPTION || rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), pos, PCRE2_NO_UTF_CHECK,
                         md, nullptr);
      }
      if (rc < 0) break;
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      const size_t begin = ov[0], end = ov[1];
      if (begin > last) out.push_back(text.substr(last, begin - last));
      if (end > begin) {
        out.push_back(text.substr(begin, end - begin));
        pos = last = end;
      } else {  // an empty match: step over one character
        pos = end + size_t(std::max(1, utf8_sequence_length(text, end)));
      }
    }
    if (last < text.size()) out.push_back(text.substr(last));
    pcre2_match_data_free(md);
  }
};

BpeTokenizer::~BpeTokenizer() = default;

absl::StatusOr<std::unique_ptr<BpeTokenizer>> BpeTokenizer::load(const std::string& dir) {
  namespace fs = std::filesystem;
  TokenizerFiles files;
  files.dir = dir;
  if (absl::Status s = read_input_file((fs::path(dir) / "tokenizer.json").string(), kMaxTextInputBytes, &files.tokenizer_json);
      !s.ok())
    return s;
  std::error_code ec;
  const std::string config_path = (fs::path(dir) / "tokenizer_config.json").string();
  if (fs::exists(config_path, ec)) {
    files.tokenizer_config_json.emplace();
    if (absl::Status s = read_input_file(config_path, kMaxTextInputBytes, &*files.tokenizer_config_json); !s.ok()) return s;
  }
  const std::string jinja_path = (fs::path(dir) / "chat_template.jinja").string();
  if (fs::exists(jinja_path, ec)) {
    files.chat_template_jinja.emplace();
    if (absl::Status s = read_input_file(jinja_path, kMaxTextInputBytes, &*files.chat_template_jinja); !s.ok()) return s;
  }
  return from_files(files);
}

absl::StatusOr<std::unique_ptr<BpeTokenizer>> BpeTokenizer::from_files(const TokenizerFiles& files) {
  std::unique_ptr<BpeTokenizer> t(new BpeTokenizer());
  t->dir_ = files.dir;
  if (absl::Status s = t->parse_tokenizer_json(files); !s.ok()) return s;
  if (absl::Status s = t->parse_config(files); !s.ok()) return s;
  return t;
}

absl::Status BpeTokenizer::parse_tokenizer_json(const TokenizerFiles& files) {
  const std::string path = (std::filesystem::path(files.dir) / "tokenizer.json").string();
  json j;
  if (absl::Status s = parse_json_text(files.tokenizer_json, path, &j); !s.ok()) return s;
  const FieldReader f(path);
  auto fail = [&](const std::string& field, const std::string& what) { return f.fail(field, what); };
  if (!j.is_object()) return fail("(top level)", absl::StrCat(describe(j), " is not an object"));
  auto compile = [&](const std::string& pattern, const std::string& field) -> absl::Status {
    int err = 0;
    PCRE2_SIZE at = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP, &err, &at, nullptr);
    if (!code) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      return fail(field, absl::StrCat("pattern does not compile at offset ", at, ": ", reinterpret_cast<char*>(msg)));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter where JIT is absent
    auto r = std::make_unique<Regex>();
    r->code = code;
    splits_.push_back(std::move(r));
    return absl::OkStatus();
  };

  // model
  const json* model = nullptr;
  if (absl::Status s = f.object(j, "model", "model", &model); !s.ok()) return s;
  std::string model_type;
  if (model)
    if (absl::Status s = f.text(*model, "type", "model.type", &model_type); !s.ok()) return s;
  if (model_type != "BPE") return fail("model.type", absl::StrCat(model ? describe(model_type) : "absent", " (only BPE)"));
  for (const char* field : {"dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix"}) {
    const json* v = FieldReader::find(*model, field);
    if (v && !(v->is_string() && *v == ""))
      return fail(absl::StrCat("model.", field), absl::StrCat(describe(*v), " is not supported"));
  }
  bool byte_fallback = false;
  if (absl::Status s = f.flag(*model, "byte_fallback", false, "model.byte_fallback", &byte_fallback); !s.ok()) return s;
  if (byte_fallback) return fail("model.byte_fallback", "true is not supported");
  if (absl::Status s = f.flag(*model, "ignore_merges", false, "model.ignore_merges", &ignore_merges_); !s.ok()) return s;
  const json* vocab = nullptr;
  if (absl::Status s = f.object(*model, "vocab", "model.vocab", &vocab); !s.ok()) return s;
  if (!vocab) return fail("model.vocab", "absent");
  const json* added_tokens = nullptr;
  if (absl::Status s = f.list(j, "added_tokens", "added_tokens", &added_tokens); !s.ok()) return s;
  // Ids index a table, so they are bounded by the number of tokens the file lists (transformers'
  // files number them densely): a file cannot make samebits allocate beyond its own size.
  const int64_t id_limit = int64_t(vocab->size()) + int64_t(added_tokens ? added_tokens->size() : 0);
  auto check_id = [&](const json& id, const std::string& field, const std::string& what) -> absl::Status {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= id_limit)
      return fail(field, absl::StrCat(what, ": id ", describe(id), " is not an integer in [0, ", id_limit,
                                      ") (below the number of tokens in model.vocab and added_tokens)"));
    return absl::OkStatus();
  };
  int32_t max_id = -1;
  for (const auto& [token, id] : vocab->items()) {
    if (absl::Status s = check_id(id, "model.vocab", absl::StrCat("'", printable(token), "'")); !s.ok()) return s;
    max_id = std::max(max_id, id.get<int32_t>());
  }
  tokens_.assign(size_t(max_id + 1), std::string());
  for (const auto& [token, id] : vocab->items()) {
    bool byte_level = false;
    std::string bytes = byte_level_bytes(token, &byte_level);
    if (!byte_level) return fail("model.vocab", absl::StrCat("token '", printable(token), "' is not in the byte-level alphabet"));
    tokens_[size_t(id.get<int32_t>())] = bytes;
    vocab_[bytes] = id.get<int32_t>();
  }
  for (int b = 0; b < 256; ++b) {
    const auto it = vocab_.find(std::string(1, char(b)));
    if (it == vocab_.end()) return fail("model.vocab", absl::StrCat("no token for byte 0x", absl::Hex(b)));
    byte_ids_[size_t(b)] = it->second;
  }
  const json* merges = nullptr;
  if (absl::Status s = f.list(*model, "merges", "model.merges", &merges); !s.ok()) return s;
  if (!merges) return fail("model.merges", "absent");
  int32_t rank = 0;
  for (const json& m : *merges) {
    std::string left, right;
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        return fail("model.merges", absl::StrCat("entry ", rank, " '", printable(s), "' is not two tokens"));
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      left = m[0].get<std::string>();
      right = m[1].get<std::string>();
    } else {
      return fail("model.merges", absl::StrCat("entry ", rank, " ", describe(m), " is not a pair of tokens"));
    }
    bool ok_l = false, ok_r = false;
    const std::string lb = byte_level_bytes(left, &ok_l), rb = byte_level_bytes(right, &ok_r);
    const auto l = vocab_.find(lb), r = vocab_.find(rb), merged = vocab_.find(lb + rb);
    if (!ok_l || !ok_r || l == vocab_.end() || r == vocab_.end() || merged == vocab_.end())
      return fail("model.merges", absl::StrCat("entry ", rank, " '", printable(left), " ", printable(right),
                                               "' names a token not in model.vocab"));
    merges_.try_emplace((uint64_t(uint32_t(l->second)) << 32) | uint32_t(r->second), rank, merged->second);
    ++rank;
  }

  // added tokens
  for (size_t k = 0; added_tokens && k < added_tokens->size(); ++k) {
    const json& a = (*added_tokens)[k];
    const std::string field = absl::StrCat("added_tokens[", k, "]");
    AddedToken t;
    const json* id = FieldReader::find(a, "id");
    if (absl::Status s = f.text(a, "content", field + ".content", &t.content); !s.ok()) return s;
    if (!id || t.content.empty()) return fail(field, absl::StrCat(describe(a), " needs an id and a non-empty content"));
    if (absl::Status s = check_id(*id, field + ".id", absl::StrCat("'", printable(t.content), "'")); !s.ok()) return s;
    t.id = id->get<int32_t>();
    bool single_word = false;
    for (const auto& [key, out, fallback] :
         {std::tuple<const char*, bool*, bool>{"special", &t.special, false}, {"lstrip", &t.lstrip, false},
          {"rstrip", &t.rstrip, false}, {"single_word", &single_word, false}})
      if (absl::Status s = f.flag(a, key, fallback, absl::StrCat(field, ".", key), out); !s.ok()) return s;
    if (absl::Status s = f.flag(a, "normalized", !t.special, field + ".normalized", &t.normalized); !s.ok()) return s;
    if (single_word)
      return fail(field, absl::StrCat("'", printable(t.content), "': single_word true is not supported"));
    if (size_t(t.id) >= tokens_.size()) tokens_.resize(size_t(t.id) + 1);
    bool byte_level = false;
    tokens_[size_t(t.id)] = byte_level_bytes(t.content, &byte_level);
    added_first_byte_[static_cast<unsigned char>(t.content[0])] = true;
    added_.push_back(std::move(t));
  }
  special_.assign(tokens_.size(), 0);
  for (const AddedToken& t : added_) special_[size_t(t.id)] = t.special;

  // normalizer
  const json* norm = nullptr;
  if (absl::Status s = f.object(j, "normalizer", "normalizer", &norm); !s.ok()) return s;
  auto read_normalizer = [&](const json& n, const std::string& field) -> absl::Status {
    std::string type;
    if (!n.is_object()) return fail(field, absl::StrCat(describe(n), " is not an object"));
    if (absl::Status s = f.text(n, "type", field + ".type", &type); !s.ok()) return s;
    if (type == "NFC") {
      nfc_ = true;
      return absl::OkStatus();
    }
    return fail(field + ".type", absl::StrCat("'", printable(type), "' is not supported (null or NFC)"));
  };
  std::string norm_type;
  if (norm)
    if (absl::Status s = f.text(*norm, "type", "normalizer.type", &norm_type); !s.ok()) return s;
  if (norm && norm_type == "Sequence") {
    const json* list = nullptr;
    if (absl::Status s = f.list(*norm, "normalizers", "normalizer.normalizers", &list); !s.ok()) return s;
    for (size_t k = 0; list && k < list->size(); ++k)
      if (absl::Status s = read_normalizer((*list)[k], absl::StrCat("normalizer.normalizers[", k, "]")); !s.ok()) return s;
  } else if (norm) {
    if (absl::Status s = read_normalizer(*norm, "normalizer"); !s.ok()) return s;
  }

  // pre-tokenizer
  auto read_pre = [&](const json& p, const std::string& field) -> absl::Status {
    if (!p.is_object()) return fail(field, absl::StrCat(describe(p), " is not an object"));
    std::string type;
    if (absl::Status s = f.text(p, "type", field + ".type", &type); !s.ok()) return s;
    if (type == "Split") {
      std::string behavior;
      bool invert = false;
      if (absl::Status s = f.text(p, "behavior", field + ".behavior", &behavior); !s.ok()) return s;
      if (behavior != "Isolated")
        return fail(field + ".behavior", absl::StrCat("'", printable(behavior), "' is not supported (Isolated)"));
      if (absl::Status s = f.flag(p, "invert", false, field + ".invert", &invert); !s.ok()) return s;
      if (invert) return fail(field + ".invert", "true is not supported");
      const json* pat = FieldReader::find(p, "pattern");
      if (const json* re = pat ? FieldReader::find(*pat, "Regex") : nullptr; re && re->is_string())
        return compile(re->get<std::string>(), field + ".pattern");
      if (const json* str = pat ? FieldReader::find(*pat, "String") : nullptr; str && str->is_string())
        return compile("\\Q" + str->get<std::string>() + "\\E", field + ".pattern");
      return fail(field + ".pattern", absl::StrCat(pat ? describe(*pat) : "absent", " is neither Regex nor String"));
    }
    if (type == "ByteLevel") {
      bool add_prefix_space = false, use_regex = true;
      if (absl::Status s = f.flag(p, "add_prefix_space", false, field + ".add_prefix_space", &add_prefix_space); !s.ok())
        return s;
      if (add_prefix_space) return fail(field + ".add_prefix_space", "true is not supported");
      if (absl::Status s = f.flag(p, "use_regex", true, field + ".use_regex", &use_regex); !s.ok()) return s;
      // use_regex: GPT-2's own pattern splits first (as the tokenizers library does).
      if (use_regex) return compile(R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)", field);
      return absl::OkStatus();
    }
    return fail(field + ".type", absl::StrCat("'", printable(type), "' is not supported (Split, ByteLevel, Sequence)"));
  };
  const json* pre = nullptr;
  if (absl::Status s = f.object(j, "pre_tokenizer", "pre_tokenizer", &pre); !s.ok()) return s;
  if (!pre) return fail("pre_tokenizer", "absent (a byte-level BPE needs one)");
  std::string pre_type;
  if (absl::Status s = f.text(*pre, "type", "pre_tokenizer.type", &pre_type); !s.ok()) return s;
  if (pre_type == "Sequence") {
    const json* list = nullptr;
    if (absl::Status s = f.list(*pre, "pretokenizers", "pre_tokenizer.pretokenizers", &list); !s.ok()) return s;
    for (size_t k = 0; list && k < list->size(); ++k)
      if (absl::Status s = read_pre((*list)[k], absl::StrCat("pre_tokenizer.pretokenizers[", k, "]")); !s.ok()) return s;
  } else if (absl::Status s = read_pre(*pre, "pre_tokenizer"); !s.ok()) {
    return s;
  }

  for (const auto& [key, supported] : {std::pair<const char*, const char*>{"decoder", "ByteLevel"},
                                       {"post_processor", "null or ByteLevel: no template of special tokens"}}) {
    const json* part = nullptr;
    std::string type;
    if (absl::Status s = f.object(j, key, key, &part); !s.ok()) return s;
    if (part)
      if (absl::Status s = f.text(*part, "type", absl::StrCat(key, ".type"), &type); !s.ok()) return s;
    if (part && type != "ByteLevel")
      return fail(absl::StrCat(key, ".type"), absl::StrCat("'", printable(type), "' is not supported (", supported, ")"));
  }
  return absl::OkStatus();
}

absl::Status BpeTokenizer::parse_config(const TokenizerFiles& files) {
  namespace fs = std::filesystem;
  const std::string path = (fs::path(files.dir) / "tokenizer_config.json").string();
  std::string jinja, origin;
  if (files.tokenizer_config_json) {
    json j;
    if (absl::Status s = parse_json_text(*files.tokenizer_config_json, path, &j); !s.ok()) return s;
    const FieldReader f(path);
    if (!j.is_object()) return f.fail("(top level)", absl::StrCat(describe(j), " is not an object"));
    if (absl::Status s = f.flag(j, "clean_up_tokenization_spaces", false, "clean_up_tokenization_spaces", &clean_up_spaces_);
        !s.ok())
      return s;
    if (absl::Status s = f.flag(j, "add_bos_token", false, "add_bos_token", &add_bos_); !s.ok()) return s;
    if (add_bos_) {
      const json* bos = FieldReader::find(j, "bos_token");
      std::string text;
      if (bos && bos->is_string()) {
        text = bos->get<std::string>();
      } else if (bos && bos->is_object()) {
        if (absl::Status s = f.text(*bos, "content", "bos_token.content", &text); !s.ok()) return s;
      }
      for (const AddedToken& t : added_)
        if (!text.empty() && t.content == text) bos_id_ = t.id;
      if (bos_id_ < 0)
        return f.fail("bos_token", absl::StrCat(bos ? describe(*bos) : "absent", " is not an added token (add_bos_token is true)"));
    }
    const json* tpl = FieldReader::find(j, "chat_template");
    if (tpl && tpl->is_string()) {
      jinja = tpl->get<std::string>();
      origin = path + ": chat_template";
    } else if (tpl && tpl->is_array()) {  // named templates: transformers uses "default"
      for (const json& named : *tpl) {
        const json* name = FieldReader::find(named, "name");
        const json* text = FieldReader::find(named, "template");
        if (name && *name == "default" && text && text->is_string()) {
          jinja = text->get<std::string>();
          origin = path + ": chat_template (default)";
        }
      }
    }
  }
  if (files.chat_template_jinja) {  // transformers' newer layout takes precedence
    jinja = *files.chat_template_jinja;
    origin = (fs::path(files.dir) / "chat_template.jinja").string();
  }
  if (jinja.empty()) {
    chat_error_ = absl::StrCat(files.dir, ": no chat template (tokenizer_config.json has no chat_template); give the prompt as text or prompt_tokens");
  } else if (auto t = ChatTemplate::recognise(jinja, origin); t.ok()) {
    chat_ = *t;
  } else {
    chat_error_ = std::string(t.status().message());
  }
  return absl::OkStatus();
}

absl::StatusOr<ChatTemplate> BpeTokenizer::chat_template() const {
  if (chat_) return *chat_;
  return absl::FailedPreconditionError(chat_error_);
}

std::string BpeTokenizer::description() const {
  return absl::StrCat("byte-level BPE from ", dir_, "/tokenizer.json (", merges_.size(), " merges, ", tokens_.size(),
                      " tokens", chat_ ? absl::StrCat(", ", std::string(chat_->name()), " chat template") : "", ")");
}

std::string BpeTokenizer::token_bytes(int32_t id) const {
  return id >= 0 && size_t(id) < tokens_.size() ? tokens_[size_t(id)] : std::string();
}

bool BpeTokenizer::is_special(int32_t id) const { return id >= 0 && size_t(id) < special_.size() && special_[size_t(id)]; }

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::string text = utf8_lossy(decode_bytes(ids, skip_special));
  return clean_up_spaces_ ? clean_up_tokenization(std::move(text)) : text;
}

int BpeTokenizer::find_added(std::string_view text, size_t from, bool normalized, size_t* at) const {
  for (size_t i = from; i < text.size(); ++i) {
    if (!added_first_byte_[static_cast<unsigned char>(text[i])]) continue;
    int best = -1;
    for (size_t k = 0; k < added_.size(); ++k) {
      const AddedToken& t = added_[k];
      if (t.normalized != normalized || t.content.size() > text.size() - i) continue;
      if (text.compare(i, t.content.size(), t.content) != 0) continue;
      if (best < 0 || t.content.size() > added_[size_t(best)].content.size()) best = int(k);
    }
    if (best >= 0) {
      *at = i;
      return best;
    }
  }
  return -1;
}

absl::StatusOr<std::vector<int32_t>> BpeTokenizer::encode_text(std::string_view text, bool add_special) const {
  size_t bad = 0;
  if (!valid_utf8(text, &bad))
    return absl::InvalidArgumentError(absl::StrCat("byte ", bad, " is not valid UTF-8 (a BPE tokenizer encodes text)"));
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 2);
  if (add_special && add_bos_) ids.push_back(bos_id_);
  encode_raw_segment(text, ids);
  return ids;
}

namespace {
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
}  // namespace

// Cuts out the added tokens matched on raw text; what lies between is normalised.
void BpeTokenizer::encode_raw_segment(std::string_view text, std::vector<int32_t>& ids) const {
  // Two passes as the tokenizers library makes them: tokens matched on raw text first, then those
  // matched on normalised text inside what is left.
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t at = 0;
    const int k = find_added(text, pos, /*normalized=*/false, &at);
    size_t end = k < 0 ? text.size() : at;
    size_t next = k < 0 ? text.size() + 1 : at + added_[size_t(k)].content.size();
    if (k >= 0 && added_[size_t(k)].lstrip)
      while (end > pos && is_space(text[end - 1])) --end;
    if (end > pos) {
      const std::string normal = nfc_ ? nfc(text.substr(pos, end - pos)) : std::string(text.substr(pos, end - pos));
      encode_normalized(normal, ids);
    }
    if (k < 0) break;
    ids.push_back(added_[size_t(k)].id);
    if (added_[size_t(k)].rstrip)
      while (next < text.size() && is_space(text[next])) ++next;
    pos = next;
  }
}

void BpeTokenizer::encode_normalized(std::string_view text, std::vector<int32_t>& ids) const {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t at = 0;
    const int k = find_added(text, pos, /*normalized=*/true, &at);
    const size_t end = k < 0 ? text.size() : at;
    if (end > pos) {
      std::vector<std::string_view> pieces{text.substr(pos, end - pos)}, next;
      for (const auto& re : splits_) {
        next.clear();
        for (std::string_view p : pieces) re->split(p, next);
        pieces.swap(next);
      }
      for (std::string_view p : pieces) encode_piece(p, ids);
    }
    if (k < 0) break;
    ids.push_back(added_[size_t(k)].id);
    pos = at + added_[size_t(k)].content.size();
  }
}

// One pre-token: its bytes as single-byte tokens, then merges, lowest rank first, leftmost on ties.
void BpeTokenizer::encode_piece(std::string_view piece, std::vector<int32_t>& ids) const {
  const size_t n = piece.size();
  if (n == 0) return;
  if (ignore_merges_) {
    if (const auto it = vocab_.find(absl::string_view(piece.data(), n)); it != vocab_.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  if (n == 1) {  // a lone byte (a space, a digit, punctuation): nothing to merge
    ids.push_back(byte_ids_[static_cast<unsigned char>(piece[0])]);
    return;
  }
  // Short pieces merge faster than a cache lookup costs.
  const bool use_cache = cache_enabled_ && n > 3;
  if (use_cache) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (const auto it = cache_.find(absl::string_view(piece.data(), n)); it != cache_.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  // sym[i]: the i-th symbol; rank[i], merged[i]: the merge of (sym[i], sym[i+1]), INT_MAX when none.
  thread_local std::vector<int32_t> sym, rank, merged;
  sym.resize(n);
  rank.resize(n);
  merged.resize(n);
  for (size_t i = 0; i < n; ++i) sym[i] = byte_ids_[static_cast<unsigned char>(piece[i])];
  auto lookup = [&](size_t i) {
    const auto it = merges_.find((uint64_t(uint32_t(sym[i])) << 32) | uint32_t(sym[i + 1]));
    if (it == merges_.end()) {
      rank[i] = INT_MAX;
    } else {
      rank[i] = it->second.first;
      merged[i] = it->second.second;
    }
  };
  size_t len = n;
  for (size_t i = 0; i + 1 < len; ++i) lookup(i);
  while (len > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < len; ++i)
      if (rank[i] < rank[best]) best = i;
    if (rank[best] == INT_MAX) break;
    sym[best] = merged[best];
    for (size_t i = best + 1; i + 1 < len; ++i) {  // close the gap
      sym[i] = sym[i + 1];
      rank[i] = rank[i + 1];
      merged[i] = merged[i + 1];
    }
    --len;
    if (best + 1 < len) lookup(best);
    if (best > 0) lookup(best - 1);
  }
  ids.insert(ids.end(), sym.begin(), sym.begin() + long(len));
  if (!use_cache) return;
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (cache_.size() >= 100000) cache_.clear();
  cache_.emplace(std::string(piece), std::vector<int32_t>(sym.begin(), sym.begin() + long(len)));
}

}  // namespace samebits
