// The model's forward pass: agreement with a naive reference, logit-row selection, decode vs one
// prefill (bitwise in invariant mode, and seen to differ in default mode), batch validation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <string>

#include "models/tiny_qwen/model.h"
#include "tests/model/reference_qwen.h"

namespace samebits {
namespace {

constexpr int kBlockSize = 16;
constexpr int kNumBlocks = 64;

std::vector<int32_t> some_tokens(int n, uint64_t seed, int vocab) {
  std::vector<int32_t> t;
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    t.push_back(int32_t(x % uint64_t(vocab)));
  }
  return t;
}

// One sequence's part of a batch: tokens [start, start + count) of `all`, KV in consecutive
// blocks starting at first_block.
struct SeqPart {
  const std::vector<int32_t>* all;
  int start, count, first_block;
  bool all_logits;  // logits of every computed position, else only the last
};

ForwardBatch make_batch(const std::vector<SeqPart>& parts) {
  ForwardBatch b;
  b.query_start.push_back(0);
  int max_blocks = 1;
  for (const SeqPart& p : parts) max_blocks = std::max(max_blocks, (p.start + p.count + kBlockSize - 1) / kBlockSize);
  b.max_blocks_per_seq = max_blocks;
  for (const SeqPart& p : parts) {
    for (int i = p.start; i < p.start + p.count; ++i) {
      if (p.all_logits || i == p.start + p.count - 1) b.logit_rows.push_back(int32_t(b.tokens.size()));
      b.tokens.push_back((*p.all)[size_t(i)]);
      b.positions.push_back(i);
      b.slot_mapping.push_back(int64_t(p.first_block) * kBlockSize + i);
    }
    b.query_start.push_back(int32_t(b.tokens.size()));
    b.context_lens.push_back(p.start + p.count);
    for (int j = 0; j < max_blocks; ++j) b.block_tables.push_back(p.first_block + j);
  }
  return b;
}

// Builtins, plus "wide-untied": heads * head_dim != hidden (as Qwen3-0.6B) and an untied lm_head
// (as Qwen3-8B), at a size the naive reference handles.
ModelConfig config_named(const std::string& name) {
  if (name != "wide-untied") return *builtin_config(name);
  ModelConfig c = *builtin_config("tiny");
  c.name = name;
  c.hidden_size = 96;
  c.intermediate_size = 160;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 32;
  c.tie_word_embeddings = false;
  c.rope_theta = 1e6;
  return c;
}

struct Fixture {
  ModelConfig config;
  HostWeights weights;
  std::unique_ptr<Model> model;
  explicit Fixture(const std::string& name, uint64_t seed = 1) : Fixture(config_named(name), seed) {}
  Fixture(const ModelConfig& c, uint64_t seed) {
    config = c;
    weights = synthetic_weights(config, seed);
    auto m = Model::create(cpu_backend(), config, weights, {kNumBlocks, kBlockSize});
    EXPECT_TRUE(m.ok()) << m.status();
    model = *std::move(m);
  }
  std::vector<float> run(Mode mode, const ForwardBatch& batch) {
    ExecContext ctx;
    ctx.mode = mode;
    std::vector<float> logits;
    absl::Status s = model->forward(ctx, batch, &logits);
    EXPECT_TRUE(s.ok()) << s;
    return logits;
  }
};

TEST(Forward, AgreesWithTheNaiveReference) {
  for (const std::string name : {"tiny", "tiny-qwen2", "wide-untied"}) {
    for (Mode mode : {Mode::kInvariant, Mode::kDefault}) {
      SCOPED_TRACE(::testing::Message() << name << " " << mode_name(mode));
      Fixture f(name);
      const std::vector<int32_t> a = some_tokens(37, 1, f.config.vocab_size);
      const std::vector<int32_t> b = some_tokens(21, 2, f.config.vocab_size);
      // Two sequences in one batch, each against its own reference.
      const std::vector<float> got = f.run(mode, make_batch({{&a, 0, 37, 0, true}, {&b, 0, 21, 8, true}}));
      const int V = f.config.vocab_size;
      ASSERT_EQ(got.size(), size_t(58 * V));
      const std::vector<float> ref_a = testing::reference_logits(f.config, f.weights, a);
      const std::vector<float> ref_b = testing::reference_logits(f.config, f.weights, b);
      double max_diff = 0, max_ref = 0;
      int argmax_agree = 0;
      for (int r = 0; r < 58; ++r) {
        const float* ref = r < 37 ? &ref_a[size_t(r * V)] : &ref_b[size_t((r - 37) * V)];
        const float* g = &got[size_t(r * V)];
        for (int v = 0; v < V; ++v) {
          max_diff = std::max(max_diff, std::fabs(double(g[v]) - ref[v]));
          max_ref = std::max(max_ref, std::fabs(double(ref[v])));
        }
        argmax_agree += std::max_element(g, g + V) - g == std::max_element(ref, ref + V) - ref;
      }
      std::printf("%s %s: max |logit - reference| = %.4g (max |logit| %.3g), argmax agrees %d/58\n", name.c_str(),
                  std::string(mode_name(mode)).c_str(), max_diff, max_ref, argmax_agree);
      EXPECT_LT(max_diff, 0.02 * max_ref);
      EXPECT_GE(argmax_agree, 55);
    }
  }
}

TEST(Forward, LogitRowsSelectRowsBitwiseInInvariantMode) {
  Fixture f("tiny");
  const std::vector<int32_t> a = some_tokens(30, 3, f.config.vocab_size);
  const std::vector<float> all = f.run(Mode::kInvariant, make_batch({{&a, 0, 30, 0, true}}));
  ForwardBatch some = make_batch({{&a, 0, 30, 0, true}});
  some.logit_rows = {29, 4, 17};
  const std::vector<float> picked = f.run(Mode::kInvariant, some);
  const size_t V = size_t(f.config.vocab_size);
  ASSERT_EQ(picked.size(), 3 * V);
  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(::testing::Message() << "row " << some.logit_rows[i]);
    EXPECT_EQ(std::memcmp(&picked[i * V], &all[size_t(some.logit_rows[i]) * V], V * sizeof(float)), 0);
  }
  some.logit_rows.clear();
  EXPECT_TRUE(f.run(Mode::kInvariant, some).empty());
}

