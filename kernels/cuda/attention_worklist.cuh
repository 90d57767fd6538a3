// The work of one paged attention call, derived on the device from query_start / context_lens, so
// the host needs only shapes (no download, no synchronisation; capturable in a CUDA graph):
//   - each sequence's rows (query tokens x group, query-major) are cut into tiles of 64 rows; a
//     last tile of 1..16 rows is a decode tile (attention_decode.cuh, implicit grid), every other
//     tile is a work item of the 64-row kernel (attention_64row_kernel.cuh; or those rows in items
//     of 128 for the wgmma prefill kernel, sm90a/attention_prefill.cu). Items are numbered by
//     sequence, a sequence's longest tile first (scheduling only); each block of those kernels
//     finds its own (find_work_item: a memory round trip and a scan per block-size run of
//     sequences, from the layout the host wrote, so before the block's wait for the previous
//     kernel);
//   - the layout checks of check_attention_sequences (kernels/attention_host.h) run on the device
//     too (the last block of those kernels and the decode kernel's first block report through the
//     mailbox); a bad sequence is skipped by every kernel.
// A one-block kernel wrote the list before (its scan, then the tiles): with its launch it cost
// 10-27 us, then ~5 us, of every call with items (H200, bench/cuda/notes/mixed.md).
#pragma once
#include <cstdint>

#include "kernels/cuda/attention_kernel.cuh"

namespace samebits::cuda {

constexpr int kDecodeRows = 16;  // a decode tile fills at most one warp's 16 mma rows

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
// a row at their start: ncu, bench/cuda/notes/mixed.md).
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
  // ceil(visible / split_size) in 32 bits (visible is 1..2^31: a context_lens entry bounds it): a
  // 64-bit division is a call, which left the wgmma prefill kernel's registers spilling.
  if (!P.split_count_kind) return int(quotient_nonneg(uint32_t(visible - 1), P.split_size)) + 1;
  return int(min(int64_t(P.split_count), visible));
}

// How a sequence's rows are cut into items of kTileRows rows: the rows that are not its decode
// tile (all of them when P.decode_tiles_listed, AttentionRoute::kGeneralOnly); no items for a bad
// layout.
struct SequenceItems {
  int64_t item_rows = 0, cached = 0;
  int tiles = 0;
  bool reads_new = false;
};
template <int kTileRows>
__device__ __forceinline__ SequenceItems sequence_items(const AttnParams& P, int s, int group) {
  SequenceItems x;
  const SequenceLayout q = load_sequence_layout(P, s);
  if (!attention_sequence_ok(P, s, q, false)) return x;
  const int64_t q_len = q.q1 - q.q0, rows = q_len * group;
  x.cached = q.context - q_len;
  x.reads_new = reads_new_keys(P, q_len);
  const int64_t rem = rows % kAttnRows;
  x.item_rows = rows - (rem <= (P.decode_tiles_listed ? 0 : kDecodeRows) ? rem : 0);
  x.tiles = int((x.item_rows + kTileRows - 1) / kTileRows);
  return x;
}

// Work item `index` of the call, in the block's shared memory; nullptr when the call has fewer
// items. Called by every thread of a block of kThreads (it synchronises the block). Sequences are
// taken kThreads at a time, one per thread: its item count, an exclusive scan over the block, and
// the thread whose sequence holds the index writes the item. Reads only the layout (query_start,
// context_lens). Read the item where it is used: copied out at once, its fields stayed in
// registers through the kernels' main loops (the wgmma prefill kernel's producer then spilled).
// Several sequences per thread (four, unrolled) took 1.00-1.02x the time of one on the H200's
// prefill rows (bench/cuda/notes/mixed.md, 2026-12-04): more code before the main loop.
template <int kThreads, int kTileRows>
__device__ __forceinline__ const AttnItem* find_work_item(const AttnParams& P, int index) {
  __shared__ int warp_total[kThreads / 32];
  __shared__ AttnItem found;
  __shared__ int found_any;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int group = P.num_q_heads / P.num_kv_heads;
  if (tid == 0) found_any = 0;  // (ordered before any write of it by the round's first barrier)
  int base = 0;                 // items of the rounds before
  for (int first = 0; first < P.num_seqs; first += kThreads) {
    const int s = first + tid;
    SequenceItems seq;
    if (s < P.num_seqs) seq = sequence_items<kTileRows>(P, s, group);
    int incl = seq.tiles;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o) incl += v;
    }
    if (lane == 31) warp_total[warp] = incl;
    __syncthreads();
    int before = base + incl - seq.tiles, round = 0;
#pragma unroll
    for (int w = 0; w < kThreads / 32; ++w) {
      const int v = warp_total[w];
      before += w < warp ? v : 0;
      round += v;
    }
    if (index >= before && index < before + seq.tiles) {
      const int tile = seq.tiles - 1 - (index - before);  // the tile with the most keys first
      const int row0 = tile * kTileRows;
      const int nrows = int(min(int64_t(kTileRows), seq.item_rows - row0));
      const int64_t p_max = seq.cached + quotient_nonneg(row0 + nrows - 1, group);
      found = AttnItem{s, row0, nrows, tile_segment_count(P, seq.reads_new, seq.cached, p_max)};
      found_any = 1;
    }
    __syncthreads();
    if (found_any) return &found;
    base += round;
    // (the next round's writes of warp_total follow this round's reads: the barrier above)
  }
  return nullptr;
}

// The block that reports the layout checks of a call with items: the grid's last (the shortest
// item, or none), after its wait (the mailbox is written, not only read).
__device__ __forceinline__ bool reports_attention_layout() { return blockIdx.x == gridDim.x - 1; }
__device__ __forceinline__ void report_attention_layout(const AttnParams& P, int threads) {
  for (int s = int(threadIdx.x); s < P.num_seqs; s += threads) attention_sequence_ok(P, s, true);
  if (threadIdx.x == 0) attention_report_bad_ends(P);
}

// find_work_item for a kernel that waits for the previous one after it: where the block has no
// item (nullptr: it leaves), the reporting block first waits and reports.
template <int kThreads, int kTileRows>
__device__ __forceinline__ const AttnItem* find_work_item_or_report(const AttnParams& P, int index) {
  const AttnItem* found = find_work_item<kThreads, kTileRows>(P, index);
  if (found == nullptr && reports_attention_layout()) {
    wait_for_previous_kernel();
    report_attention_layout(P, kThreads);
  }
  return found;
}

}  // namespace samebits::cuda
