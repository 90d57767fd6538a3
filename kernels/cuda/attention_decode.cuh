// Decode-shaped tiles of paged attention: the last tile of a sequence's rows when it holds 1..16
// rows (a decode's GQA heads, or the last query tokens of a chunk), one warp per (tile, segment).
//
// Why: such a tile fills one warp's 16 mma rows at most, so the 64-row kernel (attention_64row_kernel.cuh)
// left three of its four warps idle. Here each warp owns segments of one (sequence, kv head); a
// block holds kWarps of them, kv heads blockIdx.y * kWarps .. + kWarps - 1 of one sequence (same
// keys per head, so the warps run the same code together: attention.cu says when). A warp's K and
// V rows stream through a ring of kRing buffers of HALF a sub-block's K (or V) rows each (32 keys,
// swizzled, 8 KiB at head_dim 128), in the order K lo, K hi, V lo, V hi of each sub-block over all
// its segments: a K half is refilled as soon as its scores are computed, while the softmax and
// P V still run, and the first rows of the warp's next segment load during the last sub-block of
// the current one. Small buffers let eight warps share an SM at head_dim 128 (six before).
// kHalves = 1 (every decode tile of the launch holds at most 8 rows, e.g. 4 GQA heads x 1 token):
// the Q tile holds 8 rows, so at head_dim 128 eight warps fit an SM (26 KiB each with kRing = 3);
// there the products run swapped, S^T = K Q^T and O^T += V^T P^T with the tile's rows as the mma's
// 8 columns (attention_decode_swapped.cuh: half the mma instructions and no accumulator registers
// for absent rows), Q held in registers and its 2 KiB of shared memory staging the scores for the
// softmax; at head_dim 64 the mma rows 8..15 take no registers (attend_* in attention_kernel.cuh).
// Copies (copy_half_rows): each lane first resolves one key row through the block table (key lane
// of the half), then the rows are copied in 16-byte cp.async chunks (head_dim 128: 16 lanes per
// row; 64: two), the row offsets passed by shuffles; keys beyond the context are zero-filled. At
// short contexts the warps' instructions per key bound this kernel more than the bytes do
// (bench/cuda/notes/decode.md: head_dim 64 took 0.75x the time of 128 on the burst rows), hence,
// for tiles of at most 4 rows, the softmax's exponentials shared with the idle lanes (kExpsShared,
// attention_kernel.cuh). A K half whose keys all lie outside the
// segment's key range is neither copied nor multiplied (its scores are masked whatever they
// hold); a V half wholly beyond the context is not copied and enters P V as zero fragments (what
// the zero-filled copy would have held).
// For launches of few warps attention_decode_chain.cuh is faster (attention.cu chooses).
// The grid is implicit, (segment slot, kv head group, sequence): every block reads query_start /
// context_lens on the device, computes segments slot, slot + gridDim.x, ... of its tile, and leaves
// when there are none, so no work list is built or copied.
//
// Bits: every row goes through exactly the arithmetic of attention_kernel.cuh (same sub-blocks of
// 64 keys aligned to absolute positions, the same score chains, softmax and P V steps in the same
// order, same fold of the segments in index order by attention_decode_merge_kernel
// (attention_decode_merge.cuh), or bf16(o / l) directly when the tile has one segment).
// gpu_tests compares both kernels bit for bit.
#pragma once
#include <cstdint>

#include "kernels/cuda/attention_decode_swapped.cuh"
#include "kernels/cuda/attention_worklist.cuh"