// Decode one token at a time after a prefill of `prefix` tokens; compare each step's logits with
// the same position of one prefill over the whole sequence. Returns the number of differing rows.
int decode_vs_prefill_differences(Mode mode, const std::string& name, int prefix, int total, int extra_seqs) {
  Fixture f(name);
  const std::vector<int32_t> seq = some_tokens(total, 9, f.config.vocab_size);
  const std::vector<float> whole = f.run(mode, make_batch({{&seq, 0, total, 0, true}}));
  const size_t V = size_t(f.config.vocab_size);
  // Background sequences share the batch at every decode step (they make the batch shape change).
  std::vector<std::vector<int32_t>> others;
  for (int o = 0; o < extra_seqs; ++o) others.push_back(some_tokens(total, 100 + uint64_t(o), f.config.vocab_size));
  int differ = 0;
  std::vector<SeqPart> parts = {{&seq, 0, prefix, 20, false}};
  for (int o = 0; o < extra_seqs; ++o) parts.push_back({&others[size_t(o)], 0, prefix, 40 + 6 * o, false});
  std::vector<float> step = f.run(mode, make_batch(parts));
  differ += std::memcmp(&step[0], &whole[size_t(prefix - 1) * V], V * sizeof(float)) != 0;
  for (int pos = prefix; pos < total; ++pos) {
    for (auto& p : parts) p.start = pos, p.count = 1;
    step = f.run(mode, make_batch(parts));
    differ += std::memcmp(&step[0], &whole[size_t(pos) * V], V * sizeof(float)) != 0;
  }
  return differ;
}

TEST(Forward, DecodeEqualsOnePrefillBitwiseInInvariantMode) {
  for (const std::string name : {"tiny", "tiny-qwen2"}) {
    for (int extra : {0, 3}) {
      SCOPED_TRACE(::testing::Message() << name << " extra_seqs=" << extra);
      EXPECT_EQ(decode_vs_prefill_differences(Mode::kInvariant, name, 60, 100, extra), 0);
    }
  }
}

TEST(Forward, DecodeDiffersFromOnePrefillInDefaultMode) {
  // The inverse: default mode's shape-dependent reductions must be seen to change the bits.
  EXPECT_GT(decode_vs_prefill_differences(Mode::kDefault, "tiny", 60, 100, 3), 0);
}

TEST(Forward, GreedySampleIsTheArgmaxOfTheLogits) {
  Fixture f("tiny");
  const std::vector<int32_t> a = some_tokens(12, 4, f.config.vocab_size);
  const std::vector<float> logits = f.run(Mode::kInvariant, make_batch({{&a, 0, 12, 0, true}}));
  std::vector<SamplingRow> rows(12);
  std::vector<int32_t> tokens;
  ASSERT_TRUE(f.model->sample(ExecContext{}, rows, &tokens).ok());
  const size_t V = size_t(f.config.vocab_size);
  for (size_t r = 0; r < 12; ++r) {
    EXPECT_EQ(tokens[r], std::max_element(&logits[r * V], &logits[(r + 1) * V]) - &logits[r * V]);
  }
  rows.resize(3);
  absl::Status s = f.model->sample(ExecContext{}, rows, &tokens);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("3 sampling rows"), std::string::npos) << s;
}

