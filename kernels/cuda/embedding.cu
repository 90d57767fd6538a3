// embedding on CUDA: y[t, :] = table[ids[t], :], a row copy (no arithmetic: identical in both
// modes). One thread per value. An id outside [0, vocab) skips its token and is reported by the
// next synchronize (ids live in device memory).
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/op_checks.h"

namespace samebits {
namespace {

__global__ void embedding_kernel(EmbeddingArgs a, cuda::DeviceError* box) {
  cuda::wait_for_previous_kernel();
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= a.T * a.dim) return;
  const int64_t t = i / a.dim, d = i % a.dim;
  const int32_t id = a.ids[t];
  if (id < 0 || id >= a.vocab) {
    if (d == 0) cuda::report_device_error(box, cuda::kErrEmbeddingId, t, id, a.vocab);
    return;
  }
  a.y[i] = a.table[int64_t(id) * a.dim + d];
}

}  // namespace

absl::Status cuda_embedding(const ExecContext& ctx, const EmbeddingArgs& a) {
  if (absl::Status shape = check_embedding_shape(a); !shape.ok()) return shape;
  const int64_t n = a.T * a.dim;
  return cuda::launch_after_previous("embedding_kernel", embedding_kernel, dim3(unsigned(cuda::ceil_div64(n, 256))),
                                     dim3(256), 0, cuda::stream_of(ctx), a, cuda::device_error_mailbox());
}

}  // namespace samebits
