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
#include <utility>

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

// Programmatic dependent launch. Every kernel of an engine step is launched with
// launch_after_previous (or after_previous_kernel() among its launch attributes), which lets the GPU
// launch it before the kernel ahead of it in the stream has completed: the launch and the block
// scheduling overlap that kernel's end and the flush of its writes, instead of following them.
// Such a kernel MUST call wait_for_previous_kernel() before its first global memory access, read or
// write (only set-up of its own shared memory may come first): it waits until the previous grid has
// completed and its writes are visible, and since that grid waited the same way, every earlier one.
// A kernel launched so that never waits could run beside its predecessor: none exists here.
// The one exception, reads only: a kernel starts after every block of the previous one has passed
// its own wait (allow_next_kernel is called after it, or the blocks have left), so what the kernels
// before that one wrote is complete and visible; data that the previous kernel cannot write may
// therefore be read before the wait. The merge kernel reads the step's layout so (the host wrote
// it), and the decode segment and split kernels their set-up and the keys below a sequence's cached
// length (a step writes only its own tokens' keys): attention_decode_segment.cuh.
// Where the next kernel may start: when every block of this one has left, or earlier once every
// block has called allow_next_kernel(). Only the decode kernels that a merge follows call it (the
// merge's blocks then wait beside them: attention.cu). Called first thing in every kernel it made
// the Qwen3-8B burst slower on the H200 (next kernels' blocks waiting on SMs for the whole tail
// of this one: 1.007x the run time of ordinary launches, where leaving it to the blocks' exit gave
// 0.992x; bench/cuda/notes/engine.md, 2026-12-02). After an ordinary launch both calls are no-ops;
// neither changes what a kernel computes.
inline cudaLaunchAttribute after_previous_kernel() {
  cudaLaunchAttribute a = {};
  a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  a.val.programmaticStreamSerializationAllowed = 1;
  return a;
}

#if defined(__CUDACC__)
__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void allow_next_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::);
#endif
}

// kernel<<<grid, block, smem, stream>>>(args...) as a programmatic dependent of the previous
// kernel in the stream (see after_previous_kernel); the status names the kernel.
template <typename... Params, typename... Args>
absl::Status launch_after_previous(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                                   cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attribute[1] = {after_previous_kernel()};
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = 1;
  if (const cudaError_t e = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...); e != cudaSuccess) {
    (void)cudaGetLastError();  // a launch error is not sticky: clear it for the next launch
    return cuda_status(e, name);
  }
  return check_launch(name);
}

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
