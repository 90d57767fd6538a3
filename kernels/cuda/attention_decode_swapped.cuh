// The arithmetic of attend_score_keys / attend_value_keys (attention_kernel.cuh) for a decode
// tile of at most 8 rows, with the operands of each mma swapped: S^T = K Q^T and O^T += V^T P^T.
//
// Why: in the row form a tile of <= 8 rows fills half of each m16n8k16 instruction's rows (8 of
// 16), and the absent rows 8..15 still need accumulator registers that the compiler zeroes and
// moves around every mma (ncu on the Qwen3-8B burst's decode steps: HMMA 4% of the instructions,
// CS2R and register moves ~15%). Swapped, the keys (scores) or the head dims (P V) are the 16 mma
// rows and the tile's <= 8 rows are the 8 columns: every accumulator register holds a value that
// is kept (columns beyond nrows: rows of zeros), and each product takes half the instructions
// (64 keys x 8 rows: 4 mma per k16 step of the head dim instead of 8; P V: HD / 16 per 16 keys
// instead of HD / 8).
//
// Bits: each output element of m16n8k16 is its own row of A times its own column of B plus its own
// C (tensor_core.cuh); swapping A and B gives the same element from the same 16 products and the
// same C (the invariant matmul's swapped tiles rely on the same fact and are tested bit for bit).
// Every score is still one chain over the head dim in k16 steps in increasing order from +0, every
// output value one chain over the keys in k16 steps in order from o * alpha. The softmax runs on
// the row layout unchanged (attend_softmax): the scores go through shared memory into it, and its
// bf16 P fragments are, as they stand, the B operand of the swapped P V (row = lane / 4, keys
// (lane % 4) * 2 + {0, 1} and + 8). gpu_tests compares every decode route bit for bit.
#pragma once
#include <cstdint>

#include "kernels/cuda/tensor_core.cuh"

namespace samebits::cuda {

// The scores' staging buffer: [8 rows][64 keys] fp32 (2 KiB per warp), key k of row q at word
// q * 64 + (k ^ 8 * ((q ^ (q >> 2)) & 3)): the swapped accumulators' stores (rows 0, 2, 4, 6 or
// 1, 3, 5, 7 at once) and the row layout's 8-byte loads (rows 0..3 or 4..7 per half warp) each hit
// 32 different banks.
constexpr int kSwappedScoreBytes = 8 * 64 * 4;

// Which decode tiles take the swapped products, in both kernels that have them (the decode and the
// chain kernel): tiles of at most 8 rows (kHalves = 1) at head_dim 128. At head_dim 64 they ran
// long contexts slower on the chain kernel (H200, default mode batch 256 x 512-8192: 1.12-1.15x the
// time), though its short ones faster (1000 x 17..148 keys forced there: 0.82x), and the decode
// kernel's burst rows no faster (94.8 -> 94.9 us; its staging buffer would be twice that Q tile):
// bench/cuda/notes/decode.md.
template <int HD, int kHalves>
constexpr bool kSwappedProducts = kHalves == 1 && HD == 128;
__device__ __forceinline__ int swapped_score_word(int q, int k) { return q * 64 + (k ^ (8 * ((q ^ (q >> 2)) & 3))); }

// B fragments of Q^T for every k16 step of the head dim: rows 0..7 of the swizzled Q tile at q_s
// (ldmatrix: lane / 4 is the row, (lane % 4) * 2 the dims), two steps per x4 load. Held in
// registers for the tile's whole life, so that Q's shared memory can stage the scores.
template <int HD>
__device__ __forceinline__ void load_q_columns(uint32_t q_s, uint32_t (&qb)[HD / 16][2]) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int k2 = 0; k2 < HD / 32; ++k2) {
    uint32_t r[4];
    ldmatrix_x4(r, q_s + swizzled(lane & 7, k2 * 4 + (lane >> 3), HD / 8));
    qb[2 * k2][0] = r[0];
    qb[2 * k2][1] = r[1];
    qb[2 * k2 + 1][0] = r[2];
    qb[2 * k2 + 1][1] = r[3];
  }
}

// The warp's Q columns into registers once Q's copy, the oldest of kRing + 1 cp.async groups in
// flight, is in; afterwards the Q tile's shared memory may stage scores.
template <int HD, int kRing>
__device__ __forceinline__ void hold_q_columns(uint32_t q_s, uint32_t (&qb)[HD / 16][2]) {
  cp_async_wait<kRing>();
  __syncwarp();
  load_q_columns<HD>(q_s, qb);
  __syncwarp();  // every lane has read Q before scores are staged over it
}

// S^T += K Q^T for the 16-key tiles [MT0, MT1) of the sub-block (K rows at kb_s through `rows`):
// st[mt][e] is the score of key mt * 16 + lane / 4 + (e / 2) * 8 for row (lane % 4) * 2 + e % 2.
// Addresses: a lane reads chunk 2 kk + lane / 16 of key mt * 16 + lane % 16. The swizzle XORs a
// chunk with key % 8 = lane % 8, which changes only its low three bits, so chunk 2 kk + b of
// step kk = 4 q + r lies 128 q bytes after that of step r: four addresses per lane (steps 0..3 of
// tile 0), every other step and tile an immediate offset (Rows::tile_offset). Formed per
// instruction, the addresses took ~4 integer instructions per ldmatrix: H200, the segment kernel
// at batch 1 x 2048 ran 2,106 -> 1,988 instructions per warp (ncu, bench/cuda/notes/decode.md).
template <int HD, int MT0, int MT1, typename Rows>
__device__ __forceinline__ void score_keys_swapped(uint32_t kb_s, Rows rows, const uint32_t (&qb)[HD / 16][2],
                                                   float (&st)[4][4]) {
  const int lane = threadIdx.x & 31;
  constexpr int kBases = HD / 16 < 4 ? HD / 16 : 4;
  uint32_t at[kBases];
#pragma unroll
  for (int r = 0; r < kBases; ++r) at[r] = kb_s + rows(lane & 15, r * 2 + (lane >> 4));
#pragma unroll
  for (int kk = 0; kk < HD / 16; ++kk) {
#pragma unroll
    for (int mt = MT0; mt < MT1; ++mt) {
      uint32_t a[4];
      ldmatrix_x4(a, at[kk % kBases] + uint32_t(kk / kBases) * 128 + Rows::tile_offset(mt));
      mma_bf16_16816(st[mt], a, qb[kk][0], qb[kk][1]);
    }
  }
}