namespace samebits::cuda {

constexpr int kHalfKeys = kAttnKeys / 2;  // keys per ring item
// Ring depth in items. Measured on the H200 (bench decode-burst, decode batch 256): 2 and 3 alike,
// 4 (six warps per SM instead of eight) 30-40% slower.
constexpr int kDecodeRing = 3;

template <int HD, int kHalves, int kRing = kDecodeRing>
struct DecodeLayout {
  static constexpr int kItemBytes = kHalfKeys * HD * 2;  // the K (or V) rows of half a sub-block
  static constexpr int kQBytes = kHalves * 8 * HD * 2;  // the Q tile, rows 0..8 * kHalves - 1
  // Swapped products (attention_decode_swapped.cuh): Q then held in registers and its shared memory
  // staging the scores.
  static constexpr bool kSwapped = kSwappedProducts<HD, kHalves>;
  static_assert(!kSwapped || kQBytes >= kSwappedScoreBytes, "the scores are staged in the Q tile's place");
  static constexpr int kBytes = kQBytes + kRing * kItemBytes;
};

// Key rows of half a sub-block in a ring buffer: keys k and k + 32 of the sub-block share a row
// (tile_offset as SwizzledRows').
template <int HD>
struct HalfRows {
  __device__ __forceinline__ uint32_t operator()(int key, int chunk) const { return swizzled(key & 31, chunk, HD / 8); }
  __host__ __device__ static constexpr uint32_t tile_offset(int t) { return uint32_t(t & 1) * 16 * HD * 2; }
};

// Shape of the implicit grid and of the partials it writes (host: attention.cu).
struct DecodeGrid {
  int max_segments;  // >= the segments of every decode tile (the partials' stride)
  int partial_rows;  // rows reserved per (sequence, kv head, segment) in the partials, >= its rows
};

// Offset (floats) of row r of segment c of (sequence s, kv head g) in the partials.
template <int HD>
__device__ __forceinline__ int64_t decode_partial_offset(const AttnParams& P, const DecodeGrid& grid, int s, int g,
                                                         int c, int r) {
  return ((int64_t(s) * P.num_kv_heads + g) * grid.max_segments + c) * grid.partial_rows * (HD + 2) +
         int64_t(r) * (HD + 2);
}

// One segment of a decode tile as the warp sees it: this lane's two rows' key ranges and the
// warp-wide sub-blocks that cover them (nsb = 0: no row has a key in the segment).
struct DecodeSegment {
  SegRange rg[2];
  // The warp's key range in the segment (empty: lo >= hi) and its first sub-block. Positions are
  // below context_lens' int32 range, and 32-bit fields here keep the decode kernel at head_dim 128
  // within its 255 registers (with 64-bit ones it spilled 4-8 bytes: ptxas).
  int lo, hi;
  int sb_first;
  int nsb;
  bool from_new;  // the keys come from this step's k_new / v_new
};

__device__ __forceinline__ DecodeSegment decode_segment(const AttnParams& P, bool reads_new, int64_t cached,
                                                        const int64_t (&pos)[2], int c) {
  DecodeSegment d;
  int lo = INT32_MAX, hi = INT32_MIN;
  bool from_new = false;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    d.rg[h] = segment_range</*k32BitChunk=*/false>(P, reads_new, cached, pos[h], c);
    if (d.rg[h].begin < d.rg[h].end) {
      lo = min(lo, int(d.rg[h].begin));
      hi = max(hi, int(d.rg[h].end));
      from_new = d.rg[h].from_new;
    }
  }
#pragma unroll
  for (int o = 16; o >= 1; o >>= 1) {
    lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, o));
    hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, o));
  }
  d.from_new = __any_sync(0xffffffffu, from_new);
  d.lo = lo;
  d.hi = hi;
  d.sb_first = lo < hi ? (lo / kAttnKeys) * kAttnKeys : 0;
  d.nsb = lo < hi ? int((hi - d.sb_first + kAttnKeys - 1) / kAttnKeys) : 0;
  return d;
}

// Which of the lane's two rows have keys in the sub-block from sb0 (active), and whether any lane
// of the warp has (the sub-block's work is skipped by the whole warp or by none).
__device__ __forceinline__ bool sub_block_active(const DecodeSegment& cur, int64_t sb0, bool (&active)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) active[h] = max(cur.rg[h].begin, sb0) < min(cur.rg[h].end, sb0 + kAttnKeys);
  return __any_sync(0xffffffffu, active[0] || active[1]);
}

// Zeroes a warp's mma accumulator fragments (n tiles of 4 floats per lane).
template <int N>
__device__ __forceinline__ void zero_fragments(float (&f)[N][4]) {
#pragma unroll
  for (int nt = 0; nt < N; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) f[nt][e] = 0.0f;
}

// The decode tile of (sequence s, kv head g) as both decode kernels see it.
struct DecodeTile {
  int s, g, group, row0, nrows, nseg;
  int group_shift;  // log2(group) when group is a power of two (Qwen3: 4 or 8), else -1
  // The query token (relative to the tile's sequence) and the q head within the kv head's group of
  // tile row `row`: shifts where group is a power of two, since a division by a value known only
  // at run time is some twenty dependent instructions on the set-up's path.
  __device__ __forceinline__ int row_token(int row) const { return group_shift >= 0 ? row >> group_shift : row / group; }
  __device__ __forceinline__ int row_head(int row) const { return group_shift >= 0 ? row & (group - 1) : row % group; }
  int64_t qs, q_len, context, cached;
  bool reads_new;  // the plan reads this step's keys from k_new / v_new
  const int32_t* table;
};

// The lane that reports a bad layout: the first lane of the first block of kv head 0.
__device__ __forceinline__ bool decode_layout_reporter(int g, int lane) { return blockIdx.x == 0 && g == 0 && lane == 0; }

