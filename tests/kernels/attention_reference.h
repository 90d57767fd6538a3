// Test harness for paged attention and the KV-cache write: an fp64 reference, seeded sequences,
// a paged cache whose physical blocks are handed out in a seeded shuffled order, and a step runner
// that lays a varlen batch out as an engine would (KV write, then attention).
#pragma once
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/ops.h"
#include "tests/support/test_support.h"

namespace samebits::testing {

struct AttnShape {
  int num_q_heads = 4, num_kv_heads = 2, head_dim = 64;
  int block_size = 16;
  std::string name() const;  // "4q2kv_d64_b16"
  float scale() const;       // 1/sqrt(head_dim)
  int64_t q_row() const { return int64_t(num_q_heads) * head_dim; }
  int64_t kv_row() const { return int64_t(num_kv_heads) * head_dim; }
};
inline void PrintTo(const AttnShape& s, std::ostream* os) { *os << s.name(); }

// Every position's q/k/v of one sequence: q [len, q_row], k and v [len, kv_row]. Seeded, non-zero.
// q is drawn in [-q_scale, q_scale] so that larger scales make the softmax peaky.
struct SeqData {
  int64_t len = 0;
  std::vector<bf16> q, k, v;
};
SeqData make_seq_data(const AttnShape& shape, int64_t len, uint64_t seed, float q_scale = 1.f);

// fp64 causal attention of query position p (sees keys [0, p]) for every q head: [q_row] values.
std::vector<double> reference_attention(const AttnShape& shape, const SeqData& seq, int64_t p);

// A paged KV cache [num_blocks, block_size, num_kv_heads, head_dim] in guarded buffers, filled with
// random bf16 garbage (never a valid key of any sequence), whose blocks are handed to sequences
// from a pool shuffled by shuffle_seed (0: in increasing order).
class PagedCache {
 public:
  PagedCache(const AttnShape& shape, int64_t num_blocks, uint64_t shuffle_seed);
  // Reserves blocks for capacity tokens; returns the sequence id. Fails when the pool runs dry.
  absl::StatusOr<int> add_sequence(int64_t capacity);
  const std::vector<int32_t>& blocks(int id) const { return tables_[id]; }
  int64_t slot(int id, int64_t pos) const;
  const AttnShape& shape() const { return shape_; }
  int64_t num_blocks() const { return num_blocks_; }
  int64_t num_slots() const { return num_blocks_ * shape_.block_size; }
  Guarded<bf16>& k() { return k_; }
  Guarded<bf16>& v() { return v_; }
  const Guarded<bf16>& k() const { return k_; }
  const Guarded<bf16>& v() const { return v_; }

 private:
  AttnShape shape_;
  int64_t num_blocks_;
  std::vector<int32_t> free_;  // handed out from the back
  std::vector<std::vector<int32_t>> tables_;
  Guarded<bf16> k_, v_;
};

// One sequence's share of a step: its query positions [cached, cached + q_len).
struct StepPart {
  int seq_id = 0;
  const SeqData* data = nullptr;
  int64_t cached = 0;
  int64_t q_len = 0;
};

struct StepOptions {
  Mode mode = Mode::kInvariant;
  int num_threads = 1;
  std::optional<AttentionPlan> plan;  // default: plan_attention(mode, batch, ...)
  int parallel_units = kDefaultParallelUnits;
  int extra_table_width = 0;  // padding columns in the block table (filled with -7)
};

struct StepResult {
  AttentionPlan plan;
  std::vector<std::vector<bf16>> outputs;  // per part: [q_len, q_row]
};

// Writes the step's K/V through cpu_kv_write, then runs cpu_attention. A write outside the output
// or cache buffers, or any change of the caches by attention, is reported as an error.
absl::StatusOr<StepResult> run_step(PagedCache& cache, const std::vector<StepPart>& parts,
                                    const StepOptions& options);

// Writes the K/V of positions [from, to) of a sequence, as an earlier step would have.
absl::Status write_prefix(PagedCache& cache, int seq_id, const SeqData& seq, int64_t from, int64_t to);

// Runs one sequence alone on a fresh cache: positions [0, start) are written as an earlier step
// would (prefix cache hit), then steps of step_lengths[i] query tokens each (summing to
// seq.len - start). Returns the outputs of positions [start, len) as [len - start, q_row].
absl::StatusOr<std::vector<bf16>> run_schedule(const AttnShape& shape, const SeqData& seq, int64_t start,
                                               const std::vector<int64_t>& step_lengths,
                                               const StepOptions& options, uint64_t shuffle_seed);
// n tokens cut into steps of `chunk` (the last one shorter).
std::vector<int64_t> chunks_of(int64_t n, int64_t chunk);

// memcmp equality of two bf16 vectors (sizes included).
bool bitwise_equal(const std::vector<bf16>& a, const std::vector<bf16>& b);
// Index of the first differing bf16 element, or -1 when equal.
int64_t first_difference(const std::vector<bf16>& a, const std::vector<bf16>& b);

}  // namespace samebits::testing
