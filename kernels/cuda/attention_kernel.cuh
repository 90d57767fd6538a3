// The pieces of paged attention that every CUDA attention kernel shares (kernels/cuda/attention.cu
// states the order of every reduction): the call's parameters, a row's segment ranges, where a key
// is read from, and the steps of one 64-key sub-block on mma.sync m16n8k16 (bf16 in, fp32
// accumulate; S = Q K^T, the softmax statistics per row in fp32, O += P V) with the fold of a
// row's segments. The 64-row kernel that runs them over whole tiles: attention_64row_kernel.cuh.
#pragma once
#include <cstdint>

#include "kernels/cuda/bf16_round.cuh"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/tensor_core.cuh"
#include "kernels/fixed_math.h"

namespace samebits::cuda {

// An output value of attention: bf16(o / l), the IEEE division (the CPU's), one rounding (to_bf16's
// bits, by cvt: a dozen instructions fewer per value at the end of every decode unit).
__device__ __forceinline__ bf16 attention_output(float o, float l) { return to_bf16_fast(__fdiv_rn(o, l)); }
// Two neighbouring output values (columns d, d + 1 of a row) as one 32-bit word, low column first.
__device__ __forceinline__ uint32_t attention_output_pair(float o0, float o1, float l) {
  return bf16x2_bits(__fdiv_rn(o0, l), __fdiv_rn(o1, l));
}
// The same words for a whole output row with the divisor's reciprocal formed once. __fdiv_rn(a, l)
// is, on its fast path, r = rcp(l) refined by one Newton step, q = r * a + 0, q + r * (a - q * l),
// and FCHK sends operands where that sequence might round otherwise (zeros, denormals,
// infinities, NaN, quotients or intermediates near the ends of the exponent range) to a slow path:
// ten instructions and a branch per quotient, most of a prefill item's end (19% of a 1024-token
// call's stall samples: bench/cuda/notes/prefill.md, 2026-12-04). OutputRow runs the same sequence
// with r shared by the row, and its own test in place of FCHK: 2^-60 <= l <= 2^60 and 2^-64 <= |a|
// < 2^64, where the quotient and every intermediate stay normal and finite, so that the sequence
// gives __fdiv_rn's quotient. The dividends' test is one multiply-add each (output_value_range)
// OR-ed into four independent chains: one flag chained through all of them held every item's end
// (prefill.md). A row with any value outside clears in_range(), and its caller writes it again with
// attention_output_pair. GpuAttentionOutput.RowQuotientsEqualIeeeDivision compares OutputRow with
// __fdiv_rn on 2^30 operand pairs of every kind, and RowReciprocalIsCorrectlyRoundedForEveryDivisor
// finds r = RN(1 / l) for every l of the range, which with Markstein's correction step makes every
// quotient exact (kernels/fixed_math.h); the wgmma prefill kernel (which uses it) is compared bit
// for bit with the 64-row kernel (which does not) in GpuAttentionPrefill.
// Bit 31 clear exactly where 2^-64 <= |x| < 2^64: x's bits doubled (the sign shifted out) minus
// 2^-64's doubled bits leave a window of 2^31, i.e. 128 binades.
__device__ __forceinline__ uint32_t output_value_range(float x) { return __float_as_uint(x) * 2u - 0x3f000000u; }
struct OutputRow {
  float l, r;
  bool l_in_range;
  uint32_t range[4] = {0, 0, 0, 0};  // output_value_range of the dividends, OR-ed, four chains
  __device__ __forceinline__ explicit OutputRow(float divisor)
      : l(divisor), l_in_range(fabsf(divisor) >= 0x1p-60f && fabsf(divisor) <= 0x1p60f) {
    float r0;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r0) : "f"(divisor));
    r = refine_reciprocal(r0, divisor);
  }
  __device__ __forceinline__ float quotient(float a, int chain) {
    range[chain & 3] |= output_value_range(a);
    return divide_by_reciprocal(a, l, r);
  }
  // attention_output_pair(a0, a1, l) where the row is in range.
  __device__ __forceinline__ uint32_t pair(float a0, float a1, int chain) {
    return bf16x2_bits(quotient(a0, chain), quotient(a1, chain));
  }
  __device__ __forceinline__ bool in_range() const {
    return l_in_range && ((range[0] | range[1] | range[2] | range[3]) >> 31) == 0;
  }
};

