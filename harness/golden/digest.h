// XXH3 digests over canonical little-endian bytes, so that a digest computed on any host names the
// same bits. Per generated token (one "step" of a request): XXH3-64 over the token id (int32 LE)
// followed by the fp32 logits (each float's IEEE bits, LE). Per completion: a chain over its steps,
// h_i = XXH3-64(h_{i-1} (u64 LE) || step_i (u64 LE)), h_{-1} = 0; the completion digest is the last h.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace samebits {

uint64_t step_digest(int32_t token, std::span<const float> logits);
uint64_t chain_digest(uint64_t previous, uint64_t step);
uint64_t chain_all(std::span<const uint64_t> steps);
// XXH3-64 of raw bytes (scenario files).
uint64_t bytes_digest(std::string_view bytes);

// The chained digest of one request's steps, kept alongside the steps themselves.
class StreamDigest {
 public:
  void add(int32_t token, std::span<const float> logits);
  uint64_t value() const { return chain_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  const std::vector<uint64_t>& steps() const { return steps_; }

 private:
  uint64_t chain_ = 0;
  std::vector<int32_t> tokens_;
  std::vector<uint64_t> steps_;
};

// 16 lowercase hex digits; parse accepts exactly that.
std::string digest_hex(uint64_t digest);
std::optional<uint64_t> parse_digest_hex(std::string_view hex);

// A list of digests as one string: each digest's top `hex_digits` hex digits (8 or 16), concatenated.
// Compact for JSON; a truncated list still locates the first differing step.
std::string digest_list_hex(std::span<const uint64_t> digests, int hex_digits = 16);
std::optional<std::vector<uint64_t>> parse_digest_list_hex(std::string_view hex, int hex_digits = 16);
// First index where two digest lists differ in their top `hex_digits` digits (a list that ends
// first differs at its end); -1 when equal.
int first_difference(std::span<const uint64_t> a, std::span<const uint64_t> b, int hex_digits = 16);

}  // namespace samebits
