// The CUDA backend's table: device memory through cudaMalloc, synchronous copies, one function per
// op (kernels/cuda/cuda_ops.h), and the shared plumbing of kernels/cuda/cuda_common.h. The id is
// "cuda-sm<major><minor>" from the device's compute capability, so goldens are keyed per GPU
// generation; the device fields (name, SM count, CUDA runtime and cuBLASLt versions) are read here
// and enter the run identity of default-mode goldens. The table exists only when a device answers; otherwise cuda_backend() is nullptr and
// says why.
#include <atomic>
#include <cstdlib>
#include <chrono>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "kernels/backend.h"
#include "kernels/cuda/cublaslt_matmul.h"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/cuda_ops.h"

namespace samebits {
namespace cuda {
namespace {

struct Runtime {
  int device = 0;
  int sm_count = 0;
  int max_smem_per_block = 0;
  DeviceError* mailbox = nullptr;
  std::mutex scratch_mutex;
  void* scratch[2] = {nullptr, nullptr};
  size_t scratch_bytes[2] = {0, 0};
  std::atomic<int64_t> host_waits{0};
  std::atomic<int64_t> host_wait_ns{0};
};

Runtime& runtime() {
  static Runtime* r = new Runtime();  // never destroyed: kernels may run past static destructors
  return *r;
}

absl::StatusOr<void*> grow_scratch(int which, size_t bytes) {
  Runtime& r = runtime();
  std::lock_guard<std::mutex> lock(r.scratch_mutex);
  if (bytes <= r.scratch_bytes[which]) return r.scratch[which];
  size_t want = bytes + bytes / 4;
  if (r.scratch[which] != nullptr) {
    SAMEBITS_CUDA_TRY(cudaFree(r.scratch[which]));  // waits for the kernels that used it
    r.scratch[which] = nullptr;
    r.scratch_bytes[which] = 0;
  }
  void* p = nullptr;
  if (cudaError_t e = cudaMalloc(&p, want); e != cudaSuccess) {
    cudaGetLastError();
    return absl::ResourceExhaustedError(
        absl::StrCat("cuda scratch: cannot allocate ", want, " bytes: ", cudaGetErrorString(e)));
  }
  r.scratch[which] = p;
  r.scratch_bytes[which] = want;
  return p;
}

absl::StatusOr<void*> cuda_alloc(size_t bytes) {
  void* p = nullptr;
  if (bytes == 0) bytes = 256;
  if (cudaError_t e = cudaMalloc(&p, bytes); e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free allocation error
    return absl::ResourceExhaustedError(
        absl::StrCat("cuda alloc: cannot allocate ", bytes, " bytes: ", cudaGetErrorString(e)));
  }
  return p;
}

void cuda_free(void* p) {
  if (p != nullptr) cudaFree(p);
}

absl::Status cuda_upload(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  if (dst == nullptr || src == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("cuda upload: null pointer for ", bytes, " bytes"));
  }
  return blocking_copy(dst, src, bytes, cudaMemcpyHostToDevice);
}

absl::Status cuda_download(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return take_device_error();
  if (dst == nullptr || src == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("cuda download: null pointer for ", bytes, " bytes"));
  }
  SAMEBITS_RETURN_IF_ERROR(blocking_copy(dst, src, bytes, cudaMemcpyDeviceToHost));
  return take_device_error();
}

absl::Status cuda_synchronize(const ExecContext& ctx) {
  SAMEBITS_RETURN_IF_ERROR(blocking_stream_sync(stream_of(ctx)));
  return take_device_error();
}

// Records one host wait of `since` until now.
void count_wait(std::chrono::steady_clock::time_point since) {
  Runtime& r = runtime();
  r.host_waits.fetch_add(1, std::memory_order_relaxed);
  r.host_wait_ns.fetch_add(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - since).count(),
      std::memory_order_relaxed);
}

absl::Status cuda_fill_synthetic_entry(void* dst, int64_t n, uint64_t key, float scale, float offset) {
  return cuda_fill_synthetic(dst, n, key, scale, offset);
}