constexpr int kAttnRows = 64;     // rows per block (4 warps x 16)
constexpr int kAttnKeys = 64;     // keys per sub-block
constexpr int kAttnThreads = 128;
// Shared memory of attention_kernel: the block's Q tile, then two K and two V sub-block buffers.
constexpr int attention_kernel_smem_bytes(int head_dim) {
  return kAttnRows * head_dim * 2 + 4 * kAttnKeys * head_dim * 2;
}

struct AttnItem {  // a tile of one sequence (for every kv head)
  int32_t seq, row0, nrows;
  int32_t nseg;  // segments of the tile, folded here in index order
};

struct AttnParams {
  const bf16 *q, *k_new, *v_new, *k_cache, *v_cache;
  const int32_t *query_start, *context_lens, *block_tables;
  int num_seqs, max_blocks_per_seq, num_q_heads, num_kv_heads, block_size;
  int64_t T, num_blocks;
  float scale;
  int split_count_kind;  // 1: AttentionPlan::kSplitCount, 0: kFixedSplitSize
  int split_size, split_count, separate_new_keys;
  bf16* out;
  float* partials;  // attention_decode.cuh: one partial per (sequence, kv head, segment, row)
  DeviceError* mailbox;
  int decode_tiles_listed;  // 1: decode tiles are work items too (AttentionRoute::kGeneralOnly)
};

// Whether a sequence with q_len query tokens reads this step's keys from k_new / v_new as a partial
// of their own (the host's attention_reads_new_keys, kernels/attention_host.h).
__device__ __forceinline__ bool reads_new_keys(const AttnParams& P, int64_t q_len) {
  return P.split_count_kind && P.separate_new_keys && q_len > 1;
}

struct SegRange {
  int64_t begin, end;  // empty when begin >= end
  bool from_new;
};

// x / d for x >= 0 and d > 0 known only at run time: a shift where d is a power of two (the block
// sizes, split sizes and GQA groups in use), else the division.
template <typename T>
__device__ __forceinline__ T quotient_nonneg(T x, int d) {
  return (d & (d - 1)) == 0 ? x >> (__ffs(d) - 1) : x / d;
}
// Key range of segment c for the query at absolute position p (kernels/plan.h semantics; the CPU's
// query_sources in kernels/cpu/attention.cpp). The split-count plan's segment length ceil(visible /
// n) in 32 bits (k32BitChunk; visible is 1..2^31, a context_lens entry bounds it), or in 64: that
// division is a call of some seventy instructions, made by every row of a default-mode prefill
// tile at each segment's start, and a call in the kernel constrains its registers (H200: without it
// the wgmma prefill took 0.97-0.99x the time over cached keys at head_dim 128 and 0.93-0.95x at 64,
// 0.98x at chunk 4096, in invariant mode too, which never makes the call). The
// decode kernels keep the 64-bit form: with the 32-bit one inline their invariant batch 1-16 graph
// replays took 1.01-1.02x the time, called out of line batch 16 x 512 1.07x
// (bench/cuda/notes/prefill.md, 2026-12-04).
template <bool k32BitChunk = true>
__device__ __forceinline__ SegRange segment_range(const AttnParams& P, bool reads_new, int64_t cached,
                                                  int64_t p, int c) {
  const int64_t visible = p + 1;
  if (p < 0) return SegRange{0, 0, false};
  if (reads_new) {
    if (cached > 0) {
      if (c == 0) return SegRange{0, cached, false};
      if (c == 1) return SegRange{cached, visible, true};
      return SegRange{0, 0, false};
    }
    return c == 0 ? SegRange{0, visible, true} : SegRange{0, 0, false};
  }
  if (!P.split_count_kind) {
    const int64_t b = int64_t(c) * P.split_size;
    return SegRange{b, min(visible, b + P.split_size), false};
  }
  const int64_t n = min(int64_t(P.split_count), visible);
  if (c >= n) return SegRange{0, 0, false};
  const int64_t chunk =
      k32BitChunk ? int64_t((uint32_t(visible) - 1u) / uint32_t(n)) + 1 : (visible + n - 1) / n;
  const int64_t b = min(visible, int64_t(c) * chunk);
  return SegRange{b, min(visible, b + chunk), false};
}

