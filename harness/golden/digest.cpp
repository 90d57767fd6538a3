#include "harness/golden/digest.h"

#include <bit>
#include <cstring>

#include "xxhash.h"

namespace samebits {
namespace {

void put_u32_le(uint32_t v, unsigned char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}
void put_u64_le(uint64_t v, unsigned char* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

uint64_t top_bits(uint64_t digest, int hex_digits) {
  return hex_digits >= 16 ? digest : digest >> (64 - 4 * hex_digits);
}

}  // namespace

uint64_t step_digest(int32_t token, std::span<const float> logits) {
  // One buffer in canonical byte order: the bytes do not depend on the host's endianness.
  std::vector<unsigned char> bytes(4 + 4 * logits.size());
  put_u32_le(static_cast<uint32_t>(token), bytes.data());
  if constexpr (std::endian::native == std::endian::little) {
    if (!logits.empty()) std::memcpy(bytes.data() + 4, logits.data(), 4 * logits.size());
  } else {
    for (size_t i = 0; i < logits.size(); ++i)
      put_u32_le(std::bit_cast<uint32_t>(logits[i]), bytes.data() + 4 + 4 * i);
  }
  return XXH3_64bits(bytes.data(), bytes.size());
}

uint64_t chain_digest(uint64_t previous, uint64_t step) {
  unsigned char bytes[16];
  put_u64_le(previous, bytes);
  put_u64_le(step, bytes + 8);
  return XXH3_64bits(bytes, sizeof bytes);
}

uint64_t chain_all(std::span<const uint64_t> steps) {
  uint64_t h = 0;
  for (uint64_t s : steps) h = chain_digest(h, s);
  return h;
}

uint64_t bytes_digest(std::string_view bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

void StreamDigest::add(int32_t token, std::span<const float> logits) {
  const uint64_t s = step_digest(token, logits);
  chain_ = chain_digest(chain_, s);
  tokens_.push_back(token);
  steps_.push_back(s);
}

std::string digest_hex(uint64_t digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, digest >>= 4) out[i] = kHex[digest & 15];
  return out;
}

namespace {
std::optional<uint64_t> parse_hex_digits(std::string_view hex) {
  if (hex.empty() || hex.size() > 16) return std::nullopt;
  uint64_t v = 0;
  for (char c : hex) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else return std::nullopt;
    v = (v << 4) | uint64_t(d);
  }
  return v;
}
}  // namespace

std::optional<uint64_t> parse_digest_hex(std::string_view hex) {
  if (hex.size() != 16) return std::nullopt;
  return parse_hex_digits(hex);
}

std::string digest_list_hex(std::span<const uint64_t> digests, int hex_digits) {
  std::string out;
  out.reserve(digests.size() * size_t(hex_digits));
  for (uint64_t d : digests) out += digest_hex(d).substr(0, size_t(hex_digits));
  return out;
}

std::optional<std::vector<uint64_t>> parse_digest_list_hex(std::string_view hex, int hex_digits) {
  if (hex_digits <= 0 || hex_digits > 16 || hex.size() % size_t(hex_digits) != 0) return std::nullopt;
  std::vector<uint64_t> out;
  out.reserve(hex.size() / size_t(hex_digits));
  for (size_t i = 0; i < hex.size(); i += size_t(hex_digits)) {
    auto v = parse_hex_digits(hex.substr(i, size_t(hex_digits)));
    if (!v) return std::nullopt;
    // Stored as the top digits: shift back so a parsed list compares with top_bits of a full one.
    out.push_back(hex_digits >= 16 ? *v : *v << (64 - 4 * hex_digits));
  }
  return out;
}

int first_difference(std::span<const uint64_t> a, std::span<const uint64_t> b, int hex_digits) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i)
    if (top_bits(a[i], hex_digits) != top_bits(b[i], hex_digits)) return int(i);
  return a.size() == b.size() ? -1 : int(n);
}

}  // namespace samebits