// Fills *t; false when this block has nothing to do for it: a bad layout (reported by the first
// block's first lane unless `report` is false: decode_tile_report then does it), no decode tile,
// or no segment for slot blockIdx.x.
// The sequence's layout loads go out first; while they are in flight, the block table's line of
// this slot's first segment (invariant mode: keys from blockIdx.x * split_size; default mode: the
// row's start) is prefetched, so that the first copy's row lookups hit L1 instead of waiting on a
// second round trip (a short context's set-up is a chain of such waits).
__device__ __forceinline__ bool decode_tile_setup(const AttnParams& P, int s, int g, int lane, DecodeTile* t,
                                                  bool report = true) {
  const SequenceLayout q = load_sequence_layout(P, s);
  if (lane == 0 && P.max_blocks_per_seq > 0) {
    const int64_t first =
        P.split_count_kind ? 0 : quotient_nonneg(int64_t(blockIdx.x) * P.split_size, P.block_size);
    const int64_t entry = int64_t(s) * P.max_blocks_per_seq + min(first, int64_t(P.max_blocks_per_seq - 1));
    asm volatile("prefetch.global.L1 [%0];\n" ::"l"(P.block_tables + entry));
  }
  const bool reporter = report && decode_layout_reporter(g, lane);
  if (reporter && s == 0) attention_report_bad_ends(P);
  if (!attention_sequence_ok(P, s, q, reporter)) return false;
  t->s = s;
  t->g = g;
  t->group = P.num_q_heads / P.num_kv_heads;
  t->group_shift = (t->group & (t->group - 1)) == 0 ? __ffs(t->group) - 1 : -1;
  t->qs = q.q0;
  t->q_len = q.q1 - q.q0;
  if (!decode_tile(t->q_len * t->group, &t->row0, &t->nrows)) return false;
  t->context = q.context;
  t->cached = t->context - t->q_len;
  t->reads_new = reads_new_keys(P, t->q_len);
  t->nseg = tile_segment_count(P, t->reads_new, t->cached, t->cached + t->row_token(t->row0 + t->nrows - 1));
  t->table = P.block_tables + int64_t(s) * P.max_blocks_per_seq;
  return int(blockIdx.x) < t->nseg;
}

// The reports of decode_tile_setup(..., report = false), for a kernel whose set-up runs before its
// wait for the previous kernel: the mailbox is written after that wait, as every other kernel
// writes it, so which bad input a step reports first does not depend on timing.
__device__ __forceinline__ void decode_tile_report(const AttnParams& P, int s, int g, int lane) {
  if (!decode_layout_reporter(g, lane)) return;
  if (s == 0) attention_report_bad_ends(P);
  attention_sequence_ok(P, s, true);
}

// Where a decode kernel's copies stand: segment c of the block's stride (blockIdx.x, + gridDim.x,
// ...; c >= t.nseg: none left) and the fields of its DecodeSegment that the copies need. Each
// kernel's cursor adds its own place within the segment.
struct SegmentPosition {
  int c, nsb;
  int sb_first, lo, hi;  // as DecodeSegment's
  bool from_new;
};
// Whether `sub_blocks` sub-blocks from k's first (all in segment k.c) may be copied before the wait
// for the previous kernel: they come from the cache and lie below `cached`, written by an earlier
// step (a step's kernels write only its own tokens' keys; cuda_common.h states the rule).
__device__ __forceinline__ bool copies_precede_wait(const DecodeTile& t, const SegmentPosition& k, int sub_blocks) {
  return k.c < t.nseg && !k.from_new && k.sb_first + int64_t(sub_blocks) * kAttnKeys <= t.cached;
}

// Moves *k to the first segment >= c in the block's stride that holds keys (segments without a
// sub-block are passed over).
__device__ __forceinline__ void seek_segment_with_keys(const AttnParams& P, const DecodeTile& t,
                                                       const int64_t (&pos)[2], int c, SegmentPosition* k) {
  k->nsb = 0;
  for (k->c = c; k->c < t.nseg; k->c += int(gridDim.x)) {
    const DecodeSegment d = decode_segment(P, t.reads_new, t.cached, pos, k->c);
    if (d.nsb == 0) continue;
    k->nsb = d.nsb;
    k->sb_first = d.sb_first;
    k->lo = d.lo;
    k->hi = d.hi;
    k->from_new = d.from_new;
    return;
  }
}

// Offset (elements) of the tile's row r in Q and in the output (query token, q head; head_dim HD).
template <int HD>
__device__ __forceinline__ int64_t decode_row_offset(const AttnParams& P, const DecodeTile& t, int r) {
  const int row = t.row0 + r;
  return ((t.qs + t.row_token(row)) * P.num_q_heads + t.g * t.group + t.row_head(row)) * HD;
}