// Where key j of sequence s (kv head g) is read from: the offset of its row in elements and the
// source: 1 the paged cache (through the block table), 2 this step's k_new / v_new (from_new and
// j >= cached), 0 nothing (beyond the context, or a bad block-table entry, which is reported):
// the copy then zero-fills the row. A block size that is a power of two (every one that divides a
// power-of-two split size) is applied by a shift and a mask: an integer division is some twenty
// instructions, and the decode kernels resolve a key row for every 32 keys they copy.
struct KeyRow {
  int64_t off;
  int where;
};
// Offset (values) of a tile row's query and output vectors: rows are (query token, head in group)
// pairs, query-major, so row r is token qs + r / group, q head g * group + r % group; the quotient
// and remainder by a shift and a mask where the group is a power of two (every GQA group in use),
// else a division (some twenty instructions, per row of an item's Q copy and outputs).
__device__ __forceinline__ int64_t query_row_offset(const AttnParams& P, int64_t qs, int g, int group, int r, int hd) {
  const int token = quotient_nonneg(r, group);
  return ((qs + token) * P.num_q_heads + g * group + (r - token * group)) * hd;
}
__device__ __forceinline__ KeyRow resolve_key_row(const AttnParams& P, const int32_t* table, int s, int g, int hd,
                                                  int64_t qs, int64_t cached, int64_t context, bool from_new,
                                                  int64_t j) {
  if (j < context && from_new && j >= cached) return KeyRow{((qs + (j - cached)) * P.num_kv_heads + g) * hd, 2};
  if (j < context) {
    const int jj = int(j), bs = P.block_size;
    int index, slot;  // quotient_nonneg's shift with the matching mask (one test for both)
    if ((bs & (bs - 1)) == 0) {
      index = jj >> (__ffs(bs) - 1);
      slot = jj & (bs - 1);
    } else {
      index = jj / bs;
      slot = jj % bs;
    }
    const int32_t blk = table[index];
    if (blk >= 0 && blk < P.num_blocks) {
      return KeyRow{((int64_t(blk) * bs + slot) * P.num_kv_heads + g) * hd, 1};
    }
    report_device_error(P.mailbox, kErrAttentionBlock, s, blk, P.num_blocks);
  }
  return KeyRow{0, 0};
}
// Where a resolved row's values lie: in `fresh` (this step's K or V) or `cache` (the paged K or
// V); a row without a key (where = 0) points at the cache's first row, which its copy does not
// read (zero-filled). The decode kernels' lanes resolve one row each and pass this address to the
// lanes that copy the row (shfl_row_source), so that the choice and the offset are computed once
// per row rather than once per copy instruction.
__device__ __forceinline__ const bf16* key_row_source(const KeyRow& row, const bf16* cache, const bf16* fresh) {
  return (row.where == 2 ? fresh : cache) + row.off;
}
__device__ __forceinline__ const bf16* shfl_row_source(const bf16* src, int from) {
  return reinterpret_cast<const bf16*>(__shfl_sync(0xffffffffu, reinterpret_cast<long long>(src), from));
}

