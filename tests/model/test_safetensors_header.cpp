// The safetensors header parser on its own (also the fuzz target's entry point): an element count
// that would wrap, numbers beyond int64 / double, and control characters in tensor names.
#include "gtest/gtest.h"
#include "models/tiny_qwen/safetensors.h"

namespace samebits {
namespace {

std::string parse_error(const std::string& header, uint64_t data_bytes = 0) {
  auto h = parse_safetensors_header(header, data_bytes, "m.safetensors");
  return h.ok() ? "" : std::string(h.status().message());
}

TEST(SafetensorsHeader, ElementCountIsCheckedBeforeItWraps) {
  // 2^40 * 2^24 = 2^64 wraps to 0, which matched data_offsets [0, 0] before the check.
  const std::string m =
      parse_error(R"({"w": {"dtype": "BF16", "shape": [1099511627776, 16777216], "data_offsets": [0, 0]}})");
  EXPECT_NE(m.find("is too large (over 2^50 elements)"), std::string::npos) << m;
}

TEST(SafetensorsHeader, NumbersOutOfRangeAreErrors) {
  EXPECT_NE(parse_error(R"({"w": {"dtype": "BF16", "shape": [1e309], "data_offsets": [0, 2]}})").find("out of range"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"w": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 18446744073709551615]}})")
                .find("out of range"),
            std::string::npos);
}

TEST(SafetensorsHeader, TensorNamesAreShownPrintable) {
  const std::string m = parse_error("{\"w\\u001b[2J\": {\"dtype\": \"Q4\", \"shape\": [1], \"data_offsets\": [0, 2]}}");
  EXPECT_NE(m.find("tensor 'w\\x1b[2J': unsupported dtype 'Q4'"), std::string::npos) << m;
}

TEST(SafetensorsHeader, AValidHeaderParses) {
  auto h = parse_safetensors_header(R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}})", 24, "m");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->tensors.at("w").shape, (std::vector<int64_t>{2, 3}));
}

}  // namespace
}  // namespace samebits
