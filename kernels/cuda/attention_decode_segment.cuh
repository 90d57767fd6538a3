// The decode kernel for the smallest launches (kernels/cuda/attention.cu chooses): FOUR warps per
// (segment slot, kv head, sequence), one block each, for decode tiles of at most 8 rows, with a
// round of four sub-blocks (256 keys: one whole invariant-mode segment) in shared memory at once.
// Why: at batch 1 x 2048 keys a launch has 64 (segment, kv head) units, one per SM at most. The
// four-warp split kernel (attention_decode_split.cuh) shares each sub-block among its warps, one
// sub-block after the other: four block barriers per sub-block and one chain of copies, scores,
// softmax and P V through the segment (ncu: ~3,100 dependent instructions per warp, 0.18 of the
// copy floor). Here the sub-blocks of a round run side by side, and only what is a chain stays one:
// - copies: warp w copies the K and the V rows of sub-block w of the round (copy_sub_block_rows),
//   all eight in flight at once;
// - S^T = K Q^T, masking and the rows' maxima: warp w on sub-block w (the swapped products of
//   attention_decode_swapped.cuh; the scores into the row layout through the warp's staging
//   buffer), the maxima to shared memory (a max is exact in any order);
// - the rows' max chain over the round's sub-blocks (m_new and alpha per sub-block, a few
//   operations per row): every warp computes it from the four maxima; warp w then takes its own
//   sub-block's exponentials with the row's max after that sub-block, sums them in attend_softmax's
//   order, and leaves the sum and bf16(P) in shared memory;
// - O^T += V^T P^T by OUTPUT DIMS: warp w owns head dims w * HD / 4 .. (w + 1) * HD / 4 - 1 and walks
//   the round's sub-blocks in order (rescale by alpha, four k16 steps each), the l chain beside it.
// Every value is the same function of the same inputs as in the one-warp kernels, every chain (o
// and l over the sub-blocks, each score over the head dim, each sum over a sub-block's columns)
// runs in the same order with the same operations, so the bits are theirs; gpu_tests compares
// every decode route bit for bit. H200 (bench/cuda/notes/decode-small-batches.md, 2026-12-03, graph
// replays): invariant batch 1 x 2048 keys 8.4 us with its merge, against 10.2 on the split kernel
// (~2,100 instructions per warp against ~3,100); where the units need more than one wave of these
// 140 KiB blocks, the split kernel's smaller ones are faster (attention.cu routes).
// Three block barriers per round (maxima; sums, P and V rows; V rows read). Segments of more than
// four sub-blocks (default mode's equal parts) take several rounds: warp w's K rows of the next
// round are copied as soon as its scores are taken, the V rows once every warp has read the round's.
// Set-up and end are the other decode kernels' (decode_tile_setup, finish_swapped_segment, the same
// merge kernel).
#pragma once
#include <cstdint>

#include "kernels/cuda/attention_decode.cuh"

