// A backend-generic attention step runner for the gpu tests: seeded sequences, a paged cache in
// one backend's memory whose blocks come from a seeded shuffled pool, and a step that lays a varlen
// batch out as an engine would (kv_write of the step's tokens, then attention), run through the
// Backend table, so the same code drives the CPU reference and the CUDA backend.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/backend.h"
#include "tests/gpu/gpu_test_support.h"
#if defined(SAMEBITS_HAVE_CUDA)
#include "kernels/cuda/cuda_ops.h"
#endif

namespace samebits::testing {

struct AttnShapeG {
  int hq = 4, hkv = 2, hd = 64, block_size = 16;
  std::string name() const;
  int64_t q_row() const { return int64_t(hq) * hd; }
  int64_t kv_row() const { return int64_t(hkv) * hd; }
};

// q [len, q_row], k and v [len, kv_row] of every position of one sequence.
struct SeqG {
  int64_t len = 0;
  std::vector<bf16> q, k, v;
};
SeqG make_seq_g(const AttnShapeG& shape, int64_t len, uint64_t seed, float q_scale = 2.f);

class PagedCacheG {
 public:
  PagedCacheG(const Backend& backend, const AttnShapeG& shape, int64_t num_blocks, uint64_t shuffle_seed);
  absl::StatusOr<int> add_sequence(int64_t capacity);
  const std::vector<int32_t>& blocks(int id) const { return tables_[size_t(id)]; }
  int64_t slot(int id, int64_t pos) const;
  const Backend& backend() const { return backend_; }
  const AttnShapeG& shape() const { return shape_; }
  int64_t num_blocks() const { return num_blocks_; }
  DeviceBuffer<bf16>& k() { return *k_; }
  DeviceBuffer<bf16>& v() { return *v_; }

 private:
  const Backend& backend_;
  AttnShapeG shape_;
  int64_t num_blocks_;
  std::vector<int32_t> free_;
  std::vector<std::vector<int32_t>> tables_;
  std::unique_ptr<DeviceBuffer<bf16>> k_, v_;
};

struct StepPartG {
  int seq_id = 0;
  const SeqG* data = nullptr;
  int64_t cached = 0, q_len = 0;
};

struct StepOptionsG {
  Mode mode = Mode::kInvariant;
  std::optional<AttentionPlan> plan;  // default: plan_attention(mode, batch, ...)
  int parallel_units = kDefaultParallelUnits;
  bool host_mirrors = true;           // fill AttentionArgs::host_query_start / host_context_lens
  bool skip_attention = false;        // only the KV write (a prefix-cache hit's earlier step)
  // Called instead of the backend's attention when set (a forced CUDA kernel route).
  absl::Status (*attention)(const ExecContext&, const AttentionArgs&) = nullptr;
};

// Outputs per part: [q_len, q_row]. Output guard violations are errors.
absl::StatusOr<std::vector<std::vector<bf16>>> run_step_g(PagedCacheG& cache, const std::vector<StepPartG>& parts,
                                                          const StepOptionsG& options);

// One sequence alone on a fresh cache: positions [0, start) written by an earlier step, then steps
// of steps[i] tokens. Outputs of positions [start, len) as [len - start, q_row].
absl::StatusOr<std::vector<bf16>> run_schedule_g(const Backend& backend, const AttnShapeG& shape, const SeqG& seq,
                                                 int64_t start, const std::vector<int64_t>& steps,
                                                 const StepOptionsG& options, uint64_t shuffle_seed);
std::vector<int64_t> chunks_g(int64_t n, int64_t chunk);

// The plans the bitwise route sweeps run under: each mode's own plan for the batch, a fixed split
// of 64, split counts 5 (cached and new keys apart) and 3 (prefill rows split by count).
struct PlanCaseG {
  Mode mode;
  std::optional<AttentionPlan> plan;  // nullopt: the mode's plan for the batch
  std::string name() const;
};
std::vector<PlanCaseG> plan_cases_g();

#if defined(SAMEBITS_HAVE_CUDA)
// The CUDA attention with a forced route, as a StepOptionsG::attention.
template <AttentionRoute kRoute>
absl::Status attention_routed(const ExecContext& ctx, const AttentionArgs& a) {
  return cuda_attention_routed(ctx, a, kRoute);
}
#endif

// One step of a batch of sequences on a fresh cache of `be` (shuffle seed 31): sequence i's first
// cached[i] positions written by an earlier step, the rest computed now. Outputs per sequence.
absl::StatusOr<std::vector<std::vector<bf16>>> route_step_g(const Backend& be, const AttnShapeG& shape,
                                                            const std::vector<SeqG>& seqs,
                                                            const std::vector<int64_t>& cached, StepOptionsG o);

}  // namespace samebits::testing
