// Shared plumbing of the CUDA backend: status conversion of every CUDA call, the stream of an
// ExecContext, the device-side error mailbox, and a grow-only scratch buffer.
//
// Ops whose indices live in device memory (token ids, positions, slot mappings, block tables)
// cannot be validated on the host without a synchronising copy. Their kernels check every index,
// skip the bad ones, and record the first bad one in the mailbox; Backend::synchronize and
// Backend::download read it and turn it into an InvalidArgument status naming op, index and value.
// This header is included by host-only translation units (g++) and by .cu files (nvcc).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/op_timer.h"
#include "kernels/ops.h"

namespace samebits::cuda {

// OK, or Internal("cuda <what>: <error name>: <error string>").
absl::Status cuda_status(cudaError_t error, const char* what);
// The launch's configuration error, if any (cudaGetLastError), as a status naming the kernel.
absl::Status check_launch(const char* kernel);

#define SAMEBITS_CUDA_TRY(expr)                                                   \
  do {                                                                            \
    if (absl::Status _samebits_st = ::samebits::cuda::cuda_status((expr), #expr); \
        !_samebits_st.ok())                                                       \
      return _samebits_st;                                                        \
  } while (0)

#define SAMEBITS_RETURN_IF_ERROR(expr)                        \
  do {                                                        \
    if (absl::Status _samebits_st = (expr); !_samebits_st.ok()) \
      return _samebits_st;                                    \
  } while (0)

// The backend's own stream, created with the runtime: a blocking stream, so it stays ordered with
// the legacy default stream (cudaMemcpy, kernels launched without a stream) as before, and unlike
// the legacy stream it can be captured into a CUDA graph.
cudaStream_t main_stream();
inline cudaStream_t stream_of(const ExecContext& ctx) {
  return ctx.stream != nullptr ? static_cast<cudaStream_t>(ctx.stream) : main_stream();
}

// Which op found a bad index on the device.
enum DeviceErrorOp : int {
  kErrNone = 0,
  kErrEmbeddingId = 1,     // a = token, b = id, c = vocab
  kErrRopePosition = 2,    // a = token, b = position, c = max_position
  kErrKvWriteSlot = 3,     // a = token, b = slot, c = num_slots
  kErrAttentionBlock = 4,  // a = sequence, b = block table entry, c = num_blocks
  kErrAttentionLayout = 5, // a = sequence, b = value, c = which check (attention_worklist.cuh)
};

struct DeviceError {
  int code;  // DeviceErrorOp of the first error since the last check; 0 = none
  int pad;
  long long a, b, c;
};

// Device pointer of the mailbox (allocated once when the backend starts).
DeviceError* device_error_mailbox();
// Reads and clears the mailbox (synchronises the device); OK when no kernel reported anything.
absl::Status take_device_error();
// The status of one mailbox entry (code != 0): InvalidArgument naming op, index and value.
absl::Status device_error_status(const DeviceError& e);

// Every point where the host waits for the device goes through these two: counted, and the wait
// timed (Backend::sync_stats). A blocking copy is cudaMemcpy (it waits for the legacy stream).
absl::Status blocking_copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
absl::Status blocking_stream_sync(cudaStream_t stream);
SyncStats host_wait_stats();

// Per-op timing with events on ctx's stream (kernels/cuda/op_timer_cuda.cpp).
std::unique_ptr<OpTimer> make_event_op_timer(const ExecContext& ctx);

// Properties read once from the device.
int device_sm_count();
int device_max_smem_per_block();  // opt-in maximum, bytes

// A device buffer of at least `bytes`, shared by every op of the backend (ops run in stream order,
// so consecutive ops may reuse it). Growing frees the old buffer (cudaFree waits for the device).
absl::StatusOr<void*> scratch(size_t bytes);
// A second, independent scratch buffer for data an op must keep while it uses scratch() too.
absl::StatusOr<void*> scratch2(size_t bytes);
// Changes whenever scratch() or scratch2() moves (Backend::memory_epoch).
uint64_t scratch_epoch();

#if defined(__CUDACC__)
// Records the first bad index; later ones are dropped. Integer atomics only (no floating point).
__device__ inline void report_device_error(DeviceError* box, int code, long long a, long long b,
                                           long long c) {
  if (box == nullptr) return;
  if (atomicCAS(&box->code, 0, -1) == 0) {
    box->a = a;
    box->b = b;
    box->c = c;
    __threadfence();
    atomicExch(&box->code, code);
  }
}
#endif

inline int64_t ceil_div64(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace samebits::cuda
