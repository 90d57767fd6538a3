// Decode steps replayed from recorded CUDA graphs (label gpu). Invariant mode pads a decode batch
// up to its bucket (Model::graph_bucket); the padding argument is that no row's bits depend on
// the other rows, padded ones included. Tested at the bucket edges (n = bucket, bucket + 1):
//   - every row's logits with graphs (first call eager, second recorded, later ones replayed)
//     equal the same batch without graphs, bit for bit, in both modes (default mode records exact
//     shapes only);
//   - in invariant mode a request's logits inside any padded batch equal its logits alone;
//   - the inverse that justifies default mode's exact shapes: padding a batch by hand changes
//     some row's default-mode bits (the attention split count and matmul algorithm follow the
//     batch), never an invariant-mode row's;
//   - the engine: the same workload with and without graphs gives the same tokens and logits.
// And the engine's overlap (EngineConfig::overlap): the same workload with and without it gives the
// same schedule, tokens and logits, and with it the host work of steps runs while the device
// computes them (counted by Backend::busy), without it never. The two engine cases run on
// engine_backend (gpu_test_support.h says why).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <utility>

#include "tests/gpu/gpu_test_support.h"
#if defined(SAMEBITS_GPU_TESTS_HAVE_MODEL)
#include "harness/engine/engine.h"
#include "models/tiny_qwen/model.h"
#include "models/tiny_qwen/weights.h"
#include "tests/engine/engine_fixture.h"
#endif

