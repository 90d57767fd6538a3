// The model on the GPU as the engine drives it: synthetic weights generated on the device are the
// host generator's weights (same logits bit for bit as uploading synthetic_weights(), digest from
// the generator's identity), forward_sample() gives the tokens and logits of forward() + sample()
// while copying only the observed rows, the staged bulk upload places every byte, and the event
// timer brackets every op.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/gpu/gpu_test_support.h"
#if defined(SAMEBITS_GPU_TESTS_HAVE_MODEL)
#include "models/tiny_qwen/model.h"
#include "models/tiny_qwen/weights.h"
#endif

namespace samebits::testing {
namespace {

#if defined(SAMEBITS_GPU_TESTS_HAVE_MODEL)
constexpr int kBlockSize = 16;
constexpr int kNumBlocks = 8;

// Sequences of lengths `lens` prefilled from position 0, sequence s in block s; every
// sequence's last token is a logit row.
ForwardBatch prefill_batch(const std::vector<int>& lens, int vocab) {
  ForwardBatch b;
  b.max_blocks_per_seq = 1;
  b.query_start.push_back(0);
  for (size_t s = 0; s < lens.size(); ++s) {
    for (int p = 0; p < lens[s]; ++p) {
      b.tokens.push_back(int32_t((s * 31 + size_t(p) * 7 + 3) % size_t(vocab)));
      b.positions.push_back(p);
      b.slot_mapping.push_back(int64_t(s) * kBlockSize + p);
    }
    b.query_start.push_back(int32_t(b.tokens.size()));
    b.context_lens.push_back(lens[s]);
    b.block_tables.push_back(int32_t(s));
    b.logit_rows.push_back(int32_t(b.tokens.size()) - 1);
  }
  return b;
}

struct Case {
  const char* config;
  Mode mode;
};
std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.config << "/" << mode_name(c.mode); }

TEST(GpuModel, SyntheticWeightsOnTheDeviceAreTheHostGeneratorsWeights) {
  SAMEBITS_REQUIRE_GPU();
  for (const Case c : {Case{"tiny", Mode::kInvariant}, Case{"tiny-qwen2", Mode::kDefault}}) {
    SCOPED_TRACE(::testing::PrintToString(c));
    const ModelConfig config = *builtin_config(c.config);
    auto on_device = Model::create_synthetic(*gpu, config, 5, {kNumBlocks, kBlockSize});
    ASSERT_TRUE(on_device.ok()) << on_device.status();
    auto uploaded = Model::create(*gpu, config, synthetic_weights(config, 5), {kNumBlocks, kBlockSize});
    ASSERT_TRUE(uploaded.ok()) << uploaded.status();
    EXPECT_EQ((*on_device)->weights_digest(), synthetic_weights_digest(config, 5));
    EXPECT_NE(synthetic_weights_digest(config, 5), synthetic_weights_digest(config, 6));
    const ForwardBatch batch = prefill_batch({9, 4, 16}, config.vocab_size);
    ExecContext ctx;
    ctx.mode = c.mode;
    std::vector<float> a, b;
    SAMEBITS_ASSERT_OK((*on_device)->forward(ctx, batch, &a));
    SAMEBITS_ASSERT_OK((*uploaded)->forward(ctx, batch, &b));
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
    // Inverse: another seed gives other weights, hence other logits.
    auto other = Model::create_synthetic(*gpu, config, 6, {kNumBlocks, kBlockSize});
    ASSERT_TRUE(other.ok()) << other.status();
    std::vector<float> o;
    SAMEBITS_ASSERT_OK((*other)->forward(ctx, batch, &o));
    EXPECT_NE(std::memcmp(a.data(), o.data(), a.size() * sizeof(float)), 0);
  }
}

TEST(GpuModel, ForwardSampleCopiesOnlyTheObservedRows) {
  SAMEBITS_REQUIRE_GPU();
  const ModelConfig config = *builtin_config("tiny");
  auto model = Model::create_synthetic(*gpu, config, 3, {kNumBlocks, kBlockSize});
  ASSERT_TRUE(model.ok()) << model.status();
  const ForwardBatch batch = prefill_batch({5, 12, 1, 7}, config.vocab_size);
  std::vector<SamplingRow> rows(4);
  rows[1].temperature = 0.8f, rows[1].uniform = 0.37;  // one seeded draw among greedy rows
  for (Mode mode : {Mode::kInvariant, Mode::kDefault}) {
    SCOPED_TRACE(mode_name(mode));
    ExecContext ctx;
    ctx.mode = mode;
    std::vector<float> all;
    std::vector<int32_t> want;
    SAMEBITS_ASSERT_OK((*model)->forward(ctx, batch, &all));
    SAMEBITS_ASSERT_OK((*model)->sample(ctx, rows, &want));
    const size_t V = size_t(config.vocab_size);
    for (const std::vector<int32_t>& host_rows : {std::vector<int32_t>{}, {0, 2}, {1, 2, 3}, {0, 1, 2, 3}}) {
      std::vector<float> some;
      std::vector<int32_t> got;
      SAMEBITS_ASSERT_OK((*model)->forward_sample(ctx, batch, rows, host_rows, &got, &some));
      EXPECT_EQ(got, want);
      ASSERT_EQ(some.size(), host_rows.size() * V);
      for (size_t i = 0; i < host_rows.size(); ++i) {
        EXPECT_EQ(std::memcmp(&some[i * V], &all[size_t(host_rows[i]) * V], V * sizeof(float)), 0) << "row " << host_rows[i];
      }
    }
    std::vector<float> some;
    std::vector<int32_t> got;
    const std::vector<int32_t> bad = {4};
    EXPECT_FALSE((*model)->forward_sample(ctx, batch, rows, bad, &got, &some).ok());
  }
}

// The staged bulk upload (weights from a mapping): every byte in place, for sizes around its
// 64 MiB chunks and an unaligned source; the inverse: a buffer never written differs.
TEST(GpuModel, BulkUploadPlacesEveryByte) {
  SAMEBITS_REQUIRE_GPU();
  ASSERT_NE(gpu->upload_bulk, nullptr);
  const size_t chunk = size_t(64) << 20;
  std::vector<uint8_t> host(2 * chunk + 4099);
  uint64_t x = 88172645463325252ull;
  for (uint8_t& b : host) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = uint8_t(x >> 32);
  }
  for (const size_t bytes : {size_t(1), size_t(4097), chunk, chunk + 1, 2 * chunk + 4097}) {
    SCOPED_TRACE(bytes);
    void* dst = *gpu->alloc(bytes);
    std::vector<uint8_t> back(bytes, 0);
    SAMEBITS_ASSERT_OK(gpu->upload_bulk(dst, host.data() + 1, bytes));  // unaligned source
    SAMEBITS_ASSERT_OK(gpu->download(back.data(), dst, bytes));
    EXPECT_EQ(std::memcmp(back.data(), host.data() + 1, bytes), 0);
    gpu->free(dst);
  }
  void* untouched = *gpu->alloc(4096);
  std::vector<uint8_t> zeros(4096, 0), back(4096, 1);
  SAMEBITS_ASSERT_OK(gpu->upload(untouched, zeros.data(), 4096));
  SAMEBITS_ASSERT_OK(gpu->download(back.data(), untouched, 4096));
  EXPECT_NE(std::memcmp(back.data(), host.data() + 1, 4096), 0);
  gpu->free(untouched);
}

