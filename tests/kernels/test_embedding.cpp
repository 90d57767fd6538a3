// embedding: exact row copies in both modes, guards, id checks (nothing written on a bad id).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_ops.h"
#include "tests/kernels/reference.h"
#include "tests/support/test_support.h"

namespace samebits::testing {
namespace {

struct EmbeddingRun {
  absl::Status status;
  std::vector<bf16> y;
  std::string guards;
};

EmbeddingRun run_embedding(Mode mode, const std::vector<int32_t>& ids, const std::vector<bf16>& table,
                           int64_t vocab, int64_t dim) {
  Guarded<bf16> y(ids.size() * size_t(dim));
  EmbeddingArgs a;
  a.ids = ids.data();
  a.T = int64_t(ids.size());
  a.table = table.data();
  a.vocab = vocab;
  a.dim = dim;
  a.y = y.data();
  EmbeddingRun run;
  run.status = cpu_embedding(make_ctx(mode, 2), a);
  run.guards = y.check_guards();
  run.y.assign(y.data(), y.data() + y.size());
  return run;
}

TEST(Embedding, CopiesRowsExactlyInBothModes) {
  for (auto [vocab, dim] : {std::pair<int64_t, int64_t>{258, 256}, {151936, 1024}, {3, 1}}) {
    SCOPED_TRACE(absl::StrCat("vocab=", vocab, " dim=", dim));
    auto table = random_bf16(size_t(vocab * dim), 91);
    std::vector<int32_t> ids;
    for (int64_t t = 0; t < 37; ++t) ids.push_back(int32_t((t * 104729 + 5) % vocab));
    ids.push_back(int32_t(vocab - 1));
    ids.push_back(0);
    for (Mode mode : {Mode::kDefault, Mode::kInvariant}) {
      EmbeddingRun run = run_embedding(mode, ids, table, vocab, dim);
      ASSERT_TRUE(run.status.ok()) << run.status;
      EXPECT_EQ(run.guards, "");
      for (size_t t = 0; t < ids.size(); ++t) {
        ASSERT_TRUE(same_bytes(run.y.data() + t * dim, table.data() + ids[t] * dim, size_t(dim)))
            << mode_name(mode) << " token " << t << " id " << ids[t];
      }
    }
  }
}

TEST(Embedding, RejectsIdsOutsideVocabAndWritesNothing) {
  const int64_t vocab = 10, dim = 4;
  auto table = random_bf16(size_t(vocab * dim), 1);
  for (int32_t bad : {-1, 10, 99}) {
    EmbeddingRun run = run_embedding(Mode::kInvariant, {1, 2, bad}, table, vocab, dim);
    EXPECT_EQ(run.status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(run.status.message().find(absl::StrCat("embedding: token 2 has id ", bad)), std::string::npos)
        << run.status;
    Guarded<bf16> untouched(run.y.size());
    EXPECT_TRUE(same_bytes(run.y.data(), untouched.data(), run.y.size())) << "rows written before the check";
  }
}

TEST(Embedding, RejectsBadShapes) {
  auto table = random_bf16(40, 1);
  std::vector<int32_t> ids = {1};
  std::vector<bf16> y(4);
  auto base = [&] {
    EmbeddingArgs a;
    a.ids = ids.data();
    a.T = 1;
    a.table = table.data();
    a.vocab = 10;
    a.dim = 4;
    a.y = y.data();
    return a;
  };
  struct Bad { const char* what; EmbeddingArgs args; };
  std::vector<Bad> bad;
  { auto a = base(); a.ids = nullptr; bad.push_back({"ids is null", a}); }
  { auto a = base(); a.table = nullptr; bad.push_back({"table is null", a}); }
  { auto a = base(); a.y = nullptr; bad.push_back({"y is null", a}); }
  { auto a = base(); a.T = 0; bad.push_back({"T must be positive, got 0", a}); }
  { auto a = base(); a.vocab = 0; bad.push_back({"vocab must be positive, got 0", a}); }
  { auto a = base(); a.dim = 0; bad.push_back({"dim must be positive, got 0", a}); }
  for (const Bad& b : bad) {
    absl::Status s = cpu_embedding(make_ctx(Mode::kInvariant), b.args);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << b.what;
    EXPECT_NE(s.message().find(absl::StrCat("embedding: ", b.what)), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace samebits::testing
