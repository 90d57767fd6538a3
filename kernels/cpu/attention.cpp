// Paged causal attention over a varlen batch (prefill chunks and decodes mixed), GQA, on the CPU.
//
// Every (query token, q head) output is computed by one thread from a list of key ranges
// ("partials"), each reduced by attention_partial_from_scores and merged in index order by
// attention_merge_partials (kernels/attention_math.h states every rounding). The plan decides the
// ranges; query i of a sequence with `cached` earlier keys sits at p = cached + i and sees [0, p]:
//   invariant (kFixedSplitSize): ranges [j*split_size, (j+1)*split_size) ∩ [0, p], j = 0, 1, ...,
//     aligned to absolute positions, every key read from the paged cache (the step's KV write came
//     first). A query's bits depend only on its q and its keys: not on the batch, the chunking,
//     the block table, the prefix cache or the thread count.
//   default (kSplitCount):
//     decode (q_len == 1), or separate_new_keys off: [0, p] cut into split_count equal parts
//       (split_range), from the cache; the count comes from the batch, so the bits do too;
//     prefill (q_len > 1) with separate_new_keys: cached == 0 -> one range [0, p] from k_new/v_new;
//       cached > 0 -> [0, cached) from the cache, then [cached, p] from k_new/v_new.
// Threads (OpenMP, ctx.num_threads) partition (token, kv head) items, each computing the q heads of
// that GQA group from shared K/V reads; no reduction is ever split across threads, so both modes
// give the same bits for any thread count.
// The exps of a range's keys are computed together by cpu::fixed_expf_array (AVX2/AVX-512 where
// the CPU has them; bitwise fixed_expf), then added key by key in key order. Where the CPU has
// AVX2 or AVX-512 (kernels/cpu/isa.h), the q.k scores and the p.v accumulation go to the vector
// paths of kernels/cpu/attention_simd.h (the same roundings per head and key; tests compare every
// path with this one bitwise); l, the sum of the exps, stays a scalar sum in key order.
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/attention_host.h"
#include "kernels/attention_math.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/attention_simd.h"
#include "kernels/cpu/exp_simd.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/lanes.h"
#include "kernels/cpu/threading.h"
#include "kernels/fixed_math.h"

namespace samebits {
namespace {

// Per-thread buffers, grown as needed.
struct Scratch {
  std::vector<float> q, scores, exps, m, l, acc, o;
  std::vector<const bf16*> k_rows, v_rows;
  std::vector<float*> head_acc;
  std::vector<AttentionKeyRange> sources;
};

struct FixedExp {
  float operator()(float x) const { return fixed_expf(x); }
};

// Where the K and V rows of one kv head live for a sequence of this step.
struct SeqRows {
  const AttentionArgs* a;
  const int32_t* table;  // the sequence's block table row
  int64_t first_token;   // its first query token in k_new/v_new
  int64_t cached;        // keys before this step
  int64_t head_offset;   // kv_head * head_dim
  int64_t token_stride;  // num_kv_heads * head_dim

