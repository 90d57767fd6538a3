// Digests: canonical bytes, chaining, hex round trips.
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "harness/golden/digest.h"
#include "xxhash.h"

namespace samebits {
namespace {

TEST(Digest, StepDigestIsXxh3OverTokenThenLogitsLittleEndian) {
  const std::vector<float> logits = {1.5f, -2.25f, 0.0f};
  // Canonical bytes written out by hand: int32 LE token, then each float's IEEE bits LE.
  const unsigned char expected_bytes[16] = {0x2a, 0, 0, 0,  0, 0, 0xc0, 0x3f,  0, 0, 0x10, 0xc0,  0, 0, 0, 0};
  EXPECT_EQ(step_digest(42, logits), XXH3_64bits(expected_bytes, sizeof expected_bytes));
}

TEST(Digest, AnyBitOfTokenOrLogitsChangesTheStepDigest) {
  std::vector<float> logits(64, 0.5f);
  const uint64_t base = step_digest(7, logits);
  EXPECT_NE(step_digest(8, logits), base);
  for (size_t i = 0; i < logits.size(); i += 9) {
    SCOPED_TRACE("logit " + std::to_string(i));
    std::vector<float> other = logits;
    uint32_t bits;
    std::memcpy(&bits, &other[i], 4);
    bits ^= 1;  // one ulp
    std::memcpy(&other[i], &bits, 4);
    EXPECT_NE(step_digest(7, other), base);
  }
  // -0.0 and +0.0 compare equal as floats but are different bits: the digest must tell them apart.
  EXPECT_NE(step_digest(1, std::vector<float>{0.0f}), step_digest(1, std::vector<float>{-0.0f}));
}

TEST(Digest, ChainIsOrderSensitiveAndMatchesStreamDigest) {
  StreamDigest s;
  std::vector<float> a = {1.f, 2.f}, b = {3.f, 4.f};
  s.add(1, a);
  s.add(2, b);
  const uint64_t d1 = step_digest(1, a), d2 = step_digest(2, b);
  EXPECT_EQ(s.value(), chain_digest(chain_digest(0, d1), d2));
  EXPECT_EQ(s.value(), chain_all(std::vector<uint64_t>{d1, d2}));
  EXPECT_NE(s.value(), chain_all(std::vector<uint64_t>{d2, d1}));
  EXPECT_EQ(s.tokens(), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(chain_all(std::vector<uint64_t>{}), 0u);
}

TEST(Digest, HexRoundTripAndRejectsMalformed) {
  for (uint64_t v : {0ull, 1ull, 0xdeadbeefcafef00dull, ~0ull}) {
    EXPECT_EQ(parse_digest_hex(digest_hex(v)), v);
    EXPECT_EQ(digest_hex(v).size(), 16u);
  }
  EXPECT_FALSE(parse_digest_hex("123"));
  EXPECT_FALSE(parse_digest_hex("DEADBEEFCAFEF00D"));  // uppercase is not canonical
  EXPECT_FALSE(parse_digest_hex("zzzzzzzzzzzzzzzz"));
}

TEST(Digest, ListsRoundTripFullAndTruncated) {
  const std::vector<uint64_t> list = {0x0123456789abcdefull, 0xfedcba9876543210ull, 0x00000000ffffffffull};
  EXPECT_EQ(parse_digest_list_hex(digest_list_hex(list)), list);
  auto top = parse_digest_list_hex(digest_list_hex(list, 8), 8);
  ASSERT_TRUE(top);
  EXPECT_EQ(first_difference(list, *top, 8), -1);  // equal in the top 32 bits
  EXPECT_EQ(first_difference(list, *top, 16), 0);  // but not in full
  std::vector<uint64_t> other = list;
  other[2] ^= 0x8000000000000000ull;
  EXPECT_EQ(first_difference(list, other, 8), 2);
  EXPECT_EQ(first_difference(list, std::vector<uint64_t>(list.begin(), list.begin() + 2)), 2);  // shorter
  EXPECT_FALSE(parse_digest_list_hex("0123456789abcde"));  // not a multiple of 16
}

}  // namespace
}  // namespace samebits
