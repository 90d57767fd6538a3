// The CUDA backend's table: device memory through cudaMalloc, synchronous copies plus asynchronous
// ones from page-locked memory, graph capture of the backend's stream, staged bulk uploads, one
// function per op (kernels/cuda/cuda_ops.h), and the shared plumbing of kernels/cuda/cuda_common.h. The id is
// "cuda-sm<major><minor>" from the device's compute capability, so goldens are keyed per GPU
// generation; the device fields (name, SM count, CUDA runtime and cuBLASLt versions) are read here
// and enter the run identity of default-mode goldens. The table exists only when a device answers; otherwise cuda_backend() is nullptr and
// says why.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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
  DeviceError* host_mailbox = nullptr;  // page-locked: the mailbox's copy read after a stream sync
  cudaStream_t stream = nullptr;        // main_stream()
  std::mutex scratch_mutex;
  std::atomic<uint64_t> scratch_epoch{0};
  std::mutex bulk_mutex;  // upload_bulk's staging buffers
  void* bulk_staging[2] = {nullptr, nullptr};
  cudaEvent_t bulk_done[2] = {nullptr, nullptr};
  cudaStream_t bulk_stream = nullptr;
  void* scratch[2] = {nullptr, nullptr};
  size_t scratch_bytes[2] = {0, 0};
  std::atomic<int64_t> host_waits{0};
  std::atomic<int64_t> host_wait_ns{0};
  // Backend::mark's two slots: an event, and the page-locked word the error mailbox is copied
  // into right before it (created at the first mark).
  cudaEvent_t mark_done[2] = {nullptr, nullptr};
  DeviceError* mark_mailbox[2] = {nullptr, nullptr};
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
  r.scratch_epoch.fetch_add(1, std::memory_order_relaxed);
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

// One wait: the mailbox is copied behind the stream's work, then the stream is waited for.
absl::Status cuda_synchronize(const ExecContext& ctx) {
  Runtime& r = runtime();
  cudaStream_t stream = stream_of(ctx);
  if (r.host_mailbox == nullptr) return blocking_stream_sync(stream);  // released at exit
  SAMEBITS_CUDA_TRY(cudaMemcpyAsync(r.host_mailbox, r.mailbox, sizeof(DeviceError), cudaMemcpyDeviceToHost, stream));
  SAMEBITS_RETURN_IF_ERROR(blocking_stream_sync(stream));
  if (r.host_mailbox->code == 0) return absl::OkStatus();
  const DeviceError e = *r.host_mailbox;
  r.host_mailbox->code = 0;
  SAMEBITS_CUDA_TRY(cudaMemset(r.mailbox, 0, sizeof(DeviceError)));
  return device_error_status(e);
}

void count_wait(std::chrono::steady_clock::time_point since);

// The mailbox copied behind the work so far, then an event: waiting for the event alone lets the
// work issued after the mark run on while the host reads what came before it.
absl::Status cuda_mark(const ExecContext& ctx, int slot) {
  Runtime& r = runtime();
  slot &= 1;
  if (r.mark_done[slot] == nullptr) {
    SAMEBITS_CUDA_TRY(cudaEventCreateWithFlags(&r.mark_done[slot], cudaEventDisableTiming));
    void* box = nullptr;
    SAMEBITS_CUDA_TRY(cudaMallocHost(&box, sizeof(DeviceError)));
    r.mark_mailbox[slot] = static_cast<DeviceError*>(box);
    r.mark_mailbox[slot]->code = 0;
  }
  cudaStream_t stream = stream_of(ctx);
  SAMEBITS_CUDA_TRY(cudaMemcpyAsync(r.mark_mailbox[slot], r.mailbox, sizeof(DeviceError), cudaMemcpyDeviceToHost, stream));
  SAMEBITS_CUDA_TRY(cudaEventRecord(r.mark_done[slot], stream));
  return absl::OkStatus();
}