  // Fills k_rows/v_rows[0, end - begin) with the rows of keys [begin, end).
  void gather(const AttentionKeyRange& src, const bf16** k_rows, const bf16** v_rows) const {
    if (src.from_new) {
      int64_t offset = (first_token + (src.begin - cached)) * token_stride + head_offset;
      for (int64_t j = 0; j < src.end - src.begin; ++j, offset += token_stride) {
        k_rows[j] = a->k_new + offset;
        v_rows[j] = a->v_new + offset;
      }
      return;
    }
    const int bs = a->block_size;
    for (int64_t j = src.begin; j < src.end;) {
      const int64_t in_block = j % bs;
      const int64_t run = std::min<int64_t>(bs - in_block, src.end - j);
      int64_t offset = (int64_t(table[j / bs]) * bs + in_block) * token_stride + head_offset;
      for (int64_t r = 0; r < run; ++r, offset += token_stride) {
        k_rows[j - src.begin + r] = a->k_cache + offset;
        v_rows[j - src.begin + r] = a->v_cache + offset;
      }
      j += run;
    }
  }
};

void prefetch_row(const bf16* row, int head_dim) {
  for (int d = 0; d < head_dim; d += 32) __builtin_prefetch(row + d);  // 64-byte lines
}

// Output rows of token t (sequence s) for the q heads of one kv head (its GQA group). The heads
// share every K and V row read; each head's partials and merge follow attention_math.h exactly.
void attend_group(const AttentionArgs& a, int s, int64_t t, int kv_head, cpu::Isa isa, Scratch& sc) {
  const int hd = a.head_dim;
  const int64_t q_stride = (hd + cpu::kLanes - 1) / cpu::kLanes * cpu::kLanes;  // zero-padded rows
  const int group = a.num_q_heads / a.num_kv_heads;
  const int first_head = kv_head * group;
  const int64_t q_begin = a.query_start[s];
  const int64_t q_len = a.query_start[s + 1] - q_begin;
  const int64_t cached = a.context_lens[s] - q_len;
  const int64_t p = cached + (t - q_begin);
  const SeqRows rows{&a,     a.block_tables + int64_t(s) * a.max_blocks_per_seq, q_begin, cached,
                     int64_t(kv_head) * hd, int64_t(a.num_kv_heads) * hd};

  sc.q.assign(size_t(group * q_stride), 0.f);
  const bf16* q_rows = a.q + (t * a.num_q_heads + first_head) * hd;
  for (int g = 0; g < group; ++g)
    for (int d = 0; d < hd; ++d) sc.q[g * q_stride + d] = to_float(q_rows[g * hd + d]);

  attention_key_ranges(a.plan, cached, q_len, p, &sc.sources);
  const int n = int(sc.sources.size());
  // Per head g and partial i: m, l at [g * n + i], acc at [(g * n + i) * hd].
  sc.m.assign(size_t(group) * n, 0.f);
  sc.l.assign(size_t(group) * n, 0.f);
  sc.acc.resize(size_t(group) * n * hd);
  sc.o.resize(hd);

  for (int i = 0; i < n; ++i) {
    const AttentionKeyRange src = sc.sources[i];
    const int64_t len = src.end - src.begin;
    if (len <= 0) continue;  // empty split: l stays 0, the merge skips it
    if (int64_t(sc.k_rows.size()) < len) {
      sc.k_rows.resize(len);
      sc.v_rows.resize(len);
    }
    if (int64_t(sc.scores.size()) < group * len) {
      sc.scores.resize(size_t(group * len));
      sc.exps.resize(size_t(group * len));
    }
    rows.gather(src, sc.k_rows.data(), sc.v_rows.data());
    constexpr int kAhead = 4;  // rows prefetched ahead: paged rows defeat the stride prefetcher
    const cpu::AttentionScoresJob scores{sc.q.data(), q_stride, group, hd, a.scale, sc.k_rows.data(), len,
                                         sc.scores.data()};
    if (isa == cpu::Isa::kAvx512) {
      cpu::attention_scores_avx512(scores);
    } else if (isa == cpu::Isa::kAvx2) {
      cpu::attention_scores_avx2(scores);
    } else {
      for (int64_t j = 0; j < len; ++j) {
        if (j + kAhead < len) prefetch_row(sc.k_rows[j + kAhead], hd);
        for (int g = 0; g < group; ++g) {
          sc.scores[g * len + j] = cpu::dot_lanes(sc.q.data() + g * q_stride, sc.k_rows[j], hd) * a.scale;
        }
      }
    }
    AttentionPartialState state[64];
    for (int g0 = 0; g0 < group; g0 += 64) {  // heads in batches of 64 (state on the stack)
      const int gn = std::min(group - g0, 64);
      for (int g = 0; g < gn; ++g) {
        const size_t at = size_t(g0 + g) * n + i;
        state[g] = attention_partial_begin(attention_scores_max(&sc.scores[(g0 + g) * len], len),
                                           &sc.acc[at * hd], hd);
        // e_j = fixed_expf(s_j - m) for the whole range at once (vectorised; same bits).
        float* e = &sc.exps[(g0 + g) * len];
        for (int64_t j = 0; j < len; ++j) e[j] = sc.scores[(g0 + g) * len + j] - state[g].m;
        cpu::fixed_expf_array(e, e, len);
      }
      if (isa != cpu::Isa::kPortable) {
        sc.head_acc.resize(size_t(gn));
        for (int g = 0; g < gn; ++g) {
          sc.head_acc[g] = &sc.acc[(size_t(g0 + g) * n + i) * hd];
          const float* e = &sc.exps[(g0 + g) * len];
          for (int64_t j = 0; j < len; ++j) state[g].l = state[g].l + e[j];  // key order
        }
        const cpu::AttentionValuesJob values{&sc.exps[g0 * len], sc.v_rows.data(), len, gn, hd, sc.head_acc.data()};
        if (isa == cpu::Isa::kAvx512) cpu::attention_values_avx512(values); else cpu::attention_values_avx2(values);
      } else {
        for (int64_t j = 0; j < len; ++j) {
          if (j + kAhead < len) prefetch_row(sc.v_rows[j + kAhead], hd);
          for (int g = 0; g < gn; ++g) {
            const size_t at = size_t(g0 + g) * n + i;
            attention_partial_add_exp(state[g], sc.exps[(g0 + g) * len + j], sc.v_rows[j], &sc.acc[at * hd], hd);
          }
        }
      }
      for (int g = 0; g < gn; ++g) {
        const size_t at = size_t(g0 + g) * n + i;
        sc.m[at] = state[g].m;
        sc.l[at] = state[g].l;
      }
    }
  }
  for (int g = 0; g < group; ++g) {
    const size_t at = size_t(g) * n;
    bf16* out_row = a.out + (t * a.num_q_heads + first_head + g) * hd;
    attention_merge_partials(&sc.m[at], &sc.l[at], &sc.acc[at * hd], n, hd, FixedExp{}, sc.o.data(), out_row);
  }
}

}  // namespace

absl::Status cpu_attention(const ExecContext& ctx, const AttentionArgs& args) {
  if (absl::Status st = check_attention_shape(args); !st.ok()) return st;
  if (args.num_seqs == 0) return absl::OkStatus();
  if (absl::Status st = check_attention_sequences(args, args.query_start, args.context_lens, args.block_tables);
      !st.ok()) {
    return st;
  }
  if (args.T == 0) return absl::OkStatus();

  // Sequence of every token, so work items can be (token, q head) pairs.
  std::vector<int> seq_of_token(args.T);
  for (int s = 0; s < args.num_seqs; ++s) {
    for (int64_t t = args.query_start[s]; t < args.query_start[s + 1]; ++t) seq_of_token[t] = s;
  }
  // Work items are (token, kv head): the q heads of one GQA group share its K/V reads. The schedule
  // is dynamic because causal queries differ in length; it decides only who computes an item,
  // never how.
  const int64_t items = args.T * args.num_kv_heads;
  const int threads = int(std::min<int64_t>(cpu::thread_count(ctx), items));
  const cpu::Isa isa = cpu::active_isa();
#pragma omp parallel num_threads(threads)
  {
    Scratch scratch;
#pragma omp for schedule(dynamic, 1)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t t = item / args.num_kv_heads;
      attend_group(args, seq_of_token[t], t, int(item % args.num_kv_heads), isa, scratch);
    }
  }
  return absl::OkStatus();
}

}  // namespace samebits
