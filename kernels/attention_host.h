// Host-side pieces of paged attention shared by every backend: the key ranges ("partials") a plan
// gives one query, and the argument checks. Header-only so that any backend's translation unit
// can use it; the per-sequence checks read query_start/context_lens/block_tables from host memory
// (a device backend passes host copies, or nullptr for block_tables to skip the entry check).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kernels/ops.h"
#include "kernels/plan.h"

namespace samebits {

// One partial's key range, [begin, end) in absolute positions, and where its keys are read.
struct AttentionKeyRange {
  int64_t begin = 0, end = 0;
  bool from_new = false;  // true: k_new/v_new rows of this step; false: the paged cache
};

// Whether a sequence with q_len query tokens reads this step's keys from k_new/v_new.
inline bool attention_reads_new_keys(const AttentionPlan& plan, int64_t q_len) {
  return plan.kind == AttentionPlan::Kind::kSplitCount && plan.separate_new_keys && q_len > 1;
}

// The ranges of the query at absolute position p of a sequence with `cached` keys before this
// step and q_len query tokens in it, in merge order:
//   kFixedSplitSize: split_range(plan, p + 1, i) for i < num_splits, from the cache;
//   kSplitCount, q_len > 1 and separate_new_keys: [0, cached) from the cache (when cached > 0),
//     then [cached, p] from k_new/v_new;
//   kSplitCount otherwise (decodes): split_range(plan, p + 1, i), from the cache (may be empty).
inline void attention_key_ranges(const AttentionPlan& plan, int64_t cached, int64_t q_len, int64_t p,
                                 std::vector<AttentionKeyRange>* out) {
  out->clear();
  const int64_t visible = p + 1;
  if (attention_reads_new_keys(plan, q_len)) {
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

inline absl::Status attention_invalid(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("attention: ", what));
}

// Scalars, pointers and the plan (no array is read).
inline absl::Status check_attention_shape(const AttentionArgs& a) {
  if (a.num_seqs < 0) return attention_invalid(absl::StrCat("num_seqs = ", a.num_seqs, " is negative"));
  if (a.T < 0) return attention_invalid(absl::StrCat("T = ", a.T, " is negative"));
  if (a.num_q_heads <= 0 || a.num_kv_heads <= 0 || a.num_q_heads % a.num_kv_heads != 0) {
    return attention_invalid(absl::StrCat("num_q_heads = ", a.num_q_heads, " is not a positive multiple of ",
                                          "num_kv_heads = ", a.num_kv_heads));
  }
  if (a.head_dim <= 0) return attention_invalid(absl::StrCat("head_dim = ", a.head_dim, " is not positive"));
  if (a.block_size <= 0) return attention_invalid(absl::StrCat("block_size = ", a.block_size, " is not positive"));
  if (a.plan.kind == AttentionPlan::Kind::kFixedSplitSize && a.plan.split_size <= 0) {
    return attention_invalid(absl::StrCat("plan.split_size = ", a.plan.split_size, " is not positive"));
  }
  if (a.plan.kind == AttentionPlan::Kind::kSplitCount && a.plan.split_count <= 0) {
    return attention_invalid(absl::StrCat("plan.split_count = ", a.plan.split_count, " is not positive"));
  }
  if (a.num_seqs == 0) {
    if (a.T != 0) return attention_invalid(absl::StrCat("T = ", a.T, " tokens but num_seqs = 0"));
    return absl::OkStatus();
  }
  if (!a.query_start) return attention_invalid("query_start is null");
  if (!a.context_lens) return attention_invalid("context_lens is null");
  if (!a.block_tables) return attention_invalid("block_tables is null");
  if (!a.q) return attention_invalid("q is null");
  if (!a.out) return attention_invalid("out is null");
  if (!a.k_cache || !a.v_cache) return attention_invalid(a.k_cache ? "v_cache is null" : "k_cache is null");
  if (a.max_blocks_per_seq <= 0) {
    return attention_invalid(absl::StrCat("max_blocks_per_seq = ", a.max_blocks_per_seq, " is not positive"));
  }
  if (a.num_blocks <= 0) return attention_invalid(absl::StrCat("num_blocks = ", a.num_blocks, " is not positive"));
  return absl::OkStatus();
}

// The varlen layout and block tables, read from host memory (block_tables may be nullptr: skipped).
// Call after check_attention_shape succeeded with num_seqs > 0.
inline absl::Status check_attention_sequences(const AttentionArgs& a, const int32_t* query_start,
                                              const int32_t* context_lens, const int32_t* block_tables) {
  if (query_start[0] != 0) {
    return attention_invalid(absl::StrCat("query_start[0] = ", query_start[0], ", expected 0"));
  }
  if (query_start[a.num_seqs] != a.T) {
    return attention_invalid(absl::StrCat("query_start[", a.num_seqs, "] = ", query_start[a.num_seqs],
                                          " differs from T = ", a.T));
  }
  for (int s = 0; s < a.num_seqs; ++s) {
    const int64_t q_len = int64_t(query_start[s + 1]) - query_start[s];
    if (q_len < 0) {
      return attention_invalid(absl::StrCat("sequence ", s, ": query_start[", s + 1, "] = ", query_start[s + 1],
                                            " is below query_start[", s, "] = ", query_start[s]));
    }
    const int64_t context = context_lens[s];
    if (context < q_len) {
      return attention_invalid(absl::StrCat("sequence ", s, ": context_lens = ", context, " is below its ",
                                            q_len, " query tokens"));
    }
    const int64_t blocks = (context + a.block_size - 1) / a.block_size;
    if (blocks > a.max_blocks_per_seq) {
      return attention_invalid(absl::StrCat("sequence ", s, ": context_lens = ", context, " needs ", blocks,
                                            " blocks, more than max_blocks_per_seq = ", a.max_blocks_per_seq));
    }
    if (block_tables) {
      const int32_t* table = block_tables + int64_t(s) * a.max_blocks_per_seq;
      for (int64_t b = 0; b < blocks; ++b) {
        if (table[b] < 0 || table[b] >= a.num_blocks) {
          return attention_invalid(absl::StrCat("sequence ", s, ": block_tables[", b, "] = ", table[b],
                                                " is outside [0, num_blocks = ", a.num_blocks, ")"));
        }
      }
    }
    if (q_len > 0 && attention_reads_new_keys(a.plan, q_len) && (!a.k_new || !a.v_new)) {
      return attention_invalid(absl::StrCat("sequence ", s, ": the plan reads this step's keys but ",
                                            a.k_new ? "v_new" : "k_new", " is null"));
    }
  }
  return absl::OkStatus();
}

}  // namespace samebits
