// samebits' CPU forward of the shipped checkpoint against Hugging Face transformers'
// Qwen3ForCausalLM (float32, fixtures written by models/tiny_qwen/train/make_fixtures.py).
//
// Tolerance. transformers keeps every activation in fp32; samebits rounds activations to bf16
// between ops (docs/DESIGN.md, "Numerics"), which moves logits by a small fraction of their scale.
// The bound is relative to the scale of each case's reference logits (max |logit|):
//   max |ours - ref| <= kRelTolerance * max |ref|        (kRelTolerance = 0.03; measured 0.005-0.013)
// and the greedy token must be the reference's wherever the reference top-2 gap exceeds that same
// absolute tolerance. Both kernel modes are checked, on one prefill and on token-by-token decode.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "models/tiny_qwen/model.h"
#include "models/tiny_qwen/model_source.h"
#include "nlohmann/json.hpp"
#include "tests/support/test_support.h"

namespace samebits {
namespace {

constexpr double kRelTolerance = 0.03;
constexpr int kBlockSize = 16;
constexpr int kNumBlocks = 64;

struct RefCase {
  std::string name;
  std::vector<int32_t> tokens;
  std::vector<float> logits;  // [tokens, vocab]
  double max_abs_logit = 0;
};

struct Reference {
  int vocab = 0;
  std::vector<RefCase> cases;
  int greedy_prompt_len = 0;
  std::vector<int32_t> greedy_tokens;
  std::vector<double> greedy_gaps;
};

std::string fixtures_dir() { return testing::source_dir() + "/models/tiny_qwen/fixtures"; }

Reference load_reference() {
  Reference ref;
  std::ifstream meta_in(fixtures_dir() + "/hf_reference.json");
  EXPECT_TRUE(meta_in.good()) << "missing fixtures in " << fixtures_dir();
  nlohmann::json meta = nlohmann::json::parse(meta_in);
  ref.vocab = meta["vocab_size"];
  std::ifstream blob(fixtures_dir() + "/" + meta["logits_file"].get<std::string>(), std::ios::binary);
  for (const auto& c : meta["cases"]) {
    RefCase rc;
    rc.name = c["name"];
    rc.tokens = c["tokens"].get<std::vector<int32_t>>();
    rc.max_abs_logit = c["max_abs_logit"];
    rc.logits.resize(rc.tokens.size() * size_t(ref.vocab));
    blob.seekg(std::streamoff(c["offset"].get<int64_t>() * 4));
    blob.read(reinterpret_cast<char*>(rc.logits.data()), std::streamsize(rc.logits.size() * 4));
    EXPECT_TRUE(blob.good()) << "short logits file for case " << rc.name;
    ref.cases.push_back(std::move(rc));
  }
  ref.greedy_prompt_len = meta["greedy"]["prompt_len"];
  ref.greedy_tokens = meta["greedy"]["tokens"].get<std::vector<int32_t>>();
  ref.greedy_gaps = meta["greedy"]["top2_gap"].get<std::vector<double>>();
  return ref;
}

// Argmax (lowest id on ties) and the gap to the runner-up of one row.
std::pair<int, double> top2(const float* row, int vocab) {
  int best = 0;
  for (int v = 1; v < vocab; ++v) {
    if (row[v] > row[best]) best = v;
  }
  float second = -INFINITY;
  for (int v = 0; v < vocab; ++v) {
    if (v != best) second = std::max(second, row[v]);
  }
  return {best, double(row[best]) - double(second)};
}

// Positions [start, start + count) of one sequence whose KV lives in blocks 0, 1, 2, ...
ForwardBatch sequence_batch(const std::vector<int32_t>& tokens, int start, int count, bool all_logits) {
  ForwardBatch b;
  const int total = start + count;
  b.max_blocks_per_seq = (total + kBlockSize - 1) / kBlockSize;
  for (int i = start; i < total; ++i) {
    if (all_logits || i == total - 1) b.logit_rows.push_back(int32_t(b.tokens.size()));
    b.tokens.push_back(tokens[size_t(i)]);
    b.positions.push_back(i);
    b.slot_mapping.push_back(i);
  }
  b.query_start = {0, int32_t(b.tokens.size())};
  b.context_lens = {total};
  for (int j = 0; j < b.max_blocks_per_seq; ++j) b.block_tables.push_back(j);
  return b;
}

class HfParity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ref_ = new Reference(load_reference());
    auto src = resolve_model(kBuiltinModelSpec);
    ASSERT_TRUE(src.ok()) << src.status();
    source_ = new ModelSource(*std::move(src));
  }
  static void TearDownTestSuite() {
    delete ref_;
    delete source_;
  }
  std::unique_ptr<Model> make_model() {
    auto m = build_model(*source_, cpu_backend(), {kNumBlocks, kBlockSize});
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? *std::move(m) : nullptr;
  }
  static Reference* ref_;
  static ModelSource* source_;
};
Reference* HfParity::ref_ = nullptr;
ModelSource* HfParity::source_ = nullptr;

