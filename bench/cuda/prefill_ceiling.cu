// Kernels of the prefill-ceiling rows (prefill_ceiling.h): the wgmma prefill's visit with only its
// matrix products, in the order attention_prefill.cu issues them, on one K / V tile that stays in
// shared memory, or (the copies rung) on K and V copied through the prefill's ring by a producer
// warpgroup; on that, the softmax rung makes P by the prefill's interior softmax (optionally with
// the prefill's masked paths beside it, never taken), the folds rungs end a segment every 4 visits
// (folded by the consumers or the producer warpgroup, or dropped: drains), and the softmax rung
// also runs as many short blocks (item_visits). Timing only: no reference, nonsense outputs. Built
// for sm_90a only (wgmma); elsewhere the launch fails and the rows report it.
#include "bench/cuda/prefill_ceiling.h"

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/attention_prefill.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/sm90a/prefill_softmax.cuh"
#include "kernels/cuda/sm90a/wgmma_ops.cuh"
#include "kernels/cuda/tensor_core.cuh"
#include "kernels/fixed_math.h"

namespace samebits::bench {
namespace {

// Shared memory of a block: K (keys x HD, as HD / 64 regions of [keys][64 values], 128-byte swizzled
// rows: the prefill's layout) then V (the same bytes read MN-major), or a ring of such pairs; at
// least 120 KiB so that one block holds an SM whatever the registers allow (as the prefill's ring).
template <int HD, int KEYS, int WG, bool kCopies, bool kFolds = false, bool kProducerFolds = false>
struct CeilingLayout {
  // Q from shared memory (SS wgmma) with three warpgroups: o, the scores, P and Q's fragments do not
  // fit the 168 registers a thread has then (ptxas serialises the wgmma, C7511), so a third
  // warpgroup reads Q as FlashAttention-3 does.
  static constexpr bool kQShared = WG == 3;
  static constexpr int kTileBytes = KEYS * HD * 2;
  // With copies: a ring of the prefill's depth (attention_prefill.h: 4 stages at head_dim 128, 8 at
  // 64) of K and V tiles, then its full / empty mbarriers (and with producer folds the partial
  // buffer's, a full and an empty per warpgroup). Without: one K and V tile, then (three
  // warpgroups) a Q tile per warpgroup.
  static constexpr int kStages = kCopies ? cuda::prefill_stages(HD) : 1;
  static constexpr int kStageBytes = 2 * kTileBytes;
  static constexpr int kQBytes = kQShared ? WG * 64 * HD * 2 : 0;
  static constexpr int kBars = kStages * kStageBytes + kQBytes;
  static constexpr int kPartialBars = kBars + 16 * kStages;
  // The folds rungs' segment totals after the barriers: the prefill's layout (HD / 8 float4 groups
  // per consumer thread, group j of thread i at [j][i]).
  static constexpr int kTotals = kCopies ? kPartialBars + (kProducerFolds ? 32 : 0) : kBars;
  // With producer folds, one warpgroup's partial o at a time (the same layout over its 128 threads)
  // and its rows' m and l (a float4 per quad of lanes: m and l are the same in a quad's lanes).
  static constexpr int kPartial = kTotals + (kFolds ? HD / 2 * WG * 128 * 4 : 0);
  static constexpr int kPartialRows = kPartial + (kProducerFolds ? HD / 2 * 128 * 4 : 0);
  static constexpr int kUsed = kPartialRows + (kProducerFolds ? 32 * 16 : 0);
  static constexpr int kBytes = kUsed + 1024 > 120 * 1024 ? kUsed + 1024 : 120 * 1024;
  static constexpr int kThreads = (WG + (kCopies ? 1 : 0)) * 128;
  static_assert(kBytes <= 227 * 1024, "one block's shared memory");
};

// Two bf16 values in (-1/8, 1/8) at counter i of the synthetic weights' generator (splitmix64_at,
// as cuda_fill_synthetic): data of the magnitude the prefill multiplies, since the tensor cores'
// power, and so the clock under the power cap, depends on the bits.
constexpr uint64_t kDataKey = 0x5eed;
__device__ __forceinline__ uint32_t small_bf16_pair(uint32_t i) {
  const uint64_t z = splitmix64_at(kDataKey, i);
  return cuda::pack_bf16x2(float(int32_t(uint32_t(z))) * 0x1p-34f, float(int32_t(uint32_t(z >> 32))) * 0x1p-34f);
}

// The copies rung's source: K and V of kSourceKeys tokens x 8 kv heads, laid out as a prefill step's
// own keys ([token][kv head][head_dim], what a fresh prefill reads: 16 MiB at head_dim 128, in L2 as
// the real ones are); block b reads kv head b % 8, sub-block n from token 64 n (mod kSourceKeys).
constexpr int kSourceKeys = 4096, kSourceHeads = 8;

// The producer warpgroup of the copies rung: the prefill's ring protocol (produce() in
// attention_prefill.cu: two sub-blocks in flight, the older handed over by fence and arrive once
// its copies have landed), with contiguous keys instead of the block table's pages. after_copies(n)
// runs once sub-block n's copies are issued (and n - 1 handed over), after_copies(visits) at the end
// (the producer-folds rung folds there).
template <int HD, int KEYS, typename AfterCopies>
__device__ __forceinline__ void ceiling_produce(const uint16_t* k_src, const uint16_t* v_src, int visits,
                                                uint32_t ring, uint32_t full, uint32_t empty, int stages,
                                                AfterCopies after_copies) {
  // Thread t copies 16-byte chunk t % CH of rows t / CH + kRowsPerPass i: one swizzled offset, the
  // rows kRowsPerPass x 128 bytes apart (a multiple of 8 rows keeps the swizzle's row & 7).
  constexpr int CH = HD / 8, kTile = KEYS * HD * 2, kRowsPerPass = 128 / CH, kPasses = KEYS / kRowsPerPass;
  const int ptid = int(threadIdx.x) & 127, ch = ptid % CH, r0 = ptid / CH;
  const uint32_t dst0 = uint32_t((ch >> 3) * KEYS * 128) + cuda::swizzled(r0, ch & 7, 8);
  constexpr int64_t kRow = int64_t(kSourceHeads) * HD;  // one token's keys of all kv heads
  const int64_t head = int64_t(blockIdx.x % kSourceHeads) * HD + r0 * kRow + ch * 8;
  int handed = 0;
  auto hand_over = [&] {
    cuda::fence_proxy_async();
    cuda::mbar_arrive(full + 8 * (handed % stages));
    ++handed;
  };
#pragma unroll 1
  for (int n = 0; n < visits; ++n) {
    const int s = n % stages;
    cuda::mbar_wait(empty + 8 * s, ((n / stages) & 1) ^ 1);
    const uint32_t k_st = ring + s * 2 * kTile + dst0, v_st = k_st + kTile;
    const int64_t at = head + int64_t(n) * KEYS % kSourceKeys * kRow;
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
      cuda::cp_async_16(k_st + i * kRowsPerPass * 128, k_src + at + i * kRowsPerPass * kRow, true);
      cuda::cp_async_16(v_st + i * kRowsPerPass * 128, v_src + at + i * kRowsPerPass * kRow, true);
    }
    cuda::cp_async_commit();
    if (n + 1 - handed == 2) {
      cuda::cp_async_wait<1>();
      hand_over();
    }
    after_copies(n);
  }
  cuda::cp_async_wait<0>();
  while (handed < visits) hand_over();
  after_copies(visits);
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)  // (wgmma_wait exists only there)
// A segment end's first and last steps in the folds rungs: the products retired (o final; no wgmma
// in flight after), and the next segment started from zeros (o by volatile moves, as at the
// kernel's start: plain stores may be moved past the next scores' issue).
template <int NTD>
__device__ __forceinline__ void retire_products(float (&o)[NTD][4]) {
  cuda::wgmma_wait<0>();
  float(&of)[NTD * 4] = reinterpret_cast<float(&)[NTD * 4]>(o);
#pragma unroll
  for (int i = 0; i < NTD * 4; ++i) asm volatile("" : "+f"(of[i])::"memory");
}
template <int NTD>
__device__ __forceinline__ void reset_segment(float (&o)[NTD][4], float (&m)[2], float (&l)[2], bool (&first)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    m[h] = l[h] = 0.0f;
    first[h] = true;
  }
  float(&of)[NTD * 4] = reinterpret_cast<float(&)[NTD * 4]>(o);
#pragma unroll
  for (int i = 0; i < NTD * 4; ++i) asm volatile("mov.b32 %0, 0;" : "=f"(of[i]));
}