// The Q tile's kQRows rows (beyond nrows: zeros) into q_s, swizzled, as one cp.async group.
template <int HD, int kQRows>
__device__ __forceinline__ void load_decode_q(const AttnParams& P, const DecodeTile& t, uint32_t q_s, int lane) {
  constexpr int CH = HD / 8;
  for (int i = lane; i < kQRows * CH; i += 32) {
    const int r = i / CH, ch = i % CH;
    const bool valid = r < t.nrows;
    const bf16* src = P.q;
    if (valid) src = P.q + decode_row_offset<HD>(P, t, r) + ch * 8;
    cp_async_16(q_s + swizzled(r, ch, CH), src, valid);
  }
  cp_async_commit();
}
// The same tile by ordinary loads and shared-memory stores (no cp.async group), for a kernel whose
// K and V copies are already in flight: waiting for Q then does not wait for them too (the groups
// complete in order). The caller synchronises before Q is read.
template <int HD, int kQRows>
__device__ __forceinline__ void load_decode_q_now(const AttnParams& P, const DecodeTile& t, uint32_t q_s, int lane) {
  constexpr int CH = HD / 8;
  static_assert(kQRows * CH % 32 == 0, "whole passes of the warp");
  uint4 v[kQRows * CH / 32];
#pragma unroll
  for (int k = 0; k < kQRows * CH / 32; ++k) {  // every load out before the first store
    const int i = lane + 32 * k, r = i / CH, ch = i % CH;
    v[k] = r < t.nrows ? *reinterpret_cast<const uint4*>(P.q + decode_row_offset<HD>(P, t, r) + ch * 8)
                       : make_uint4(0u, 0u, 0u, 0u);
  }
#pragma unroll
  for (int k = 0; k < kQRows * CH / 32; ++k) {
    const int i = lane + 32 * k, r = i / CH, ch = i % CH;
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(q_s + swizzled(r, ch, CH)), "r"(v[k].x),
                 "r"(v[k].y), "r"(v[k].z), "r"(v[k].w)
                 : "memory");
  }
}

// Absolute positions of this lane's two rows (lane / 4 and lane / 4 + 8; -1: no such row).
template <int kHalves>
__device__ __forceinline__ void decode_positions(const DecodeTile& t, int lane, int64_t (&pos)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = (lane >> 2) + h * 8;
    pos[h] = r < t.nrows && h < kHalves ? t.cached + t.row_token(t.row0 + r) : -1;
  }
}

// The end of one segment of a decode tile (this lane's rows lane / 4 and lane / 4 + 8 of the first
// kHalves halves, accumulators o, statistics m, l, first). One segment: the output itself (the
// fold of a single partial is that partial). Several: the partial (l = 0 marks an empty one), for
// attention_decode_merge_kernel.
// NT < HD / 8: o holds only the n8 tiles nt0 .. nt0 + NT - 1 of the rows (a warp of
// attention_decode_split_kernel), and only the warp with `stats` writes m and l.
template <int HD, int kHalves, int NT = HD / 8>
__device__ __forceinline__ void finish_decode_segment(const AttnParams& P, const DecodeGrid& grid, const DecodeTile& t,
                                                      int c, int lane, const float (&o)[NT][4],
                                                      const float (&m)[2], const float (&l)[2],
                                                      const bool (&first)[2], int nt0 = 0, bool stats = true) {
  constexpr int NTD = NT;
#pragma unroll
  for (int h = 0; h < kHalves; ++h) {
    const int r = (lane >> 2) + h * 8;
    if (r >= t.nrows) continue;
    if (t.nseg == 1) {
      if (first[h]) continue;
      bf16* dst = P.out + decode_row_offset<HD>(P, t, r);
#pragma unroll
      for (int nt = 0; nt < NTD; ++nt) {
        const int d = (nt0 + nt) * 8 + (lane & 3) * 2;
        *reinterpret_cast<uint32_t*>(dst + d) = attention_output_pair(o[nt][2 * h], o[nt][2 * h + 1], l[h]);
      }
      continue;
    }
    float* dst = P.partials + decode_partial_offset<HD>(P, grid, t.s, t.g, c, r);
#pragma unroll
    for (int nt = 0; nt < NTD; ++nt) {
      const int d = (nt0 + nt) * 8 + (lane & 3) * 2;
      *reinterpret_cast<float2*>(dst + d) =
          make_float2(first[h] ? 0.0f : o[nt][2 * h], first[h] ? 0.0f : o[nt][2 * h + 1]);
    }
    if (stats && (lane & 3) == 0) {
      dst[HD] = first[h] ? 0.0f : m[h];
      dst[HD + 1] = first[h] ? 0.0f : l[h];
    }
  }
}

