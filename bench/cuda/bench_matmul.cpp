// Invariant matmul vs cuBLASLt (default mode: cuBLASLt's own heuristic, bf16 in, fp32 compute,
// bf16 out) at the Qwen3-8B linear shapes (N, K) = (6144, 4096) qkv, (4096, 4096) o, (24576, 4096)
// gate+up, (4096, 12288) down, (151936, 4096) lm_head, for M = 1 .. 8192 (the 60 cases), and
// M = 1000 (the Qwen3-8B burst's decode steps, summarised apart). Per case one benchmark
// times, side by side, cuBLASLt, the invariant kernel's automatic choice and the previous automatic
// choice (cuda_linear_invariant_previous_auto_config; its configurations are unchanged in this build): each
// iteration times a batch of calls of each (CUDA events, weights rotated among copies so that they
// do not sit in L2), in an order that rotates from one iteration to the next, so that the GPU's
// clock and power state (a GEMM at full rate lowers the clocks of what follows it) weigh on all
// three alike. The summary prints, per shape and M, the throughputs and the ratios to cuBLAS, then
// the geometric mean and the worst ratio of each.
// Flags (before Google Benchmark's own): --sweep also times every tile configuration of the
// invariant kernel alone (to tune the automatic choice); --quick uses fewer M values.
// The chain-floor and ring-floor rows (chain_floor.h) time the two halves of a small-M tile apart:
// its K chain of dependent k16 steps, and its copy ring without the tensor-core work.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/cuda/bench_support.h"
#include "bench/cuda/chain_floor.h"
#include "bench/cuda/launch_floor.h"
#include "kernels/cuda/cuda_ops.h"