// The folds rung's segment end (the prefill's finish and next start): the products retired, the
// segment's partial folded into the rows' totals by the prefill's own fold_segment_partial (every
// row folds: all are interior), the totals to shared memory, the row state and o reset.
template <int NTD, int kConsumerThreads>
__device__ __forceinline__ void fold_segment(float (&o)[NTD][4], float (&m)[2], float (&l)[2], bool (&first)[2],
                                             float (&tot_m)[2], float (&tot_l)[2], bool (&has_total)[2],
                                             float4* totals, bool first_segment) {
  retire_products(o);
  const int tid = int(threadIdx.x);
  float ot[NTD][4];
  const bool folds[2] = {true, true};
  cuda::fold_segment_partial<NTD>(first_segment, folds, o, m, l, totals + tid, kConsumerThreads, ot, tot_m, tot_l,
                                  has_total);
#pragma unroll
  for (int nt = 0; nt < NTD; ++nt) {
    totals[nt * kConsumerThreads + tid] = make_float4(ot[nt][0], ot[nt][1], ot[nt][2], ot[nt][3]);
  }
  reset_segment(o, m, l, first);
}

// The producer-folds rung: a segment's fold taken off the consumers' chain. At a segment end a
// consumer warpgroup retires its products, stores its partial (o, and m and l per quad) into the
// one partial buffer and starts the next segment from zeros; the producer warpgroup folds the
// partial into the totals (fold_segment_partial's arithmetic: fold_scales, then fma(v, b, total *
// a) per value, l likewise; the first segment's totals are the partial) between its copies. The
// two warpgroups use the buffer in turn, warpgroup 0's segment k, then 1's, then 0's k + 1: each
// partial full / empty mbarrier pair's phases follow that order, so a parity names one phase.
// Warpgroup wg's wait before storing segment k's partial: the fold that freed the buffer for it
// (warpgroup 1's segment k - 1 for warpgroup 0; none before its first; warpgroup 0's segment k for
// warpgroup 1).
template <int NTD>
__device__ __forceinline__ void hand_partial(float (&o)[NTD][4], float (&m)[2], float (&l)[2], bool (&first)[2],
                                             int segment, int wg, uint32_t partial_bars, float4* partial,
                                             float4* rows) {
  retire_products(o);
  const uint32_t pfull = partial_bars + 8 * wg, pempty = partial_bars + 16 + 8 * wg;
  cuda::mbar_wait(pempty, wg == 0 ? (uint32_t(segment) & 1u) ^ 1u : uint32_t(segment) & 1u);
  const int t = int(threadIdx.x) & 127;
#pragma unroll
  for (int nt = 0; nt < NTD; ++nt) partial[nt * 128 + t] = make_float4(o[nt][0], o[nt][1], o[nt][2], o[nt][3]);
  if ((t & 3) == 0) rows[t >> 2] = make_float4(m[0], m[1], l[0], l[1]);
  cuda::mbar_arrive(pfull);  // (release: the stores above are seen by the producer's acquiring wait)
  reset_segment(o, m, l, first);
}

