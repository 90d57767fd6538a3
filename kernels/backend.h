// A backend is a table of ops plus the memory functions they need. The model calls ops only
// through this table: it never branches on backend or mode. Every entry returns a status instead
// of crashing; argument errors name the op and the offending value.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/op_timer.h"
#include "kernels/ops.h"

namespace samebits {

// The device a backend runs on, as read from it when the backend starts (empty on the CPU, whose
// bits depend on none of this). Default-mode goldens depend on every field (harness/golden/run_identity.h).
struct BackendDevice {
  std::string name;          // e.g. "NVIDIA H200"
  int sm_count = 0;          // multiprocessors
  std::string cuda_runtime;  // cudaRuntimeGetVersion, e.g. "13.0"
  std::string cublaslt;      // cublasLtGetVersion, e.g. "13.1.0"
};

struct Backend {
  std::string id;           // golden key: "cpu", "cuda-sm90"
  std::string description;  // human-readable: device name, threads
  BackendDevice device;

  // Memory. The CPU backend's "device" memory is host memory.
  absl::StatusOr<void*> (*alloc)(size_t bytes);
  void (*free)(void* ptr);
  absl::Status (*upload)(void* dst, const void* src, size_t bytes);    // host -> backend
  absl::Status (*download)(void* dst, const void* src, size_t bytes);  // backend -> host
  absl::Status (*synchronize)(const ExecContext& ctx);

  // Ops.
  absl::Status (*linear)(const ExecContext&, const LinearArgs&);
  absl::Status (*rmsnorm)(const ExecContext&, const RmsNormArgs&);
  absl::Status (*rope)(const ExecContext&, const RopeArgs&);
  absl::Status (*silu_mul)(const ExecContext&, const SiluMulArgs&);
  absl::Status (*gate_up_silu)(const ExecContext&, const GateUpSiluArgs&);
  absl::Status (*embedding)(const ExecContext&, const EmbeddingArgs&);
  absl::Status (*kv_write)(const ExecContext&, const KvWriteArgs&);
  absl::Status (*qkv_prep)(const ExecContext&, const QkvPrepArgs&);
  absl::Status (*attention)(const ExecContext&, const AttentionArgs&);
  absl::Status (*argmax)(const ExecContext&, const ArgmaxArgs&);
  absl::Status (*sample)(const ExecContext&, const SampleArgs&);

  // Optional (nullptr where absent, e.g. on the CPU): fills n bf16 values at backend memory dst with
  // the synthetic weights generator of models/tiny_qwen/weights.cpp, on the device, so large
  // synthetic models never pass through host memory. tensor_key = XXH3_64bits_withSeed(name, seed).
  absl::Status (*fill_synthetic)(void* dst, int64_t n, uint64_t tensor_key, float scale,
                                 float offset) = nullptr;

  // Optional: a timer for the ops issued with ctx (its stream); nullptr = the host clock
  // (HostOpTimer), right for a synchronous backend.
  std::unique_ptr<OpTimer> (*make_op_timer)(const ExecContext& ctx) = nullptr;
  // Optional: where the host has waited for the device since the backend started (cumulative);
  // nullptr = never (a synchronous backend has no separate device to wait for).
  SyncStats (*sync_stats)() = nullptr;

  // Optional: whether work issued on ctx's stream is still running (a query that never waits);
  // nullptr = never (a synchronous backend has finished every op when it returns).
  bool (*busy)(const ExecContext& ctx) = nullptr;

  // Optional (nullptr on a synchronous backend): page-locked host memory, and copies enqueued on
  // ctx's stream that return at once. The host memory of an async copy must stay untouched until
  // the next synchronize(ctx), which also reports any device-side error of the work before it.
  absl::StatusOr<void*> (*alloc_host)(size_t bytes) = nullptr;
  void (*free_host)(void* ptr) = nullptr;
  absl::Status (*upload_async)(const ExecContext& ctx, void* dst, const void* src, size_t bytes) = nullptr;
  absl::Status (*download_async)(const ExecContext& ctx, void* dst, const void* src, size_t bytes) = nullptr;

