// Kernels of the launch-floor rows (launch_floor.h): an empty kernel and a read-only kernel, both
// programmatic dependents that wait for the kernel before them first, as every step kernel must.
#include "bench/cuda/launch_floor.h"

#include <cuda_runtime.h>

#include "kernels/cuda/cuda_common.h"

namespace samebits::bench {
namespace {

__global__ void empty_kernel() { cuda::wait_for_previous_kernel(); }

// Block b folds 16-byte words [b * per_block, (b + 1) * per_block) of src by XOR, eight 16-byte
// loads per thread in flight per round: 16, 64 or 128 KiB per block of 128, 512 or 1024 threads
// (the segment kernel's first round of copies is a whole 256-key segment, 128 KiB at head_dim 128).
constexpr int kInFlight = 8;
__global__ void read_kernel(const uint4* src, int64_t per_block, uint32_t* sink) {
  cuda::wait_for_previous_kernel();
  const uint4* p = src + blockIdx.x * per_block;
  uint32_t x = 0;
  bool allowed = false;
  for (int64_t i = threadIdx.x; i < per_block; i += kInFlight * blockDim.x) {
    uint4 v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int64_t j = i + int64_t(u) * blockDim.x;
      v[u] = j < per_block ? __ldg(p + j) : make_uint4(0, 0, 0, 0);
    }
    if (!allowed) {  // the first round's loads are issued: let the next kernel's blocks be scheduled
      cuda::allow_next_kernel();
      allowed = true;
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (x == 0x9e3779b9u) *sink = x;
}

}  // namespace

// Launched as the step kernels are: cuda::launch_after_previous.
bool launch_empty(void* stream) {
  return cuda::launch_after_previous("empty_kernel", empty_kernel, dim3(1), dim3(32), 0,
                                     static_cast<cudaStream_t>(stream))
      .ok();
}

bool launch_read(void* stream, const void* src, int64_t bytes, int blocks, int threads, uint32_t* sink) {
  if (blocks <= 0 || bytes % (int64_t(16) * blocks) != 0) return false;
  return cuda::launch_after_previous("read_kernel", read_kernel, dim3(unsigned(blocks)), dim3(unsigned(threads)), 0,
                                     static_cast<cudaStream_t>(stream), static_cast<const uint4*>(src),
                                     bytes / 16 / blocks, sink)
      .ok();
}

}  // namespace samebits::bench