absl::Status cuda_wait_mark(int slot) {
  Runtime& r = runtime();
  slot &= 1;
  if (r.mark_done[slot] == nullptr) return absl::FailedPreconditionError("cuda wait_mark: the slot was never marked");
  const auto t0 = std::chrono::steady_clock::now();
  const cudaError_t waited = cudaEventSynchronize(r.mark_done[slot]);
  count_wait(t0);
  SAMEBITS_RETURN_IF_ERROR(cuda_status(waited, "cudaEventSynchronize"));
  if (r.mark_mailbox[slot]->code == 0) return absl::OkStatus();
  const DeviceError e = *r.mark_mailbox[slot];
  r.mark_mailbox[slot]->code = 0;
  SAMEBITS_CUDA_TRY(cudaMemset(r.mailbox, 0, sizeof(DeviceError)));
  return device_error_status(e);
}

// Only "not ready" is busy: an error is left for the next synchronize to report.
bool cuda_busy(const ExecContext& ctx) { return cudaStreamQuery(stream_of(ctx)) == cudaErrorNotReady; }

absl::StatusOr<void*> cuda_alloc_host(size_t bytes) {
  void* p = nullptr;
  if (cudaError_t e = cudaMallocHost(&p, std::max<size_t>(bytes, 256)); e != cudaSuccess) {
    cudaGetLastError();
    return absl::ResourceExhaustedError(
        absl::StrCat("cuda host alloc: cannot allocate ", bytes, " page-locked bytes: ", cudaGetErrorString(e)));
  }
  return p;
}

void cuda_free_host(void* p) {
  if (p != nullptr) cudaFreeHost(p);
}

absl::Status cuda_upload_async(const ExecContext& ctx, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  SAMEBITS_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_of(ctx)));
  return absl::OkStatus();
}

absl::Status cuda_download_async(const ExecContext& ctx, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  SAMEBITS_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_of(ctx)));
  return absl::OkStatus();
}

// Thread-local capture: only this thread's calls are recorded, other threads may use CUDA freely.
absl::Status cuda_capture_begin(const ExecContext& ctx) {
  SAMEBITS_CUDA_TRY(cudaStreamBeginCapture(stream_of(ctx), cudaStreamCaptureModeThreadLocal));
  return absl::OkStatus();
}

absl::StatusOr<void*> cuda_capture_end(const ExecContext& ctx) {
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream_of(ctx), &graph);
  if (ended != cudaSuccess) {
    cudaGetLastError();
    if (graph != nullptr) cudaGraphDestroy(graph);
    return cuda_status(ended, "cudaStreamEndCapture");
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (made != cudaSuccess) {
    cudaGetLastError();
    return cuda_status(made, "cudaGraphInstantiate");
  }
  return static_cast<void*>(exec);
}

absl::Status cuda_graph_launch(const ExecContext& ctx, void* graph) {
  SAMEBITS_CUDA_TRY(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), stream_of(ctx)));
  return absl::OkStatus();
}

void cuda_graph_free(void* graph) {
  if (graph != nullptr) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph));
}

uint64_t cuda_memory_epoch() { return scratch_epoch(); }