// The softmax's exponential on CUDA: 2^x by the SFU (ex2.approx.ftz.f32), for x a score in log2
// units less the row's max (AttnParams::scale holds scale * log2(e); fma(s, scale, -m), one
// rounding, softmax_exp), or a difference of maxima (alpha, the fold's scales). Two instructions per
// score where fixed_expf takes ~20, which bounded the wgmma prefill's rate
// (bench/cuda/notes/small-kernels.md). The SFU's result is a fixed function of its input on a given
// architecture, so every CUDA attention kernel (decode, prefill, merge) gives the same bits through
// it, as the invariance contract needs; those bits differ from the CPU backend's (fixed_expf),
// which the contract does not promise to match (the gpu tests compare the two backends within nmse
// 1e-4). ex2(0) = 1 and ex2(-inf) = +0.
__device__ __forceinline__ float attn_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Fold of one segment's partial (m, l, o) into a running total, in segment order; the first
// non-empty partial is taken as is. Shared by the in-block fold and the merge kernel.
__device__ __forceinline__ void fold_scales(bool has_total, float total_m, float m, float* new_m, float* a,
                                            float* b) {
  if (!has_total) {
    *new_m = m;
    *a = 0.0f;
    *b = 1.0f;
    return;
  }
  const float mm = fmaxf(total_m, m);
  *new_m = mm;
  *a = attn_exp2(total_m - mm);
  *b = attn_exp2(m - mm);
}
// total * a + v * b with one rounding fewer: fma(v, b, total * a), two instructions per value (the
// prefill kernel folds HD / 2 of them per thread at every segment end).
__device__ __forceinline__ float fold_value(bool has_total, float total, float a, float v, float b) {
  if (!has_total) return v;
  return __fmaf_rn(v, b, total * a);
}
// Folds the segment partial (o, m, l) of this lane's row half h (accumulator entries 2h, 2h + 1)
// into the row's running total (ot, tot_m, tot_l), in segment order.
// kTotalStartsAtNegativeZero: ot holds -0 until the row's first fold, so that fold (a = 0, b = 1)
// is fma(v, 1, -0 * 0) = v exactly, -0 included: fold_value's bits without its per-value choice
// (which made the compiler copy o at the wgmma prefill's segment ends).
template <int NTD, bool kTotalStartsAtNegativeZero = false>
__device__ __forceinline__ void fold_row_partial(int h, const float (&o)[NTD][4], float m, float l,
                                                 float (&ot)[NTD][4], float& tot_m, float& tot_l, bool& has_total) {
  float new_m, a, b;
  fold_scales(has_total, tot_m, m, &new_m, &a, &b);
  const bool has = kTotalStartsAtNegativeZero || has_total;
#pragma unroll
  for (int nt = 0; nt < NTD; ++nt) {
    ot[nt][2 * h] = fold_value(has, ot[nt][2 * h], a, o[nt][2 * h], b);
    ot[nt][2 * h + 1] = fold_value(has, ot[nt][2 * h + 1], a, o[nt][2 * h + 1], b);
  }
  tot_l = fold_value(has_total, tot_l, a, l, b);
  tot_m = new_m;
  has_total = true;
}

// Key rows of a K/V sub-block in shared memory: chunk `chunk` (16 bytes) of key row `key`.
// tile_offset(t): keys 16 t + k lie tile_offset(t) bytes after keys k (k < 16; the XOR swizzle
// depends on key % 8 only), so that an ldmatrix over 16-key tiles adds it as an immediate.
template <int HD>
struct SwizzledRows {  // XOR swizzle (tensor_core.cuh), rows of HD * 2 bytes
  __device__ __forceinline__ uint32_t operator()(int key, int chunk) const { return swizzled(key, chunk, HD / 8); }
  __host__ __device__ static constexpr uint32_t tile_offset(int t) { return uint32_t(t) * 16 * HD * 2; }
};
// THE arithmetic of one sub-block of 64 keys [sb0, sb0 + 64) for one warp's 16 rows (rows
// q_row0 .. q_row0 + 15 of the swizzled Q tile at q_s; this lane's two rows are lane / 4 and
// lane / 4 + 8, with key ranges rg and `active` = the range meets the sub-block): the order of
// every reduction that kernels/cuda/attention.cu states. Both attention kernels call it, so their
// bits agree by construction.
// It runs in phases, so that a caller can release K rows before the V rows are read:
// attend_score_keys (S = Q K^T for some of the sub-block's 16-key pairs: each score one fp32
// chain over the head dim in order, so pairs may be computed in separate calls), attend_softmax
// (masking, softmax statistics; leaves the exponentials in sc and the rescale factors in alpha)
// and attend_value_keys (o = o * alpha + bf16(P) V, the 16-key steps in order, so they may be
// split over calls too). attend_scores / attend_values are the whole sub-block.
// kHalves = 1: only the warp's rows 0..7 exist (a decode tile of at most 8 rows). The mma rows
// 8..15 then take no accumulator registers (their inputs are zeros, their results dropped); rows
// 0..7 of an mma depend only on their own A rows and accumulators, so their bits are those of
// kHalves = 2.
template <int kHalves>
__device__ __forceinline__ void mma_rows(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (kHalves == 2) {
    mma_bf16_16816(d, a, b0, b1);
  } else {
    float dropped0, dropped1;
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%10,%10};\n"
        : "+f"(d[0]), "+f"(d[1]), "=f"(dropped0), "=f"(dropped1)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.0f));
  }
}

