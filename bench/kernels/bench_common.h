// Helpers shared by the kernel benchmarks: seeded data, contexts, both-mode registration.
#pragma once
#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/ops.h"

namespace samebits::bench {

// Seeded values in [-scale, scale), never exactly zero.
inline std::vector<bf16> seeded_bf16(size_t n, uint64_t seed, float scale = 1.f) {
  std::vector<bf16> out(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
  for (auto& v : out) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v = to_bf16(scale * (float(int64_t(s >> 40) - (1 << 23)) + 0.5f) / float(1 << 23));
  }
  return out;
}

inline std::vector<float> seeded_f32(size_t n, uint64_t seed, float scale = 1.f) {
  std::vector<float> out(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 11;
  for (auto& v : out) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v = scale * (float(int64_t(s >> 40) - (1 << 23)) + 0.5f) / float(1 << 23);
  }
  return out;
}

// OpenMP's default thread count (all cores), the virtual 132 parallel units of the planner.
inline ExecContext bench_ctx(Mode mode) {
  ExecContext ctx;
  ctx.mode = mode;
  return ctx;
}

// Registers body under "<op>/<mode>/<rest>" for both modes (bench_main pairs them by name).
inline void register_both_modes(const std::string& op, const std::string& rest,
                                const std::function<void(benchmark::State&, Mode)>& body) {
  for (Mode mode : {Mode::kDefault, Mode::kInvariant}) {
    const std::string name = op + "/" + std::string(mode_name(mode)) + "/" + rest;
    benchmark::RegisterBenchmark(name.c_str(), [body, mode](benchmark::State& st) { body(st, mode); })
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
}

// Stops the benchmark with the op's error message when a call fails.
#define SAMEBITS_BENCH_CHECK(expr)                         \
  do {                                                     \
    absl::Status _s = (expr);                              \
    if (!_s.ok()) {                                        \
      st.SkipWithError(std::string(_s.message()).c_str()); \
      return;                                              \
    }                                                      \
  } while (0)

}  // namespace samebits::bench