// Step 2 begun before step 1 is finished, its tokens fed on the backend from step 1's sampled
// rows (in another order), gives the logits of step 2 run with those tokens given.
TEST(Forward, FedTokensAreTheTokensThePreviousStepSampled) {
  Fixture f("tiny");
  const std::vector<int32_t> a = some_tokens(12, 8, f.config.vocab_size), b = some_tokens(9, 9, f.config.vocab_size);
  const std::vector<SamplingRow> rows(2);
  const std::vector<int32_t> both = {0, 1};
  ExecContext ctx;
  ASSERT_TRUE(f.model->forward_sample_begin(ctx, make_batch({{&a, 0, 12, 0, false}, {&b, 0, 9, 4, false}}), rows, {}).ok());
  std::vector<int32_t> next_a = a, next_b = b;
  next_a.push_back(0), next_b.push_back(0);  // placeholders
  ForwardBatch decode = make_batch({{&next_b, 9, 1, 4, false}, {&next_a, 12, 1, 0, false}});
  decode.fed_tokens = {0, 1};
  decode.fed_from = {1, 0};  // b was row 1 of the step before, a row 0
  ASSERT_TRUE(f.model->forward_sample_begin(ctx, decode, rows, both).ok());
  std::vector<int32_t> sampled, decode_tokens;
  std::vector<float> fed_logits;
  ASSERT_TRUE(f.model->forward_sample_finish(ctx, &sampled, nullptr).ok());
  ASSERT_TRUE(f.model->forward_sample_finish(ctx, &decode_tokens, &fed_logits).ok());
  ASSERT_EQ(sampled.size(), 2u);
  next_a.back() = sampled[0], next_b.back() = sampled[1];
  const std::vector<float> given = f.run(Mode::kInvariant, make_batch({{&next_b, 9, 1, 4, false}, {&next_a, 12, 1, 0, false}}));
  ASSERT_EQ(given.size(), fed_logits.size());
  EXPECT_EQ(std::memcmp(given.data(), fed_logits.data(), given.size() * sizeof(float)), 0);
  // The inverse: fed from the wrong rows, the logits differ (the two sampled tokens differ here).
  ASSERT_NE(sampled[0], sampled[1]);
  ASSERT_TRUE(f.model->forward_sample_begin(ctx, make_batch({{&a, 0, 12, 0, false}, {&b, 0, 9, 4, false}}), rows, {}).ok());
  decode.fed_from = {0, 1};
  ASSERT_TRUE(f.model->forward_sample_begin(ctx, decode, rows, both).ok());
  std::vector<float> swapped;
  ASSERT_TRUE(f.model->forward_sample_finish(ctx, &sampled, nullptr).ok());
  ASSERT_TRUE(f.model->forward_sample_finish(ctx, &decode_tokens, &swapped).ok());
  EXPECT_NE(std::memcmp(given.data(), swapped.data(), given.size() * sizeof(float)), 0);
  // A third step may not be begun while two are in flight.
  ASSERT_TRUE(f.model->forward_sample_begin(ctx, make_batch({{&a, 0, 12, 0, false}}), {rows.data(), 1}, {}).ok());
  ASSERT_TRUE(f.model->forward_sample_begin(ctx, make_batch({{&b, 0, 9, 4, false}}), {rows.data(), 1}, {}).ok());
  const absl::Status third = f.model->forward_sample_begin(ctx, make_batch({{&a, 0, 12, 0, false}}), {rows.data(), 1}, {});
  EXPECT_NE(std::string(third.message()).find("already in flight"), std::string::npos) << third;
  ASSERT_TRUE(f.model->forward_sample_finish(ctx, &sampled, nullptr).ok());
  ASSERT_TRUE(f.model->forward_sample_finish(ctx, &sampled, nullptr).ok());
}

TEST(Forward, ScratchGrowthDoesNotChangeResults) {
  Fixture f("tiny");
  const std::vector<int32_t> a = some_tokens(9, 5, f.config.vocab_size);
  const std::vector<int32_t> big = some_tokens(200, 6, f.config.vocab_size);
  const std::vector<float> first = f.run(Mode::kInvariant, make_batch({{&a, 0, 9, 0, false}}));
  f.run(Mode::kInvariant, make_batch({{&big, 0, 200, 20, true}}));
  const std::vector<float> again = f.run(Mode::kInvariant, make_batch({{&a, 0, 9, 0, false}}));
  ASSERT_EQ(first.size(), again.size());
  EXPECT_EQ(std::memcmp(first.data(), again.data(), first.size() * sizeof(float)), 0);
}