// S += Q K^T for the key pairs [NP0, NP1) (keys 16 * NP0 .. 16 * NP1 - 1 of the sub-block; K rows
// at kb_s through `rows`). kHalves = 1: the Q fragment's rows 8..15 repeat rows 0..7 (unused).
// kUnroll: steps of the loop over head_dim unrolled together (all by default). Fewer steps keep
// fewer fragments in flight: attention_decode_kernel's 16-row tiles at head_dim 128 take 2, where
// the whole loop unrolled spilled registers. The chain of each score is the same either way.
template <int HD, int kHalves, int NP0, int NP1, int kUnroll = HD / 16, typename Rows>
__device__ __forceinline__ void attend_score_keys(uint32_t q_s, int q_row0, uint32_t kb_s, Rows rows,
                                                  float (&sc)[8][4]) {
  constexpr int CH = HD / 8;
  const int lane = threadIdx.x & 31;
  const int q_row = q_row0 + (kHalves == 2 ? (lane & 15) : (lane & 7));
#pragma unroll kUnroll
  for (int kk = 0; kk < HD / 16; ++kk) {
    uint32_t a[4];
    ldmatrix_x4(a, q_s + swizzled(q_row, kk * 2 + (lane >> 4), CH));
#pragma unroll
    for (int np = NP0; np < NP1; ++np) {
      uint32_t b[4];
      const int key = np * 16 + (lane & 7) + ((lane >> 4) << 3);
      ldmatrix_x4(b, kb_s + rows(key, kk * 2 + ((lane >> 3) & 1)));
      mma_rows<kHalves>(sc[2 * np], a, b[0], b[1]);
      mma_rows<kHalves>(sc[2 * np + 1], a, b[2], b[3]);
    }
  }
}

// The steps of the softmax of one sub-block, each written once: attend_softmax below runs them on
// a warp's 64 columns, attention_decode_split_kernel on each warp's own 16 (every value the same
// function of the same inputs, the sum in the same order).
// Columns [*lo, *hi) of the sub-block from sb0 that hold keys of range rg (int, exact).
__device__ __forceinline__ void softmax_columns(int64_t sb0, const SegRange& rg, int* lo, int* hi) {
  *lo = int(min(max(rg.begin - sb0, int64_t(0)), int64_t(kAttnKeys)));
  *hi = int(min(max(rg.end - sb0, int64_t(0)), int64_t(kAttnKeys)));
}
// Score s of column col as it came from the products (not yet scaled); -inf outside [lo, hi)
// whatever s holds.
__device__ __forceinline__ float softmax_masked(float s, int col, int lo, int hi) {
  return col >= lo && col < hi ? s : -INFINITY;
}
// The row's max in log2 units from the max of its unscaled scores: the max of the scaled scores
// exactly, since rounding is monotone and scale > 0 (one multiply per row instead of one per score).
__device__ __forceinline__ float softmax_scaled_max(float mx, float scale) { return mx * scale; }
// A row's max or sum over the four lanes of its quad (each lane's own first).
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x = x + __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}
// The row's max after a sub-block whose masked scores have max mx, and the factor that rescales
// what the row holds.
__device__ __forceinline__ float softmax_new_max(bool first, float m, float mx) { return first ? mx : fmaxf(m, mx); }
__device__ __forceinline__ float softmax_alpha(bool active, bool first, float m, float m_new) {
  return active ? (first ? 0.0f : attn_exp2(m - m_new)) : 1.0f;
}
// 2^(s * scale - mu) for unscaled score s, with one rounding (fma) before the SFU's ex2.
__device__ __forceinline__ float softmax_exp2_scaled(float s, float scale, float mu) {
  return attn_exp2(__fmaf_rn(s, scale, -mu));
}
// The exponential of masked unscaled score s (0 for a masked column or an inactive row).
__device__ __forceinline__ float softmax_exp(bool active, float s, float scale, float m_new) {
  return (active && s != -INFINITY) ? softmax_exp2_scaled(s, scale, m_new) : 0.0f;
}
// The row's statistics after a sub-block whose exponentials sum to `sum` (the whole quad's).
__device__ __forceinline__ void softmax_update(bool active, float alpha, float m_new, float sum, float& m, float& l,
                                               bool& first) {
  if (active) {
    const float scaled = l * alpha;
    l = first ? sum : scaled + sum;
    m = m_new;
    first = false;
  }
}

