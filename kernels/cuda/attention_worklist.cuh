// The work of one paged attention call, derived on the device from query_start / context_lens, so
// the host needs only shapes (no download, no synchronisation; capturable in a CUDA graph):
//   - each sequence's rows (query tokens x group, query-major) are cut into tiles of 64 rows; a
//     last tile of 1..16 rows is a decode tile (attention_decode.cuh, implicit grid), every other
//     tile is a work item of the 64-row kernel (attention_kernel.cuh; or those rows in items of
//     128 for the wgmma prefill kernel, sm90a/attention_prefill.cu), listed here by
//     attention_worklist_kernel (one block; a scan over the sequences, then the tiles written by
//     all its threads), longest tile of a sequence first (scheduling only);
//   - the layout checks of check_attention_sequences (kernels/attention_host.h) run on the device
//     too (this list kernel and the decode kernel's first block report through the mailbox); a bad
//     sequence is skipped by every kernel.
#pragma once
#include <cstdint>

#include "kernels/cuda/attention_kernel.cuh"

namespace samebits::cuda {

constexpr int kDecodeRows = 16;  // a decode tile fills at most one warp's 16 mma rows
constexpr int kWorklistThreads = 1024;

// Sequence s's rows of the call, [q0, q1), and its context, as the kernels read them.
struct SequenceLayout {
  int64_t q0, q1, context;
};
__device__ __forceinline__ SequenceLayout load_sequence_layout(const AttnParams& P, int s) {
  return SequenceLayout{P.query_start[s], P.query_start[s + 1], P.context_lens[s]};
}

// Whether sequence s's layout is valid (see check_attention_sequences); reports when asked. The
// checks are formed without branches between them, so that all three loads go out together (with
// the context's check behind a branch on the others, the decode kernels waited for memory twice in
// a row at their start: ncu, bench/cuda/NOTES.md).
__device__ __forceinline__ bool attention_sequence_ok(const AttnParams& P, int s, const SequenceLayout& q,
                                                      bool report) {
  const bool ends_bad = (q.q0 < 0) | (q.q1 < q.q0) | (q.q1 > P.T);
  const bool context_bad = q.context < q.q1 - q.q0;
  // More blocks than the table holds (ceil(context / block_size) > max_blocks_per_seq; context >= 0 here).
  const bool table_bad = q.context > int64_t(P.max_blocks_per_seq) * P.block_size;
  const int what = ends_bad ? 0 : context_bad ? 1 : table_bad ? 2 : -1;
  if (what >= 0 && report) report_device_error(P.mailbox, kErrAttentionLayout, s, what == 0 ? q.q1 : q.context, what);
  return what < 0;
}
__device__ __forceinline__ bool attention_sequence_ok(const AttnParams& P, int s, bool report) {
  return attention_sequence_ok(P, s, load_sequence_layout(P, s), report);
}

// query_start[0] == 0 and query_start[num_seqs] == T, reported once per kernel that checks it.
__device__ __forceinline__ void attention_report_bad_ends(const AttnParams& P) {
  const int64_t first = P.query_start[0], last = P.query_start[P.num_seqs];
  if (first != 0) report_device_error(P.mailbox, kErrAttentionLayout, 0, first, 3);
  if (last != P.T) report_device_error(P.mailbox, kErrAttentionLayout, P.num_seqs, last, 3);
}

// The decode tile of a sequence with `rows` rows, if it has one.
__device__ __forceinline__ bool decode_tile(int64_t rows, int* row0, int* nrows) {
  const int64_t rem = rows % kAttnRows;
  if (rem == 0 || rem > kDecodeRows) return false;
  *row0 = int(rows - rem);
  *nrows = int(rem);
  return true;
}

// Segments of a tile whose last row sits at position p_max (kernels/plan.h num_splits; two
// partials, cached then new, when the plan reads this step's keys separately).
__device__ __forceinline__ int tile_segment_count(const AttnParams& P, bool reads_new, int64_t cached,
                                                  int64_t p_max) {
  if (reads_new) return cached > 0 ? 2 : 1;
  const int64_t visible = p_max + 1;
  if (!P.split_count_kind) return int(quotient_nonneg(visible + P.split_size - 1, P.split_size));  // visible >= 1
  return int(min(int64_t(P.split_count), visible));
}

// Writes the items and their number (*count). capacity: room in items. With decode_tiles_too,
// the decode tiles are listed as well (AttentionRoute::kGeneralOnly). The rows of a sequence that
// are not its decode tile are cut into items of tile_rows rows (kAttnRows for the 64-row kernel,
// kPrefillTileRows (attention_prefill.h) for the wgmma prefill kernel); a row's bits do not depend on its item.
//
// Sequences are taken kWorklistThreads at a time: a thread per sequence counts its tiles, a scan
// over the block places them, then every thread writes tiles (tile i of the round by thread
// i % kWorklistThreads, its sequence found by a binary search over the placed starts). A prefill
// chunk is one sequence of up to hundreds of tiles: written by its own thread alone, they made this
// kernel 10 us of a 49 us call at chunk 1024 and 27 us at 4096 on the H200 (ncu,
// bench/cuda/NOTES.md), and every kernel of the call waits for it.
__global__ void __launch_bounds__(kWorklistThreads) attention_worklist_kernel(AttnParams P, AttnItem* items,
                                                                            int* count, int capacity,
                                                                            bool decode_tiles_too, int tile_rows) {
  __shared__ int warp_total[kWorklistThreads / 32];
  // The round's sequences: where each one's tiles start in the round (exclusive scan), and what a
  // tile needs of its sequence.
  __shared__ int tile_start[kWorklistThreads];
  __shared__ int tile_count[kWorklistThreads];
  __shared__ int64_t seq_item_rows[kWorklistThreads], seq_cached[kWorklistThreads];
  __shared__ bool seq_reads_new[kWorklistThreads];
  __shared__ int base, round_tiles;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  wait_for_previous_kernel();
  // The kernel that reads the list (the 64-row or the wgmma prefill kernel, whose first step is its
  // own wait for this one) may be scheduled now: its blocks start and set up on the other SMs while
  // this one block works, instead of after it.
  allow_next_kernel();
  if (tid == 0) base = 0;
  __syncthreads();
  const int group = P.num_q_heads / P.num_kv_heads;
  for (int first = 0; first < P.num_seqs; first += kWorklistThreads) {
    const int s = first + tid;
    int64_t item_rows = 0, cached = 0;
    int tiles = 0;
    bool reads_new = false;
    if (s < P.num_seqs) {
      const SequenceLayout q = load_sequence_layout(P, s);
      if (attention_sequence_ok(P, s, q, true)) {
        const int64_t q_len = q.q1 - q.q0, rows = q_len * group;
        cached = q.context - q_len;
        reads_new = P.split_count_kind && P.separate_new_keys && q_len > 1;
        const int64_t rem = rows % kAttnRows;
        item_rows = rows - (rem <= (decode_tiles_too ? 0 : kDecodeRows) ? rem : 0);
        tiles = int(quotient_nonneg(item_rows + tile_rows - 1, tile_rows));
      }
    }
    // Exclusive scan of `tiles` over the block (warp shuffles, then the warps' totals).
    int incl = tiles;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o) incl += v;
    }
    if (lane == 31) warp_total[warp] = incl;
    __syncthreads();
    int before = 0;
    for (int w = 0; w < warp; ++w) before += warp_total[w];
    before += incl - tiles;
    tile_start[tid] = before;
    tile_count[tid] = tiles;
    seq_item_rows[tid] = item_rows;
    seq_cached[tid] = cached;
    seq_reads_new[tid] = reads_new;
    if (tid == kWorklistThreads - 1) round_tiles = before + tiles;
    __syncthreads();
    const int in_round = min(P.num_seqs - first, kWorklistThreads);
    for (int i = tid; i < round_tiles; i += kWorklistThreads) {
      // The round's last sequence whose tiles start at or before i: the one that holds tile i (any
      // sequence after it without tiles starts where the next tiles do, beyond i).
      int lo = 0, hi = in_round - 1;
      while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (tile_start[mid] <= i) {
          lo = mid;
        } else {
          hi = mid - 1;
        }
      }
      const int t = i - tile_start[lo];
      const int tile = tile_count[lo] - 1 - t;  // the tile with the most keys first
      const int row0 = tile * tile_rows;
      const int nrows = int(min(int64_t(tile_rows), seq_item_rows[lo] - row0));
      const int64_t cached = seq_cached[lo], p_max = cached + quotient_nonneg(row0 + nrows - 1, group);
      if (base + i < capacity) {
        items[base + i] = AttnItem{first + lo, row0, nrows, tile_segment_count(P, seq_reads_new[lo], cached, p_max)};
      }
    }
    __syncthreads();
    if (tid == 0) base += round_tiles;
    __syncthreads();
  }
  if (tid == 0) {
    *count = min(base, capacity);
    attention_report_bad_ends(P);  // (last: no thread waits for its loads)
  }
}

}  // namespace samebits::cuda