TEST_F(HfParity, PrefillLogitsAndGreedyTokensMatchTransformers) {
  ASSERT_EQ(ref_->vocab, source_->config.vocab_size);
  for (Mode mode : {Mode::kInvariant, Mode::kDefault}) {
    for (const RefCase& rc : ref_->cases) {
      SCOPED_TRACE(std::string(mode_name(mode)) + " " + rc.name);
      auto model = make_model();
      ASSERT_NE(model, nullptr);
      ExecContext ctx;
      ctx.mode = mode;
      std::vector<float> logits;
      const int n = int(rc.tokens.size());
      ASSERT_TRUE(model->forward(ctx, sequence_batch(rc.tokens, 0, n, true), &logits).ok());
      ASSERT_EQ(logits.size(), rc.logits.size());
      double max_err = 0, sum_sq_err = 0, sum_sq_ref = 0;
      for (size_t i = 0; i < logits.size(); ++i) {
        const double e = std::fabs(double(logits[i]) - double(rc.logits[i]));
        max_err = std::max(max_err, e);
        sum_sq_err += e * e;
        sum_sq_ref += double(rc.logits[i]) * rc.logits[i];
      }
      const double tol = kRelTolerance * rc.max_abs_logit;
      int checked = 0, agree = 0, all_agree = 0;
      for (int p = 0; p < n; ++p) {
        auto [ref_tok, ref_gap] = top2(&rc.logits[size_t(p) * ref_->vocab], ref_->vocab);
        auto [our_tok, our_gap] = top2(&logits[size_t(p) * ref_->vocab], ref_->vocab);
        all_agree += our_tok == ref_tok;
        if (ref_gap > tol) {
          ++checked;
          agree += our_tok == ref_tok;
          EXPECT_EQ(our_tok, ref_tok) << "position " << p << ", reference gap " << ref_gap;
        }
      }
      std::printf("  %-9s %-15s %3d positions: max |err| %.4f (%.4f of max |logit| %.2f), rms err / rms logit %.5f,"
                  " argmax agrees %d/%d (%d/%d where ref gap > %.3f)\n",
                  std::string(mode_name(mode)).c_str(), rc.name.c_str(), n, max_err, max_err / rc.max_abs_logit,
                  rc.max_abs_logit, std::sqrt(sum_sq_err / sum_sq_ref), all_agree, n, agree, checked, tol);
      EXPECT_LE(max_err, tol);
      EXPECT_GT(checked, 0);
    }
  }
}

// Greedy decoding token by token through the KV cache gives transformers' greedy tokens up to the
// first step where the reference's own top-2 gap is within the tolerance (a genuine fork).
TEST_F(HfParity, GreedyDecodeMatchesTransformersUpToTheFirstFork) {
  const RefCase& rc = ref_->cases.at(0);
  ASSERT_EQ(rc.name, "feynman_greedy");
  const double tol = kRelTolerance * rc.max_abs_logit;
  int must_match = 0;
  while (must_match < int(ref_->greedy_tokens.size()) && ref_->greedy_gaps[size_t(must_match)] > tol) ++must_match;
  for (Mode mode : {Mode::kInvariant, Mode::kDefault}) {
    SCOPED_TRACE(mode_name(mode));
    auto model = make_model();
    ASSERT_NE(model, nullptr);
    ExecContext ctx;
    ctx.mode = mode;
    std::vector<int32_t> seq(rc.tokens.begin(), rc.tokens.begin() + ref_->greedy_prompt_len);
    std::vector<float> logits;
    ASSERT_TRUE(model->forward(ctx, sequence_batch(seq, 0, int(seq.size()), false), &logits).ok());
    int matched = 0;
    for (size_t step = 0; step < ref_->greedy_tokens.size(); ++step) {
      const int tok = top2(logits.data(), ref_->vocab).first;
      if (tok == ref_->greedy_tokens[step] && matched == int(step)) ++matched;
      seq.push_back(tok);
      ASSERT_TRUE(model->forward(ctx, sequence_batch(seq, int(seq.size()) - 1, 1, false), &logits).ok());
    }
    std::printf("  %-9s greedy decode: first %d of %zu tokens equal transformers' (required: %d, the steps before "
                "the first reference gap <= %.3f)\n",
                std::string(mode_name(mode)).c_str(), matched, ref_->greedy_tokens.size(), must_match, tol);
    EXPECT_GE(matched, must_match);
    EXPECT_GT(must_match, 0);
  }
}

}  // namespace
}  // namespace samebits
