// The merge of a decode tile's segments (kernels/cuda/attention.cu launches it after the decode
// kernels of attention_decode*.cuh when a tile has several segments): one warp per row folds the
// partials (o, m, l) that finish_decode_segment stored, in segment order, with the fold of
// attention_kernel.cuh (fold_scales, fold_value), then writes bf16(o / l). Same operations in the
// same order as the in-block fold of the 64-row kernel, so the same bits (gpu_tests compares them).
#pragma once
#include <cstdint>

#include "kernels/cuda/attention_decode.cuh"

namespace samebits::cuda {

// Segments whose partials the merge kernel loads at once before folding them: 8, or 32 for small
// launches whose tiles have more than 8 segments (attention.cu chooses; tiles of at most 8 rows,
// blocks of at most 256 threads, which fit an SM at the 226 registers a thread ptxas gives it).
constexpr int kMergeBatch = 8, kMergeBatchWide = 32;

// One warp per row of a small tile with several segments: the fold of attention_kernel.cuh over
// the stored partials in segment order. The partials of kBatch segments are loaded together
// and then folded, so a row waits for memory once per batch rather than once per segment (a row
// of 8 segments: one round trip instead of eight). The tile's shape is read before the wait for
// the decode grid: it comes from query_start / context_lens, written before that grid ran, and this
// grid starts only after every decode block has passed its own wait (allow_next_kernel follows it).
template <int HD, int kBatch>
__global__ void attention_decode_merge_kernel(AttnParams P, DecodeGrid grid) {
  const int g = blockIdx.x, s = blockIdx.y;
  const int r = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int group = P.num_q_heads / P.num_kv_heads;
  int64_t qs = 0;
  int row0 = 0, nrows = 0, nseg = 0;  // nseg <= 1: nothing to fold for this row
  const SequenceLayout q = load_sequence_layout(P, s);
  if (attention_sequence_ok(P, s, q, false)) {
    qs = q.q0;
    const int64_t q_len = q.q1 - q.q0;
    if (decode_tile(q_len * group, &row0, &nrows) && r < nrows) {
      const int64_t cached = q.context - q_len;
      const bool reads_new = reads_new_keys(P, q_len);
      nseg = tile_segment_count(P, reads_new, cached, cached + (row0 + nrows - 1) / group);
    }
  }
  // Every thread waits, those with nothing to fold too: then this grid cannot finish before the
  // decode grid, which the launches after it in the stream are ordered behind only through it.
  wait_for_previous_kernel();
  allow_next_kernel();
  if (nseg <= 1) return;
  constexpr int PER = HD / 32;
  const int64_t stride = int64_t(grid.partial_rows) * (HD + 2);
  const float* src = P.partials + decode_partial_offset<HD>(P, grid, s, g, 0, r);
  float ot[PER];
  float tot_m = 0.0f, tot_l = 0.0f;
  bool has_total = false;
  for (int c0 = 0; c0 < nseg; c0 += kBatch) {
    float v[kBatch][PER], pm[kBatch], pl[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (c0 + b >= nseg) break;
      const float* p = src + stride * (c0 + b);
#pragma unroll
      for (int i = 0; i < PER; ++i) v[b][i] = p[lane + 32 * i];
      pm[b] = p[HD];
      pl[b] = p[HD + 1];
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (c0 + b >= nseg) break;
      if (pl[b] == 0.0f) continue;  // an empty segment
      float new_m, a, bb;
      fold_scales(has_total, tot_m, pm[b], &new_m, &a, &bb);
#pragma unroll
      for (int i = 0; i < PER; ++i) ot[i] = fold_value(has_total, ot[i], a, v[b][i], bb);
      tot_l = fold_value(has_total, tot_l, a, pl[b], bb);
      tot_m = new_m;
      has_total = true;
    }
  }
  if (!has_total) return;
  bf16* dst = P.out + query_row_offset(P, qs, g, group, row0 + r, HD);
#pragma unroll
  for (int i = 0; i < PER; ++i) dst[lane + 32 * i] = attention_output(ot[i], tot_l);
}

}  // namespace samebits::cuda