TEST(Forward, MalformedBatchesAreClearErrors) {
  Fixture f("tiny");
  const std::vector<int32_t> a = some_tokens(10, 7, f.config.vocab_size);
  struct Case {
    const char* name;
    void (*mutate)(ForwardBatch&);
    const char* message;
  };
  for (const Case& c : {
           Case{"empty", [](ForwardBatch& b) { b = ForwardBatch{}; }, "no tokens"},
           Case{"token outside vocab", [](ForwardBatch& b) { b.tokens[3] = 258; }, "tokens[3] = 258"},
           Case{"position beyond context", [](ForwardBatch& b) { b.positions[0] = 1024; }, "positions[0] = 1024"},
           Case{"slot outside cache", [](ForwardBatch& b) { b.slot_mapping[1] = 64 * 16; }, "slot_mapping[1]"},
           Case{"slot named twice", [](ForwardBatch& b) { b.slot_mapping[7] = b.slot_mapping[2]; },
                "is also slot_mapping[2]: two tokens would write one KV slot"},
           Case{"query_start mismatch", [](ForwardBatch& b) { b.query_start.back() = 3; }, "query_start"},
           Case{"context shorter than query", [](ForwardBatch& b) { b.context_lens[0] = 2; }, "context_lens 2"},
           Case{"block outside cache", [](ForwardBatch& b) { b.block_tables[0] = 64; }, "block_tables[0][0] = 64"},
           Case{"logit row outside", [](ForwardBatch& b) { b.logit_rows = {10}; }, "logit_rows[0] = 10"},
           Case{"positions short", [](ForwardBatch& b) { b.positions.pop_back(); }, "positions"},
           Case{"fed lists differ", [](ForwardBatch& b) { b.fed_tokens = {0}; }, "fed_tokens has 1 entries but fed_from 0"},
           Case{"fed indices repeat", [](ForwardBatch& b) { b.fed_tokens = {3, 3}, b.fed_from = {0, 0}; }, "fed_tokens[1] = 3"},
           Case{"fed with no step before", [](ForwardBatch& b) { b.fed_tokens = {9}, b.fed_from = {0}; },
                "fed_from[0] = 0 is not a row the previous step sampled (0 rows)"},
       }) {
    SCOPED_TRACE(c.name);
    ForwardBatch batch = make_batch({{&a, 0, 10, 0, false}});
    c.mutate(batch);
    std::vector<float> logits;
    absl::Status s = f.model->forward(ExecContext{}, batch, &logits);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(std::string(s.message()).find(c.message), std::string::npos) << s;
  }
}

TEST(Forward, SyntheticModelWithoutHostWeightsIsTheSameModel) {
  for (const std::string name : {"tiny", "tiny-qwen2"}) {
    SCOPED_TRACE(name);
    Fixture f(name, 21);
    auto streamed = Model::create_synthetic(cpu_backend(), f.config, 21, {kNumBlocks, kBlockSize});
    ASSERT_TRUE(streamed.ok()) << streamed.status();
    EXPECT_EQ((*streamed)->weights_digest(), synthetic_weights_digest(f.config, 21));
    const std::vector<int32_t> a = some_tokens(20, 8, f.config.vocab_size);
    const ForwardBatch batch = make_batch({{&a, 0, 20, 0, true}});
    std::vector<float> logits;
    ASSERT_TRUE((*streamed)->forward(ExecContext{}, batch, &logits).ok());
    const std::vector<float> expected = f.run(Mode::kInvariant, batch);
    ASSERT_EQ(logits.size(), expected.size());
    EXPECT_EQ(std::memcmp(logits.data(), expected.data(), logits.size() * sizeof(float)), 0);
  }
}

TEST(Forward, CreateRejectsBadWeightsAndCacheShapes) {
  const ModelConfig config = *builtin_config("tiny");
  HostWeights w = synthetic_weights(config, 1);
  EXPECT_FALSE(Model::create(cpu_backend(), config, w, {0, 16}).ok());
  EXPECT_FALSE(Model::create(cpu_backend(), config, w, {4, 0}).ok());
  HostWeights missing = w;
  missing.tensors.erase("model.layers.2.mlp.up_proj.weight");
  auto m = Model::create(cpu_backend(), config, missing, {4, 16});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(std::string(m.status().message()).find("model.layers.2.mlp.up_proj.weight is missing"), std::string::npos);
  HostWeights reshaped = w;
  reshaped.tensors.at("model.norm.weight").shape = {128, 2};
  m = Model::create(cpu_backend(), config, reshaped, {4, 16});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(std::string(m.status().message()).find("model.norm.weight has shape [128,2]"), std::string::npos);
  ModelConfig bad = config;
  bad.num_heads = 3;
  EXPECT_FALSE(Model::create(cpu_backend(), bad, w, {4, 16}).ok());
}

}  // namespace
}  // namespace samebits
