// KV-cache write: rows land in exactly the mapped slots (both modes; a copy has no order), slot -1
// skips a token, every other slot and both guards stay untouched, and bad mappings are rejected
// before anything is written.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_ops.h"
#include "tests/support/test_support.h"

namespace samebits::testing {
namespace {

struct KvCase {
  int num_kv_heads, head_dim;
  int64_t T, num_slots;
  Mode mode;
  std::string name() const {
    return absl::StrCat(num_kv_heads, "kv_d", head_dim, "_T", T, "_slots", num_slots, "/", std::string(mode_name(mode)));
  }
};

struct KvFixture {
  KvCase c;
  std::vector<bf16> k, v;
  std::vector<int64_t> slots;
  Guarded<bf16> k_cache, v_cache;
  std::vector<bf16> k_before, v_before;
  explicit KvFixture(const KvCase& kc, uint64_t seed)
      : c(kc),
        k(random_bf16(size_t(kc.T * kc.num_kv_heads * kc.head_dim), seed)),
        v(random_bf16(size_t(kc.T * kc.num_kv_heads * kc.head_dim), seed + 1)),
        k_cache(size_t(kc.num_slots * kc.num_kv_heads * kc.head_dim)),
        v_cache(size_t(kc.num_slots * kc.num_kv_heads * kc.head_dim)) {
    const auto init_k = random_bf16(k_cache.size(), seed + 2), init_v = random_bf16(v_cache.size(), seed + 3);
    std::copy(init_k.begin(), init_k.end(), k_cache.data());
    std::copy(init_v.begin(), init_v.end(), v_cache.data());
    k_before = init_k;
    v_before = init_v;
    // Distinct random slots, every fifth token padding (-1).
    std::vector<int64_t> all(size_t(kc.num_slots));
    std::iota(all.begin(), all.end(), 0);
    std::mt19937_64 rng(seed);
    for (size_t i = all.size() - 1; i > 0; --i) std::swap(all[i], all[rng() % (i + 1)]);
    for (int64_t t = 0; t < kc.T; ++t) slots.push_back(t % 5 == 4 ? -1 : all[size_t(t)]);
  }
  KvWriteArgs args() {
    KvWriteArgs a;
    a.k = k.data();
    a.v = v.data();
    a.slot_mapping = slots.data();
    a.T = c.T;
    a.num_kv_heads = c.num_kv_heads;
    a.head_dim = c.head_dim;
    a.k_cache = k_cache.data();
    a.v_cache = v_cache.data();
    a.num_slots = c.num_slots;
    return a;
  }
};

TEST(KvWrite, CopiesMappedRowsAndNothingElse) {
  std::vector<KvCase> cases;
  for (Mode mode : {Mode::kInvariant, Mode::kDefault}) {
    cases.push_back({2, 64, 37, 64, mode});
    cases.push_back({8, 128, 130, 512, mode});
    cases.push_back({1, 8, 1, 1, mode});
  }
  for (const KvCase& c : cases) {
    SCOPED_TRACE(c.name());
    KvFixture f(c, 11);
    ExecContext ctx;
    ctx.mode = c.mode;
    ctx.num_threads = 2;
    ASSERT_TRUE(cpu_kv_write(ctx, f.args()).ok());
    const int64_t row = int64_t(c.num_kv_heads) * c.head_dim;
    std::vector<bool> written(size_t(c.num_slots), false);
    for (int64_t t = 0; t < c.T; ++t) {
      const int64_t slot = f.slots[size_t(t)];
      if (slot < 0) continue;
      written[size_t(slot)] = true;
      EXPECT_EQ(std::memcmp(f.k_cache.data() + slot * row, f.k.data() + t * row, row * sizeof(bf16)), 0)
          << "k of token " << t << " in slot " << slot;
      EXPECT_EQ(std::memcmp(f.v_cache.data() + slot * row, f.v.data() + t * row, row * sizeof(bf16)), 0)
          << "v of token " << t << " in slot " << slot;
    }
    for (int64_t s = 0; s < c.num_slots; ++s) {
      if (written[size_t(s)]) continue;
      EXPECT_EQ(std::memcmp(f.k_cache.data() + s * row, f.k_before.data() + s * row, row * sizeof(bf16)), 0)
          << "untouched slot " << s << " of k_cache changed";
      EXPECT_EQ(std::memcmp(f.v_cache.data() + s * row, f.v_before.data() + s * row, row * sizeof(bf16)), 0)
          << "untouched slot " << s << " of v_cache changed";
    }
    EXPECT_EQ(f.k_cache.check_guards(), "");
    EXPECT_EQ(f.v_cache.check_guards(), "");
  }
}

TEST(KvWrite, RejectsBadMappingsBeforeWriting) {
  struct BadCase {
    std::string name;
    void (*mutate)(KvFixture&, KvWriteArgs&);
    std::string expect;
  };
  const std::vector<BadCase> cases = {
      {"slot past the end", [](KvFixture& f, KvWriteArgs&) { f.slots[7] = 64; }, "token 7: slot_mapping = 64 is outside [-1, num_slots = 64)"},
      {"slot below -1", [](KvFixture& f, KvWriteArgs&) { f.slots[3] = -2; }, "token 3: slot_mapping = -2"},
      {"null k", [](KvFixture&, KvWriteArgs& a) { a.k = nullptr; }, "k is null"},
      {"null v_cache", [](KvFixture&, KvWriteArgs& a) { a.v_cache = nullptr; }, "v_cache is null"},
      {"null slot_mapping", [](KvFixture&, KvWriteArgs& a) { a.slot_mapping = nullptr; }, "slot_mapping is null"},
      {"zero head_dim", [](KvFixture&, KvWriteArgs& a) { a.head_dim = 0; }, "head_dim = 0"},
  };
  for (const BadCase& bc : cases) {
    SCOPED_TRACE(bc.name);
    KvFixture f({2, 16, 20, 64, Mode::kInvariant}, 5);
    KvWriteArgs a = f.args();
    bc.mutate(f, a);
    absl::Status st = cpu_kv_write(ExecContext{}, a);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_NE(std::string(st.message()).find(bc.expect), std::string::npos) << st.message();
    EXPECT_EQ(std::memcmp(f.k_cache.data(), f.k_before.data(), f.k_before.size() * sizeof(bf16)), 0)
        << "a rejected write changed k_cache";
    EXPECT_EQ(std::memcmp(f.v_cache.data(), f.v_before.data(), f.v_before.size() * sizeof(bf16)), 0)
        << "a rejected write changed v_cache";
  }
}

}  // namespace
}  // namespace samebits::testing