// The producer's side: warpgroup w's partial of segment k folded into its totals (producer thread
// p folds consumer thread p's values; tot_m / tot_l: the totals' row state of thread p's two rows
// in each warpgroup, kept in the producer's registers), then the buffer is the other warpgroup's.
template <int NTD>
__device__ __forceinline__ void fold_partial(int segment, int w, uint32_t partial_bars, const float4* partial,
                                             const float4* rows, float4* totals, float (&tot_m)[2][2],
                                             float (&tot_l)[2][2]) {
  const int p = int(threadIdx.x) & 127;
  cuda::mbar_wait(partial_bars + 8 * w, uint32_t(segment) & 1u);
  const float4 rs = rows[p >> 2];
  const float m[2] = {rs.x, rs.y}, l[2] = {rs.z, rs.w};
  float4* tot = totals + w * 128 + p;
  // (w selects the row state by branches: indexed by it, tot_m / tot_l would go to local memory)
  float tm[2] = {w == 0 ? tot_m[0][0] : tot_m[1][0], w == 0 ? tot_m[0][1] : tot_m[1][1]};
  float tl[2] = {w == 0 ? tot_l[0][0] : tot_l[1][0], w == 0 ? tot_l[0][1] : tot_l[1][1]};
  if (segment == 0) {
#pragma unroll 4
    for (int nt = 0; nt < NTD; ++nt) tot[nt * 256] = partial[nt * 128 + p];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      tm[h] = m[h];
      tl[h] = l[h];
    }
  } else {
    float a[2], b[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float new_m;
      cuda::fold_scales(true, tm[h], m[h], &new_m, &a[h], &b[h]);
      tl[h] = cuda::fold_value(true, tl[h], a[h], l[h], b[h]);
      tm[h] = new_m;
    }
#pragma unroll 4
    for (int nt = 0; nt < NTD; ++nt) {
      float4 v = tot[nt * 256];
      const float4 o = partial[nt * 128 + p];
      v.x = cuda::fold_value(true, v.x, a[0], o.x, b[0]);
      v.y = cuda::fold_value(true, v.y, a[0], o.y, b[0]);
      v.z = cuda::fold_value(true, v.z, a[1], o.z, b[1]);
      v.w = cuda::fold_value(true, v.w, a[1], o.w, b[1]);
      tot[nt * 256] = v;
    }
  }
  cuda::mbar_arrive(partial_bars + 16 + 8 * (1 - w));  // the buffer, free for the other warpgroup
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (w == 0) {
      tot_m[0][h] = tm[h];
      tot_l[0][h] = tl[h];
    } else {
      tot_m[1][h] = tm[h];
      tot_l[1][h] = tl[h];
    }
  }
}