// Registered with atexit once the runtime has a context, so it runs before the CUDA runtime's own
// teardown (atexit handlers run in reverse order): waits for the device, then frees the buffers
// that live as long as the process (scratch, the mailbox, cuBLASLt's workspace), so that
// compute-sanitizer's leak check and cuda-memcheck see every allocation returned.
void release_at_exit() {
  Runtime& r = runtime();
  if (cudaDeviceSynchronize() != cudaSuccess) return;  // a broken context frees everything itself
  cublaslt_release();
  std::lock_guard<std::mutex> lock(r.scratch_mutex);
  for (int which = 0; which < 2; ++which) {
    if (r.scratch[which] != nullptr) cudaFree(r.scratch[which]);
    r.scratch[which] = nullptr;
    r.scratch_bytes[which] = 0;
  }
  if (r.mailbox != nullptr) cudaFree(r.mailbox);
  r.mailbox = nullptr;
}

// Starts the runtime on device 0; *why says what failed.
const Backend* make_backend(std::string* why) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    cudaGetLastError();
    *why = absl::StrCat("no usable CUDA device: ", cudaGetErrorString(e));
    return nullptr;
  }
  if (count == 0) {
    *why = "no CUDA device found";
    return nullptr;
  }
  Runtime& r = runtime();
  cudaDeviceProp prop{};
  if (cudaError_t e = cudaGetDeviceProperties(&prop, r.device); e != cudaSuccess) {
    *why = absl::StrCat("cudaGetDeviceProperties failed: ", cudaGetErrorString(e));
    return nullptr;
  }
  if (prop.major < 8) {
    *why = absl::StrCat("device ", prop.name, " has compute capability ", prop.major, ".", prop.minor,
                        "; the kernels need 8.0 or newer (bf16 tensor cores)");
    return nullptr;
  }
  if (cudaError_t e = cudaSetDevice(r.device); e != cudaSuccess) {
    *why = absl::StrCat("cudaSetDevice failed: ", cudaGetErrorString(e));
    return nullptr;
  }
  r.sm_count = prop.multiProcessorCount;
  r.max_smem_per_block = int(prop.sharedMemPerBlockOptin);
  void* box = nullptr;
  if (cudaError_t e = cudaMalloc(&box, sizeof(DeviceError)); e != cudaSuccess) {
    *why = absl::StrCat("cannot allocate the error mailbox: ", cudaGetErrorString(e));
    return nullptr;
  }
  if (cudaError_t e = cudaMemset(box, 0, sizeof(DeviceError)); e != cudaSuccess) {
    *why = absl::StrCat("cannot clear the error mailbox: ", cudaGetErrorString(e));
    return nullptr;
  }
  r.mailbox = static_cast<DeviceError*>(box);
  std::atexit(release_at_exit);

  Backend* b = new Backend();
  b->id = absl::StrCat("cuda-sm", prop.major, prop.minor);
  b->description = absl::StrCat(prop.name, " (", prop.multiProcessorCount, " SMs, ",
                                prop.totalGlobalMem >> 20, " MiB, compute capability ", prop.major,
                                ".", prop.minor, ")");
  int runtime_version = 0;
  if (cudaError_t e = cudaRuntimeGetVersion(&runtime_version); e != cudaSuccess) {
    *why = absl::StrCat("cudaRuntimeGetVersion failed: ", cudaGetErrorString(e));
    return nullptr;
  }
  b->device.name = prop.name;
  b->device.sm_count = prop.multiProcessorCount;
  b->device.cuda_runtime = absl::StrCat(runtime_version / 1000, ".", runtime_version % 1000 / 10);
  b->device.cublaslt = cublaslt_version();
  b->alloc = cuda_alloc;
  b->free = cuda_free;
  b->upload = cuda_upload;
  b->download = cuda_download;
  b->synchronize = cuda_synchronize;
  b->linear = cuda_linear;
  b->rmsnorm = cuda_rmsnorm;
  b->rope = cuda_rope;
  b->silu_mul = cuda_silu_mul;
  b->embedding = cuda_embedding;
  b->kv_write = cuda_kv_write;
  b->attention = cuda_attention;
  b->argmax = cuda_argmax;
  b->sample = cuda_sample;
  b->fill_synthetic = cuda_fill_synthetic_entry;
  b->make_op_timer = make_event_op_timer;
  b->sync_stats = host_wait_stats;
  return b;
}

}  // namespace