TEST(GpuModel, EventTimerBracketsEveryOp) {
  SAMEBITS_REQUIRE_GPU();
  const ModelConfig config = *builtin_config("tiny");
  auto model = Model::create_synthetic(*gpu, config, 3, {kNumBlocks, kBlockSize});
  ASSERT_TRUE(model.ok()) << model.status();
  ExecContext ctx;
  std::unique_ptr<OpTimer> timer = make_op_timer(*gpu, ctx);
  ctx.timer = timer.get();
  const ForwardBatch batch = prefill_batch({5, 12}, config.vocab_size);
  std::vector<SamplingRow> rows(2);
  std::vector<float> logits;
  std::vector<int32_t> tokens;
  const SyncStats before = sync_stats(*gpu);
  SAMEBITS_ASSERT_OK((*model)->forward_sample(ctx, batch, rows, std::vector<int32_t>{1}, &tokens, &logits));
  OpTimes times;
  SAMEBITS_ASSERT_OK(timer->collect(&times));
  EXPECT_GT(sync_stats(*gpu).syncs, before.syncs);
  ASSERT_TRUE(times.count(kStepSpan));
  double sum = 0;
  for (const auto& [kind, t] : times) {
    if (kind == kStepSpan) continue;
    EXPECT_GE(t.seconds, 0) << kind;
    sum += t.seconds;
  }
  const std::string qkv = "linear qkv_proj " + std::to_string((config.num_heads + 2 * config.num_kv_heads) * config.head_dim) +
                          "x" + std::to_string(config.hidden_size);
  EXPECT_EQ(times.at(qkv).calls, config.num_layers) << "q|k|v once per layer";
  EXPECT_EQ(times.at("q/k norm + rope + kv_write").calls, config.num_layers);
  EXPECT_EQ(times.at("attention prefill").calls, config.num_layers);
  EXPECT_EQ(times.at("sampling").calls, 1);
  EXPECT_GT(sum, 0);
  EXPECT_LE(sum, times.at(kStepSpan).seconds * 1.0001 + 1e-6) << "brackets lie inside the step's span";
}
#endif

}  // namespace
}  // namespace samebits::testing