// The drains rung's segment end: the products retired, the partial dropped, o and the row state
// reset (as fold_segment less the fold).
template <int NTD>
__device__ __forceinline__ void drop_partial(float (&o)[NTD][4], float (&m)[2], float (&l)[2], bool (&first)[2]) {
  retire_products(o);
  reset_segment(o, m, l, first);
}
#endif

// kFoldEvery > 0 (the folds rung): a segment ends every kFoldEvery visits, as invariant mode's
// 256-key segments (kFoldEvery = 4) end in the prefill; kFoldAhead: the next segment's first scores
// issued during a segment's last visit, as within a segment, so that they run under its fold;
// kFoldBy: who folds the partials (FoldBy; the producer: hand_partial, fold_partial); kStaggered:
// warpgroup 1's segments end half a segment after warpgroup 0's (its first is half as long);
// kEdges: the prefill's masked softmax paths in the visit, never taken (edge_visit = -1).
template <int HD, int KEYS, int WG, bool kCopies, bool kSoftmax, int kFoldEvery, bool kFoldAhead, FoldBy kFoldBy,
          bool kStaggered, bool kEdges>
__global__ void __launch_bounds__(CeilingLayout<HD, KEYS, WG, kCopies, (kFoldEvery > 0)>::kThreads, 1)
    prefill_ceiling_kernel(int visits, int edge_visit, const uint16_t* k_src, const uint16_t* v_src, float* sink) {
  static_assert(!kSoftmax || (kCopies && KEYS == 64), "the softmax rung is the copies rung's shape");
  static_assert(kFoldEvery == 0 || kSoftmax, "the folds rung is the softmax rung's");
  constexpr bool kProducerFolds = kFoldBy == FoldBy::producer;
  static_assert(!kProducerFolds || (kFoldEvery > 0 && WG == 2), "producer folds: the folds rung's shape");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using L = CeilingLayout<HD, KEYS, WG, kCopies, (kFoldEvery > 0), kProducerFolds>;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = cuda::smem_addr(smem_raw), base = (raw + 1023u) & ~1023u;
  const uint32_t full = base + L::kBars, empty = full + 8 * L::kStages;
  constexpr int kTile = L::kTileBytes;
  if constexpr (kCopies) {
    if (threadIdx.x == 0) {
      for (int s = 0; s < L::kStages; ++s) {
        cuda::mbar_init(full + 8 * s, 128);
        cuda::mbar_init(empty + 8 * s, WG * 128);
      }
      for (int w = 0; w < (kProducerFolds ? WG : 0); ++w) {
        cuda::mbar_init(base + L::kPartialBars + 8 * w, 128);       // a consumer warpgroup's partial stored
        cuda::mbar_init(base + L::kPartialBars + 16 + 8 * w, 128);  // the buffer free for warpgroup w
      }
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
  } else {
    uint32_t* words = reinterpret_cast<uint32_t*>(smem_raw + (base - raw));
    for (int i = int(threadIdx.x); i < L::kBars / 4; i += int(blockDim.x)) {
      words[i] = small_bf16_pair(uint32_t(i) + blockIdx.x);
    }
    cuda::fence_proxy_async();  // the generic-proxy writes above, seen by wgmma
  }
  __syncthreads();
  float4* totals = reinterpret_cast<float4*>(smem_raw + (base - raw) + L::kTotals);
  float4* partial = reinterpret_cast<float4*>(smem_raw + (base - raw) + L::kPartial);
  float4* partial_rows = reinterpret_cast<float4*>(smem_raw + (base - raw) + L::kPartialRows);
  if constexpr (kCopies) {  // the prefill kernel's register split between producer and consumers
    if (threadIdx.x >= WG * 128) {
      asm volatile("setmaxnreg.dec.sync.aligned.u32 56;\n");
      if constexpr (kProducerFolds) {
        // Partial u (warpgroup u % 2's of segment u / 2: the buffer's order) is folded once the
        // copies of its segment's last sub-block + kLag + u % 2 are issued, one partial per copy
        // (folding both at once starved the consumers of sub-blocks: notes/prefill-time.md). The
        // consumers have the sub-blocks up to that one's predecessor to visit meanwhile, and the
        // ring's stage for the sub-block copied there is freed by visits before the partial's
        // stores, so no wait goes round.
        constexpr int kLag = 3;
        float tot_m[2][2] = {}, tot_l[2][2] = {};
        int folded = 0;  // partials folded
        ceiling_produce<HD, KEYS>(k_src, v_src, visits, base, full, empty, L::kStages, [&](int n) {
          while (folded < 2 * (visits / kFoldEvery) &&
                 (n == visits || (folded / 2 + 1) * kFoldEvery - 1 + kLag + folded % 2 <= n)) {
            fold_partial<HD / 8>(folded / 2, folded % 2, base + L::kPartialBars, partial, partial_rows, totals,
                                 tot_m, tot_l);
            ++folded;
          }
          if (n == visits) {
            float x = tot_l[0][0] + tot_l[0][1] + tot_l[1][0] + tot_l[1][1];
            if (x == 1234.5f) *sink = x;
          }
        });
      } else {
        ceiling_produce<HD, KEYS>(k_src, v_src, visits, base, full, empty, L::kStages, [](int) {});
      }
      return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 224;\n");
  }

  const int tid = int(threadIdx.x), wg = __shfl_sync(0xffffffffu, tid / 128, 0);
  const uint64_t q_desc = cuda::smem_desc(base + L::kStages * L::kStageBytes + wg * 64 * HD * 2);
  // Q's A fragments, as the prefill keeps them in registers: with copies, read from the copies'
  // source (bf16 pairs of the same magnitude; each load a warp's 128 consecutive bytes, all issued
  // before the first is used), so that a block's start costs about a load's latency as the
  // prefill's Q copy does, not the ~1,000 dependent instructions a warp of generating them took,
  // which rows of many short blocks (item_visits) would count as the blocks' cost; else generated.
  uint32_t qf[L::kQShared ? 1 : HD / 16][4];
#pragma unroll
  for (int kk = 0; kk < (L::kQShared ? 0 : HD / 16); ++kk)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (kCopies) {
        const uint32_t at = blockIdx.x * 8192u + uint32_t((kk * 4 + i) * int(blockDim.x) + tid);
        qf[kk][i] = __ldg(reinterpret_cast<const uint32_t*>(k_src) + at % (kSourceKeys * HD / 2));
      } else {
        qf[kk][i] = small_bf16_pair(uint32_t(tid * 64 + kk * 4 + i));
      }
    }
#pragma unroll
  for (int kk = 0; kk < (L::kQShared ? 0 : HD / 16); ++kk)
#pragma unroll
    for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(qf[kk][i]));  // (all before the first wgmma)
  const uint64_t k_desc0 = cuda::smem_desc(base), v_desc0 = cuda::smem_desc_mn(base + kTile, KEYS * 128);
  // Ring stage of sub-block n through lane 0, so that the descriptors stay warp-uniform (as the prefill).
  auto stage_of = [](int n) { return __shfl_sync(0xffffffffu, n % L::kStages, 0); };
  float sc[KEYS / 8][4], o[HD / 8][4];
  float(&scf)[KEYS / 2] = reinterpret_cast<float(&)[KEYS / 2]>(sc);
  float(&of)[HD / 2] = reinterpret_cast<float(&)[HD / 2]>(o);
  // Accumulators zeroed by volatile moves, which stay before the first wgmma: plain assignments of
  // o may be moved past the scores' issue, and a write to an accumulator while a wgmma is in flight
  // makes ptxas serialise every wgmma (C7515). (The scores' zeros are for the compiler only: their
  // first k16 step does not read them, as attention_prefill.cu's sc_next.)
#pragma unroll
  for (int i = 0; i < HD / 2; ++i) asm volatile("mov.b32 %0, 0;" : "=f"(of[i]));
#pragma unroll
  for (int i = 0; i < KEYS / 2; ++i) asm volatile("mov.b32 %0, 0;" : "=f"(scf[i]));
  // S = Q K^T of sub-block n over the head dim in k16 steps, left in flight (issue_scores of the
  // prefill: with copies, once the stage is handed over).
  auto issue_scores = [&](int n) {
    const int s = stage_of(n);
    const uint64_t k_desc = cuda::desc_advance(k_desc0, uint32_t(s * L::kStageBytes));
    if constexpr (kCopies) cuda::mbar_wait(full + 8 * s, (n / L::kStages) & 1);
    cuda::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) {
      const uint64_t b = cuda::desc_advance(k_desc, uint32_t((kk >> 2) * KEYS * 128 + (kk & 3) * 32));
      if constexpr (L::kQShared) {  // (accumulates onto the last scores: the values do not matter here)
        cuda::wgmma_m64k16<KEYS>(scf, cuda::desc_advance(q_desc, uint32_t((kk >> 2) * 8192 + (kk & 3) * 32)), b);
      } else if (kk == 0) {
        cuda::wgmma_m64k16_rs</*kTransB=*/false, /*kAccumulate=*/false>(scf, qf[kk], b);
      } else {
        cuda::wgmma_m64k16_rs</*kTransB=*/false>(scf, qf[kk], b);
      }
    }
    cuda::wgmma_commit();
  };
  issue_scores(0);
  bool scores_issued = true;  // sub-block v's scores issued during visit v - 1 (not after a fold)
  uint32_t p[KEYS / 16][4];
  // The softmax rung's row state (prefill_softmax.cuh): one segment of `visits` interior sub-blocks.
  // The scale is the prefill's (AttnParams::scale: 1 / sqrt(head_dim) in log2 units, as
  // kernels/cuda/attention.cu forms it).
  const float scale = (HD == 128 ? 0.08838834764831845f : 0.125f) * fixed_math_detail::kLog2e;
  float m[2] = {0.0f, 0.0f}, l[2] = {0.0f, 0.0f};
  bool first[2] = {true, true};
  // The folds rung's running totals (the prefill's: the first segment's in registers, then in shared
  // memory between segments).
  float tot_m[2] = {0.0f, 0.0f}, tot_l[2] = {0.0f, 0.0f};
  bool has_total[2] = {false, false};
