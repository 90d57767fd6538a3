// argmax and seeded sampling (temperature 0.8, top-k 50 or none, top-p 0.95) in both modes over
// M rows of logits: tiny vocab 258 (M up to 512), Qwen3-0.6B vocab 151936 (M <= 16). Names:
// <op>/<mode>/<model>/M:<M>.
#include <string>
#include <vector>

#include "bench/kernels/bench_common.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/fixed_math.h"

namespace samebits::bench {
namespace {

struct VocabShape {
  const char* name;
  int64_t vocab, max_M;
};
const VocabShape kVocabs[] = {{"tiny", 258, 512}, {"qwen06", 151936, 16}};

void bench_argmax(benchmark::State& st, Mode mode, const VocabShape& v, int64_t M) {
  auto logits = seeded_f32(size_t(M * v.vocab), 1, 8.f);
  std::vector<int32_t> out(static_cast<size_t>(M));
  ArgmaxArgs a{logits.data(), M, v.vocab, out.data()};
  const ExecContext ctx = bench_ctx(mode);
  for (auto _ : st) {
    SAMEBITS_BENCH_CHECK(cpu_argmax(ctx, a));
    benchmark::ClobberMemory();
  }
}

void bench_sample(benchmark::State& st, Mode mode, const VocabShape& v, int64_t M, int top_k) {
  auto logits = seeded_f32(size_t(M * v.vocab), 2, 8.f);
  std::vector<int32_t> out(static_cast<size_t>(M));
  std::vector<SamplingRow> params(static_cast<size_t>(M));
  for (int64_t r = 0; r < M; ++r) params[r] = {0.8f, top_k, 0.95f, sampling_uniform(7, uint64_t(r))};
  SampleArgs a{logits.data(), M, v.vocab, params.data(), out.data()};
  const ExecContext ctx = bench_ctx(mode);
  for (auto _ : st) {
    SAMEBITS_BENCH_CHECK(cpu_sample(ctx, a));
    benchmark::ClobberMemory();
  }
}

const bool kRegistered = [] {
  for (const VocabShape& v : kVocabs) {
    for (int64_t M : {1, 16, 128, 512}) {
      if (M > v.max_M) continue;
      const std::string rest = std::string(v.name) + "/M:" + std::to_string(M);
      register_both_modes("argmax", rest, [&v, M](benchmark::State& st, Mode mode) { bench_argmax(st, mode, v, M); });
      register_both_modes("sample_topk50", rest,
                          [&v, M](benchmark::State& st, Mode mode) { bench_sample(st, mode, v, M, 50); });
      register_both_modes("sample_full", rest,
                          [&v, M](benchmark::State& st, Mode mode) { bench_sample(st, mode, v, M, 0); });
    }
  }
  return true;
}();

}  // namespace
}  // namespace samebits::bench