// Softmax statistics per row: masked scores, max, exponentials, sum (fixed orders). A half whose
// rows are inactive in every lane (a decode tile's rows 8..15) is left as that arithmetic would
// leave it (scores 0, alpha 1) without computing it. The key range is compared as columns of
// this sub-block (int, exact): scores of columns outside it are replaced whatever they hold.
// kExps = kExpsShared (kHalves = 1, a tile of at most 4 rows, e.g. one decode token of 4 GQA
// heads): rows 4..7 are absent, so lanes 16..31, which hold them, compute the exponentials of the
// n8 tiles 4..7 of the row of lane - 16 (received by shuffles, returned the same way): each
// exponential is the same function of the same two values wherever it runs, and the owner lane
// sums its 16 columns in the same order, so the bits are those of kExpsOwn with half the
// exponentials per lane (the decode kernels' instructions per key are their bound at short
// contexts: bench/cuda/notes/decode.md). The absent rows end with scores 0, as kExpsOwn leaves
// them. kExpsSharedPlanted (tests only): the same, but the exponentials of tiles 4..7 returned to
// the owner with each pair of adjacent columns swapped, a slip in the shared path that the bitwise
// route comparisons must see.
constexpr int kExpsOwn = 0, kExpsShared = 1, kExpsSharedPlanted = 2;
template <int kHalves, int kExps = kExpsOwn>
__device__ __forceinline__ void attend_softmax(int64_t sb0, const SegRange (&rg)[2], const bool (&active)[2],
                                               float scale, float (&sc)[8][4], float (&alpha)[2], float (&m)[2],
                                               float (&l)[2], bool (&first)[2]) {
  const int lane = threadIdx.x & 31;
  alpha[1] = 1.0f;
#pragma unroll
  for (int h = 0; h < kHalves; ++h) {
    if (!__any_sync(0xffffffffu, active[h])) {
      alpha[h] = 1.0f;
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) sc[nt][2 * h] = sc[nt][2 * h + 1] = 0.0f;
      continue;
    }
    int col_lo, col_hi;
    softmax_columns(sb0, rg[h], &col_lo, &col_hi);
    float mx = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float x = softmax_masked(sc[nt][2 * h + e], nt * 8 + (lane & 3) * 2 + e, col_lo, col_hi);
        sc[nt][2 * h + e] = x;
        mx = fmaxf(mx, x);
      }
    const float m_new = softmax_new_max(first[h], m[h], softmax_scaled_max(quad_max(mx), scale));
    alpha[h] = softmax_alpha(active[h], first[h], m[h], m_new);
    float sum = 0.0f;
    if constexpr (kExps != kExpsOwn) {
      static_assert(kHalves == 1, "rows 4..7 of the first half are the spare lanes");
      const bool owner = lane < 16;
      // Every lane takes part in every shuffle (a shuffle under a lane-dependent condition hangs).
      const float m_theirs = __shfl_xor_sync(0xffffffffu, m_new, 16);
      const int active_theirs = __shfl_xor_sync(0xffffffffu, int(active[h]), 16);
      const float m_use = owner ? m_new : m_theirs;
      const bool act_use = owner ? active[h] : active_theirs != 0;
      float p[8];  // owners: their columns of n8 tiles 0..3; the others: their owner's of tiles 4..7
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float theirs = __shfl_xor_sync(0xffffffffu, sc[4 + j / 2][j % 2], 16);
        p[j] = softmax_exp(act_use, owner ? sc[j / 2][j % 2] : theirs, scale, m_use);
      }
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float back = __shfl_xor_sync(0xffffffffu, p[kExps == kExpsSharedPlanted ? j ^ 1 : j], 16);
        sc[j / 2][j % 2] = owner ? p[j] : 0.0f;
        sc[4 + j / 2][j % 2] = owner ? back : 0.0f;
      }
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) sum = sum + sc[nt][e];
    } else {
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float p = softmax_exp(active[h], sc[nt][2 * h + e], scale, m_new);
          sc[nt][2 * h + e] = p;
          sum = sum + p;
        }
    }
    softmax_update(active[h], alpha[h], m_new, quad_sum(sum), m[h], l[h], first[h]);
  }
}

// The 64-row kernel's score loop: at head_dim 64 two steps at a time, so that three blocks fit
// an SM without spilling (ptxas: 168 registers; the whole loop unrolled spilled 28 bytes).
template <int HD>
constexpr int kGeneralScoreUnroll = HD == 64 ? 2 : HD / 16;
template <int HD, typename Rows>
__device__ __forceinline__ void attend_scores(uint32_t q_s, int q_row0, uint32_t kb_s, Rows rows, int64_t sb0,
                                              const SegRange (&rg)[2], const bool (&active)[2], float scale,
                                              float (&sc)[8][4], float (&alpha)[2], float (&m)[2], float (&l)[2],
                                              bool (&first)[2]) {
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) sc[nt][e] = 0.0f;
  attend_score_keys<HD, 2, 0, 4, kGeneralScoreUnroll<HD>>(q_s, q_row0, kb_s, rows, sc);
  attend_softmax<2>(sb0, rg, active, scale, sc, alpha, m, l, first);
}