// Weights from pageable or file-mapped memory: chunks copied by several host threads into one of
// two page-locked buffers while the other one's transfer runs on a copy stream.
absl::Status cuda_upload_bulk(void* dst, const void* src, size_t bytes) {
  constexpr size_t kChunk = size_t(64) << 20;
  if (bytes == 0) return absl::OkStatus();
  if (dst == nullptr || src == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("cuda upload_bulk: null pointer for ", bytes, " bytes"));
  }
  Runtime& r = runtime();
  std::lock_guard<std::mutex> lock(r.bulk_mutex);
  if (r.bulk_stream == nullptr) {
    SAMEBITS_CUDA_TRY(cudaStreamCreateWithFlags(&r.bulk_stream, cudaStreamNonBlocking));
    for (int i = 0; i < 2; ++i) {
      SAMEBITS_CUDA_TRY(cudaMallocHost(&r.bulk_staging[i], kChunk));
      SAMEBITS_CUDA_TRY(cudaEventCreateWithFlags(&r.bulk_done[i], cudaEventDisableTiming));
    }
  }
  const unsigned hw = std::thread::hardware_concurrency();
  const int threads = int(std::clamp(hw / 2, 1u, 8u));
  const auto* from = static_cast<const uint8_t*>(src);
  auto* to = static_cast<uint8_t*>(dst);
  int which = 0;
  for (size_t at = 0; at < bytes; at += kChunk, which ^= 1) {
    const size_t n = std::min(kChunk, bytes - at);
    SAMEBITS_CUDA_TRY(cudaEventSynchronize(r.bulk_done[which]));  // the buffer's last transfer is done
    auto* stage = static_cast<uint8_t*>(r.bulk_staging[which]);
    const size_t part = std::max<size_t>(4096, (n / size_t(threads) + 4095) / 4096 * 4096);
    std::vector<std::thread> pool;
    for (int t = 1; t < threads && size_t(t) * part < n; ++t) {
      const size_t b = size_t(t) * part, e = std::min(n, b + part);
      pool.emplace_back([=] { std::memcpy(stage + b, from + at + b, e - b); });
    }
    std::memcpy(stage, from + at, std::min(n, part));
    for (std::thread& th : pool) th.join();
    SAMEBITS_CUDA_TRY(cudaMemcpyAsync(to + at, stage, n, cudaMemcpyHostToDevice, r.bulk_stream));
    SAMEBITS_CUDA_TRY(cudaEventRecord(r.bulk_done[which], r.bulk_stream));
  }
  return blocking_stream_sync(r.bulk_stream);
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
  if (r.host_mailbox != nullptr) cudaFreeHost(r.host_mailbox);
  r.host_mailbox = nullptr;
  std::lock_guard<std::mutex> bulk_lock(r.bulk_mutex);
  for (int i = 0; i < 2; ++i) {
    if (r.bulk_staging[i] != nullptr) cudaFreeHost(r.bulk_staging[i]);
    if (r.bulk_done[i] != nullptr) cudaEventDestroy(r.bulk_done[i]);
    r.bulk_staging[i] = nullptr;
    r.bulk_done[i] = nullptr;
  }
  if (r.bulk_stream != nullptr) cudaStreamDestroy(r.bulk_stream);
  r.bulk_stream = nullptr;
  for (int i = 0; i < 2; ++i) {
    if (r.mark_done[i] != nullptr) cudaEventDestroy(r.mark_done[i]);
    if (r.mark_mailbox[i] != nullptr) cudaFreeHost(r.mark_mailbox[i]);
    r.mark_done[i] = nullptr;
    r.mark_mailbox[i] = nullptr;
  }
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
  if (cudaError_t e = cudaMallocHost(&box, sizeof(DeviceError)); e != cudaSuccess) {
    *why = absl::StrCat("cannot allocate the host mailbox: ", cudaGetErrorString(e));
    return nullptr;
  }
  r.host_mailbox = static_cast<DeviceError*>(box);
  r.host_mailbox->code = 0;
  if (cudaError_t e = cudaStreamCreate(&r.stream); e != cudaSuccess) {
    *why = absl::StrCat("cannot create the backend's stream: ", cudaGetErrorString(e));
    return nullptr;
  }
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
  b->gate_up_silu = cuda_gate_up_silu;
  b->embedding = cuda_embedding;
  b->kv_write = cuda_kv_write;
  b->qkv_prep = cuda_qkv_prep;
  b->busy = cuda_busy;
  b->mark = cuda_mark;
  b->wait_mark = cuda_wait_mark;
  b->attention = cuda_attention;
  b->argmax = cuda_argmax;
  b->sample = cuda_sample;
  b->fill_synthetic = cuda_fill_synthetic_entry;
  b->make_op_timer = make_event_op_timer;
  b->sync_stats = host_wait_stats;
  b->alloc_host = cuda_alloc_host;
  b->free_host = cuda_free_host;
  b->upload_async = cuda_upload_async;
  b->download_async = cuda_download_async;
  b->capture_begin = cuda_capture_begin;
  b->capture_end = cuda_capture_end;
  b->graph_launch = cuda_graph_launch;
  b->graph_free = cuda_graph_free;
  b->memory_epoch = cuda_memory_epoch;
  b->upload_bulk = cuda_upload_bulk;
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
  return device_error_status(e);
}

absl::Status device_error_status(const DeviceError& e) {
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
uint64_t scratch_epoch() { return runtime().scratch_epoch.load(std::memory_order_relaxed); }
cudaStream_t main_stream() { return runtime().stream; }

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