#pragma unroll 1  // (one visit per iteration, as the prefill's walk; unrolled, the copies form spilled)
  for (int v = 0; v < visits; ++v) {
    // A segment's last visit: its fold follows the products; the next scores are issued after the
    // fold (as the prefill), or before it (kFoldAhead).
    constexpr int kSegment = kFoldEvery > 0 ? kFoldEvery : 1;  // (no % 0 where there are no folds)
    const int segment_last = kStaggered && wg == 1 ? kSegment / 2 - 1 : kSegment - 1;
    const bool segment_end = kFoldEvery > 0 && v % kSegment == segment_last;
    if (!scores_issued) issue_scores(v);
    cuda::wgmma_wait<0>();  // the scores of v and the products of v - 1
#pragma unroll
    for (int i = 0; i < KEYS / 2; ++i) asm volatile("" : "+f"(scf[i])::"memory");  // (read after the wait)
    if (kCopies && v > 0) cuda::mbar_arrive(empty + 8 * stage_of(v - 1));  // v - 1's products retired
    if constexpr (kSoftmax) {
      // o and P read after the wait (o final, P's registers free), as the prefill's retire_values.
#pragma unroll
      for (int i = 0; i < HD / 2; ++i) asm volatile("" : "+f"(of[i])::"memory");
#pragma unroll
      for (int kk = 0; kk < KEYS / 16; ++kk)
#pragma unroll
        for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(p[kk][i])::"memory");
      // The prefill's interior visit (attention_prefill.cu's consume): max and alpha, the
      // exponentials' arguments out of the accumulators, o rescaled unless no value changes, the
      // next scores issued, then the exponentials and sums under them.
      float alpha[2], x[8][4];
      const bool was_first[2] = {first[0], first[1]};
      // kEdges: the prefill's two other softmax paths beside the interior one (a sub-block masked
      // where every row has keys; attend_softmax where a row has none), chosen as the prefill
      // chooses them, by run-time tests that never pick them here (edge_visit is -1).
      const bool interior = !kEdges || v != edge_visit, every_row = interior || (edge_visit & 1) != 0;
      cuda::InteriorMax r;
      if (interior) {
        r = cuda::interior_max(scale, sc, alpha, m, first);
        cuda::interior_exp_arguments(r, sc, x);
      } else if (every_row) {
        const int64_t end = int64_t(edge_visit) * KEYS + KEYS / 2;
        const cuda::SegRange rg[2] = {{0, end, false}, {0, end, false}};
        cuda::mask_outside_ranges(int64_t(v) * KEYS, rg, sc, x);
        r = cuda::interior_max(scale, x, alpha, m, first);
        cuda::interior_exp_arguments(r, x, x);
      } else {
        const cuda::SegRange rg[2] = {{0, int64_t(edge_visit) * KEYS + 5, false}, {0, int64_t(edge_visit) * KEYS, false}};
        const bool active[2] = {true, false};
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) x[nt][e] = sc[nt][e];
        cuda::attend_softmax<2>(int64_t(v) * KEYS, rg, active, scale, x, alpha, m, l, first);
      }
      // (The arguments formed here, before the next scores are issued into sc: left to the
      // compiler, their multiply-adds sank below that issue and ptxas serialised every wgmma, C7515.
      // In the prefill the branch between the interior and the masked softmax pins them.)
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(x[nt][e]));
      const bool unchanged = (alpha[0] == 1.0f || was_first[0]) && (alpha[1] == 1.0f || was_first[1]);
      if (!__all_sync(0xffffffffu, unchanged)) {
#pragma unroll
        for (int nt = 0; nt < HD / 8; ++nt) {
          o[nt][0] = o[nt][0] * alpha[0];
          o[nt][1] = o[nt][1] * alpha[0];
          o[nt][2] = o[nt][2] * alpha[1];
          o[nt][3] = o[nt][3] * alpha[1];
        }
      }
      if (v + 1 < visits && (!segment_end || kFoldAhead)) issue_scores(v + 1);
      if (every_row) cuda::interior_exp_sum(r, x, alpha, m, l, first);
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        p[kk][0] = cuda::pack_bf16x2(x[2 * kk][0], x[2 * kk][1]);
        p[kk][1] = cuda::pack_bf16x2(x[2 * kk][2], x[2 * kk][3]);
        p[kk][2] = cuda::pack_bf16x2(x[2 * kk + 1][0], x[2 * kk + 1][1]);
        p[kk][3] = cuda::pack_bf16x2(x[2 * kk + 1][2], x[2 * kk + 1][3]);
      }
    } else {
#pragma unroll
      for (int kk = 0; kk < KEYS / 16; ++kk) {  // P in the A fragment layout, as the prefill packs it
        p[kk][0] = cuda::pack_bf16x2(sc[2 * kk][0] * 0.0625f, sc[2 * kk][1] * 0.0625f);
        p[kk][1] = cuda::pack_bf16x2(sc[2 * kk][2] * 0.0625f, sc[2 * kk][3] * 0.0625f);
        p[kk][2] = cuda::pack_bf16x2(sc[2 * kk + 1][0] * 0.0625f, sc[2 * kk + 1][1] * 0.0625f);
        p[kk][3] = cuda::pack_bf16x2(sc[2 * kk + 1][2] * 0.0625f, sc[2 * kk + 1][3] * 0.0625f);
      }
      if (v + 1 < visits) issue_scores(v + 1);
    }
    const uint64_t v_desc = cuda::desc_advance(v_desc0, uint32_t(stage_of(v) * L::kStageBytes));
    cuda::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < KEYS / 16; ++kk) {
      cuda::wgmma_m64k16_rs</*kTransB=*/true>(of, p[kk], cuda::desc_advance(v_desc, uint32_t(kk * 2048)));
    }
    cuda::wgmma_commit();
    scores_issued = !segment_end || kFoldAhead;
    if constexpr (kProducerFolds) {
      if (segment_end) hand_partial<HD / 8>(o, m, l, first, v / kSegment, wg, base + L::kPartialBars, partial, partial_rows);
    } else if constexpr (kFoldBy == FoldBy::nobody && kFoldEvery > 0) {
      if (segment_end) drop_partial<HD / 8>(o, m, l, first);
    } else if constexpr (kFoldEvery > 0) {
      if (segment_end) fold_segment<HD / 8, WG * 128>(o, m, l, first, tot_m, tot_l, has_total, totals, v < kFoldEvery);
    }
  }
  cuda::wgmma_wait<0>();
  if (kCopies) cuda::mbar_arrive(empty + 8 * stage_of(visits - 1));
  float x = l[0] + l[1] + tot_l[0] + tot_l[1];
