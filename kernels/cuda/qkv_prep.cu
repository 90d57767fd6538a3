// qkv_prep on CUDA (kernels/ops.h QkvPrepArgs): the q/k head rmsnorm, rope and KV write of one
// step in one kernel, reading the heads straight out of the fused q|k|v projection rows.
// One block per token, 8 warps taking its heads in turn (q heads, then k, then v), each warp loading
// 4 heads per lane group before computing any. A block's work is short, so its time is the memory
// latencies it waits for in a row: the first heads' loads go out before anything else, the
// position, slot, norm weight and rope table loads (16 bytes each) behind them, the scan for a
// later token naming the same slot after those. A head takes head_dim / 8 lanes (lane l of the group
// holds values [8l, 8l + 8) in registers): where that count is a power of two a warp holds
// 32 / (head_dim / 8) heads side by side (two at head_dim 128: no idle half warps in this
// issue-bound kernel), else one head with the lanes past head_dim / 8 holding zeros; each lane
// reads its norm weights and rope pairs' cos/sin per head from shared memory. Shuffles run on every lane; the
// q/k-only steps are branches per lane group. Values are rounded to bf16 by cvt (bf16_round.cuh:
// to_bf16's bits). The arithmetic per element is that of the separate ops, so the bits are theirs
// (gpu test):
//   norm: rmsnorm's warp order over a head row (kernels/cuda/rmsnorm_math.cuh: lane l sums its
//     chunk from +0, the 32 lanes by the xor butterfly, whose steps across lane groups would only
//     add the +0 of lanes past the head, so they are skipped), y = bf16(bf16(h * inv) * w);
//   rope: kernels/rope_math.h on the normed bf16 values, the partner half from lane
//     l +- head_dim / 16 by a shuffle;
//   KV write: the token's k and v heads copied to slot slot_mapping[t]; slot -1 skips it, and a
//     token whose slot a later token of the call names again is skipped (the CPU's last-wins). That
//     scan reads the later tokens' slots, O(T^2) loads per call (~33 M at an 8192-token prefill
//     step), so it is skipped where the caller says the slots are distinct (the model's batches).
// No reduction crosses tokens or heads. A split default-mode norm plan (RowReducePlan::parts > 1,
// few rows) cuts a head row into parts of round_up(ceil(head_dim / parts), 16) values, each summed
// in the warp order from its own start, the part sums added in part order (rmsnorm_split_kernel's
// arithmetic); where a part is a power-of-two count of chunks (Qwen heads of 64-256 at any plan)
// the kernel's lane group holds the parts as aligned sub-groups, each running the butterfly within
// itself, and every lane adds the parts' sums in part order (qkv_prep_kernel<true>). Other split
// plans, a head_dim that is not a multiple of 16 up to 256, or unaligned rows take the staged form
// (kernels/qkv_prep.h) through the separate kernels instead.
// A bad position or slot skips the token and is reported by the next synchronize.
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/rmsnorm_math.cuh"
#include "kernels/qkv_prep.h"
#include "kernels/rope_math.h"

