// Built-in configurations and validate_config's messages.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "models/tiny_qwen/config.h"

namespace samebits {
namespace {

TEST(Config, EveryBuiltinIsValid) {
  for (const std::string& name : builtin_config_names()) {
    SCOPED_TRACE(name);
    auto c = builtin_config(name);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->name, name);
    EXPECT_TRUE(validate_config(*c).ok()) << validate_config(*c);
  }
}

TEST(Config, TinyIsTheByteLevelQwen3) {
  auto c = builtin_config("tiny");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->vocab_size, 258);
  EXPECT_EQ(c->hidden_size, 256);
  EXPECT_EQ(c->intermediate_size, 768);
  EXPECT_EQ(c->num_layers, 4);
  EXPECT_EQ(c->num_heads, 4);
  EXPECT_EQ(c->num_kv_heads, 2);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_EQ(c->rope_theta, 10000.0);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_TRUE(c->qk_norm);
  EXPECT_FALSE(c->attention_bias);
  EXPECT_EQ(c->max_position_embeddings, 1024);
  EXPECT_EQ(c->bos_token_id, 256);
  EXPECT_EQ(c->eos_token_id, 257);
}

TEST(Config, QwenShapesAsPublished) {
  auto small = builtin_config("qwen3-0.6b");
  auto big = builtin_config("qwen3-8b");
  ASSERT_TRUE(small.ok() && big.ok());
  EXPECT_EQ(small->hidden_size, 1024);
  EXPECT_EQ(small->num_layers, 28);
  EXPECT_EQ(small->num_heads * small->head_dim, 2048);  // q projection wider than hidden
  EXPECT_TRUE(small->tie_word_embeddings);
  EXPECT_EQ(big->hidden_size, 4096);
  EXPECT_EQ(big->intermediate_size, 12288);
  EXPECT_EQ(big->num_layers, 36);
  EXPECT_EQ(big->num_heads, 32);
  EXPECT_EQ(big->num_kv_heads, 8);
  EXPECT_FALSE(big->tie_word_embeddings);
  EXPECT_EQ(big->rope_theta, 1e6);
  EXPECT_EQ(big->max_position_embeddings, 40960);
}

TEST(Config, UnknownNameListsTheKnownOnes) {
  auto c = builtin_config("tiny2");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string(c.status().message()).find("'tiny2'"), std::string::npos);
  EXPECT_NE(std::string(c.status().message()).find("qwen3-8b"), std::string::npos);
}

TEST(Config, ValidationNamesTheFieldAndValue) {
  struct Case {
    const char* name;
    std::function<void(ModelConfig&)> mutate;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"zero vocab", [](ModelConfig& c) { c.vocab_size = 0; }, "config.vocab_size: 0"},
      {"negative hidden", [](ModelConfig& c) { c.hidden_size = -4; }, "config.hidden_size: -4"},
      {"zero layers", [](ModelConfig& c) { c.num_layers = 0; }, "config.num_layers: 0"},
      {"heads not multiple", [](ModelConfig& c) { c.num_heads = 3; }, "config.num_heads: 3 is not a multiple"},
      {"odd head_dim", [](ModelConfig& c) { c.head_dim = 63; }, "config.head_dim: 63 is odd"},
      {"zero eps", [](ModelConfig& c) { c.rms_norm_eps = 0.f; }, "config.rms_norm_eps"},
      {"theta", [](ModelConfig& c) { c.rope_theta = 0.5; }, "config.rope_theta"},
      {"no positions", [](ModelConfig& c) { c.max_position_embeddings = 0; }, "config.max_position_embeddings: 0"},
      {"eos beyond vocab", [](ModelConfig& c) { c.eos_token_id = 258; }, "config.eos_token_id: 258"},
      {"bos negative", [](ModelConfig& c) { c.bos_token_id = -2; }, "config.bos_token_id: -2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ModelConfig config = *builtin_config("tiny");
    c.mutate(config);
    absl::Status s = validate_config(config);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(std::string(s.message()).find(c.message), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace samebits
