// The CUDA backend's ops, one function per op, each in its own file under kernels/cuda/.
// kernels/cuda/backend_cuda.cpp puts them into the backend table (kernels/backend.h).
// Every pointer in the args is device memory, except SampleArgs::params (host, as on every backend)
// and the optional host mirrors of AttentionArgs. Ops are asynchronous on ctx.stream; bad indices
// found on the device are reported by the next synchronize/download (kernels/cuda/cuda_common.h).
#pragma once
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/ops.h"

namespace samebits {

absl::Status cuda_linear(const ExecContext& ctx, const LinearArgs& args);        // linear.cu
absl::Status cuda_rmsnorm(const ExecContext& ctx, const RmsNormArgs& args);      // rmsnorm.cu
absl::Status cuda_rope(const ExecContext& ctx, const RopeArgs& args);            // rope.cu
absl::Status cuda_silu_mul(const ExecContext& ctx, const SiluMulArgs& args);     // silu_mul.cu
absl::Status cuda_gate_up_silu(const ExecContext& ctx, const GateUpSiluArgs& args);  // silu_mul.cu
absl::Status cuda_embedding(const ExecContext& ctx, const EmbeddingArgs& args);  // embedding.cu
absl::Status cuda_kv_write(const ExecContext& ctx, const KvWriteArgs& args);     // kv_write.cu
absl::Status cuda_qkv_prep(const ExecContext& ctx, const QkvPrepArgs& args);     // qkv_prep.cu
absl::Status cuda_attention(const ExecContext& ctx, const AttentionArgs& args);  // attention.cu
absl::Status cuda_argmax(const ExecContext& ctx, const ArgmaxArgs& args);        // argmax.cu
absl::Status cuda_sample(const ExecContext& ctx, const SampleArgs& args);        // sample.cu

// Fills dst[0, n) with synthetic weights: value i = bf16(offset + scale * u(tensor_key, i)), the
// generator of models/tiny_qwen/weights.cpp (tensor_key = XXH3_64bits_withSeed(name, seed)).
absl::Status cuda_fill_synthetic(void* dst, int64_t n, uint64_t tensor_key, float scale, float offset);
// synthetic_fill.cu

// out[i] = fixed_expf(x) for x the fp32 with bit pattern first + i, i < n (the device's exp, for
// the test that it equals the host's bit for bit); planted (tests only): the multiply-adds rounded
// twice, a difference that test must see.
absl::Status cuda_fixed_expf_range(uint32_t first, int64_t n, float* out, bool planted);  // fixed_expf_range.cu

// Paged attention with a forced route for the sequences' last tiles of 1..16 rows (decodes):
// kAuto (cuda_attention) chooses by speed, kDecodeKernel gives them to the one-warp-per-segment
// decode kernel (as many warps per block as kAuto would take), kDecodeKernelWide to the decode
// kernel with the most warps per block that fit (kAuto takes them only when they still fill the
// machine), kGeneralOnly to the 64-row kernel, which folds all segments in the block (and takes
// every other tile too). kPrefillKernel: every tile of more than 16 rows on the wgmma prefill
// kernel (compute capability 9.0 only, else an Unimplemented status), decode tiles as kAuto;
// kPrefillKernelPlanted (tests only): that kernel with the scores' k16 steps over the head dim in
// reverse order, a planted order change the bitwise tests must see. kDecodeChainRing2 / 4 / 8: the
// decode tiles on the few-warps decode kernel with that ring depth (attention_decode_chain.cuh;
// kAuto picks the depth from the launch). kDecodeSplitRing4 / 8: decode tiles of at most 8 rows on
// the four-warps-per-segment kernel with that ring depth (attention_decode_split.cuh; larger tiles
// as kDecodeChainRing2). kDecodeSegment: decode tiles of at most 8 rows on the kernel that runs
// a segment's sub-blocks side by side in four warps (attention_decode_segment.cuh; larger tiles as
// kDecodeChainRing2). kDecodeSharedExpsPlanted (tests only): decode tiles of at most 4 rows on
// the decode kernel with a planted slip in its shared-exponentials softmax (attention_kernel.cuh,
// kExpsSharedPlanted: two columns' exponentials swapped), which the bitwise tests must see; larger
// tiles as kDecodeKernel. kDecodeKernelFourWarps: decode tiles on the decode kernel in blocks of
// at most 4 warps (never the few-warps kernels; kAuto takes such blocks for tiles of one segment).
// Every other route gives the same bits (tests).
enum class AttentionRoute { kAuto, kDecodeKernel, kDecodeKernelWide, kGeneralOnly, kPrefillKernel,
                            kPrefillKernelPlanted, kDecodeChainRing2, kDecodeChainRing4, kDecodeChainRing8,
                            kDecodeSplitRing4, kDecodeSplitRing8, kDecodeSharedExpsPlanted,
                            kDecodeKernelFourWarps, kDecodeSegment };
absl::Status cuda_attention_routed(const ExecContext& ctx, const AttentionArgs& args, AttentionRoute route);

// Which kernel takes a call's tiles of more than 16 rows, and its launch shape. kAuto, kDecodeKernel
// and kDecodeKernelWide take the wgmma prefill kernel on compute capability 9.0 when a sequence of
// the call may hold kPrefillTileRows (128) rows (exact from the host mirrors, else bounded by T);
// kGeneralOnly never.
struct AttentionPrefillPlan {
  bool wgmma = false;  // kernels/cuda/sm90a/attention_prefill.cu; else the 64-row kernel
  int tile_rows = 64, threads = 128, stages = 2, smem_bytes = 0;
  std::string describe() const;
};
AttentionPrefillPlan cuda_attention_prefill_plan(const AttentionArgs& args, AttentionRoute route);

// The decode tiles' launch shape under kAuto (tests and benchmarks inspect it): the (sequence, kv
// head) tiles of at most 16 rows, their most segments and the segment slots (the decode kernels'
// gridDim.x: slot j takes segments j, j + slots, ... of its tile), exact from the host mirrors, else
// bounds from the shapes. Zero tiles: none (or the 64-row kernel takes them).
struct AttentionDecodePlan {
  int64_t tiles = 0;
  int segments = 0, slots = 0;
  std::string describe() const;
};
AttentionDecodePlan cuda_attention_decode_plan(const AttentionArgs& args);

// Invariant linear with a forced tile configuration (benchmarks and tests of the tile choice):
// every configuration gives the same bits (the per-element reduction does not depend on the tile).
int cuda_linear_invariant_config_count();
std::string cuda_linear_invariant_config_name(int config);
// config < 0: the automatic choice for (M, N).
absl::Status cuda_linear_invariant(const ExecContext& ctx, const LinearArgs& args, int config);
// The configuration the automatic choice picks for (M, N, K).
int cuda_linear_invariant_auto_config(int64_t M, int64_t N, int64_t K);
// The automatic choice of main before the mma.sync swapped tile (2026-12-01; its configurations are
// unchanged in this build): the benchmark's side-by-side column.
int cuda_linear_invariant_previous_auto_config(int64_t M, int64_t N);
// Tests only: the invariant kernel with a planted K-order change (the 64-wide k tiles summed last to
// first), so that the configuration tests can show they see one. Hopper and aligned rows only.
absl::Status cuda_linear_invariant_planted_k_order(const ExecContext& ctx, const LinearArgs& args);
// gate_up_silu in invariant mode, fused into the invariant linear (linear.cu) under a forced
// configuration (config < 0: the automatic choice for a linear of 2F columns;
// kGateUpPlantedKOrder: the planted K-order kernel, tests only).
inline constexpr int kGateUpPlantedKOrder = -2;
absl::Status cuda_gate_up_silu_invariant(const ExecContext& ctx, const GateUpSiluArgs& args, int config);

// Tests only: bf16_round.cuh's cvt rounding against kernels/bf16.h's to_bf16 over the 32-bit
// patterns 0, step, 2 * step, ... below 2^32 (bf16_round.cu); planted_truncation compares plain
// truncation instead, which the check must see differ.
struct Bf16RoundCheck {
  uint64_t mismatches = 0;
  uint32_t first = 0;  // the smallest mismatching pattern
};
absl::StatusOr<Bf16RoundCheck> cuda_bf16_round_check(uint64_t step, bool planted_truncation);

// Tests only: attention_kernel.cuh's OutputRow against __fdiv_rn on n operand pairs drawn from
// seed (attention_output_check.cu): in_range = pairs OutputRow kept on its own path, mismatches =
// those of them whose quotient's bits differ (first: the first such pair seen); planted drops the
// quotient's correction step, which the check must see differ.
struct OutputRowCheck {
  uint64_t in_range = 0, mismatches = 0;
  uint32_t first_a = 0, first_l = 0;
};
absl::StatusOr<OutputRowCheck> cuda_output_row_check(uint64_t seed, uint64_t n, bool planted);

// Tests only: OutputRow's reciprocal (rcp.approx refined by one Newton step) against __frcp_rn for
// the divisors l = +-2^e * (1 + m / 2^23), e in [-60, 60), every stride-th m (1: all 2^23), and
// +-2^60: the whole range OutputRow keeps on its own path. checked = divisors compared, mismatches
// = those whose reciprocal's bits differ (first_l: the smallest such pattern); planted compares
// rcp.approx's value unrefined, which the check must see differ.
struct ReciprocalCheck {
  uint64_t checked = 0, mismatches = 0;
  uint32_t first_l = 0;
};
absl::StatusOr<ReciprocalCheck> cuda_output_reciprocal_check(uint32_t stride, bool planted);

// Tests only: a writer kernel that releases its dependent at once and writes its words ~2 ms later,
// then a reader launched after it as every step kernel is (launch_after_previous, cuda_common.h)
// that waits for it, or, planted_no_wait, reads at once (launch_order_check.cu).
struct LaunchOrderCheck {
  int words = 0;
  int not_yet_written = 0;           // words the reader copied before the writer wrote them
  bool read_before_written = false;  // the reader read before the writer wrote (global timer)
};
absl::StatusOr<LaunchOrderCheck> cuda_launch_order_check(bool planted_no_wait);

}  // namespace samebits
