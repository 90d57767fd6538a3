#include "bench/cuda/bench_support.h"

#include <cuda_runtime.h>

#include <algorithm>

namespace samebits::bench {

const Backend* gpu() { return cuda_backend(nullptr); }

double time_per_call(const std::function<void(int)>& fn, int reps) {
  fn(0);
  cudaEvent_t start, stop;
  if (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess) return -1;
  cudaEventRecord(start);
  for (int i = 0; i < reps; ++i) fn(i);
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (cudaGetLastError() != cudaSuccess) return -1;
  return double(ms) * 1e-3 / reps;
}

int reps_for(const std::function<void(int)>& fn, double target_seconds) {
  const double one = time_per_call(fn, 2);
  if (one <= 0) return 1;
  return int(std::clamp(target_seconds / one, 1.0, 2000.0));
}

double copy_bandwidth() {
  static double bw = [] {
    const size_t bytes = size_t(2) << 30;
    void *a = nullptr, *b = nullptr;
    if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) return 0.0;
    cudaMemset(a, 1, bytes);
    const double t = time_per_call([&](int) { cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice); }, 10);
    cudaFree(a);
    cudaFree(b);
    return t > 0 ? 2.0 * double(bytes) / t : 0.0;
  }();
  return bw;
}

void CollectingReporter::ReportRuns(const std::vector<Run>& runs) {
  for (const Run& r : runs) {
    if (r.run_type != Run::RT_Iteration) continue;
    Collected c;
    c.seconds = r.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(r.time_unit);
    for (const auto& [name, counter] : r.counters) c.counters[name] = counter.value;
    results_[r.run_name.function_name] = c;
  }
  ConsoleReporter::ReportRuns(runs);
}

}  // namespace samebits::bench
