// Tensor shapes per configuration, seeded synthetic weights and the weights digest.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "models/tiny_qwen/weights.h"

namespace samebits {
namespace {

ModelConfig config_named(const std::string& name) { return *builtin_config(name); }

TEST(Weights, ExpectedShapesFollowTheConfiguration) {
  struct Case {
    std::string config;
    size_t tensors;
  };
  // Per layer: 2 norms + 4 attention projections + 3 MLP projections, + q/k norms (Qwen3) or
  // q/k/v biases (Qwen2); plus embedding, final norm, lm_head when untied.
  for (const Case& c : {Case{"tiny", 2 + 4 * 11}, Case{"tiny-qwen2", 2 + 4 * 12}, Case{"qwen3-0.6b", 2 + 28 * 11},
                        Case{"qwen3-8b", 3 + 36 * 11}}) {
    SCOPED_TRACE(c.config);
    const ModelConfig config = config_named(c.config);
    auto shapes = expected_tensor_shapes(config);
    EXPECT_EQ(shapes.size(), c.tensors);
    EXPECT_EQ(shapes.count("lm_head.weight"), config.tie_word_embeddings ? 0u : 1u);
    EXPECT_EQ(shapes.at("model.embed_tokens.weight"), (std::vector<int64_t>{config.vocab_size, config.hidden_size}));
    const int64_t q_dim = int64_t(config.num_heads) * config.head_dim;
    EXPECT_EQ(shapes.at("model.layers.0.self_attn.q_proj.weight"), (std::vector<int64_t>{q_dim, config.hidden_size}));
    EXPECT_EQ(shapes.at("model.layers.0.self_attn.o_proj.weight"), (std::vector<int64_t>{config.hidden_size, q_dim}));
    EXPECT_EQ(shapes.at("model.layers.0.mlp.down_proj.weight"),
              (std::vector<int64_t>{config.hidden_size, config.intermediate_size}));
    EXPECT_EQ(shapes.count("model.layers.0.self_attn.q_norm.weight"), config.qk_norm ? 1u : 0u);
    EXPECT_EQ(shapes.count("model.layers.0.self_attn.k_proj.bias"), config.attention_bias ? 1u : 0u);
  }
}

TEST(Weights, SyntheticWeightsAreAFunctionOfSeedNameAndIndex) {
  const ModelConfig config = config_named("tiny-qwen2");
  const HostWeights a = synthetic_weights(config, 11);
  const HostWeights b = synthetic_weights(config, 11);
  const HostWeights c = synthetic_weights(config, 12);
  EXPECT_EQ(a.digest(), b.digest());
  EXPECT_NE(a.digest(), c.digest());
  for (const auto& [name, shape] : expected_tensor_shapes(config)) {
    SCOPED_TRACE(name);
    const HostTensor& t = a.tensors.at(name);
    EXPECT_EQ(t.shape, shape);
    // Any single value can be regenerated where it is needed.
    for (int64_t i : {int64_t(0), int64_t(t.data.size() / 2), int64_t(t.data.size() - 1)}) {
      const float v = to_float(t.data[size_t(i)]);
      const bool norm = name.find("norm") != std::string::npos;
      const bool bias = name.find(".bias") != std::string::npos;
      const bool embed = name.find("embed") != std::string::npos;
      const float scale = norm || bias ? 0.1f
                          : embed      ? float(4.0 / std::sqrt(double(config.hidden_size)))
                                       : float(1.0 / std::sqrt(double(shape.back())));
      EXPECT_EQ(v, synthetic_weight_value(11, name, i, scale, norm ? 1.f : 0.f));
    }
  }
}

TEST(Weights, SyntheticValuesLieInTheirRanges) {
  const ModelConfig config = config_named("tiny");
  const HostWeights w = synthetic_weights(config, 3);
  for (const auto& [name, t] : w.tensors) {
    SCOPED_TRACE(name);
    const bool norm = name.find("norm") != std::string::npos;
    double sum = 0, lo = 1e9, hi = -1e9;
    for (bf16 x : t.data) {
      const double v = to_float(x);
      sum += v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    const double mean = sum / double(t.data.size());
    if (norm) {
      EXPECT_GE(lo, 0.89);
      EXPECT_LE(hi, 1.11);
      EXPECT_NEAR(mean, 1.0, 0.03);
    } else {
      const double bound = name.find("embed") != std::string::npos ? 0.26 : 1.0 / std::sqrt(double(t.shape.back())) * 1.01;
      EXPECT_GE(lo, -bound);
      EXPECT_LE(hi, bound);
      EXPECT_NEAR(mean, 0.0, bound * 0.05);
      EXPECT_LT(lo, -bound * 0.9);  // the range is used, not degenerate
      EXPECT_GT(hi, bound * 0.9);
    }
  }
}

TEST(Weights, PlatformIndependentGolden) {
  // Pinned once: these values must come out the same on every machine and compiler. If this
  // fails, every golden digest of the project changes with it.
  EXPECT_EQ(synthetic_weights(config_named("tiny"), 0).digest(), 0xeb2a980a9fd5f648ull);
  EXPECT_EQ(synthetic_weight_value(0, "model.embed_tokens.weight", 0, 1.f, 0.f), -0.59765625f);
}

TEST(Weights, DigestSeesEveryBitNameAndShape) {
  const HostWeights base = synthetic_weights(config_named("tiny"), 5);
  const uint64_t d = base.digest();
  HostWeights flipped = base;
  flipped.tensors.at("model.layers.3.mlp.up_proj.weight").data[777].bits ^= 1;
  EXPECT_NE(flipped.digest(), d);
  HostWeights renamed = base;
  auto node = renamed.tensors.extract("model.norm.weight");
  node.key() = "model.norm2.weight";
  renamed.tensors.insert(std::move(node));
  EXPECT_NE(renamed.digest(), d);
  HostWeights reshaped = base;
  reshaped.tensors.at("model.norm.weight").shape = {16, 16};
  EXPECT_NE(reshaped.digest(), d);
}

}  // namespace
}  // namespace samebits