// o (rescaled by alpha first when RESCALE) += bf16(P) V over the 16-key steps [KK0, KK1) of the
// sub-block, V rows at vb_s through `rows`. loaded = false: those keys lie beyond the context,
// where the copies would have zero-filled V: zero V fragments, without reading shared memory.
// attend_value_tiles: the same for NT of the n8 output tiles only, those from 16-byte chunk chunk0
// of the V rows (each output column's chain over the keys is the same whichever tiles a call
// holds: a warp may own some of them, attention_decode_split.cuh).
template <int NT, int kHalves, int KK0, int KK1, bool RESCALE, typename Rows>
__device__ __forceinline__ void attend_value_tiles(uint32_t vb_s, Rows rows, int chunk0, const float (&sc)[8][4],
                                                   const float (&alpha)[2], float (&o)[NT][4], bool loaded = true) {
  const int lane = threadIdx.x & 31;
  if constexpr (RESCALE) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      o[nt][0] = o[nt][0] * alpha[0];
      o[nt][1] = o[nt][1] * alpha[0];
      if constexpr (kHalves == 2) {
        o[nt][2] = o[nt][2] * alpha[1];
        o[nt][3] = o[nt][3] * alpha[1];
      }
    }
  }
  // O += P V: P from the score registers (bf16), V through ldmatrix.trans.
#pragma unroll
  for (int kk = KK0; kk < KK1; ++kk) {
    uint32_t a[4];
    a[0] = pack_bf16x2(sc[2 * kk][0], sc[2 * kk][1]);
    a[1] = kHalves == 2 ? pack_bf16x2(sc[2 * kk][2], sc[2 * kk][3]) : 0u;
    a[2] = pack_bf16x2(sc[2 * kk + 1][0], sc[2 * kk + 1][1]);
    a[3] = kHalves == 2 ? pack_bf16x2(sc[2 * kk + 1][2], sc[2 * kk + 1][3]) : 0u;
#pragma unroll
    for (int dp = 0; dp < NT / 2; ++dp) {
      uint32_t b[4] = {0u, 0u, 0u, 0u};
      const int key = kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
      if (loaded) ldmatrix_x4_trans(b, vb_s + rows(key, chunk0 + dp * 2 + (lane >> 4)));
      mma_rows<kHalves>(o[2 * dp], a, b[0], b[1]);
      mma_rows<kHalves>(o[2 * dp + 1], a, b[2], b[3]);
    }
  }
}
template <int HD, int kHalves, int KK0, int KK1, bool RESCALE, typename Rows>
__device__ __forceinline__ void attend_value_keys(uint32_t vb_s, Rows rows, const float (&sc)[8][4],
                                                  const float (&alpha)[2], float (&o)[HD / 8][4],
                                                  bool loaded = true) {
  attend_value_tiles<HD / 8, kHalves, KK0, KK1, RESCALE>(vb_s, rows, 0, sc, alpha, o, loaded);
}

template <int HD, typename Rows>
__device__ __forceinline__ void attend_values(uint32_t vb_s, Rows rows, const float (&sc)[8][4],
                                              const float (&alpha)[2], float (&o)[HD / 8][4]) {
  attend_value_keys<HD, 2, 0, kAttnKeys / 16, true>(vb_s, rows, sc, alpha, o);
}

template <int HD, typename Rows>
__device__ __forceinline__ void attend_sub_block(uint32_t q_s, int q_row0, uint32_t kb_s, uint32_t vb_s, Rows rows,
                                                 int64_t sb0, const SegRange (&rg)[2], const bool (&active)[2],
                                                 float scale, float (&o)[HD / 8][4], float (&m)[2], float (&l)[2],
                                                 bool (&first)[2]) {
  float sc[8][4], alpha[2];
  attend_scores<HD>(q_s, q_row0, kb_s, rows, sb0, rg, active, scale, sc, alpha, m, l, first);
  attend_values<HD>(vb_s, rows, sc, alpha, o);
}

}  // namespace samebits::cuda
