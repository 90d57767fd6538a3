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
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/attention_math.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/lanes.h"
#include "kernels/cpu/threading.h"
#include "kernels/fixed_math.h"

namespace samebits {
namespace {

// One partial's key range, [begin, end) in absolute positions, and where its keys are read.
struct KeySource {
  int64_t begin = 0, end = 0;
  bool from_new = false;  // true: k_new/v_new rows of this step; false: the paged cache
};

bool reads_new_keys(const AttentionPlan& plan, int64_t q_len) {
  return plan.kind == AttentionPlan::Kind::kSplitCount && plan.separate_new_keys && q_len > 1;
}

// The ranges of the query at absolute position p of a sequence with `cached` keys before this step.
void query_sources(const AttentionPlan& plan, int64_t cached, int64_t q_len, int64_t p,
                   std::vector<KeySource>* out) {
  out->clear();
  const int64_t visible = p + 1;
  if (reads_new_keys(plan, q_len)) {
    if (cached > 0) out->push_back({0, cached, false});
    out->push_back({cached, visible, true});
    return;
  }
  const int n = num_splits(plan, visible);
  for (int i = 0; i < n; ++i) {
    const KeyRange r = split_range(plan, visible, i);
    out->push_back({r.begin, r.end, false});
  }
}

absl::Status invalid(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("attention: ", what));
}

absl::Status validate(const AttentionArgs& a) {
  if (a.num_seqs < 0) return invalid(absl::StrCat("num_seqs = ", a.num_seqs, " is negative"));
  if (a.T < 0) return invalid(absl::StrCat("T = ", a.T, " is negative"));
  if (a.num_q_heads <= 0 || a.num_kv_heads <= 0 || a.num_q_heads % a.num_kv_heads != 0) {
    return invalid(absl::StrCat("num_q_heads = ", a.num_q_heads, " is not a positive multiple of ",
                                "num_kv_heads = ", a.num_kv_heads));
  }
  if (a.head_dim <= 0) return invalid(absl::StrCat("head_dim = ", a.head_dim, " is not positive"));
  if (a.block_size <= 0) return invalid(absl::StrCat("block_size = ", a.block_size, " is not positive"));
  if (a.plan.kind == AttentionPlan::Kind::kFixedSplitSize && a.plan.split_size <= 0) {
    return invalid(absl::StrCat("plan.split_size = ", a.plan.split_size, " is not positive"));
  }
  if (a.plan.kind == AttentionPlan::Kind::kSplitCount && a.plan.split_count <= 0) {
    return invalid(absl::StrCat("plan.split_count = ", a.plan.split_count, " is not positive"));
  }
  if (a.num_seqs == 0) {
    if (a.T != 0) return invalid(absl::StrCat("T = ", a.T, " tokens but num_seqs = 0"));
    return absl::OkStatus();
  }
  if (!a.query_start) return invalid("query_start is null");
  if (!a.context_lens) return invalid("context_lens is null");
  if (!a.block_tables) return invalid("block_tables is null");
  if (!a.q) return invalid("q is null");
  if (!a.out) return invalid("out is null");
  if (!a.k_cache || !a.v_cache) return invalid(a.k_cache ? "v_cache is null" : "k_cache is null");
  if (a.max_blocks_per_seq <= 0) {
    return invalid(absl::StrCat("max_blocks_per_seq = ", a.max_blocks_per_seq, " is not positive"));
  }
  if (a.num_blocks <= 0) return invalid(absl::StrCat("num_blocks = ", a.num_blocks, " is not positive"));
  if (a.query_start[0] != 0) return invalid(absl::StrCat("query_start[0] = ", a.query_start[0], ", expected 0"));
  if (a.query_start[a.num_seqs] != a.T) {
    return invalid(absl::StrCat("query_start[", a.num_seqs, "] = ", a.query_start[a.num_seqs],
                                " differs from T = ", a.T));
  }
  for (int s = 0; s < a.num_seqs; ++s) {
    const int64_t q_len = int64_t(a.query_start[s + 1]) - a.query_start[s];
    if (q_len < 0) {
      return invalid(absl::StrCat("sequence ", s, ": query_start[", s + 1, "] = ", a.query_start[s + 1],
                                  " is below query_start[", s, "] = ", a.query_start[s]));
    }
    const int64_t context = a.context_lens[s];
    if (context < q_len) {
      return invalid(absl::StrCat("sequence ", s, ": context_lens = ", context, " is below its ",
                                  q_len, " query tokens"));
    }
    const int64_t blocks = (context + a.block_size - 1) / a.block_size;
    if (blocks > a.max_blocks_per_seq) {
      return invalid(absl::StrCat("sequence ", s, ": context_lens = ", context, " needs ", blocks,
                                  " blocks, more than max_blocks_per_seq = ", a.max_blocks_per_seq));
    }
    const int32_t* table = a.block_tables + int64_t(s) * a.max_blocks_per_seq;
    for (int64_t b = 0; b < blocks; ++b) {
      if (table[b] < 0 || table[b] >= a.num_blocks) {
        return invalid(absl::StrCat("sequence ", s, ": block_tables[", b, "] = ", table[b],
                                    " is outside [0, num_blocks = ", a.num_blocks, ")"));
      }
    }
    if (q_len > 0 && reads_new_keys(a.plan, q_len) && (!a.k_new || !a.v_new)) {
      return invalid(absl::StrCat("sequence ", s, ": the plan reads this step's keys but ",
                                  a.k_new ? "v_new" : "k_new", " is null"));
    }
  }
  return absl::OkStatus();
}

// Per-thread buffers, grown as needed.
struct Scratch {
  std::vector<float> q, scores, m, l, acc, o;
  std::vector<const bf16*> k_rows, v_rows;
  std::vector<KeySource> sources;
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
  void gather(const KeySource& src, const bf16** k_rows, const bf16** v_rows) const {
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
void attend_group(const AttentionArgs& a, int s, int64_t t, int kv_head, Scratch& sc) {
  const int hd = a.head_dim;
  const int group = a.num_q_heads / a.num_kv_heads;
  const int first_head = kv_head * group;
  const int64_t q_begin = a.query_start[s];
  const int64_t q_len = a.query_start[s + 1] - q_begin;
  const int64_t cached = a.context_lens[s] - q_len;
  const int64_t p = cached + (t - q_begin);
  const SeqRows rows{&a,     a.block_tables + int64_t(s) * a.max_blocks_per_seq, q_begin, cached,
                     int64_t(kv_head) * hd, int64_t(a.num_kv_heads) * hd};

  sc.q.resize(size_t(group) * hd);
  const bf16* q_rows = a.q + (t * a.num_q_heads + first_head) * hd;
  for (int64_t d = 0; d < int64_t(group) * hd; ++d) sc.q[d] = to_float(q_rows[d]);

  query_sources(a.plan, cached, q_len, p, &sc.sources);
  const int n = int(sc.sources.size());
  // Per head g and partial i: m, l at [g * n + i], acc at [(g * n + i) * hd].
  sc.m.assign(size_t(group) * n, 0.f);
  sc.l.assign(size_t(group) * n, 0.f);
  sc.acc.resize(size_t(group) * n * hd);
  sc.o.resize(hd);

  for (int i = 0; i < n; ++i) {
    const KeySource src = sc.sources[i];
    const int64_t len = src.end - src.begin;
    if (len <= 0) continue;  // empty split: l stays 0, the merge skips it
    if (int64_t(sc.k_rows.size()) < len) {
      sc.k_rows.resize(len);
      sc.v_rows.resize(len);
    }
    if (int64_t(sc.scores.size()) < group * len) sc.scores.resize(size_t(group * len));
    rows.gather(src, sc.k_rows.data(), sc.v_rows.data());
    constexpr int kAhead = 4;  // rows prefetched ahead: paged rows defeat the stride prefetcher
    for (int64_t j = 0; j < len; ++j) {
      if (j + kAhead < len) prefetch_row(sc.k_rows[j + kAhead], hd);
      for (int g = 0; g < group; ++g) {
        sc.scores[g * len + j] = cpu::dot_lanes(sc.q.data() + int64_t(g) * hd, sc.k_rows[j], hd) * a.scale;
      }
    }
    AttentionPartialState state[64];
    for (int g0 = 0; g0 < group; g0 += 64) {  // heads in batches of 64 (state on the stack)
      const int gn = std::min(group - g0, 64);
      for (int g = 0; g < gn; ++g) {
        const size_t at = size_t(g0 + g) * n + i;
        state[g] = attention_partial_begin(attention_scores_max(&sc.scores[(g0 + g) * len], len),
                                           &sc.acc[at * hd], hd);
      }
      for (int64_t j = 0; j < len; ++j) {
        if (j + kAhead < len) prefetch_row(sc.v_rows[j + kAhead], hd);
        for (int g = 0; g < gn; ++g) {
          const size_t at = size_t(g0 + g) * n + i;
          attention_partial_add_key(state[g], sc.scores[(g0 + g) * len + j], sc.v_rows[j], &sc.acc[at * hd],
                                    hd, FixedExp{});
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
  if (absl::Status st = validate(args); !st.ok()) return st;
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
#pragma omp parallel num_threads(threads)
  {
    Scratch scratch;
#pragma omp for schedule(dynamic, 1)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t t = item / args.num_kv_heads;
      attend_group(args, seq_of_token[t], t, int(item % args.num_kv_heads), scratch);
    }
  }
  return absl::OkStatus();
}

}  // namespace samebits
