// One row's argmax by one block (argmax.cu and sample.cu): the lowest id among the maxima, NaN
// never wins, all NaN gives 0. The combination rule is associative and commutative, so the
// result does not depend on how threads are paired.
#pragma once
#include <cstdint>

namespace samebits::cuda {

constexpr int kArgmaxThreads = 256;

struct ArgBest {
  float value;
  int64_t id;  // -1: nothing seen
};

__device__ __forceinline__ ArgBest better(ArgBest a, ArgBest b) {
  if (a.id < 0) return b;
  if (b.id < 0) return a;
  if (a.value > b.value) return a;
  if (b.value > a.value) return b;
  return a.id < b.id ? a : b;
}

// Call with all kArgmaxThreads threads of the block; every thread returns the row's answer.
__device__ __forceinline__ int32_t block_argmax(const float* row, int64_t vocab) {
  __shared__ float values[kArgmaxThreads / 32];
  __shared__ int64_t ids[kArgmaxThreads / 32];
  __shared__ int32_t answer;
  ArgBest best{0.0f, -1};
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
    const float v = row[i];
    if (v != v) continue;
    if (best.id < 0 || v > best.value) best = ArgBest{v, i};
  }
#pragma unroll
  for (int o = 16; o >= 1; o >>= 1) {
    ArgBest other{__shfl_xor_sync(0xffffffffu, best.value, o), __shfl_xor_sync(0xffffffffu, best.id, o)};
    best = better(best, other);
  }
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) {
    values[warp] = best.value;
    ids[warp] = best.id;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    ArgBest b{values[0], ids[0]};
    for (int w = 1; w < kArgmaxThreads / 32; ++w) b = better(b, ArgBest{values[w], ids[w]});
    answer = b.id < 0 ? 0 : int32_t(b.id);
  }
  __syncthreads();
  return answer;
}

}  // namespace samebits::cuda