namespace samebits {
namespace {

constexpr int kWarps = 8;
constexpr int kMaxHeadDim = 256;  // 32 lanes x 8 values
constexpr int kMaxNormParts = 8;  // a split norm plan's parts at most (plan_row_reduce: head_dim / 32 at 256)
constexpr int kHeadsInFlight = 3;  // heads a lane group loads before it computes any (Qwen3-8B: 48 heads, 16 groups)

struct HeadAt {
  bf16* dst;
  bf16* cache;  // nullptr: not written to the cache
  int kind;     // 0 q, 1 k, 2 v
};

__device__ __forceinline__ int head_kind(const QkvPrepArgs& a, int h) {
  return h < a.num_q_heads ? 0 : h < a.num_q_heads + a.num_kv_heads ? 1 : 2;
}

// Head h's index among the heads of its kind.
__device__ __forceinline__ int head_in_kind(const QkvPrepArgs& a, int h, int kind) {
  return kind == 0 ? h : kind == 1 ? h - a.num_q_heads : h - a.num_q_heads - a.num_kv_heads;
}

// Where head h of token t is read: it depends on nothing loaded, so these loads go out first.
__device__ __forceinline__ const bf16* head_src(const QkvPrepArgs& a, int64_t t, int h) {
  const int kind = head_kind(a, h);
  return (kind == 0 ? a.q_in + t * a.q_stride : (kind == 2 ? a.v_in : a.k_in) + t * a.kv_stride) +
         int64_t(head_in_kind(a, h, kind)) * a.head_dim;
}

__device__ __forceinline__ HeadAt head_at(const QkvPrepArgs& a, int64_t t, int h, bool write, int64_t slot) {
  const int Hq = a.num_q_heads, D = a.head_dim;
  const int kind = head_kind(a, h);
  const int64_t kv_row = int64_t(a.num_kv_heads) * D, at = int64_t(head_in_kind(a, h, kind)) * D;
  HeadAt r;
  r.kind = kind;
  r.dst = (kind == 0 ? a.q + t * Hq * D : (kind == 2 ? a.v : a.k) + t * kv_row) + at;
  r.cache = !write || kind == 0 ? nullptr : (kind == 2 ? a.v_cache : a.k_cache) + slot * kv_row + at;
  return r;
}

// True when a later token of the call names `slot` again (then this token's KV write is skipped:
// the CPU's last-wins). Four strides of loads go out before the first compare.
__device__ __forceinline__ bool slot_named_later(const QkvPrepArgs& a, int64_t t, int64_t slot) {
  bool later = false;
  const int64_t stride = blockDim.x;
  for (int64_t u = t + 1 + threadIdx.x; u < a.T; u += 4 * stride) {
    int64_t named[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) named[i] = u + i * stride < a.T ? a.slot_mapping[u + i * stride] : -2;
#pragma unroll
    for (int i = 0; i < 4; ++i) later |= named[i] == slot;
  }
  return later;
}

// A head row's sum of squares under a split norm plan, on the lanes of the head's group (lane
// base + c holds chunk c, +0 past the row). A part is `part_chunks` chunks (a power of two, so it
// is an aligned sub-group of lanes) summed by the butterfly within it: rmsnorm_split_kernel's warp
// order from the part's start, whose steps across the sub-group would add the +0 of lanes past the
// part (warp_butterfly_sum's rule). Then every lane adds the parts' sums in part order from part 0,
// as that kernel's one thread does. q and k heads (different plans) may share a warp, so every lane
// runs every shuffle and keeps what its own part needs. part_chunks = 32 for a whole row of one
// head per warp: the whole-warp butterfly, one part.
__device__ __forceinline__ float split_sum_of_squares(float sq, int part_chunks, int base, int chunks) {
  float acc = sq;
#pragma unroll
  for (int o = 16; o >= 1; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, acc, o);
    if (o < part_chunks) acc = acc + other;
  }
  float ss = 0.0f;
#pragma unroll
  for (int p = 0; p < kMaxNormParts; ++p) {
    const int start = p * part_chunks;
    const float part = __shfl_sync(0xffffffffu, acc, (base + start) & 31);
    if (start < chunks) ss = p == 0 ? part : ss + part;
  }
  return ss;
}

// kSplitNorm: q_part_chunks / k_part_chunks are the chunks of one norm part of a q / k head
// (split_sum_of_squares); false: both plans are one part, the lane group's butterfly (the
// invariant kernel's code, unchanged). Split plans come with few rows (default mode's small
// steps: a few blocks), so that form may take more registers than 4 blocks an SM allow (it spilled
// at 64).
template <bool kSplitNorm>
__global__ void __launch_bounds__(kWarps * 32, kSplitNorm ? 2 : 4)
    qkv_prep_kernel(QkvPrepArgs a, int q_part_chunks, int k_part_chunks, cuda::DeviceError* box) {
  cuda::wait_for_previous_kernel();
  const int64_t t = blockIdx.x;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int D = a.head_dim, chunks = D / 8, half_chunks = chunks / 2;
  const bool norm = a.q_norm != nullptr, rope = a.positions != nullptr;
  // Heads per warp side by side (lane groups of `chunks` lanes), and this lane's place in its group.
  const int per_warp = (chunks & (chunks - 1)) == 0 ? 32 / chunks : 1;
  const int group = per_warp > 1 ? lane / chunks : 0, sub = per_warp > 1 ? lane % chunks : lane;
  const int first_offset = per_warp > 1 ? chunks / 2 : 16;  // the butterfly within a group
  const bool active = sub < chunks;
  const int heads = a.num_q_heads + 2 * a.num_kv_heads;
  const int groups = kWarps * per_warp, warp_first = warp * per_warp;  // lane groups of the block
  const int round_heads = groups * kHeadsInFlight;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  // The heads of round r (kHeadsInFlight per lane group). The first round's loads go out before the
  // position, slot and table loads, so a block waits for memory about once before it computes.
  uint4 x[kHeadsInFlight];
  auto load_round = [&](int r) {
#pragma unroll
    for (int i = 0; i < kHeadsInFlight; ++i) {
      const int h = warp_first + group + r + i * groups;
      x[i] = h < heads && active ? *reinterpret_cast<const uint4*>(head_src(a, t, h) + sub * 8) : zero;
    }
  };
  load_round(0);
  int32_t pos = 0;
  bool write = a.k_cache != nullptr;
  int64_t slot = -1;
  if (rope) pos = a.positions[t];
  if (write) slot = a.slot_mapping[t];
  if (rope && (pos < 0 || pos >= a.max_position)) {  // the same for the whole block
    if (threadIdx.x == 0) cuda::report_device_error(box, cuda::kErrRopePosition, t, pos, a.max_position);
    return;
  }
  // The token's rope row (cos then sin, D floats) and the q / k norm weights in shared memory, read
  // per head: kept in registers for all heads they would push the kernel past its 64 registers.
  __shared__ float4 rope_row[kMaxHeadDim / 4];
  __shared__ uint4 norm_weights[2][kMaxHeadDim / 8];
  if (rope && int(threadIdx.x) < D / 4) rope_row[threadIdx.x] = reinterpret_cast<const float4*>(a.table + int64_t(pos) * D)[threadIdx.x];
  if (norm && int(threadIdx.x) < 2 * chunks) {
    const int which = int(threadIdx.x) / chunks, c = int(threadIdx.x) % chunks;
    norm_weights[which][c] = reinterpret_cast<const uint4*>(which == 0 ? a.q_norm : a.k_norm)[c];
  }
  if (write) {
    if (slot < -1 || slot >= a.num_slots) {
      if (threadIdx.x == 0) cuda::report_device_error(box, cuda::kErrKvWriteSlot, t, slot, a.num_slots);
    }
    write = slot >= 0 && slot < a.num_slots;
  }
  // Block-uniform (no early exit); either barrier also publishes the shared rows.
  if (write && !a.slots_distinct) {
    write = !__syncthreads_or(slot_named_later(a, t, slot));
  } else if (rope || norm) {
    __syncthreads();
  }
  const int j0 = (sub % max(half_chunks, 1)) * 8;  // this lane's first rope pair
  const bool low = sub < half_chunks;
  const int partner = (group * chunks + (low ? sub + half_chunks : sub - half_chunks)) & 31;
  for (int r = 0; warp_first + r < heads; r += round_heads) {
    if (r > 0) load_round(r);  // (round 0 went out first)
#pragma unroll
    for (int i = 0; i < kHeadsInFlight; ++i) {
      if (warp_first + r + i * groups >= heads) break;  // warp-uniform: no group of the warp has a head
      const int h = warp_first + group + r + i * groups;
      const bool valid = h < heads && active;
      const HeadAt at = head_at(a, t, valid ? h : 0, write, slot);
      const bool qk = valid && at.kind != 2;
      uint4 v = x[i];
      if (norm) {
        const float sq = active ? cuda::add_squares8(0.0f, v) : 0.0f;
        float ss;
        if constexpr (kSplitNorm) {
          ss = split_sum_of_squares(sq, at.kind == 0 ? q_part_chunks : k_part_chunks, group * chunks, chunks);
        } else {
          ss = cuda::warp_butterfly_sum(sq, first_offset);
        }
        if (qk) {
          float y[8];
          cuda::normed8(v, norm_weights[at.kind][sub], cuda::inverse_rms(ss, D, a.eps), y);
          v = cuda::pack_bf16x8(y);
        }
      }
      if (rope) {
        uint4 o;
        o.x = __shfl_sync(0xffffffffu, v.x, partner);
        o.y = __shfl_sync(0xffffffffu, v.y, partner);
        o.z = __shfl_sync(0xffffffffu, v.z, partner);
        o.w = __shfl_sync(0xffffffffu, v.w, partner);
        if (qk) {
          const float4 c0 = rope_row[j0 / 4], c1 = rope_row[j0 / 4 + 1];
          const float4 s0 = rope_row[(D / 2 + j0) / 4], s1 = rope_row[(D / 2 + j0) / 4 + 1];
          const float cosv[8] = {c0.x, c0.y, c0.z, c0.w, c1.x, c1.y, c1.z, c1.w};
          const float sinv[8] = {s0.x, s0.y, s0.z, s0.w, s1.x, s1.y, s1.z, s1.w};
          float out[8];
#pragma unroll
          for (int e = 0; e < 8; ++e) {
            const float mine = cuda::bf16_at(v, e), other = cuda::bf16_at(o, e);
            out[e] = low ? rope_lo_unrounded(mine, other, cosv[e], sinv[e]) : rope_hi_unrounded(other, mine, cosv[e], sinv[e]);
          }
          v = cuda::pack_bf16x8(out);
        }
      }
      if (valid) {
        *reinterpret_cast<uint4*>(at.dst + sub * 8) = v;
        if (at.cache != nullptr) *reinterpret_cast<uint4*>(at.cache + sub * 8) = v;
      }
    }
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

absl::Status copy_rows(const ExecContext& ctx, bf16* dst, int64_t dst_stride, const bf16* src, int64_t src_stride,
                       int64_t rows, int64_t cols) {
  const size_t e = sizeof(bf16);
  return cuda::cuda_status(cudaMemcpy2DAsync(dst, size_t(dst_stride) * e, src, size_t(src_stride) * e,
                                             size_t(cols) * e, size_t(rows), cudaMemcpyDeviceToDevice,
                                             cuda::stream_of(ctx)),
                           "qkv_prep row copy");
}

// The chunks of one norm part of a head under `plan` for split_sum_of_squares, 0 where the kernel
// cannot hold its parts (not a power of two, or more than kMaxNormParts parts). One part: the lane
// group's width (32 where a warp holds one head: the whole-warp butterfly).
int part_chunks(const RowReducePlan& plan, int head_dim) {
  const int chunks = head_dim / 8;
  if (plan.parts <= 1) return (chunks & (chunks - 1)) == 0 ? chunks : 32;
  const int part = int(lane_part_size(head_dim, plan.parts) / 8);
  if ((part & (part - 1)) != 0 || cuda::ceil_div64(chunks, part) > kMaxNormParts) return 0;
  return part;
}

bool fused_applies(const QkvPrepArgs& a) {
  if (a.head_dim % 16 != 0 || a.head_dim > kMaxHeadDim) return false;
  if (a.q_norm != nullptr && (part_chunks(a.q_plan, a.head_dim) == 0 || part_chunks(a.k_plan, a.head_dim) == 0)) {
    return false;
  }
  if (a.q_stride % 8 != 0 || a.kv_stride % 8 != 0) return false;
  for (const void* p : {(const void*)a.q_in, (const void*)a.k_in, (const void*)a.v_in, (const void*)a.q,
                        (const void*)a.k, (const void*)a.v, (const void*)a.q_norm, (const void*)a.k_norm,
                        (const void*)a.k_cache, (const void*)a.v_cache, (const void*)a.table}) {
    if (!aligned16(p)) return false;
  }
  return true;
}

}  // namespace

absl::Status cuda_qkv_prep(const ExecContext& ctx, const QkvPrepArgs& a) {
  if (absl::Status s = check_qkv_prep(a); !s.ok()) return s;
  if (a.T == 0) return absl::OkStatus();
  if (!fused_applies(a) || a.T > INT32_MAX) {
    return qkv_prep_staged(ctx, a, QkvPrepStages{copy_rows, cuda_rmsnorm, cuda_rope, cuda_kv_write});
  }
  const bool split = a.q_norm != nullptr && (a.q_plan.parts > 1 || a.k_plan.parts > 1);
  const dim3 grid(unsigned(a.T)), block(kWarps * 32);
  if (!split) {
    return cuda::launch_after_previous("qkv_prep_kernel", qkv_prep_kernel<false>, grid, block, 0, cuda::stream_of(ctx),
                                       a, 0, 0, cuda::device_error_mailbox());
  }
  return cuda::launch_after_previous("qkv_prep_kernel<split norm>", qkv_prep_kernel<true>, grid, block, 0,
                                     cuda::stream_of(ctx), a, part_chunks(a.q_plan, a.head_dim),
                                     part_chunks(a.k_plan, a.head_dim), cuda::device_error_mailbox());
}

}  // namespace samebits
