// KV-cache write on CUDA: a copy of each token's K and V rows into slot slot_mapping[t] of the
// paged caches (no arithmetic: identical in both modes). Slot -1 skips the token. One warp per
// token; a token whose slot is named again by a later token of the same call is skipped, so a
// mapping that names one slot twice gets the CPU's result (last wins) without a race. A slot
// outside [-1, num_slots) skips its token and is reported by the next synchronize.
#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/cuda_ops.h"

namespace samebits {
namespace {

constexpr int kWarps = 4;

// Launch bounds: eight blocks per SM (64 registers a thread); with the thread count alone ptxas
// aimed at full occupancy, 32 registers, and spilled.
__global__ void __launch_bounds__(kWarps * 32, 8) kv_write_kernel(KvWriteArgs a, cuda::DeviceError* box) {
  cuda::wait_for_previous_kernel();
  const int lane = threadIdx.x & 31;
  const int64_t t = int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (t >= a.T) return;
  const int64_t slot = a.slot_mapping[t];
  if (slot < -1 || slot >= a.num_slots) {
    if (lane == 0) cuda::report_device_error(box, cuda::kErrKvWriteSlot, t, slot, a.num_slots);
    return;
  }
  if (slot < 0) return;
  bool later = false;
  for (int64_t u = t + 1 + lane; u < a.T && !later; u += 32) later = a.slot_mapping[u] == slot;
  if (__any_sync(0xffffffffu, later)) return;
  const int64_t row = int64_t(a.num_kv_heads) * a.head_dim;
  const bool vec = row % 8 == 0 && ((reinterpret_cast<uintptr_t>(a.k) | reinterpret_cast<uintptr_t>(a.v) |
                                     reinterpret_cast<uintptr_t>(a.k_cache) |
                                     reinterpret_cast<uintptr_t>(a.v_cache)) & 15) == 0;
  if (vec) {
    const uint4* ks = reinterpret_cast<const uint4*>(a.k + t * row);
    const uint4* vs = reinterpret_cast<const uint4*>(a.v + t * row);
    uint4* kd = reinterpret_cast<uint4*>(a.k_cache + slot * row);
    uint4* vd = reinterpret_cast<uint4*>(a.v_cache + slot * row);
    for (int64_t i = lane; i < row / 8; i += 32) {
      kd[i] = ks[i];
      vd[i] = vs[i];
    }
  } else {
    for (int64_t i = lane; i < row; i += 32) {
      a.k_cache[slot * row + i] = a.k[t * row + i];
      a.v_cache[slot * row + i] = a.v[t * row + i];
    }
  }
}

}  // namespace

absl::Status cuda_kv_write(const ExecContext& ctx, const KvWriteArgs& a) {
  auto invalid = [](const std::string& what) { return absl::InvalidArgumentError(absl::StrCat("kv_write: ", what)); };
  if (a.T < 0) return invalid(absl::StrCat("T = ", a.T, " is negative"));
  if (a.num_kv_heads <= 0) return invalid(absl::StrCat("num_kv_heads = ", a.num_kv_heads, " is not positive"));
  if (a.head_dim <= 0) return invalid(absl::StrCat("head_dim = ", a.head_dim, " is not positive"));
  if (a.T == 0) return absl::OkStatus();
  if (!a.k || !a.v) return invalid(a.k ? "v is null" : "k is null");
  if (!a.slot_mapping) return invalid("slot_mapping is null");
  if (!a.k_cache || !a.v_cache) return invalid(a.k_cache ? "v_cache is null" : "k_cache is null");
  return cuda::launch_after_previous("kv_write_kernel", kv_write_kernel, dim3(unsigned(cuda::ceil_div64(a.T, kWarps))),
                                     dim3(kWarps * 32), 0, cuda::stream_of(ctx), a, cuda::device_error_mailbox());
}

}  // namespace samebits