namespace samebits::testing {
namespace {

#if defined(SAMEBITS_GPU_TESTS_HAVE_MODEL)
constexpr int kBlockSize = 16;
constexpr int kBlocksPerSeq = 7;  // contexts of up to 100 keys

struct EdgeCase {
  int seqs;
  Mode mode;
};
std::ostream& operator<<(std::ostream& os, const EdgeCase& c) {
  return os << c.seqs << " sequences, " << mode_name(c.mode) << " (bucket " << Model::graph_bucket(c.seqs) << ")";
}

int context_of(int s) { return 20 + (s * 37) % 80; }

// Sequence s owns blocks [s * kBlocksPerSeq, (s + 1) * kBlocksPerSeq). prefill: every sequence's
// context but its last token; decode: that last token, one row each, all sampled.
ForwardBatch make_batch(int seqs, bool decode, int vocab) {
  ForwardBatch b;
  b.max_blocks_per_seq = kBlocksPerSeq;
  b.query_start.push_back(0);
  for (int s = 0; s < seqs; ++s) {
    const int len = context_of(s);
    const int first = decode ? len - 1 : 0, last = decode ? len : len - 1;
    for (int p = first; p < last; ++p) {
      b.tokens.push_back(int32_t((s * 31 + p * 7 + 3) % vocab));
      b.positions.push_back(p);
      b.slot_mapping.push_back(int64_t(s * kBlocksPerSeq + p / kBlockSize) * kBlockSize + p % kBlockSize);
    }
    b.query_start.push_back(int32_t(b.tokens.size()));
    b.context_lens.push_back(last);
    for (int j = 0; j < kBlocksPerSeq; ++j) b.block_tables.push_back(s * kBlocksPerSeq + j);
    if (decode) b.logit_rows.push_back(int32_t(b.tokens.size()) - 1);
  }
  if (!decode) b.logit_rows.push_back(int32_t(b.tokens.size()) - 1);
  return b;
}

// The decode batch with `extra` sequences of one token appended (context 1, written nowhere).
ForwardBatch padded_by_hand(ForwardBatch b, int extra) {
  for (int i = 0; i < extra; ++i) {
    b.tokens.push_back(0);
    b.positions.push_back(0);
    b.slot_mapping.push_back(-1);
    b.context_lens.push_back(1);
    b.query_start.push_back(int32_t(b.tokens.size()));
    for (int j = 0; j < b.max_blocks_per_seq; ++j) b.block_tables.push_back(0);
    b.logit_rows.push_back(int32_t(b.tokens.size()) - 1);
  }
  return b;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b, size_t floats) {
  return a.size() >= floats && b.size() >= floats && std::memcmp(a.data(), b.data(), floats * sizeof(float)) == 0;
}

TEST(GpuGraphs, DecodeStepsReplayedFromGraphsKeepEveryRowsBitsAtBucketEdges) {
  SAMEBITS_REQUIRE_GPU();
  const ModelConfig config = *builtin_config("tiny");
  const size_t V = size_t(config.vocab_size);
  constexpr int kMaxSeqs = 257;
  auto model = Model::create_synthetic(*gpu, config, 7, {kMaxSeqs * kBlocksPerSeq, kBlockSize});
  ASSERT_TRUE(model.ok()) << model.status();
  Model& m = **model;
  std::map<Mode, bool> default_padding_differs;
  // Under racecheck the small bucket edges only (every one of them a capture and replays; the
  // padding inverse is asserted on the full list, in the gpu label and under memcheck).
  for (const int n : sweep<int>({1, 2, 3, 8, 9, 16, 17, 128, 129, 256, 257}, {1, 2, 3, 8, 9})) {
    for (const Mode mode : {Mode::kInvariant, Mode::kDefault}) {
      const EdgeCase c{n, mode};
      SCOPED_TRACE(::testing::PrintToString(c));
      ExecContext ctx;
      ctx.mode = mode;
      m.set_graphs(false);
      std::vector<float> ignored, eager, alone;
      SAMEBITS_ASSERT_OK(m.forward(ctx, make_batch(n, false, config.vocab_size), &ignored));
      const ForwardBatch decode = make_batch(n, true, config.vocab_size);
      SAMEBITS_ASSERT_OK(m.forward(ctx, decode, &eager));
      ASSERT_EQ(eager.size(), size_t(n) * V);
      // Padding by hand to the bucket, without graphs.
      const int extra = int(Model::graph_bucket(n)) - n + 1;
      std::vector<float> padded;
      SAMEBITS_ASSERT_OK(m.forward(ctx, padded_by_hand(decode, extra), &padded));
      const bool padding_changed = !same_bits(eager, padded, size_t(n) * V);
      if (mode == Mode::kInvariant) {
        EXPECT_FALSE(padding_changed) << "padding changed an invariant-mode row";
      } else if (padding_changed) {
        default_padding_differs[mode] = true;
      }
      // Sequence 0 alone.
      SAMEBITS_ASSERT_OK(m.forward(ctx, make_batch(1, true, config.vocab_size), &alone));
      if (mode == Mode::kInvariant) {
        EXPECT_TRUE(same_bits(eager, alone, V)) << "row 0 differs from row 0 alone";
      }

      m.set_graphs(true);
      const Model::GraphStats before = m.graph_stats();
      for (int call = 0; call < 3; ++call) {
        std::vector<float> with_graphs;
        SAMEBITS_ASSERT_OK(m.forward(ctx, decode, &with_graphs));
        ASSERT_EQ(with_graphs.size(), eager.size());
        EXPECT_TRUE(same_bits(with_graphs, eager, eager.size())) << "call " << call << " differs from the eager run";
      }
      const Model::GraphStats after = m.graph_stats();
      // The first call of a new shape runs eagerly; a bucket seen before is replayed at once.
      EXPECT_LE(after.captures - before.captures, 1);
      EXPECT_GE(after.replays - before.replays, 2);
    }
  }
  if (!sanitizer_shapes()) {
    EXPECT_TRUE(default_padding_differs[Mode::kDefault])
        << "padding never changed a default-mode row: the reason default mode records exact shapes is untested";
  }
}

TEST(GpuGraphs, PrefillAndMixedStepsRunWithoutGraphs) {
  SAMEBITS_REQUIRE_GPU();
  const ModelConfig config = *builtin_config("tiny");
  auto model = Model::create_synthetic(*gpu, config, 7, {8 * kBlocksPerSeq, kBlockSize});
  ASSERT_TRUE(model.ok()) << model.status();
  ExecContext ctx;
  std::vector<float> logits;
  for (int call = 0; call < 3; ++call) SAMEBITS_ASSERT_OK((*model)->forward(ctx, make_batch(5, false, config.vocab_size), &logits));
  EXPECT_EQ((*model)->graph_stats().replays, 0);
  EXPECT_EQ((*model)->graph_stats().captures, 0);
}

// Requests arriving in groups, so that pure decode steps of 1..35 sequences cross bucket edges
// (under racecheck the first two groups: decode steps of 1..9 sequences, edges 1, 2, 4 and 8).
std::vector<Arrival> grouped_arrivals(int vocab) {
  std::vector<Arrival> arrivals;
  const std::vector<std::pair<int, int>> groups = sweep<std::pair<int, int>>({{0, 3}, {9, 6}, {20, 8}, {31, 18}}, {{0, 3}, {9, 6}});
  uint64_t id = 1;
  for (const auto& [step, count] : groups) {
    for (int i = 0; i < count; ++i, ++id) {
      Arrival a;
      a.step = step;
      a.spec.id = id;
      a.spec.prompt = random_prompt(id, 5 + int(id * 13 % 40), vocab);
      a.spec.max_new_tokens = 12 + int(id * 7 % 30);
      a.spec.stop_at_eos = false;
      a.spec.observe = true;
      arrivals.push_back(std::move(a));
    }
  }
  return arrivals;
}

// The engine for grouped_arrivals on the tiny model's 512 blocks.
EngineConfig grouped_engine(Mode mode) {
  EngineConfig ec;
  ec.block_size = 16;
  ec.num_blocks = 512;
  ec.max_tokens_per_step = 64;
  ec.max_seqs = 64;
  ec.exec.mode = mode;
  return ec;
}

// The grouped workload with `flag` off, then on; the rest of grouped_engine(mode) alike.
std::pair<RunOutcome, RunOutcome> off_and_on(Model& model, const std::vector<Arrival>& arrivals, Mode mode,
                                             bool EngineConfig::*flag) {
  EngineConfig ec = grouped_engine(mode);
  ec.*flag = false;
  RunOutcome off = run_workload(model, ec, arrivals);
  ec.*flag = true;
  return {std::move(off), run_workload(model, ec, arrivals)};
}

// Every one of the n requests observed in both runs, with the same tokens and logits.
void expect_same_observed(const RunOutcome& a, const RunOutcome& b, size_t n) {
  ASSERT_EQ(a.observed.size(), n);
  for (const auto& [id, obs] : a.observed) {
    auto it = b.observed.find(id);
    ASSERT_NE(it, b.observed.end()) << "request " << id;
    EXPECT_EQ(count_differences(obs, it->second), 0) << "request " << id;
  }
}

TEST(GpuGraphs, EngineGivesTheSameBitsWithAndWithoutGraphs) {
  SAMEBITS_REQUIRE_GPU();
  auto model = make_model(engine_test_config("tiny"), 512, 16, 1, &engine_backend(*gpu));
  ASSERT_NE(model, nullptr);
  const std::vector<Arrival> arrivals = grouped_arrivals(model->config().vocab_size);
  // Under racecheck invariant mode alone: the graph path is the same in both modes, and default
  // mode's kernels are racechecked by GpuEngine's default-mode sweep (its cuBLASLt calls are what
  // racecheck slows most).
  for (const Mode mode : sweep<Mode>({Mode::kInvariant, Mode::kDefault}, {Mode::kInvariant})) {
    SCOPED_TRACE(mode_name(mode));
    const auto [eager, graphs] = off_and_on(*model, arrivals, mode, &EngineConfig::graphs);
    ASSERT_EQ(eager.error, "");
    ASSERT_EQ(graphs.error, "");
    EXPECT_EQ(eager.stats.graph_replays, 0);
    EXPECT_GT(graphs.stats.graph_replays, 10) << "too few decode steps replayed to test anything";
    std::printf("[%s] %lld of %lld steps replayed from %lld graphs\n", mode_str(mode).c_str(),
                static_cast<long long>(graphs.stats.graph_replays), static_cast<long long>(graphs.stats.steps),
                static_cast<long long>(graphs.stats.graph_captures));
    expect_same_observed(eager, graphs, arrivals.size());
  }
}

TEST(GpuEngineOverlap, SameScheduleAndBitsWithAndWithoutAndTheHostWorkOverlaps) {
  SAMEBITS_REQUIRE_GPU();
  auto model = make_model(engine_test_config("tiny"), 512, 16, 1, &engine_backend(*gpu));
  ASSERT_NE(model, nullptr);
  const std::vector<Arrival> arrivals = grouped_arrivals(model->config().vocab_size);
  for (const Mode mode : sweep<Mode>({Mode::kInvariant, Mode::kDefault}, {Mode::kInvariant})) {
    SCOPED_TRACE(mode_name(mode));
    const auto [serial, overlapped] = off_and_on(*model, arrivals, mode, &EngineConfig::overlap);
    ASSERT_EQ(serial.error, "");
    ASSERT_EQ(overlapped.error, "");
    std::printf("[%s] %lld of %lld steps overlapped; host %.3f ms/step before the first op or after the results "
                "(%.3f without overlap)\n",
                mode_str(mode).c_str(), static_cast<long long>(overlapped.stats.overlapped_steps),
                static_cast<long long>(overlapped.stats.steps),
                1e3 * overlapped.stats.host_idle_device_seconds / double(overlapped.stats.steps),
                1e3 * serial.stats.host_idle_device_seconds / double(serial.stats.steps));
    EXPECT_EQ(serial.stats.overlapped_steps, 0) << "no overlap counted where none was asked for";
    EXPECT_GT(overlapped.stats.overlapped_steps, 0) << "the host work never ran while the device computed";
    ASSERT_EQ(serial.records.size(), overlapped.records.size());
    for (size_t i = 0; i < serial.records.size(); ++i) {
      const auto &a = serial.records[i].entries, &b = overlapped.records[i].entries;
      ASSERT_EQ(a.size(), b.size()) << "step " << i;
      for (size_t e = 0; e < a.size(); ++e) {
        EXPECT_TRUE(a[e].request_id == b[e].request_id && a[e].start_position == b[e].start_position &&
                    a[e].num_tokens == b[e].num_tokens && a[e].blocks == b[e].blocks)
            << "step " << i << " entry " << e;
      }
    }
    expect_same_observed(serial, overlapped, arrivals.size());
  }
}
#endif

}  // namespace
}  // namespace samebits::testing
