// The wgmma prefill attention kernel (sm90a/attention_prefill.cu, built for sm_90a only): its launch
// shape and its launcher, for attention.cu. Each block finds its work item of kPrefillTileRows rows
// (attention_worklist.cuh).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/attention_kernel.cuh"

namespace samebits::cuda {

constexpr int kPrefillTileRows = 128;  // rows per work item: two consumer warpgroups x 64

// K/V ring stages (64 keys each): 32 KiB a stage at head_dim 128, 16 KiB at 64.
constexpr int prefill_stages(int head_dim) { return head_dim == 128 ? 4 : 8; }
int prefill_smem_bytes(int head_dim);
int prefill_threads();

// Launches `items` work items x num_kv_heads blocks (blocks beyond the call's items return at
// once). planted (tests only): the scores' k16 steps over the head dim in reverse order.
// Unimplemented on a device that is not compute capability 9.0.
absl::Status launch_attention_prefill(const AttnParams& params, int64_t items, int head_dim, bool planted,
                                      cudaStream_t stream);

}  // namespace samebits::cuda