#pragma unroll
  for (int i = 0; i < HD / 2; ++i) x += of[i];
  if (x == 1234.5f) *sink = x;
#endif
}

// The copies rung's K and V at head_dim hd (K, then V), made on first use and kept for the process.
const uint16_t* copy_source(int hd) {
  static const uint16_t* sources[2] = {nullptr, nullptr};
  const uint16_t*& src = sources[hd == 128 ? 1 : 0];
  if (src == nullptr) {
    const int64_t words = int64_t(kSourceHeads) * kSourceKeys * hd;  // two tensors, two values a word
    void* p = nullptr;
    if (cudaMalloc(&p, size_t(words) * 4) != cudaSuccess) return nullptr;
    if (!cuda_fill_synthetic(p, 2 * words, kDataKey, 0.125f, 0.0f).ok() || cudaDeviceSynchronize() != cudaSuccess) {
      return nullptr;
    }
    src = static_cast<const uint16_t*>(p);
  }
  return src;
}

template <int HD, int KEYS, int WG, bool kCopies, bool kSoftmax = false, int kFoldEvery = 0, bool kFoldAhead = false,
          FoldBy kFoldBy = FoldBy::consumers, bool kStaggered = false, bool kEdges = false>
bool launch(cudaStream_t stream, int blocks, int visits, float* sink) {
  using L = CeilingLayout<HD, KEYS, WG, kCopies, (kFoldEvery > 0), kFoldBy == FoldBy::producer>;
  auto* kernel =
      prefill_ceiling_kernel<HD, KEYS, WG, kCopies, kSoftmax, kFoldEvery, kFoldAhead, kFoldBy, kStaggered, kEdges>;
  static const bool sized =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, L::kBytes) == cudaSuccess;
  const uint16_t* k_src = kCopies ? copy_source(HD) : nullptr;
  if (!sized || (kCopies && k_src == nullptr)) return false;
  const uint16_t* v_src = kCopies ? k_src + int64_t(kSourceHeads) * kSourceKeys * HD : nullptr;
  kernel<<<blocks, L::kThreads, L::kBytes, stream>>>(visits, /*edge_visit=*/-1, k_src, v_src, sink);
  return cudaGetLastError() == cudaSuccess;
}