namespace samebits::cuda {

constexpr int kSegmentWarps = 4;  // warps per block = sub-blocks per round

template <int HD>
struct SegmentLayout {
  static constexpr int kRowsBytes = kAttnKeys * HD * 2;  // the K (or V) rows of one sub-block
  // A warp's Q tile (8 rows), then its scores' staging buffer once Q is held in registers.
  static constexpr int kStageBytes = 8 * HD * 2 > kSwappedScoreBytes ? 8 * HD * 2 : kSwappedScoreBytes;
  static constexpr int kPBytes = 8 * kAttnKeys * 2;        // bf16(P) of one sub-block
  static constexpr int kStatBytes = kSegmentWarps * 8 * 4;  // one float per (sub-block, row)
  static constexpr int kK = kSegmentWarps * kStageBytes;   // offsets: K rows of sub-block j at kK + j * kRowsBytes
  static constexpr int kV = kK + kSegmentWarps * kRowsBytes;
  static constexpr int kP = kV + kSegmentWarps * kRowsBytes;
  static constexpr int kMax = kP + kSegmentWarps * kPBytes;
  static constexpr int kSum = kMax + kStatBytes;
  static constexpr int kBytes = kSum + kStatBytes;
};

// Launch bounds: one block per SM at least (its launches are one wave, attention.cu).
template <int HD>
__global__ void __launch_bounds__(32 * kSegmentWarps, 1)
    attention_decode_segment_kernel(AttnParams P, DecodeGrid grid) {
  constexpr int kHalves = 1;
  constexpr int NMT = HD / 16 / kSegmentWarps;  // m16 tiles of output dims per warp
  using L = SegmentLayout<HD>;
  static_assert(NMT >= 1, "whole m16 tiles of head dims per warp");
  extern __shared__ __align__(128) unsigned char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const uint32_t base = smem_addr(smem);
  const uint32_t stage_s = base + warp * L::kStageBytes;
  float* const staged = reinterpret_cast<float*>(smem + warp * L::kStageBytes);
  const uint32_t k_own = base + L::kK + warp * L::kRowsBytes;  // this warp's sub-block's K rows
  const uint32_t v_rows = base + L::kV;                       // sub-block j's V rows at + j * kRowsBytes
  // bf16(P) of sub-block j as lane `lane` of the row layout holds it: its 8 words (n8 tiles 0..7,
  // two columns each) at uint4 (2 * j + nt / 4) * 32 + lane, word nt % 4 (conflict-free 16-byte
  // accesses).
  uint4* const p_words = reinterpret_cast<uint4*>(smem + L::kP);
  float* const row_max = reinterpret_cast<float*>(smem + L::kMax);  // [sub-block][row]: the masked scores' max
  float* const row_sum = reinterpret_cast<float*>(smem + L::kSum);  // [sub-block][row]: the exponentials' sum
  // The set-up, and the first round's K and V copies where every key of the round lies below
  // `cached` (written by an earlier step: a step's kernels write only its own tokens' keys), run
  // before the wait for the previous kernel (the one that writes Q and this step's keys), so that
  // they overlap its end; Q and every other copy follow the wait, and so do the reports
  // (decode_tile_report). The layout and block tables come from the host before the step.
  DecodeTile t;
  const bool has_work = decode_tile_setup(P, int(blockIdx.z), int(blockIdx.y), int(threadIdx.x), &t, false);
  const int nseg = has_work ? t.nseg : 0;
  int64_t pos[2] = {-1, -1};

  // The next round to copy: sub-blocks r0 .. r0 + 3 of segment c, whose sub-blocks start at
  // sb_first (nsb of them; c >= nseg: none left); rows: this lane's two key rows of the warp's
  // sub-block of that round, resolved with its K rows and used again for its V rows.
  struct Round : SegmentPosition {
    int r0;
  };
  auto seek = [&](Round& k, int c) {
    k.r0 = 0;
    seek_segment_with_keys(P, t, pos, c, &k);
  };
  Round next = {};
  KeyRow rows[2];
  // Each issue is one cp.async group per thread (empty where the warp has no sub-block), so that
  // every thread counts the same groups: K then V of each round.
  auto issue_k = [&]() {
    if (next.c < nseg && next.r0 + warp < next.nsb) {
      const int64_t sb0 = next.sb_first + int64_t(next.r0 + warp) * kAttnKeys;
      resolve_sub_block_rows<HD>(P, t, next.from_new, sb0, lane, rows);
      copy_sub_block_rows<HD>(P, rows, true, k_own, lane);
    }
    cp_async_commit();
  };
  auto issue_v = [&]() {
    if (next.c < nseg) {
      if (next.r0 + warp < next.nsb) copy_sub_block_rows<HD>(P, rows, false, v_rows + warp * L::kRowsBytes, lane);
      next.r0 += kSegmentWarps;
      if (next.r0 >= next.nsb) seek(next, next.c + int(gridDim.x));
    }
    cp_async_commit();
  };
  bool early = false;  // the first round copied before the wait
  if (has_work) {
    decode_positions<kHalves>(t, lane, pos);
    seek(next, int(blockIdx.x));
    early = copies_precede_wait(t, next, kSegmentWarps);  // (the round's copies stay in segment next.c)
    if (early) {
      issue_k();
      issue_v();
    }
  }
  wait_for_previous_kernel();
  allow_next_kernel();  // the merge kernel, if any, may then be scheduled (attention.cu)
  // Thread 0 alone is the block's reporter (decode_tile_setup reports from "lane" 0).
  decode_tile_report(P, int(blockIdx.z), int(blockIdx.y), int(threadIdx.x));
  if (!has_work) return;
  // Every warp its own copy of Q: one cp.async group ahead of the first round's K and V, or, where
  // those are in flight already, by ordinary loads (a cp.async group after them would wait for them).
  // Groups in flight from here on: [K, V] of the current round at each round's start.
  uint32_t qb[HD / 16][2];
  if (early) {
    load_decode_q_now<HD, 8>(P, t, stage_s, lane);
    __syncwarp();
    load_q_columns<HD>(stage_s, qb);
    __syncwarp();  // every lane has read Q before scores are staged over it
  } else {
    load_decode_q<HD, 8>(P, t, stage_s, lane);
    issue_k();
    issue_v();
    hold_q_columns<HD, 2>(stage_s, qb);
  }

  for (int c = blockIdx.x; c < nseg; c += gridDim.x) {
    const DecodeSegment cur = decode_segment(P, t.reads_new, t.cached, pos, c);
    float ot[NMT][4];  // O^T, this warp's output dims
    zero_fragments(ot);
    float m[2] = {0.0f, 0.0f}, l[2] = {0.0f, 0.0f};
    bool first[2] = {true, true};

    for (int r0 = 0; r0 < cur.nsb; r0 += kSegmentWarps) {
      // This warp's sub-block: scores, masking, the rows' maxima.
      const int64_t sb_own = cur.sb_first + int64_t(r0 + warp) * kAttnKeys;
      bool active_own[2];
      const bool own_any = r0 + warp < cur.nsb && sub_block_active(cur, sb_own, active_own);
      float sc[8][4];
      cp_async_wait<1>();
      __syncwarp();  // the other lanes' K rows are in
      if (own_any) {
        float st[4][4];  // S^T
        zero_fragments(st);
        score_keys_swapped<HD, 0, 4>(k_own, SwizzledRows<HD>{}, qb, st);
        swapped_scores_to_rows(staged, st, sc);
        int col_lo, col_hi;
        softmax_columns(sb_own, cur.rg[0], &col_lo, &col_hi);
        float mx = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            sc[nt][e] = softmax_masked(sc[nt][e], nt * 8 + (lane & 3) * 2 + e, col_lo, col_hi);
            mx = fmaxf(mx, sc[nt][e]);
          }
        mx = quad_max(mx);
        if ((lane & 3) == 0) row_max[warp * 8 + lane / 4] = mx;
      }
      __syncwarp();  // every lane has read the K rows before they are refilled
      issue_k();     // the next round's
      __syncthreads();  // every warp's maxima are in

      // The max chain over the round's sub-blocks (every warp alike; attend_softmax's steps, l's
      // update left for the P V walk): alpha, whether the row takes part, and whether it had no
      // sub-block before.
      float alpha[kSegmentWarps], m_own = 0.0f;
      bool any[kSegmentWarps], act[kSegmentWarps], was_first[kSegmentWarps];
#pragma unroll
      for (int j = 0; j < kSegmentWarps; ++j) {
        bool active[2];
        any[j] = r0 + j < cur.nsb && sub_block_active(cur, cur.sb_first + int64_t(r0 + j) * kAttnKeys, active);
        act[j] = any[j] && active[0];
        was_first[j] = first[0];
        alpha[j] = 1.0f;
        if (any[j]) {
          const float mx = softmax_scaled_max(row_max[j * 8 + lane / 4], P.scale);
          const float m_new = softmax_new_max(first[0], m[0], mx);
          alpha[j] = softmax_alpha(active[0], first[0], m[0], m_new);
          if (j == warp) m_own = m_new;
          if (active[0]) {
            m[0] = m_new;
            first[0] = false;
          }
        }
      }
      // This warp's sub-block's exponentials, their sum and bf16(P).
      if (own_any) {
        float sum = 0.0f;
        uint32_t w[8];
#pragma unroll
        for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            sc[nt][e] = softmax_exp(active_own[0], sc[nt][e], P.scale, m_own);
            sum = sum + sc[nt][e];
          }
          w[nt] = pack_bf16x2(sc[nt][0], sc[nt][1]);
        }
        sum = quad_sum(sum);
        if ((lane & 3) == 0) row_sum[warp * 8 + lane / 4] = sum;
        p_words[(2 * warp) * 32 + lane] = make_uint4(w[0], w[1], w[2], w[3]);
        p_words[(2 * warp + 1) * 32 + lane] = make_uint4(w[4], w[5], w[6], w[7]);
      }
      cp_async_wait<1>();  // this thread's V rows of the round (the next round's K may be in flight)
      __syncthreads();     // every warp's V rows, sums and P are in

