// The MLP's gate_up_silu at the Qwen3-8B shape (F = 12288, K = 4096; one linear of 2F = 24576
// columns) for the burst's batch sizes: default mode (cuBLASLt on the interleaved [gate; up] weight,
// then the silu_mul kernel), invariant mode (its routing: the invariant linear with the fused
// silu_mul epilogue up to a row threshold, by parts above), the fused epilogue forced at every M,
// and invariant by parts (the invariant linear's [M, 2F] output, then the silu_mul kernel: what the
// fusion saves). Each iteration times a batch of calls of each, in a rotating
// order (bench_matmul.cpp says why); weights rotated among copies so that they do not sit in L2.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/cuda/bench_support.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/gate_up_silu.h"

namespace samebits::bench {
namespace {

constexpr int64_t kF = 12288, kK = 4096, kMaxM = 8192;
const std::vector<int64_t> kMs = {1, 16, 64, 256, 1024, 2048, 4096, 8192};

struct Operands {
  std::vector<bf16*> w;
  bf16 *x = nullptr, *gate_up = nullptr, *y = nullptr;
};

Operands& operands() {
  static Operands op = [] {
    Operands o;
    const Backend& b = *gpu();
    for (int c = 0; c < 2; ++c) {
      o.w.push_back(static_cast<bf16*>(*b.alloc(size_t(2 * kF * kK * 2))));
      (void)b.fill_synthetic(o.w.back(), 2 * kF * kK, 1000 + uint64_t(c), 0.02f, 0.f);
    }
    o.x = static_cast<bf16*>(*b.alloc(size_t(kMaxM * kK * 2)));
    (void)b.fill_synthetic(o.x, kMaxM * kK, 7, 1.f, 0.f);
    o.gate_up = static_cast<bf16*>(*b.alloc(size_t(kMaxM * 2 * kF * 2)));
    o.y = static_cast<bf16*>(*b.alloc(size_t(kMaxM * kF * 2)));
    return o;
  }();
  return op;
}

enum Method { kDefault, kFused, kByParts, kFusedEpilogue, kMethods };
const char* const kNames[kMethods] = {"default", "fused", "by_parts", "fused_epilogue"};

std::function<void(int)> call(Method m, int64_t M, bool* failed) {
  return [m, M, failed](int i) {
    Operands& op = operands();
    ExecContext ctx;
    ctx.mode = m == kDefault ? Mode::kDefault : Mode::kInvariant;
    GateUpSiluArgs a;
    a.x = op.x, a.w = op.w[size_t(i) % op.w.size()], a.M = M, a.F = kF, a.K = kK, a.gate_up = op.gate_up, a.y = op.y;
    a.plan = plan_matmul(ctx.mode, M, 2 * kF, kK, ctx.parallel_units);
    const absl::Status st = m == kByParts         ? gate_up_silu_by_parts(cuda_linear, cuda_silu_mul, ctx, a)
                            : m == kFusedEpilogue ? cuda_gate_up_silu_invariant(ctx, a, -1)
                                                  : gpu()->gate_up_silu(ctx, a);
    *failed = *failed || !st.ok();
  };
}

void compare(benchmark::State& state, int64_t M) {
  if (gpu() == nullptr) {
    state.SkipWithError("no CUDA device");
    return;
  }
  bool failed = false;
  std::function<void(int)> calls[kMethods];
  int reps[kMethods];
  for (int m = 0; m < kMethods; ++m) {
    calls[m] = call(Method(m), M, &failed);
    reps[m] = reps_for(calls[m], 2e-3);
  }
  double total[kMethods] = {};
  int n = 0;
  for (auto _ : state) {
    for (int j = 0; j < kMethods; ++j) {
      const int m = (n + j) % kMethods;
      const double t = time_per_call(calls[m], reps[m]);
      if (t <= 0 || failed) {
        state.SkipWithError("CUDA error");
        return;
      }
      total[m] += t;
    }
    state.SetIterationTime(total[kFused] / (n + 1));
    ++n;
  }
  for (int m = 0; m < kMethods; ++m) state.counters[absl::StrCat("us_", kNames[m])] = total[m] / std::max(1, n) * 1e6;
}

}  // namespace
}  // namespace samebits::bench

int main(int argc, char** argv) {
  using namespace samebits::bench;
  for (int64_t M : kMs) {
    benchmark::RegisterBenchmark(absl::StrCat("gate_up_silu/M=", M).c_str(), [=](benchmark::State& st) { compare(st, M); })
        ->UseManualTime()->Iterations(6)->Unit(benchmark::kMicrosecond);
  }
  benchmark::Initialize(&argc, argv);
  CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\ngate_up_silu, F=%lld K=%lld (linear of %lld columns)\n%-6s | %12s | %10s %6s | %12s %6s\n",
              (long long)kF, (long long)kK, (long long)(2 * kF), "M", "default us", "fused us", "ratio",
              "by parts us", "ratio");
  for (int64_t M : kMs) {
    auto v = reporter.results().find(absl::StrCat("gate_up_silu/M=", M));
    if (v == reporter.results().end() || v->second.counters.count("us_fused") == 0) continue;
    const auto& c = v->second.counters;
    const double td = c.at("us_default"), tf = c.at("us_fused"), tp = c.at("us_by_parts");
    std::printf("%-6lld | %12.1f | %10.1f %6.3f | %12.1f %6.3f\n", (long long)M, td, tf, td / tf, tp, td / tp);
  }
  benchmark::Shutdown();
  return 0;
}
