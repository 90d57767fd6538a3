// Paged attention against the fp64 reference, in both modes, over mixed varlen batches (prefill
// chunks from scratch, chunks over a cached prefix, decodes, a one-key context), GQA 4q/2kv and
// 8q/1kv, head_dim 64 and 128, block sizes 8..64. Also: argument validation.
//
// Tolerance: |out - ref| <= 2^-8 |ref| + 2e-4. The first term is the final bf16 rounding (half an
// ulp of an 8-bit significand); the second covers fp32 scores, fixed_expf (< 2 ulp) and fp32
// accumulation over up to ~600 keys of values in [-1, 1] (~600 * 2^-24 relative to sum |e v| / l).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_ops.h"
#include "tests/kernels/attention_reference.h"

namespace samebits::testing {
namespace {

struct PartSpec {
  int64_t cached, q_len;
};

struct CorrectnessCase {
  AttnShape shape;
  Mode mode;
  float q_scale;
  std::vector<PartSpec> parts;
  std::string batch_name;
  std::string name() const {  // a valid test name: letters, digits, underscores
    return absl::StrCat(shape.name(), "_", std::string(mode_name(mode)), "_", batch_name, "_qscale", int(q_scale));
  }
};
void PrintTo(const CorrectnessCase& c, std::ostream* os) { *os << c.name(); }

std::vector<CorrectnessCase> correctness_cases() {
  // Cached prefixes and chunks that cross the 256-key split boundary and split-count edges.
  const std::vector<PartSpec> mixed = {{0, 37}, {300, 64}, {517, 1}, {0, 1}, {250, 20}, {63, 1}, {511, 2}};
  const std::vector<PartSpec> decodes = {{5, 1}, {255, 1}, {256, 1}, {599, 1}, {40, 1}};
  std::vector<CorrectnessCase> cases;
  const AttnShape shapes[] = {{4, 2, 64, 16}, {8, 1, 128, 16}};
  for (const AttnShape& base : shapes) {
    for (int block_size : {8, 16, 32, 64}) {
      for (Mode mode : {Mode::kInvariant, Mode::kDefault}) {
        AttnShape shape = base;
        shape.block_size = block_size;
        const float q_scale = block_size == 32 ? 4.f : 1.f;  // a peaky softmax too
        cases.push_back({shape, mode, q_scale, mixed, "mixed"});
        if (block_size == 16) cases.push_back({shape, mode, q_scale, decodes, "decodes"});
      }
    }
  }
  return cases;
}

class AttentionCorrectness : public ::testing::TestWithParam<CorrectnessCase> {};

TEST_P(AttentionCorrectness, MatchesFp64Reference) {
  const CorrectnessCase& c = GetParam();
  int checked = 0;
  {
    SCOPED_TRACE(c.name());
    int64_t blocks = 8;  // a few never handed out
    for (const PartSpec& p : c.parts) blocks += (p.cached + p.q_len + c.shape.block_size - 1) / c.shape.block_size;
    PagedCache cache(c.shape, blocks, /*shuffle_seed=*/17);
    std::vector<SeqData> data;
    data.reserve(c.parts.size());
    std::vector<StepPart> parts;
    for (size_t i = 0; i < c.parts.size(); ++i) {
      const PartSpec& p = c.parts[i];
      data.push_back(make_seq_data(c.shape, p.cached + p.q_len, 100 + i, c.q_scale));
      absl::StatusOr<int> id = cache.add_sequence(p.cached + p.q_len);
      ASSERT_TRUE(id.ok()) << id.status();
      ASSERT_TRUE(write_prefix(cache, *id, data[i], 0, p.cached).ok());
      parts.push_back({*id, &data[i], p.cached, p.q_len});
    }
    StepOptions options;
    options.mode = c.mode;
    options.num_threads = 2;
    options.extra_table_width = 3;
    absl::StatusOr<StepResult> r = run_step(cache, parts, options);
    ASSERT_TRUE(r.ok()) << r.status();
    SCOPED_TRACE(r->plan.describe());
    double worst = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      for (int64_t qi = 0; qi < parts[i].q_len; ++qi) {
        const int64_t p = parts[i].cached + qi;
        const std::vector<double> ref = reference_attention(c.shape, data[i], p);
        const bf16* got = r->outputs[i].data() + qi * c.shape.q_row();
        for (int64_t e = 0; e < c.shape.q_row(); ++e) {
          const double err = std::fabs(double(to_float(got[e])) - ref[e]);
          const double tol = std::ldexp(std::fabs(ref[e]), -8) + 2e-4;
          worst = std::max(worst, err / tol);
          ASSERT_LE(err, tol) << "sequence " << i << " position " << p << " element " << e
                              << " got " << to_float(got[e]) << " ref " << ref[e];
          ++checked;
        }
      }
    }
    std::printf("[ case ] %s plan=%s worst err/tol=%.3f\n", c.name().c_str(),
                r->plan.describe().c_str(), worst);
  }
  EXPECT_GT(checked, 0);
}

INSTANTIATE_TEST_SUITE_P(Cases, AttentionCorrectness, ::testing::ValuesIn(correctness_cases()),
                         [](const auto& info) { return info.param.name(); });

// A tiny valid batch to mutate: one sequence, 3 cached keys + 2 new tokens, 2 blocks of 4.
struct TinyBatch {
  std::vector<bf16> q = random_bf16(5 * 4 * 8, 1), k = random_bf16(5 * 2 * 8, 2), v = random_bf16(5 * 2 * 8, 3);
  std::vector<bf16> k_cache = random_bf16(4 * 4 * 2 * 8, 4), v_cache = random_bf16(4 * 4 * 2 * 8, 5);
  std::vector<int32_t> query_start{0, 2}, context_lens{5}, block_tables{3, 1};
  std::vector<bf16> out = std::vector<bf16>(2 * 4 * 8);
  AttentionArgs args() {
    AttentionArgs a;
    a.q = q.data();
    a.k_new = k.data();
    a.v_new = v.data();
    a.k_cache = k_cache.data();
    a.v_cache = v_cache.data();
    a.query_start = query_start.data();
    a.context_lens = context_lens.data();
    a.block_tables = block_tables.data();
    a.num_seqs = 1;
    a.max_blocks_per_seq = 2;
    a.T = 2;
    a.num_q_heads = 4;
    a.num_kv_heads = 2;
    a.head_dim = 8;
    a.block_size = 4;
    a.num_blocks = 4;
    a.scale = 0.35f;
    a.plan = plan_attention(Mode::kDefault, 1, 2, 5, kDefaultParallelUnits);
    a.out = out.data();
    return a;
  }
};

TEST(AttentionValidation, RejectsBadArgumentsNamingTheField) {
  struct BadCase {
    std::string name;
    void (*mutate)(TinyBatch&, AttentionArgs&);
    std::string expect;  // substring of the message
  };
  const std::vector<BadCase> cases = {
      {"null q", [](TinyBatch&, AttentionArgs& a) { a.q = nullptr; }, "q is null"},
      {"null out", [](TinyBatch&, AttentionArgs& a) { a.out = nullptr; }, "out is null"},
      {"null k_cache", [](TinyBatch&, AttentionArgs& a) { a.k_cache = nullptr; }, "k_cache is null"},
      {"null block_tables", [](TinyBatch&, AttentionArgs& a) { a.block_tables = nullptr; }, "block_tables is null"},
      {"null k_new for a prefill", [](TinyBatch&, AttentionArgs& a) { a.k_new = nullptr; }, "sequence 0: the plan reads this step's keys but k_new is null"},
      {"heads not divisible", [](TinyBatch&, AttentionArgs& a) { a.num_kv_heads = 3; }, "num_q_heads = 4 is not a positive multiple of num_kv_heads = 3"},
      {"zero head_dim", [](TinyBatch&, AttentionArgs& a) { a.head_dim = 0; }, "head_dim = 0"},
      {"context below q_len", [](TinyBatch& b, AttentionArgs&) { b.context_lens[0] = 1; }, "sequence 0: context_lens = 1 is below its 2 query tokens"},
      {"too many blocks", [](TinyBatch& b, AttentionArgs&) { b.context_lens[0] = 9; }, "sequence 0: context_lens = 9 needs 3 blocks, more than max_blocks_per_seq = 2"},
      {"block entry out of range", [](TinyBatch& b, AttentionArgs&) { b.block_tables[1] = 4; }, "sequence 0: block_tables[1] = 4 is outside [0, num_blocks = 4)"},
      {"negative block entry", [](TinyBatch& b, AttentionArgs&) { b.block_tables[0] = -1; }, "sequence 0: block_tables[0] = -1"},
      {"query_start end", [](TinyBatch& b, AttentionArgs&) { b.query_start[1] = 3; }, "query_start[1] = 3 differs from T = 2"},
      {"zero num_blocks", [](TinyBatch&, AttentionArgs& a) { a.num_blocks = 0; }, "num_blocks = 0"},
      {"zero split_size", [](TinyBatch&, AttentionArgs& a) { a.plan = plan_attention(Mode::kInvariant, 1, 2, 5, 132); a.plan.split_size = 0; }, "plan.split_size = 0"},
      {"zero split_count", [](TinyBatch&, AttentionArgs& a) { a.plan.split_count = 0; }, "plan.split_count = 0"},
  };
  {
    TinyBatch ok;
    ASSERT_TRUE(cpu_attention(ExecContext{}, ok.args()).ok()) << "the unmutated batch must pass";
  }
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    TinyBatch b;
    AttentionArgs a = b.args();
    c.mutate(b, a);
    const std::vector<bf16> before = b.out;
    absl::Status st = cpu_attention(ExecContext{}, a);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_NE(std::string(st.message()).find(c.expect), std::string::npos) << st.message();
    EXPECT_EQ(std::memcmp(before.data(), b.out.data(), before.size() * sizeof(bf16)), 0)
        << "a rejected call wrote its output";
  }
}

TEST(AttentionValidation, EmptyBatchIsANoOp) {
  AttentionArgs a;
  a.num_q_heads = 4;
  a.num_kv_heads = 2;
  a.head_dim = 8;
  a.block_size = 4;
  EXPECT_TRUE(cpu_attention(ExecContext{}, a).ok());
  a.T = 3;
  EXPECT_EQ(cpu_attention(ExecContext{}, a).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace samebits::testing
