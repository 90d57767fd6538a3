// UTF-8 helpers shared by both tokenizers: lossy decoding as transformers does, escapes for people.
#include "models/tiny_qwen/text_tokenizer.h"

namespace samebits {

std::string TextTokenizer::decode_bytes(const std::vector<int32_t>& ids, bool skip_special) const {
  std::string out;
  for (int32_t id : ids) {
    if (skip_special && is_special(id)) continue;
    out += token_bytes(id);
  }
  return out;
}

int utf8_sequence_length(std::string_view s, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b = at(i);
  if (b < 0x80) return 1;
  int len;
  unsigned char lo = 0x80, hi = 0xbf;  // bounds of the second byte (Unicode Table 3-7)
  if (b >= 0xc2 && b <= 0xdf) {
    len = 2;
  } else if (b >= 0xe0 && b <= 0xef) {
    len = 3;
    if (b == 0xe0) lo = 0xa0;
    if (b == 0xed) hi = 0x9f;
  } else if (b >= 0xf0 && b <= 0xf4) {
    len = 4;
    if (b == 0xf0) lo = 0x90;
    if (b == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + size_t(len) > s.size()) return 0;
  if (at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (int k = 2; k < len; ++k)
    if ((at(i + size_t(k)) & 0xc0) != 0x80) return 0;
  return len;
}

namespace {

// Bytes of the longest prefix of a valid sequence at s[i] (1 when the lead byte is invalid): the
// "maximal subpart" that one U+FFFD replaces.
size_t invalid_run(std::string_view s, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b = at(i);
  int len = 0;
  unsigned char lo = 0x80, hi = 0xbf;
  if (b >= 0xc2 && b <= 0xdf) len = 2;
  else if (b >= 0xe0 && b <= 0xef) { len = 3; lo = b == 0xe0 ? 0xa0 : 0x80; hi = b == 0xed ? 0x9f : 0xbf; }
  else if (b >= 0xf0 && b <= 0xf4) { len = 4; lo = b == 0xf0 ? 0x90 : 0x80; hi = b == 0xf4 ? 0x8f : 0xbf; }
  else return 1;
  size_t n = 1;
  if (i + n < s.size() && at(i + n) >= lo && at(i + n) <= hi) {
    ++n;
    while (n < size_t(len) && i + n < s.size() && (at(i + n) & 0xc0) == 0x80) ++n;
  }
  return n;
}

}  // namespace

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    if (const int len = utf8_sequence_length(bytes, i); len > 0) {
      out.append(bytes.substr(i, size_t(len)));
      i += size_t(len);
    } else {
      out += "\xef\xbf\xbd";
      i += invalid_run(bytes, i);
    }
  }
  return out;
}

std::string display_text(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const unsigned char b = static_cast<unsigned char>(bytes[i]);
    if (const int len = utf8_sequence_length(bytes, i); len > 1) {
      out.append(bytes.substr(i, size_t(len)));
      i += size_t(len);
      continue;
    }
    if (b >= 0x80) {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 15];
    } else {
      out += (b < 0x20 && b != '\n') || b == 0x7f ? '?' : char(b);
    }
    ++i;
  }
  return out;
}

}  // namespace samebits
