// The check behind gpu test GpuLaunchOrder: what keeps a step kernel launched with
// launch_after_previous (cuda_common.h) from reading its predecessor's output too early.
// A writer (one block) releases its dependent first thing (allow_next_kernel), keeps the SM busy
// for `hold_ns` of the global timer, then writes kWords words of `value`. A reader launched with
// launch_after_previous copies them out; it waits for the writer (wait_for_previous_kernel) first,
// as every step kernel does, unless planted, when it copies at once. Both record the global timer
// (the writer when it writes, the reader when it reads), so the test can tell whether the two ran
// at the same time: where they did, the planted reader must see words not yet written, and the
// waiting one none.
#include <vector>

#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/cuda_ops.h"

namespace samebits {
namespace {

constexpr int kWords = 1024;

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

struct Times {
  unsigned long long written_ns, read_ns;
};

__global__ void launch_order_writer(uint32_t* words, uint32_t value, uint64_t hold_ns, Times* times) {
  cuda::allow_next_kernel();
  cuda::wait_for_previous_kernel();
  const uint64_t start = global_ns();
  while (global_ns() - start < hold_ns) {
  }
  for (int i = threadIdx.x; i < kWords; i += blockDim.x) words[i] = value;
  if (threadIdx.x == 0) times->written_ns = global_ns();
}

__global__ void launch_order_reader(const uint32_t* words, uint32_t* copy, bool planted_no_wait, Times* times) {
  if (!planted_no_wait) cuda::wait_for_previous_kernel();
  if (threadIdx.x == 0) times->read_ns = global_ns();
  for (int i = threadIdx.x; i < kWords; i += blockDim.x) copy[i] = words[i];
}

struct Buffers {
  uint32_t* words = nullptr;
  uint32_t* copy = nullptr;
  Times* times = nullptr;
  ~Buffers() {
    cudaFree(words);
    cudaFree(copy);
    cudaFree(times);
  }
};

}  // namespace

absl::StatusOr<LaunchOrderCheck> cuda_launch_order_check(bool planted_no_wait) {
  constexpr uint32_t kValue = 0x5a5a5a5au;
  constexpr uint64_t kHoldNs = 2'000'000;  // 2 ms: far beyond a dependent's launch latency
  Buffers b;
  SAMEBITS_CUDA_TRY(cudaMalloc(&b.words, kWords * sizeof(uint32_t)));
  SAMEBITS_CUDA_TRY(cudaMalloc(&b.copy, kWords * sizeof(uint32_t)));
  SAMEBITS_CUDA_TRY(cudaMalloc(&b.times, sizeof(Times)));
  cudaStream_t stream = cuda::main_stream();
  SAMEBITS_CUDA_TRY(cudaMemsetAsync(b.words, 0, kWords * sizeof(uint32_t), stream));
  SAMEBITS_CUDA_TRY(cudaMemsetAsync(b.copy, 0, kWords * sizeof(uint32_t), stream));
  SAMEBITS_CUDA_TRY(cudaMemsetAsync(b.times, 0, sizeof(Times), stream));
  SAMEBITS_RETURN_IF_ERROR(cuda::launch_after_previous("launch_order_writer", launch_order_writer, dim3(1), dim3(256),
                                                       0, stream, b.words, kValue, kHoldNs, b.times));
  SAMEBITS_RETURN_IF_ERROR(cuda::launch_after_previous("launch_order_reader", launch_order_reader, dim3(1), dim3(256),
                                                       0, stream, b.words, b.copy, planted_no_wait, b.times));
  std::vector<uint32_t> copy(kWords);
  Times times{};
  SAMEBITS_RETURN_IF_ERROR(cuda::blocking_stream_sync(stream));
  SAMEBITS_CUDA_TRY(cudaMemcpy(copy.data(), b.copy, kWords * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  SAMEBITS_CUDA_TRY(cudaMemcpy(&times, b.times, sizeof(Times), cudaMemcpyDeviceToHost));
  LaunchOrderCheck r;
  r.words = kWords;
  for (uint32_t w : copy) r.not_yet_written += w != kValue ? 1 : 0;
  r.read_before_written = times.read_ns < times.written_ns;
  return r;
}

}  // namespace samebits
