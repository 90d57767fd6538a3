// The tensor-core ceiling of the wgmma prefill's visit (bench_attention.cpp's prefill-ceiling rows):
// the visit of kernels/cuda/sm90a/attention_prefill.cu with everything but its matrix products
// taken out. Each consumer warpgroup repeats: retire the scores of sub-block n and the P V products
// of n - 1 (one wait for both, as the kernel), turn the scores into P (bf16, scaled: no softmax),
// issue the scores of n + 1 (Q from registers, K from shared memory) and the P V products of n (P
// from registers, V from shared memory). No copies (one K and V tile in shared memory, read by
// every visit), no mbarriers, no masks, no segment folds. What it runs at is the most the visit's
// shape can give (sub-blocks of `keys` keys, `warpgroups` of them per SM unsynchronised) before any
// of the real kernel's other work: beside the prefill rows it splits their time between the
// products' own pace and the rest. (Outputs are nonsense; timing only.)
#pragma once

namespace samebits::bench {

// Who folds a segment's partial in the folds rungs: the consumers, as the prefill; the producer
// warpgroup (the consumers store the partial to shared memory, the producer folds it between its
// copies: same arithmetic); nobody (the products drained, o and the row state reset, the partial
// dropped: the least that any segment end keeping o in registers costs).
enum class FoldBy { consumers, producer, nobody };

struct CeilingShape {
  int head_dim = 128;   // 64 or 128
  int keys = 64;        // keys per visit: 64 (CUDA attention's sub-block) or 128
  int warpgroups = 2;   // consumer warpgroups per block (one block per SM): 1, 2 or 3
  // The copies rung: K and V copied into the prefill's ring each visit by a producer warpgroup
  // (cp.async, full / empty mbarriers, its register split) from 4096 tokens' keys laid out as a
  // fresh prefill's own ([token][kv head][head_dim]).
  bool copies = false;
  // The softmax rung (with copies only): each visit's P by the prefill's interior softmax
  // (kernels/cuda/sm90a/prefill_softmax.cuh: the rows' max, alpha, o rescaled where a row's max
  // rose, the exponentials and their sums) instead of a plain scaling: the real kernel's visit on a
  // segment of interior sub-blocks, without its rows' resolution, masks, folds or items.
  bool softmax = false;
  // The folds rung (with the softmax only): a segment ends every `fold_every` visits (4: invariant
  // mode's 256-key segments), its partial folded into the rows' totals as the prefill folds them
  // (shared memory between segments); 0: one segment.
  int fold_every = 0;
  // With folds: the next segment's first scores issued during a segment's last visit (as within a
  // segment), so that they run under the fold; false: issued after it, as the prefill does.
  bool fold_ahead = false;
  // With folds: who folds (FoldBy).
  FoldBy fold_by = FoldBy::consumers;
  // With folds: consumer warpgroup 1's segment ends half a segment after warpgroup 0's (synthetic
  // keys: its first segment is half as long), so that the two never drain at the same visit.
  bool staggered = false;
  // Visits per block: 0 for one block per SM of 256 visits a warpgroup (the rungs' clean pipeline);
  // V > 0 for 256 / V times as many blocks of V visits each, as the prefill's items (one block each,
  // ~32 visits at chunk 4096, ~8.5 at 1024): each block's start (barriers, the ring's first copies,
  // the first scores with nothing under them) and end (the last products drained) in the time.
  int item_visits = 0;
  // The softmax rung (no folds) with the prefill's two masked softmax paths in its visit, chosen by
  // run-time tests as the prefill chooses them, never taken: what their code costs a loop of
  // interior visits.
  bool edges = false;
};

// Whether launch_prefill_ceiling has a kernel for the shape (64 or 128 for each of head_dim and
// keys with 1 or 2 warpgroups; 3 warpgroups at head_dim 128 with 64 keys only; copies, with or
// without the softmax, with 64 keys and 2 warpgroups; with the softmax: the masked paths, folds
// every 4 visits by the consumers (ahead or not, staggered or not), the producer (ahead or not) or
// nobody (ahead or not, staggered or not), drains every 8 or 32, any item_visits without folds).
bool has_prefill_ceiling(const CeilingShape& shape);
// Launches `blocks` blocks (one block holds an SM), each warpgroup `visits` visits (the shape's
// item_visits does not choose the kernel: the caller sizes blocks and visits by it); `sink`
// receives a value only if the outputs fold to one that they never give (so nothing is dropped).
// False on a launch error or a shape without a kernel.
bool launch_prefill_ceiling(void* stream, const CeilingShape& shape, int blocks, int visits, float* sink);
// The multiply-add work of one launch in FLOP (2 per multiply-add): QK^T and PV of each visit.
double prefill_ceiling_flops(const CeilingShape& shape, int blocks, int visits);

}  // namespace samebits::bench