// The swapped scores into the row layout of attend_softmax (sc[nt][e]: row lane / 4, key nt * 8 +
// (lane % 4) * 2 + e; sc[nt][2..3], the absent rows 8..15, zero) through the warp's buffer t.
__device__ __forceinline__ void swapped_scores_to_rows(float* t, const float (&st)[4][4], float (&sc)[8][4]) {
  const int lane = threadIdx.x & 31, q0 = (lane & 3) * 2, k0 = lane >> 2;
#pragma unroll
  for (int mt = 0; mt < 4; ++mt)
#pragma unroll
    for (int e = 0; e < 4; ++e) t[swapped_score_word(q0 + (e & 1), mt * 16 + k0 + (e >> 1) * 8)] = st[mt][e];
  __syncwarp();
#pragma unroll
  for (int nt = 0; nt < 8; ++nt) {
    const float2 v = *reinterpret_cast<const float2*>(t + swapped_score_word(lane >> 2, nt * 8 + q0));
    sc[nt][0] = v.x;
    sc[nt][1] = v.y;
    sc[nt][2] = sc[nt][3] = 0.0f;
  }
  __syncwarp();  // every lane has read before the next sub-block's scores are stored
}

// A per-row value of the row layout (held by lanes 4q .. 4q + 3 for row q) for this lane's two
// swapped columns, rows (lane % 4) * 2 and + 1. Every lane takes part.
template <typename T>
__device__ __forceinline__ void swapped_row_values(T v, T (&out)[2]) {
  const int lane = threadIdx.x & 31;
  out[0] = __shfl_sync(0xffffffffu, v, (lane & 3) * 8);
  out[1] = __shfl_sync(0xffffffffu, v, (lane & 3) * 8 + 4);
}

// O^T's rows times their factors (alpha_q: this lane's rows (lane % 4) * 2 and + 1), before a
// sub-block's P V.
template <int NMT>
__device__ __forceinline__ void rescale_rows_swapped(const float (&alpha_q)[2], float (&ot)[NMT][4]) {
#pragma unroll
  for (int i = 0; i < NMT; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) ot[i][e] = ot[i][e] * alpha_q[e & 1];
}

// O^T += V^T bf16(P)^T for the 16-key step kk of the sub-block (V rows at vb_s through `rows`), for
// the output dims of the m16 tiles mt0 .. mt0 + NMT - 1: ot[i][e] is output dim (mt0 + i) * 16 +
// lane / 4 + (e / 2) * 8 of row (lane % 4) * 2 + e % 2. b0, b1: the step's P^T fragment, bf16 pairs
// of the row layout's exponentials (row lane / 4, keys kk * 16 + (lane % 4) * 2 + {0, 1}, and + 8).
// loaded = false: zero V fragments (keys beyond the context), as attend_value_tiles.
template <int NMT, typename Rows>
__device__ __forceinline__ void value_step_swapped(uint32_t vb_s, Rows rows, int kk, int mt0, uint32_t b0,
                                                   uint32_t b1, float (&ot)[NMT][4], bool loaded = true) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int i = 0; i < NMT; ++i) {
    uint32_t a[4] = {0u, 0u, 0u, 0u};
    if (loaded) {
      // Key kk * 16 + k at step 0's address plus an immediate (score_keys_swapped says why), so
      // that one address per output tile serves all four steps of a sub-block.
      ldmatrix_x4_trans(a, vb_s + rows((lane & 7) + (lane >> 4) * 8, (mt0 + i) * 2 + ((lane >> 3) & 1)) +
                               Rows::tile_offset(kk));
    }
    mma_bf16_16816(ot[i], a, b0, b1);
  }
}

// O^T (rescaled by alpha first when RESCALE) += V^T bf16(P)^T over the 16-key steps [KK0, KK1) of
// the sub-block, every output dim (value_step_swapped with the P fragments packed from sc);
// alpha_q: this lane's two rows' factors.
template <int HD, int KK0, int KK1, bool RESCALE, typename Rows>
__device__ __forceinline__ void value_keys_swapped(uint32_t vb_s, Rows rows, const float (&sc)[8][4],
                                                   const float (&alpha_q)[2], float (&ot)[HD / 16][4],
                                                   bool loaded = true) {
  if constexpr (RESCALE) rescale_rows_swapped(alpha_q, ot);
#pragma unroll
  for (int kk = KK0; kk < KK1; ++kk) {
    const uint32_t b0 = pack_bf16x2(sc[2 * kk][0], sc[2 * kk][1]);
    const uint32_t b1 = pack_bf16x2(sc[2 * kk + 1][0], sc[2 * kk + 1][1]);
    value_step_swapped(vb_s, rows, kk, 0, b0, b1, ot, loaded);
  }
}

}  // namespace samebits::cuda