// finish_decode_segment for the swapped form of a tile of at most 8 rows (ot: O^T as
// value_keys_swapped leaves it; m, l, first: the row layout's, lane / 4's row): the same values
// written to the same places. NMT < HD / 16: ot holds only the output dims of the m16 tiles
// mt0 .. mt0 + NMT - 1 (a warp of attention_decode_segment_kernel), and only the warp with `stats`
// writes m and l.
template <int HD, int NMT = HD / 16>
__device__ __forceinline__ void finish_swapped_segment(const AttnParams& P, const DecodeGrid& grid, const DecodeTile& t,
                                                       int c, int lane, const float (&ot)[NMT][4],
                                                       const float (&m)[2], const float (&l)[2],
                                                       const bool (&first)[2], int mt0 = 0, bool stats = true) {
  if (t.nseg == 1 && t.nrows <= 4) {
    // At most 4 rows (e.g. 4 GQA heads of one token): they are the columns of the lanes with
    // lane % 4 < 2, and the lanes with lane % 4 >= 2 hold absent ones. Lanes lane and lane ^ 2 share
    // the output: the first divides and stores its row (lane % 4) * 2, the second row
    // (lane % 4 - 2) * 2 + 1 with the values it takes from its partner. The same divisions of the
    // same values, half of them per lane (each a dozen instructions, the warp's instructions
    // bounding this kernel on short contexts).
    const bool second = (lane & 2) != 0;
    const int r = (lane & 1) * 2 + (second ? 1 : 0);
    float v[NMT][2];
#pragma unroll
    for (int mt = 0; mt < NMT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float partner = __shfl_xor_sync(0xffffffffu, ot[mt][2 * h + 1], 2);
        v[mt][h] = second ? partner : ot[mt][2 * h];
      }
    const float l_r = __shfl_sync(0xffffffffu, l[0], r * 4);  // the row layout: lane 4r holds row r
    const bool first_r = __shfl_sync(0xffffffffu, int(first[0]), r * 4) != 0;
    if (r < t.nrows && !first_r) {
      bf16* dst = P.out + decode_row_offset<HD>(P, t, r);
#pragma unroll
      for (int mt = 0; mt < NMT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) dst[(mt0 + mt) * 16 + (lane >> 2) + h * 8] = attention_output(v[mt][h], l_r);
    }
    return;
  }
  float l_q[2];
  int first_q[2];
  swapped_row_values(l[0], l_q);
  swapped_row_values(int(first[0]), first_q);
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int r = (lane & 3) * 2 + j;
    if (r >= t.nrows) continue;
    if (t.nseg == 1) {
      if (first_q[j]) continue;
      bf16* dst = P.out + decode_row_offset<HD>(P, t, r);
#pragma unroll
      for (int mt = 0; mt < NMT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          dst[(mt0 + mt) * 16 + (lane >> 2) + h * 8] = attention_output(ot[mt][2 * h + j], l_q[j]);
        }
      continue;
    }
    float* dst = P.partials + decode_partial_offset<HD>(P, grid, t.s, t.g, c, r);
#pragma unroll
    for (int mt = 0; mt < NMT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) dst[(mt0 + mt) * 16 + (lane >> 2) + h * 8] = first_q[j] ? 0.0f : ot[mt][2 * h + j];
  }
  const int r = lane >> 2;
  if (stats && t.nseg > 1 && (lane & 3) == 0 && r < t.nrows) {
    float* dst = P.partials + decode_partial_offset<HD>(P, grid, t.s, t.g, c, r);
    dst[HD] = first[0] ? 0.0f : m[0];
    dst[HD + 1] = first[0] ? 0.0f : l[0];
  }
}

// Whether the K half of sub-block sb0 starting at key0 holds a key of [lo, hi) (else it is neither
// copied nor multiplied), and whether the V half starting at key0 holds a key below the context.
__device__ __forceinline__ bool k_half_needed(int64_t key0, int64_t lo, int64_t hi) {
  return key0 < hi && key0 + kHalfKeys > lo;
}

// Runs of 16 key rows (the decode kernels' copies): keys k0 .. k0 + 15 form a run when each of
// them comes from one source with its rows num_kv_heads * HD elements apart: this step's keys
// (consecutive tokens), or one block of the paged cache (k0 a multiple of 16 and blocks of a
// multiple of 16 keys; the callers' runs start at multiples of 16). A run is copied with one source
// address per lane, stepped by the lane's own adds, instead of a row address and a validity passed
// by shuffles to every copy instruction (ncu, the Qwen3-8B burst's decode steps: the copies were
// ~18% of the kernel's instructions). The same bytes land in the same places; rows past the context
// (where = 0) are never in a run, so the zero-filling path keeps them.
// key_rows_in_runs: whether the rows that lanes first .. first + lanes - 1 resolved (lanes = 16 or
// 32, 16 consecutive keys per 16 lanes) all come from one source in such runs.
__device__ __forceinline__ bool key_rows_in_runs(const AttnParams& P, const KeyRow& row, int first, int lanes,
                                                 int lane) {
  const int where0 = __shfl_sync(0xffffffffu, row.where, first);
  const bool same = lane < first || lane >= first + lanes || row.where == where0;
  return __all_sync(0xffffffffu, same) && (where0 == 2 || (where0 == 1 && P.block_size % 16 == 0));
}

