// The CPU backend's table: host memory (malloc/free/memcpy) and one function per op
// (kernels/cpu/cpu_ops.h). Synchronous: every op has finished when it returns.
#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_ops.h"

namespace samebits {
namespace {

absl::StatusOr<void*> cpu_alloc(size_t bytes) {
  // 64-byte alignment (cache line); aligned_alloc needs a size that is a multiple of it.
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) {
    return absl::ResourceExhaustedError("cpu alloc: cannot allocate " + std::to_string(bytes) +
                                        " bytes");
  }
  return p;
}

void cpu_free(void* p) { std::free(p); }

absl::Status cpu_copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  if (dst == nullptr || src == nullptr) {
    return absl::InvalidArgumentError("cpu copy: null pointer for " + std::to_string(bytes) +
                                      " bytes");
  }
  std::memcpy(dst, src, bytes);
  return absl::OkStatus();
}

absl::Status cpu_synchronize(const ExecContext&) { return absl::OkStatus(); }

Backend make_cpu_backend() {
  Backend b;
  b.id = "cpu";
  b.description = "CPU (OpenMP, up to " + std::to_string(omp_get_max_threads()) +
                  " threads, 16 fixed reduction lanes)";
  b.alloc = cpu_alloc;
  b.free = cpu_free;
  b.upload = cpu_copy;
  b.download = cpu_copy;
  b.synchronize = cpu_synchronize;
  b.linear = cpu_linear;
  b.rmsnorm = cpu_rmsnorm;
  b.rope = cpu_rope;
  b.silu_mul = cpu_silu_mul;
  b.gate_up_silu = cpu_gate_up_silu;
  b.embedding = cpu_embedding;
  b.kv_write = cpu_kv_write;
  b.qkv_prep = cpu_qkv_prep;
  b.attention = cpu_attention;
  b.argmax = cpu_argmax;
  b.sample = cpu_sample;
  return b;
}

}  // namespace

const Backend& cpu_backend() {
  static const Backend backend = make_cpu_backend();
  return backend;
}

}  // namespace samebits