      // P V over the round's sub-blocks in order, this warp's output dims; l beside it.
#pragma unroll
      for (int j = 0; j < kSegmentWarps; ++j) {
        if (!any[j]) continue;
        if (act[j]) {
          const float scaled = l[0] * alpha[j];
          const float sum = row_sum[j * 8 + lane / 4];
          l[0] = was_first[j] ? sum : scaled + sum;
        }
        float alpha_q[2];
        swapped_row_values(alpha[j], alpha_q);
        rescale_rows_swapped(alpha_q, ot);
        const uint4 p_lo = p_words[(2 * j) * 32 + lane], p_hi = p_words[(2 * j + 1) * 32 + lane];
        const uint32_t vb = v_rows + j * L::kRowsBytes;
        value_step_swapped(vb, SwizzledRows<HD>{}, 0, warp * NMT, p_lo.x, p_lo.y, ot);
        value_step_swapped(vb, SwizzledRows<HD>{}, 1, warp * NMT, p_lo.z, p_lo.w, ot);
        value_step_swapped(vb, SwizzledRows<HD>{}, 2, warp * NMT, p_hi.x, p_hi.y, ot);
        value_step_swapped(vb, SwizzledRows<HD>{}, 3, warp * NMT, p_hi.z, p_hi.w, ot);
      }
      __syncthreads();  // every warp is done with the round's V rows, P, sums and maxima
      issue_v();        // the next round's
    }
    finish_swapped_segment<HD, NMT>(P, grid, t, c, lane, ot, m, l, first, warp * NMT, warp == 0);
  }
  cp_async_wait<0>();  // nothing in flight when the block leaves
}

}  // namespace samebits::cuda
