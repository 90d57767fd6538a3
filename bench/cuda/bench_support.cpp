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

double time_per_call_graph(const std::function<void(void*, int)>& fn, int reps) {
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return -1;
  fn(stream, 0);  // warm-up outside the capture: one-time set-up, scratch sized
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  double seconds = -1;
  if (cudaStreamSynchronize(stream) == cudaSuccess &&
      cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed) == cudaSuccess) {
    for (int i = 0; i < reps; ++i) fn(stream, i);
    if (cudaStreamEndCapture(stream, &graph) == cudaSuccess &&
        cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess && cudaGraphLaunch(exec, stream) == cudaSuccess &&
        cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&stop) == cudaSuccess) {
      cudaEventRecord(start, stream);
      cudaGraphLaunch(exec, stream);
      cudaEventRecord(stop, stream);
      float ms = 0;
      if (cudaEventSynchronize(stop) == cudaSuccess && cudaEventElapsedTime(&ms, start, stop) == cudaSuccess) {
        seconds = double(ms) * 1e-3 / reps;
      }
    }
  }
  if (start) cudaEventDestroy(start);
  if (stop) cudaEventDestroy(stop);
  if (exec) cudaGraphExecDestroy(exec);
  if (graph) cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  if (cudaGetLastError() != cudaSuccess) return -1;
  return seconds;
}

double mean_time_per_call(benchmark::State& state, const std::function<double()>& time_once, const char* error) {
  double total = 0;
  int n = 0;
  for (auto _ : state) {
    const double t = time_once();
    if (t <= 0) {
      state.SkipWithError(error);
      return -1;
    }
    state.SetIterationTime(t);
    total += t;
    ++n;
  }
  return total / std::max(1, n);
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
