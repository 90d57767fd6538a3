#include "models/tiny_qwen/batch_check.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace samebits {
namespace {

absl::Status bad(const std::string& what) { return absl::InvalidArgumentError(absl::StrCat("forward: ", what)); }

}  // namespace

absl::Status check_forward_batch(const ForwardBatch& b, const ModelConfig& config, KvCacheShape kv) {
  const int64_t T = int64_t(b.tokens.size());
  const int64_t S = int64_t(b.context_lens.size());
  if (T == 0) return bad("the batch has no tokens");
  if (int64_t(b.positions.size()) != T || int64_t(b.slot_mapping.size()) != T) {
    return bad(absl::StrCat("tokens has ", T, " entries but positions ", b.positions.size(), " and slot_mapping ",
                            b.slot_mapping.size()));
  }
  if (S == 0 || int64_t(b.query_start.size()) != S + 1) {
    return bad(absl::StrCat("query_start has ", b.query_start.size(), " entries for ", S, " sequences"));
  }
  if (b.max_blocks_per_seq <= 0 || int64_t(b.block_tables.size()) != S * b.max_blocks_per_seq) {
    return bad(absl::StrCat("block_tables has ", b.block_tables.size(), " entries for ", S, " sequences x ",
                            b.max_blocks_per_seq, " blocks"));
  }
  if (b.query_start[0] != 0 || b.query_start[size_t(S)] != T) {
    return bad(absl::StrCat("query_start must run from 0 to ", T));
  }
  const int64_t max_context = int64_t(b.max_blocks_per_seq) * kv.block_size;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t q_len = b.query_start[size_t(s) + 1] - b.query_start[size_t(s)];
    const int64_t ctx = b.context_lens[size_t(s)];
    if (q_len < 1) return bad(absl::StrCat("sequence ", s, " has ", q_len, " query tokens"));
    if (ctx < q_len || ctx > max_context || ctx > config.max_position_embeddings) {
      return bad(absl::StrCat("sequence ", s, ": context_lens ", ctx, " is below its ", q_len,
                              " query tokens or beyond ", std::min<int64_t>(max_context, config.max_position_embeddings)));
    }
    for (int64_t j = 0; j < b.max_blocks_per_seq; ++j) {
      const int32_t block = b.block_tables[size_t(s * b.max_blocks_per_seq + j)];
      if (block < 0 || block >= kv.num_blocks) {
        return bad(absl::StrCat("block_tables[", s, "][", j, "] = ", block, " is outside [0, ", kv.num_blocks, ")"));
      }
    }
  }
  const int64_t num_slots = int64_t(kv.num_blocks) * kv.block_size;
  for (int64_t t = 0; t < T; ++t) {
    if (b.tokens[size_t(t)] < 0 || b.tokens[size_t(t)] >= config.vocab_size) {
      return bad(absl::StrCat("tokens[", t, "] = ", b.tokens[size_t(t)], " is outside the vocabulary [0, ",
                              config.vocab_size, ")"));
    }
    if (b.positions[size_t(t)] < 0 || b.positions[size_t(t)] >= config.max_position_embeddings) {
      return bad(absl::StrCat("positions[", t, "] = ", b.positions[size_t(t)], " is outside [0, ",
                              config.max_position_embeddings, ")"));
    }
    if (b.slot_mapping[size_t(t)] < -1 || b.slot_mapping[size_t(t)] >= num_slots) {
      return bad(absl::StrCat("slot_mapping[", t, "] = ", b.slot_mapping[size_t(t)], " is outside [-1, ", num_slots, ")"));
    }
  }
  // Two tokens writing one KV slot would leave one of them attending to the other's key. The check
  // also lets the kernels skip looking for such pairs (QkvPrepArgs::slots_distinct).
  std::vector<std::pair<int64_t, int64_t>> named;  // (slot, token), slots >= 0
  named.reserve(size_t(T));
  for (int64_t t = 0; t < T; ++t) {
    if (b.slot_mapping[size_t(t)] >= 0) named.emplace_back(b.slot_mapping[size_t(t)], t);
  }
  std::sort(named.begin(), named.end());
  for (size_t i = 1; i < named.size(); ++i) {
    if (named[i].first == named[i - 1].first) {
      return bad(absl::StrCat("slot_mapping[", named[i].second, "] = ", named[i].first, " is also slot_mapping[",
                              named[i - 1].second, "]: two tokens would write one KV slot"));
    }
  }
  for (size_t r = 0; r < b.logit_rows.size(); ++r) {
    if (b.logit_rows[r] < 0 || b.logit_rows[r] >= T) {
      return bad(absl::StrCat("logit_rows[", r, "] = ", b.logit_rows[r], " is outside [0, ", T, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status check_fed_tokens(const ForwardBatch& b, int64_t previous_sampled_rows) {
  if (b.fed_tokens.size() != b.fed_from.size()) {
    return bad(absl::StrCat("fed_tokens has ", b.fed_tokens.size(), " entries but fed_from ", b.fed_from.size()));
  }
  const int64_t T = int64_t(b.tokens.size());
  for (size_t j = 0; j < b.fed_tokens.size(); ++j) {
    const int32_t t = b.fed_tokens[j];
    if (t < 0 || t >= T || (j > 0 && t <= b.fed_tokens[j - 1])) {
      return bad(absl::StrCat("fed_tokens[", j, "] = ", t, " is not an increasing index in [0, ", T, ")"));
    }
  }
  for (size_t j = 0; j < b.fed_from.size(); ++j) {
    const int32_t from = b.fed_from[j];
    if (from < 0 || from >= previous_sampled_rows) {
      return bad(absl::StrCat("fed_from[", j, "] = ", from, " is not a row the previous step sampled (",
                              std::max<int64_t>(previous_sampled_rows, 0), " rows)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace samebits
