// Invariant matmul vs cuBLASLt (default mode: cuBLASLt's own heuristic, bf16 in, fp32 compute,
// bf16 out) at the Qwen3-8B linear shapes (N, K) = (6144, 4096) qkv, (4096, 4096) o, (24576, 4096)
// gate+up, (4096, 12288) down, (151936, 4096) lm_head, for M = 1 .. 8192. Per run: time per call
// (CUDA events over a batch of calls, weights rotated among copies so that they do not sit in L2),
// TFLOP/s and GB/s (x + w + y bytes once). The summary prints, per shape and M, both throughputs and
// the ratio invariant / cuBLAS, then the geometric mean and the worst ratio.
// Flags (before Google Benchmark's own): --sweep also times every tile configuration of the
// invariant kernel (to tune the automatic choice); --quick uses fewer M values.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/cuda/bench_support.h"
#include "kernels/cuda/cuda_ops.h"

namespace samebits::bench {
namespace {

const int64_t kShapes[][2] = {{6144, 4096}, {4096, 4096}, {24576, 4096}, {4096, 12288}, {151936, 4096}};
const std::vector<int64_t> kAllM = {1, 4, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
const std::vector<int64_t> kQuickM = {1, 16, 128, 1024, 8192};

struct Operands {
  std::vector<bf16*> w;  // rotated copies
  bf16* x = nullptr;     // [8192, K]
  bf16* y = nullptr;     // [8192, N]
};

Operands& operands(int64_t N, int64_t K) {
  static std::map<std::pair<int64_t, int64_t>, std::unique_ptr<Operands>> cache;
  auto& slot = cache[{N, K}];
  if (slot) return *slot;
  slot = std::make_unique<Operands>();
  const Backend& b = *gpu();
  const int64_t wbytes = N * K * 2;
  const int copies = int(std::min<int64_t>(8, std::max<int64_t>(1, (int64_t(256) << 20) / wbytes + 1)));
  for (int c = 0; c < copies; ++c) {
    bf16* w = static_cast<bf16*>(*b.alloc(size_t(wbytes)));
    (void)b.fill_synthetic(w, N * K, 1000 + uint64_t(c), 0.02f, 0.f);
    slot->w.push_back(w);
  }
  slot->x = static_cast<bf16*>(*b.alloc(size_t(8192 * K * 2)));
  (void)b.fill_synthetic(slot->x, 8192 * K, 7, 1.f, 0.f);
  slot->y = static_cast<bf16*>(*b.alloc(size_t(8192 * N * 2)));
  return *slot;
}

// config: -2 cuBLASLt (default mode), -1 invariant automatic choice, >= 0 forced configuration.
void run(benchmark::State& state, int64_t N, int64_t K, int64_t M, int config) {
  if (gpu() == nullptr) {
    state.SkipWithError("no CUDA device");
    return;
  }
  Operands& op = operands(N, K);
  ExecContext ctx;
  ctx.mode = config == -2 ? Mode::kDefault : Mode::kInvariant;
  bool failed = false;
  auto call = [&](int i) {
    LinearArgs a;
    a.x = op.x;
    a.w = op.w[size_t(i) % op.w.size()];
    a.M = M;
    a.N = N;
    a.K = K;
    a.y = op.y;
    a.plan = plan_matmul(ctx.mode, M, N, K, ctx.parallel_units);
    absl::Status st = config == -2 ? gpu()->linear(ctx, a) : cuda_linear_invariant(ctx, a, config);
    failed = failed || !st.ok();
  };
  const int reps = reps_for(call, 2e-3);
  double total = 0;
  int n = 0;
  for (auto _ : state) {
    const double t = time_per_call(call, reps);
    if (t <= 0 || failed) {
      state.SkipWithError("CUDA error");
      return;
    }
    state.SetIterationTime(t);
    total += t;
    ++n;
  }
  const double t = total / std::max(1, n);
  state.counters["us"] = t * 1e6;
  state.counters["TFLOPs"] = 2.0 * double(M) * N * K / t / 1e12;
  state.counters["GBs"] = double(M * K + N * K + M * N) * 2.0 / t / 1e9;
  if (config == -1) state.counters["config"] = cuda_linear_invariant_auto_config(M, N, K);
}

std::string key(const char* kind, int64_t N, int64_t K, int64_t M) {
  return absl::StrCat("matmul/", kind, "/N=", N, "/K=", K, "/M=", M);
}

}  // namespace
}  // namespace samebits::bench

int main(int argc, char** argv) {
  using namespace samebits::bench;
  bool sweep = false, quick = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--sweep") == 0) {
      sweep = true;
    } else if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  const std::vector<int64_t>& Ms = quick ? kQuickM : kAllM;
  const int configs = samebits::cuda_linear_invariant_config_count() - 1;  // aligned ones
  for (const auto& s : kShapes) {
    for (int64_t M : Ms) {
      const int64_t N = s[0], K = s[1];
      benchmark::RegisterBenchmark(key("cublas", N, K, M).c_str(), [=](benchmark::State& st) { run(st, N, K, M, -2); })
          ->UseManualTime()->Iterations(5)->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(key("invariant", N, K, M).c_str(), [=](benchmark::State& st) { run(st, N, K, M, -1); })
          ->UseManualTime()->Iterations(5)->Unit(benchmark::kMicrosecond);
      for (int c = 0; sweep && c < configs; ++c) {
        benchmark::RegisterBenchmark(key(absl::StrCat("cfg", c).c_str(), N, K, M).c_str(),
                                     [=](benchmark::State& st) { run(st, N, K, M, c); })
            ->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);
      }
    }
  }
  int nargs = int(args.size());
  benchmark::Initialize(&nargs, args.data());
  CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  // Summary: per shape and M, cuBLAS vs invariant, the ratio, the geometric mean and the worst.
  const auto& r = reporter.results();
  double log_sum = 0, worst = 1e9;
  int count = 0;
  std::printf("\n%-8s %-7s %-5s | %10s %8s | %10s %8s %4s | %6s", "N", "K", "M", "cuBLAS us", "TFLOP/s", "invar us",
              "TFLOP/s", "cfg", "ratio");
  if (sweep) std::printf(" | best cfg (ratio)");
  std::printf("\n");
  for (const auto& s : kShapes) {
    for (int64_t M : Ms) {
      auto c = r.find(key("cublas", s[0], s[1], M));
      auto v = r.find(key("invariant", s[0], s[1], M));
      if (c == r.end() || v == r.end() || c->second.counters.count("us") == 0 || v->second.counters.count("us") == 0) continue;
      const double tc = c->second.counters.at("us"), tv = v->second.counters.at("us");
      const double ratio = tc / tv;
      log_sum += std::log(ratio);
      worst = std::min(worst, ratio);
      ++count;
      std::printf("%-8lld %-7lld %-5lld | %10.1f %8.1f | %10.1f %8.1f %4d | %6.3f", (long long)s[0], (long long)s[1],
                  (long long)M, tc, c->second.counters.at("TFLOPs"), tv, v->second.counters.at("TFLOPs"),
                  int(v->second.counters.count("config") ? v->second.counters.at("config") : -1), ratio);
      if (sweep) {
        int best = -1;
        double best_t = 1e30;
        for (int cfg = 0; cfg < configs; ++cfg) {
          auto f = r.find(key(absl::StrCat("cfg", cfg).c_str(), s[0], s[1], M));
          if (f != r.end() && f->second.counters.count("us") && f->second.counters.at("us") < best_t) {
            best_t = f->second.counters.at("us");
            best = cfg;
          }
        }
        std::printf(" | cfg%d (%.3f)", best, tc / best_t);
      }
      std::printf("\n");
    }
  }
  if (count > 0) {
    std::printf("geometric-mean throughput ratio invariant/cuBLAS over %d shapes: %.3f; worst %.3f\n", count,
                std::exp(log_sum / count), worst);
  }
  std::printf("device copy bandwidth: %.2f TB/s\n", copy_bandwidth() / 1e12);
  benchmark::Shutdown();
  return 0;
}