  // Optional: recording the work issued on ctx's stream into a replayable graph (CUDA graphs).
  // Between capture_begin and capture_end the ops only record their launches; capture_end returns
  // the instantiated graph (or the first error, the capture discarded either way). A graph holds
  // the memory addresses it was recorded with: memory_epoch() changes whenever backend-internal
  // scratch memory moves, and a graph recorded under another epoch must not be launched.
  absl::Status (*capture_begin)(const ExecContext& ctx) = nullptr;
  absl::StatusOr<void*> (*capture_end)(const ExecContext& ctx) = nullptr;
  absl::Status (*graph_launch)(const ExecContext& ctx, void* graph) = nullptr;
  void (*graph_free)(void* graph) = nullptr;
  uint64_t (*memory_epoch)() = nullptr;

  // Optional (nullptr: synchronize(ctx) serves): a mark behind the work issued so far on ctx's
  // stream, in one of two slots, and a wait for that mark alone, while the work issued after it
  // keeps running (a step's results can be read while the next step computes). The wait reports a
  // device-side error of the work before the mark, as synchronize does. A slot is marked again
  // only after its wait.
  absl::Status (*mark)(const ExecContext& ctx, int slot) = nullptr;
  absl::Status (*wait_mark)(int slot) = nullptr;

  // Optional: host -> backend upload of large read-only data (weights) from pageable or mapped
  // memory, staged through page-locked buffers so that reading the source overlaps the transfer.
  // Synchronous: returns when the data is in place. nullptr = upload().
  absl::Status (*upload_bulk)(void* dst, const void* src, size_t bytes) = nullptr;
};

// A timer for ctx's ops on this backend (its own, or the host clock).
std::unique_ptr<OpTimer> make_op_timer(const Backend& backend, const ExecContext& ctx);
SyncStats sync_stats(const Backend& backend);

// Always available.
const Backend& cpu_backend();
// nullptr when the build has no CUDA or the machine has no usable device; *why says which.
const Backend* cuda_backend(std::string* why = nullptr);
// "cpu", "cuda" or a registered name; nullptr with *why on an unknown name or an unavailable backend.
const Backend* find_backend(const std::string& name, std::string* why);
// Makes `backend` available to find_backend under `name` (not "cpu" or "cuda"), replacing an
// earlier registration; nullptr removes it. For backends that wrap a real one, such as the mutation
// suite's (tests/mutation). The table must outlive its registration.
void register_backend(const std::string& name, const Backend* backend);

// Bumped whenever any kernel's arithmetic changes; goldens depend on it. 2: default-mode split-KV
// count per warps (plan_attention), and the MLP's gate and up projections as one linear of 2F
// columns (gate_up_silu: default mode's plan and cuBLASLt's algorithm follow the wider shape).
// 3: fixed_expf with written-out fused multiply-adds and a degree-6 minimax polynomial (every
// softmax, silu and sampling probability changes).
// 4: default mode's split-KV count keeps splits of < 256 keys only while the launch has at most 2
// items per parallel unit (plan_attention; invariant-mode bits unchanged).
// 5: CUDA attention's softmax in log2 units with the SFU's ex2 (attn_exp2) in place of fixed_expf,
// two instructions per score instead of ~20, and the segment fold's O*a + o*b as one fma after the
// product (every CUDA attention output changes; CPU bits unchanged).
// 6: CUDA attention's exponentials as ex2(fma(s, scale, -m)) on the unscaled scores, the row max
// taken before scaling (the same value: rounding is monotone), one rounding instead of two and no
// multiply per score (every CUDA attention output changes; CPU bits unchanged).
inline constexpr int kKernelSetVersion = 6;

}  // namespace samebits