// Copies a run (key_rows_in_runs) whose rows `own` points at in lanes `first` .. `first` + 15 to
// rows dst_row0 .. dst_row0 + 15 of the swizzled tile at dst: HD / 8 lanes per row, each lane
// stepping its own address by 32 / (HD / 8) rows per instruction.
template <int HD>
__device__ __forceinline__ void copy_key_run16(const AttnParams& P, const bf16* own, int first, uint32_t dst,
                                               int dst_row0, int lane) {
  constexpr int CH = HD / 8;             // 16-byte chunks per row
  constexpr int kRowsPerCopy = 32 / CH;  // key rows one warp instruction copies
  static_assert(32 % CH == 0 && 16 % kRowsPerCopy == 0, "whole rows per instruction, whole instructions per run");
  const int ch = lane % CH, sub = lane / CH;
  const int64_t step = int64_t(kRowsPerCopy) * P.num_kv_heads * HD;
  const bf16* src = shfl_row_source(own, first + sub) + ch * 8;
#pragma unroll
  for (int i = 0; i < 16 / kRowsPerCopy; ++i) {
    cp_async_16(dst + swizzled(dst_row0 + i * kRowsPerCopy + sub, ch, CH), src + i * step, true);
  }
}

// Copies the K (is_k) or V rows of keys key0 .. key0 + 31 of the tile's kv head into a ring buffer
// at dst (HalfRows layout), zero-filled beyond the context. Lane l resolves key key0 + l
// (resolve_key_row); the copy instructions take the row offsets from the resolving lanes by
// shuffles. Head_dim 128: CH = 16 lanes per row, two whole 256-byte rows per instruction (three
// shuffles per instruction). Head_dim 64: a pair of lanes per row, lane 2k + e taking chunks e,
// e + 2, ... of row k (and of row k + 16 in the second pass), 16 rows per instruction in whole
// 32-byte sectors, three shuffles per 16 rows. Measured on the H200 (bench/cuda/notes/decode.md,
// 2026-12-01 ~18:50): the pairs made head_dim 64 faster at every batch (fewer instructions), but
// head_dim 128 up to 15% slower wherever the copies are the bound (four times the L2 requests
// per byte), so each keeps its own.
template <int HD>
__device__ __forceinline__ void copy_half_rows(const AttnParams& P, const DecodeTile& t, bool from_new, bool is_k,
                                               int64_t key0, uint32_t dst, int lane) {
  constexpr int CH = HD / 8;  // 16-byte chunks per row
  const KeyRow row = resolve_key_row(P, t.table, t.s, t.g, HD, t.qs, t.cached, t.context, from_new, key0 + lane);
  const bf16* own = key_row_source(row, is_k ? P.k_cache : P.v_cache, is_k ? P.k_new : P.v_new);
  if constexpr (HD == 128) {
    constexpr int kRowsPerCopy = 32 / CH;  // key rows one warp instruction copies
    const int ch = lane % CH, sub = lane / CH;
    // Two runs of 16 keys (key0 is a multiple of 32) where every row has one source.
    if (key_rows_in_runs(P, row, 0, 32, lane)) {
      copy_key_run16<HD>(P, own, 0, dst, 0, lane);
      copy_key_run16<HD>(P, own, 16, dst, 16, lane);
      return;
    }
#pragma unroll
    for (int i = 0; i < kHalfKeys / kRowsPerCopy; ++i) {
      const int r = i * kRowsPerCopy + sub;
      const bf16* src = shfl_row_source(own, r);
      const int w = __shfl_sync(0xffffffffu, row.where, r);
      cp_async_16(dst + swizzled(r, ch, CH), src + ch * 8, w != 0);
    }
  } else {
    const int e = lane & 1;
#pragma unroll 1  // two passes; unrolled, their copies took registers the kernel spilled
    for (int pass = 0; pass < kHalfKeys / 16; ++pass) {
      const int r = pass * 16 + (lane >> 1);
      const bf16* src = shfl_row_source(own, r);
      const int w = __shfl_sync(0xffffffffu, row.where, r);
#pragma unroll
      for (int i = 0; i < CH / 2; ++i) {
        const int c = 2 * i + e;
        cp_async_16(dst + swizzled(r, c, CH), src + c * 8, w != 0);
      }
    }
  }
}

// This lane's two key rows of the sub-block from sb0 (keys sb0 + lane and sb0 + lane + 32: the two
// table loads overlap), resolved once for the sub-block's K and V copies (copy_sub_block_rows).
template <int HD>
__device__ __forceinline__ void resolve_sub_block_rows(const AttnParams& P, const DecodeTile& t, bool from_new,
                                                       int64_t sb0, int lane, KeyRow (&row)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    row[h] = resolve_key_row(P, t.table, t.s, t.g, HD, t.qs, t.cached, t.context, from_new, sb0 + lane + 32 * h);
  }
}