// The shapes with a kernel: 64 or 128 for each of head_dim and keys with 1 or 2 warpgroups; three
// warpgroups at the prefill's own shape, head_dim 128 with 64 keys (the question the real kernel's
// registers could not answer); the copies, softmax and folds rungs at the prefill's shapes, 64 keys
// and 2 warpgroups.
struct Kernel {
  CeilingShape shape;
  bool (*launch)(cudaStream_t, int, int, float*);
};
constexpr Kernel kKernels[] = {
    {{128, 64, 1}, launch<128, 64, 1, false>},  {{128, 64, 2}, launch<128, 64, 2, false>},
    {{128, 64, 3}, launch<128, 64, 3, false>},  {{128, 128, 1}, launch<128, 128, 1, false>},
    {{128, 128, 2}, launch<128, 128, 2, false>}, {{64, 64, 1}, launch<64, 64, 1, false>},
    {{64, 64, 2}, launch<64, 64, 2, false>},    {{64, 128, 1}, launch<64, 128, 1, false>},
    {{64, 128, 2}, launch<64, 128, 2, false>},  {{128, 64, 2, true}, launch<128, 64, 2, true>},
    {{64, 64, 2, true}, launch<64, 64, 2, true>},
    {{128, 64, 2, true, true}, launch<128, 64, 2, true, true>},
    {{64, 64, 2, true, true}, launch<64, 64, 2, true, true>},
    {{128, 64, 2, true, true, 4}, launch<128, 64, 2, true, true, 4>},
    {{64, 64, 2, true, true, 4}, launch<64, 64, 2, true, true, 4>},
    {{128, 64, 2, true, true, 4, true}, launch<128, 64, 2, true, true, 4, true>},
    {{64, 64, 2, true, true, 4, true}, launch<64, 64, 2, true, true, 4, true>},
#define SEGMENT_ENDS(HD, AHEAD, BY) {{HD, 64, 2, true, true, 4, AHEAD, BY}, launch<HD, 64, 2, true, true, 4, AHEAD, BY>}
    SEGMENT_ENDS(128, false, FoldBy::producer), SEGMENT_ENDS(64, false, FoldBy::producer),
    SEGMENT_ENDS(128, true, FoldBy::producer),  SEGMENT_ENDS(64, true, FoldBy::producer),
    SEGMENT_ENDS(128, false, FoldBy::nobody),   SEGMENT_ENDS(64, false, FoldBy::nobody),
    SEGMENT_ENDS(128, true, FoldBy::nobody),    SEGMENT_ENDS(64, true, FoldBy::nobody),
#undef SEGMENT_ENDS
#define STAGGERED(HD, BY) {{HD, 64, 2, true, true, 4, false, BY, true}, launch<HD, 64, 2, true, true, 4, false, BY, true>}
    STAGGERED(128, FoldBy::consumers), STAGGERED(64, FoldBy::consumers),
    STAGGERED(128, FoldBy::nobody),    STAGGERED(64, FoldBy::nobody),
#undef STAGGERED
#define DRAINS_EVERY(HD, N) {{HD, 64, 2, true, true, N, false, FoldBy::nobody}, launch<HD, 64, 2, true, true, N, false, FoldBy::nobody>}
    DRAINS_EVERY(128, 8), DRAINS_EVERY(64, 8), DRAINS_EVERY(128, 32), DRAINS_EVERY(64, 32),
#undef DRAINS_EVERY
#define EDGES(HD) {{HD, 64, 2, true, true, 0, false, FoldBy::consumers, false, 0, true}, launch<HD, 64, 2, true, true, 0, false, FoldBy::consumers, false, true>}
    EDGES(128), EDGES(64),
#undef EDGES
};
const Kernel* find_kernel(const CeilingShape& s) {
  for (const Kernel& k : kKernels) {
    const CeilingShape& t = k.shape;
    if (t.head_dim == s.head_dim && t.keys == s.keys && t.warpgroups == s.warpgroups && t.copies == s.copies &&
        t.softmax == s.softmax && t.fold_every == s.fold_every && t.fold_ahead == s.fold_ahead &&
        t.fold_by == s.fold_by && t.staggered == s.staggered && t.edges == s.edges &&
        (s.item_visits == 0 || (s.softmax && s.fold_every == 0 && !s.edges))) {
      return &k;
    }
  }
  return nullptr;
}

}  // namespace

bool has_prefill_ceiling(const CeilingShape& shape) { return find_kernel(shape) != nullptr; }

bool launch_prefill_ceiling(void* stream, const CeilingShape& shape, int blocks, int visits, float* sink) {
  const Kernel* k = find_kernel(shape);
  return k != nullptr && blocks > 0 && visits > 0 && k->launch(static_cast<cudaStream_t>(stream), blocks, visits, sink);
}

double prefill_ceiling_flops(const CeilingShape& s, int blocks, int visits) {
  // per warpgroup and visit: 64 rows x keys x head_dim multiply-adds for each of QK^T and PV
  return double(blocks) * s.warpgroups * visits * 2.0 * (2.0 * 64 * s.keys * s.head_dim);
}

}  // namespace samebits::bench