namespace samebits::bench {
namespace {

const int64_t kShapes[][2] = {{6144, 4096}, {4096, 4096}, {24576, 4096}, {4096, 12288}, {151936, 4096}};
const std::vector<int64_t> kAllM = {1, 4, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
const std::vector<int64_t> kQuickM = {1, 16, 128, 1024, 8192};
const std::vector<int64_t> kBurstM = {1000};  // scenarios/qwen3_8b_burst.yaml's decode steps

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

// One call of linear at (N, K, M): config -2 cuBLASLt (default mode), -1 invariant automatic
// choice, >= 0 forced configuration. Sets *failed on an error.
std::function<void(int)> linear_call(Operands& op, int64_t N, int64_t K, int64_t M, int config, bool* failed) {
  return [&op, N, K, M, config, failed](int i) {
    ExecContext ctx;
    ctx.mode = config == -2 ? Mode::kDefault : Mode::kInvariant;
    LinearArgs a;
    a.x = op.x;
    a.w = op.w[size_t(i) % op.w.size()];
    a.M = M;
    a.N = N;
    a.K = K;
    a.y = op.y;
    a.plan = plan_matmul(ctx.mode, M, N, K, ctx.parallel_units);
    absl::Status st = config == -2 ? gpu()->linear(ctx, a) : cuda_linear_invariant(ctx, a, config);
    *failed = *failed || !st.ok();
  };
}

// Seconds per call of `call` over the state's iterations (each a batch of about target_seconds of
// calls), or <= 0 once a call failed (the case then stops with `error`).
double time_launches(benchmark::State& state, const std::function<void(int)>& call, double target_seconds,
                     const bool& failed, const char* error) {
  const int reps = reps_for(call, target_seconds);
  return mean_time_per_call(state, [&] { return failed ? -1.0 : time_per_call(call, reps); }, error);
}

// One forced configuration alone (--sweep).
void run(benchmark::State& state, int64_t N, int64_t K, int64_t M, int config) {
  if (gpu() == nullptr) {
    state.SkipWithError("no CUDA device");
    return;
  }
  bool failed = false;
  const auto call = linear_call(operands(N, K), N, K, M, config, &failed);
  const double t = time_launches(state, call, 2e-3, failed, "CUDA error");
  if (t > 0) state.counters["us"] = t * 1e6;
}

// cuBLASLt, the automatic choice and the previous automatic choice, side by side (see the top).
void compare(benchmark::State& state, int64_t N, int64_t K, int64_t M) {
  if (gpu() == nullptr) {
    state.SkipWithError("no CUDA device");
    return;
  }
  constexpr int kMethods = 3;
  const char* names[kMethods] = {"cublas", "invariant", "previous"};
  const int configs[kMethods] = {-2, cuda_linear_invariant_auto_config(M, N, K),
                                 cuda_linear_invariant_previous_auto_config(M, N)};
  bool failed = false;
  std::function<void(int)> calls[kMethods];
  int reps[kMethods];
  for (int m = 0; m < kMethods; ++m) {
    calls[m] = linear_call(operands(N, K), N, K, M, configs[m], &failed);
    reps[m] = reps_for(calls[m], 2e-3);
  }
  double total[kMethods] = {};
  int n = 0;
  for (auto _ : state) {
    double t[kMethods];
    for (int j = 0; j < kMethods; ++j) {
      const int m = (n + j) % kMethods;
      t[m] = time_per_call(calls[m], reps[m]);
      if (t[m] <= 0 || failed) {
        state.SkipWithError("CUDA error");
        return;
      }
    }
    state.SetIterationTime(t[1]);
    for (int m = 0; m < kMethods; ++m) total[m] += t[m];
    ++n;
  }
  const double flops = 2.0 * double(M) * N * K;
  for (int m = 0; m < kMethods; ++m) {
    const double seconds = total[m] / std::max(1, n);
    state.counters[absl::StrCat("us_", names[m])] = seconds * 1e6;
    state.counters[absl::StrCat("TFLOPs_", names[m])] = flops / seconds / 1e12;
  }
  state.counters["config"] = configs[1];
  state.counters["previous_config"] = configs[2];
}

// A chain-floor row (chain_floor.h): 64 blocks (the 64-row weight tiles of N = 4096) of one
// warpgroup, each thread 65536 dependent k16 steps per launch; ns_per_step is what one step of a
// small-M tile's K chain costs (K = 4096 is 256 steps, K = 12288 768), us_k4096 that times 256.
void chain_floor(benchmark::State& state, ChainShape shape) {
  if (gpu() == nullptr) {
    state.SkipWithError("no CUDA device");
    return;
  }
  constexpr int kBlocks = 64, kSteps = 1 << 16;
  auto* sink = static_cast<float*>(*gpu()->alloc(4));
  bool failed = false;
  auto call = [&](int) { failed = failed || !launch_chain_floor(nullptr, shape, kBlocks, kSteps, sink); };
  const double t = time_launches(state, call, 20e-3, failed, "launch failed (no sm_90a kernel on this device?)");
  if (t > 0) {
    state.counters["ns_per_step"] = t / kSteps * 1e9;
    state.counters["us_k4096"] = t / kSteps * 256 * 1e6;
  }
  gpu()->free(sink);
}

// A ring-floor row (chain_floor.h): the small-M tiles' copy ring alone over the weight of
// N = K = 4096 (32 MiB; four copies taken in turn, 128 MiB, so that none sits in L2 as the
// compare rows' rotated weights) and 16 rows of x; ns_per_stage is the launch time over the 64 k
// tiles.
void ring_floor(benchmark::State& state, RingShape shape) {
  if (gpu() == nullptr) {
    state.SkipWithError("no CUDA device");
    return;
  }
  constexpr int kN = 4096, kK = 4096, kCopies = 4;
  void* w = *gpu()->alloc(size_t(kCopies) * kN * kK * 2);
  void* x = *gpu()->alloc(size_t(16) * kK * 2);
  cudaMemset(w, 0, size_t(kCopies) * kN * kK * 2);
  cudaMemset(x, 0, size_t(16) * kK * 2);
  auto* sink = static_cast<uint32_t*>(*gpu()->alloc(4));
  bool failed = false;
  auto call = [&](int i) {
    const void* wi = static_cast<const char*>(w) + size_t(i % kCopies) * kN * kK * 2;
    // ldg: the same bytes by ordinary loads (launch_floor.h's read kernel: each block a contiguous
    // run, i.e. the weight rows of its tile, eight 16-byte loads in flight per thread).
    failed = failed || !(shape.ldg_threads > 0
                             ? launch_read(nullptr, wi, int64_t(kN) * kK * 2, kN / shape.box_rows, shape.ldg_threads, sink)
                             : launch_ring_floor(nullptr, shape, wi, kN, kK, x));
  };
  const double t = time_launches(state, call, 20e-3, failed, "launch failed (no sm_90a kernel on this device?)");
  if (t > 0) {
    state.counters["us"] = t * 1e6;
    state.counters["ns_per_stage"] = t / (kK / 64) * 1e9;
    state.counters["weight_TBs"] = double(kN) * kK * 2 / t / 1e12;
  }
  gpu()->free(w);
  gpu()->free(x);
  gpu()->free(sink);
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
  std::vector<int64_t> Ms = quick ? kQuickM : kAllM;
  Ms.insert(Ms.end(), kBurstM.begin(), kBurstM.end());
  const int configs = samebits::cuda_linear_invariant_config_count() - 1;  // aligned ones
  for (const auto& s : kShapes) {
    for (int64_t M : Ms) {
      const int64_t N = s[0], K = s[1];
      benchmark::RegisterBenchmark(key("compare", N, K, M).c_str(), [=](benchmark::State& st) { compare(st, N, K, M); })
          ->UseManualTime()->Iterations(6)->Unit(benchmark::kMicrosecond);
      for (int c = 0; sweep && c < configs; ++c) {
        benchmark::RegisterBenchmark(key(absl::StrCat("cfg", c).c_str(), N, K, M).c_str(),
                                     [=](benchmark::State& st) { run(st, N, K, M, c); })
            ->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);
      }
    }
  }
  for (const ChainShape& c : {ChainShape{ChainKind::kMmaSync, 8}, ChainShape{ChainKind::kMmaSync, 16},
                              ChainShape{ChainKind::kWgmma, 16}}) {
    const char* kind = c.kind == ChainKind::kMmaSync ? "mma.sync" : "wgmma";
    benchmark::RegisterBenchmark(absl::StrCat("chain-floor/", kind, "/n=", c.n).c_str(),
                                 [=](benchmark::State& st) { chain_floor(st, c); })
        ->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);
  }
  for (const RingShape& r :
       {RingShape{.box_rows = 32, .stages = 32}, RingShape{.box_rows = 64, .stages = 20},
        RingShape{.box_rows = 64, .stages = 20, .with_x = false}, RingShape{.box_rows = 128, .stages = 10},
        RingShape{.box_rows = 64, .stages = 20, .tiled = true}, RingShape{.box_rows = 32, .stages = 32, .tiled = true},
        RingShape{.box_rows = 64, .ldg_threads = 512}, RingShape{.box_rows = 32, .ldg_threads = 512},
        RingShape{.box_rows = 32, .ldg_threads = 1024}, RingShape{.box_rows = 16, .ldg_threads = 512},
        RingShape{.box_rows = 64, .stages = 20, .cp_async = true},
        RingShape{.box_rows = 64, .stages = 20, .with_x = false, .cp_async = true}}) {
    const std::string name =
        r.ldg_threads > 0 ? absl::StrCat("ring-floor/ldg/blocks=", 4096 / r.box_rows, "/threads=", r.ldg_threads)
                          : absl::StrCat("ring-floor/", r.cp_async ? "cp.async/" : "", "box=", r.box_rows,
                                         "/stages=", r.stages, r.with_x ? "" : "/no-x", r.tiled ? "/tiled" : "");
    benchmark::RegisterBenchmark(name.c_str(),
        [=](benchmark::State& st) { ring_floor(st, r); })
        ->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);
  }
  int nargs = int(args.size());
  benchmark::Initialize(&nargs, args.data());
  CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  // Summary: per shape and M, cuBLAS vs invariant and vs the previous choice, the ratios, their
  // geometric means and the worst (the 60 cases; the burst rows apart). The columns up to the
  // first ratio are those of earlier builds.
  const auto& r = reporter.results();
  struct Summary {
    double log_sum[2] = {}, worst[2] = {1e9, 1e9};
    int count = 0;
  } cases, burst;
  std::printf("\n%-8s %-7s %-5s | %10s %8s | %10s %8s %4s | %6s | %10s %8s %4s | %6s", "N", "K", "M", "cuBLAS us",
              "TFLOP/s", "invar us", "TFLOP/s", "cfg", "ratio", "prev us", "TFLOP/s", "cfg", "ratio");
  if (sweep) std::printf(" | best cfg (ratio)");
  std::printf("\n");
  for (const auto& s : kShapes) {
    for (int64_t M : Ms) {
      auto v = r.find(key("compare", s[0], s[1], M));
      if (v == r.end() || v->second.counters.count("us_cublas") == 0) continue;
      const auto& c = v->second.counters;
      const double tc = c.at("us_cublas"), tv = c.at("us_invariant"), tp = c.at("us_previous");
      const double ratio[2] = {tc / tv, tc / tp};
      Summary& sum = std::count(kBurstM.begin(), kBurstM.end(), M) ? burst : cases;
      for (int i = 0; i < 2; ++i) {
        sum.log_sum[i] += std::log(ratio[i]);
        sum.worst[i] = std::min(sum.worst[i], ratio[i]);
      }
      ++sum.count;
      std::printf("%-8lld %-7lld %-5lld | %10.1f %8.1f | %10.1f %8.1f %4d | %6.3f | %10.1f %8.1f %4d | %6.3f",
                  (long long)s[0], (long long)s[1], (long long)M, tc, c.at("TFLOPs_cublas"), tv, c.at("TFLOPs_invariant"),
                  int(c.at("config")), ratio[0], tp, c.at("TFLOPs_previous"), int(c.at("previous_config")), ratio[1]);
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
  for (const Summary* sum : {&cases, &burst}) {
    if (sum->count == 0) continue;
    std::printf("geometric-mean throughput ratio invariant/cuBLAS over %d %s: %.3f; worst %.3f\n", sum->count,
                sum == &burst ? "burst rows" : "shapes", std::exp(sum->log_sum[0] / sum->count), sum->worst[0]);
    std::printf("previous automatic choice, same run: geometric mean %.3f; worst %.3f\n",
                std::exp(sum->log_sum[1] / sum->count), sum->worst[1]);
  }
  std::printf("device copy bandwidth: %.2f TB/s\n", copy_bandwidth() / 1e12);
  benchmark::Shutdown();
  return 0;
}