// Copies the K (is_k) or V rows of a whole sub-block (64 keys, `row` from resolve_sub_block_rows)
// into the swizzled tile at dst with one warp, in 16-byte cp.async chunks, CH lanes per row: at
// head_dim 128 as four runs of 16 keys where the rows allow (copy_key_run16; H200, the chain
// kernel's decode-chain-ring rows: 0.89-0.94x the time), else with the row offsets passed by
// shuffles, keys beyond the context zero-filled.
template <int HD>
__device__ __forceinline__ void copy_sub_block_rows(const AttnParams& P, const KeyRow (&row)[2], bool is_k,
                                                    uint32_t dst, int lane) {
  constexpr int CH = HD / 8;             // 16-byte chunks per row
  constexpr int kRowsPerCopy = 32 / CH;  // key rows one warp instruction copies
  const bf16* cache = is_k ? P.k_cache : P.v_cache;
  const bf16* fresh = is_k ? P.k_new : P.v_new;
  const bf16* own[2] = {key_row_source(row[0], cache, fresh), key_row_source(row[1], cache, fresh)};
  if (HD == 128 && key_rows_in_runs(P, row[0], 0, 32, lane) && key_rows_in_runs(P, row[1], 0, 32, lane)) {
#pragma unroll
    for (int run = 0; run < kAttnKeys / 16; ++run) {  // four runs of 16 keys (sb0 is a multiple of 64)
      copy_key_run16<HD>(P, own[run / 2], (run % 2) * 16, dst, run * 16, lane);
    }
    return;
  }
  const int ch = lane % CH, sub = lane / CH;
#pragma unroll 8
  for (int i = 0; i < kAttnKeys / kRowsPerCopy; ++i) {
    const int r = i * kRowsPerCopy + sub;
    const bool high = r >= 32;  // the key is held in slot 1 of lane r - 32 (values selected, not a
                                // reference: that put the rows in local memory)
    const bf16* src = shfl_row_source(high ? own[1] : own[0], r & 31);
    const int w = __shfl_sync(0xffffffffu, high ? row[1].where : row[0].where, r & 31);
    cp_async_16(dst + swizzled(r, ch, CH), src + ch * 8, w != 0);
  }
}

