// Byte-level tokenizer round trips.
#include <gtest/gtest.h>

#include <string>

#include "models/tiny_qwen/tokenizer.h"

namespace samebits {
namespace {

TEST(Tokenizer, EveryByteRoundTrips) {
  ByteTokenizer tok;
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  std::vector<int32_t> ids = tok.encode(all, /*add_bos=*/false);
  ASSERT_EQ(ids.size(), 256u);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(ids[size_t(b)], b);
  EXPECT_EQ(tok.decode(ids), all);
}

TEST(Tokenizer, BosFirstAndSpecialsDroppedOrShown) {
  ByteTokenizer tok;
  std::vector<int32_t> ids = tok.encode("Hi\n");
  EXPECT_EQ(ids, (std::vector<int32_t>{256, 'H', 'i', '\n'}));
  ids.push_back(tok.eos_id);
  ids.push_back(999);
  EXPECT_EQ(tok.decode(ids), "Hi\n");
  EXPECT_EQ(tok.decode(ids, /*show_special=*/true), "<bos>Hi\n<eos><unk:999>");
  EXPECT_TRUE(tok.encode("", false).empty());
  EXPECT_EQ(tok.decode({}), "");
}

TEST(Tokenizer, Utf8PassesThroughAsBytes) {
  ByteTokenizer tok;
  const std::string text = "Feynman \xc3\xa9t\xc3\xa9";
  std::vector<int32_t> ids = tok.encode(text, false);
  EXPECT_EQ(ids.size(), text.size());
  EXPECT_EQ(ids[8], 0xc3);
  EXPECT_EQ(tok.decode(ids), text);
}

}  // namespace
}  // namespace samebits