absl::Status cuda_status(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("cuda ", what, ": ", cudaGetErrorName(error), ": ", cudaGetErrorString(error)));
}

absl::Status check_launch(const char* kernel) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("cuda launch of ", kernel, ": ", cudaGetErrorName(e), ": ",
                                          cudaGetErrorString(e)));
}

DeviceError* device_error_mailbox() { return runtime().mailbox; }

absl::Status blocking_copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  const auto t0 = std::chrono::steady_clock::now();
  const cudaError_t e = cudaMemcpy(dst, src, bytes, kind);
  count_wait(t0);
  return cuda_status(e, "cudaMemcpy");
}

absl::Status blocking_stream_sync(cudaStream_t stream) {
  const auto t0 = std::chrono::steady_clock::now();
  const cudaError_t e = cudaStreamSynchronize(stream);
  count_wait(t0);
  return cuda_status(e, "cudaStreamSynchronize");
}

SyncStats host_wait_stats() {
  Runtime& r = runtime();
  return SyncStats{r.host_waits.load(std::memory_order_relaxed),
                   double(r.host_wait_ns.load(std::memory_order_relaxed)) * 1e-9};
}

absl::Status take_device_error() {
  Runtime& r = runtime();
  if (r.mailbox == nullptr) return absl::OkStatus();
  DeviceError e{};
  SAMEBITS_RETURN_IF_ERROR(blocking_copy(&e, r.mailbox, sizeof e, cudaMemcpyDeviceToHost));
  if (e.code == 0) return absl::OkStatus();
  SAMEBITS_CUDA_TRY(cudaMemset(r.mailbox, 0, sizeof(DeviceError)));
  switch (e.code) {
    case kErrEmbeddingId:
      return absl::InvalidArgumentError(absl::StrCat("embedding: token ", e.a, " has id ", e.b,
                                                     " outside [0, ", e.c, ")"));
    case kErrRopePosition:
      return absl::InvalidArgumentError(absl::StrCat("rope: token ", e.a, " has position ", e.b,
                                                     " outside [0, ", e.c, ")"));
    case kErrKvWriteSlot:
      return absl::InvalidArgumentError(absl::StrCat("kv_write: token ", e.a, ": slot_mapping = ", e.b,
                                                     " is outside [-1, num_slots = ", e.c, ")"));
    case kErrAttentionBlock:
      return absl::InvalidArgumentError(absl::StrCat("attention: sequence ", e.a, ": block table entry ",
                                                     e.b, " is outside [0, num_blocks = ", e.c, ")"));
    case kErrAttentionLayout: {
      static const char* const what[] = {"query_start is out of order or outside [0, T]",
                                         "context_lens is below the sequence's query tokens",
                                         "context_lens needs more blocks than max_blocks_per_seq",
                                         "query_start[0] must be 0 and query_start[num_seqs] must be T"};
      return absl::InvalidArgumentError(absl::StrCat("attention: sequence ", e.a, ": ",
                                                     e.c >= 0 && e.c < 4 ? what[e.c] : "bad layout",
                                                     " (value ", e.b, ")"));
    }
    default:
      return absl::InternalError(absl::StrCat("cuda: device error code ", e.code));
  }
}

int device_sm_count() { return runtime().sm_count; }
int device_max_smem_per_block() { return runtime().max_smem_per_block; }

absl::StatusOr<void*> scratch(size_t bytes) { return grow_scratch(0, bytes); }
absl::StatusOr<void*> scratch2(size_t bytes) { return grow_scratch(1, bytes); }

}  // namespace cuda

const Backend* cuda_backend_if_available(std::string* why) {
  static std::string reason;
  static const Backend* backend = [] {
    std::string w;
    const Backend* b = cuda::make_backend(&w);
    reason = w;
    return b;
  }();
  if (backend == nullptr && why != nullptr) *why = reason;
  return backend;
}

}  // namespace samebits