template <int HD, int kHalves, int kWarps, int kExps = kExpsOwn>
__global__ void __launch_bounds__(32 * kWarps) attention_decode_kernel(AttnParams P, DecodeGrid grid) {
  constexpr int kRing = kDecodeRing;
  using L = DecodeLayout<HD, kHalves, kRing>;
  constexpr int NTD = HD / 8;  // n8 tiles over head_dim
  constexpr int kQRows = 8 * kHalves;
  // 16-row tiles at head_dim 128: the score loop two head_dim steps at a time (attend_score_keys)
  constexpr int kScoreUnroll = (kHalves == 2 && HD == 128) ? 2 : HD / 16;
  extern __shared__ __align__(128) unsigned char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const uint32_t q_s = smem_addr(smem) + warp * L::kBytes;
  const uint32_t buffers = q_s + L::kQBytes;
  wait_for_previous_kernel();
  DecodeTile t;
  if (!decode_tile_setup(P, int(blockIdx.z), int(blockIdx.y) * kWarps + warp, lane, &t)) return;
  const int nseg = t.nseg;
  const int64_t context = t.context, cached = t.cached;
  const bool reads_new = t.reads_new;
  load_decode_q<HD, kQRows>(P, t, q_s, lane);
  int64_t pos[2];
  decode_positions<kHalves>(t, lane, pos);

  // The next rows to load: part (0: K lo, 1: K hi, 2: V lo, 3: V hi) of sub-block i of segment c,
  // whose sub-blocks start at sb_first and whose keys are [lo, hi) (c >= nseg: none left).
  // Segments without a sub-block are passed over.
  struct Cursor : SegmentPosition {
    int i, part;
  };
  auto seek = [&](Cursor& k, int c) {
    k.i = k.part = 0;
    seek_segment_with_keys(P, t, pos, c, &k);
  };
  Cursor next_load;
  seek(next_load, int(blockIdx.x));

  // Issues the rows at the cursor into buffer `buf` as one cp.async group (an empty group when
  // nothing is left or the half is not needed, so that every item is one group) and advances the
  // cursor (copy_half_rows).
  auto issue = [&](int buf) {
    if (next_load.c < nseg) {
      const int64_t key0 = next_load.sb_first + int64_t(next_load.i) * kAttnKeys + kHalfKeys * (next_load.part & 1);
      const bool is_k = next_load.part < 2;
      if (is_k ? k_half_needed(key0, next_load.lo, next_load.hi) : key0 < context) {
        copy_half_rows<HD>(P, t, next_load.from_new, is_k, key0, buffers + buf * L::kItemBytes, lane);
      }
      if (++next_load.part == 4) {
        next_load.part = 0;
        if (++next_load.i == next_load.nsb) seek(next_load, next_load.c + int(gridDim.x));
      }
    }
    cp_async_commit();
  };

  // Items (halves of K or V rows of one sub-block) in order n = 0, 1, ...: item n sits in buffer
  // n % kRing; before item n is read, items up to n + kRing - 1 are issued. issue() and each phase
  // of a sub-block appear once in the code (loops not unrolled): with several short-lived warps per
  // SM at different places in the kernel, instruction fetch, not the copies, bounded a larger
  // version of this kernel at short contexts (ncu: half of all stall cycles).
  int slot = 0;  // buffer of the next item to read: (items consumed) % kRing, kept without a division
#pragma unroll 1
  for (int b = 0; b < kRing; ++b) issue(b);

  // Tiles of at most 8 rows take the swapped products (attention_decode_swapped.cuh): Q's columns
  // into registers once its copy (the oldest group) is in; its shared memory then stages scores.
  constexpr bool kSwapped = L::kSwapped;
  uint32_t qb[kSwapped ? HD / 16 : 1][2];
  float* const staged = reinterpret_cast<float*>(smem + warp * L::kBytes);
  if constexpr (kSwapped) hold_q_columns<HD, kRing>(q_s, qb);

  for (int c = blockIdx.x; c < nseg; c += gridDim.x) {
    const DecodeSegment cur = decode_segment(P, reads_new, cached, pos, c);
    float o[kSwapped ? HD / 16 : NTD][4];  // O^T when swapped, else O
    zero_fragments(o);
    float m[2] = {0.0f, 0.0f}, l[2] = {0.0f, 0.0f};
    bool first[2] = {true, true};

    for (int i = 0; i < cur.nsb; ++i) {
      const int64_t sb0 = cur.sb_first + int64_t(i) * kAttnKeys;
      bool active[2];
      const bool any = sub_block_active(cur, sb0, active);
      float sc[8][4], alpha[2], st[kSwapped ? 4 : 1][4], alpha_q[2];  // st: S^T (swapped)
      if constexpr (kSwapped) {
        zero_fragments(st);
      } else {
        zero_fragments(sc);
      }
      // Parts in item order: K lo, K hi (scores), then the softmax, V lo, V hi (P V). The softmax
      // runs after K hi's buffer is released, so that the next copy is in flight meanwhile.
#pragma unroll 1
      for (int part = 0; part < 4; ++part) {
        if (part == 2 && any) {
          if constexpr (kSwapped) swapped_scores_to_rows(staged, st, sc);
          attend_softmax<kHalves, kExps>(sb0, cur.rg, active, P.scale, sc, alpha, m, l, first);
          if constexpr (kSwapped) swapped_row_values(alpha[0], alpha_q);
        }
        cp_async_wait<kRing - 1>();
        __syncwarp();  // the other lanes' copies (and the Q tile) are in
        const uint32_t rows = buffers + slot * L::kItemBytes;
        if (any) {
          const int64_t key0 = sb0 + kHalfKeys * (part & 1);
          if constexpr (kSwapped) {
            if (part == 0) {
              if (k_half_needed(key0, cur.lo, cur.hi)) score_keys_swapped<HD, 0, 2>(rows, HalfRows<HD>{}, qb, st);
            } else if (part == 1) {
              if (k_half_needed(key0, cur.lo, cur.hi)) score_keys_swapped<HD, 2, 4>(rows, HalfRows<HD>{}, qb, st);
            } else if (part == 2) {
              value_keys_swapped<HD, 0, 2, true>(rows, HalfRows<HD>{}, sc, alpha_q, o, key0 < context);
            } else {
              value_keys_swapped<HD, 2, 4, false>(rows, HalfRows<HD>{}, sc, alpha_q, o, key0 < context);
            }
          } else if (part == 0) {
            if (k_half_needed(key0, cur.lo, cur.hi)) {
              attend_score_keys<HD, kHalves, 0, 2, kScoreUnroll>(q_s, 0, rows, HalfRows<HD>{}, sc);
            }
          } else if (part == 1) {
            if (k_half_needed(key0, cur.lo, cur.hi)) {
              attend_score_keys<HD, kHalves, 2, 4, kScoreUnroll>(q_s, 0, rows, HalfRows<HD>{}, sc);
            }
          } else if (part == 2) {
            attend_value_keys<HD, kHalves, 0, 2, true>(rows, HalfRows<HD>{}, sc, alpha, o, key0 < context);
          } else {
            attend_value_keys<HD, kHalves, 2, 4, false>(rows, HalfRows<HD>{}, sc, alpha, o, key0 < context);
          }
        }
        __syncwarp();  // every lane is done with the buffer before it is refilled
        issue(slot);
        slot = slot + 1 == kRing ? 0 : slot + 1;
      }
    }

    if constexpr (kSwapped) {
      finish_swapped_segment<HD>(P, grid, t, c, lane, o, m, l, first);
    } else {
      finish_decode_segment<HD, kHalves>(P, grid, t, c, lane, o, m, l, first);
    }
  }
  cp_async_wait<0>();  // nothing in flight when the warp leaves
}

}  // namespace samebits::cuda
