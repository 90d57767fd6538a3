// argmax on CUDA: out[r] = the lowest id among the maxima of logits[r, :]; NaN never wins; a row
// of NaN only gives 0 (as the CPU). One block per row; each thread scans its strided ids in
// increasing order keeping the first maximum, then (value, id) pairs are combined by a rule that
// is associative and commutative (larger value wins, equal values keep the lower id), so the
// result is exact and independent of the combination order. No arithmetic: identical in both modes.
#include "absl/strings/str_cat.h"
#include "kernels/cuda/argmax_block.cuh"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/cuda_ops.h"

namespace samebits {
namespace {

__global__ void __launch_bounds__(cuda::kArgmaxThreads) argmax_kernel(const float* logits, int64_t vocab,
                                                                      int32_t* out) {
  cuda::wait_for_previous_kernel();
  const int64_t r = blockIdx.x;
  const int32_t id = cuda::block_argmax(logits + r * vocab, vocab);
  if (threadIdx.x == 0) out[r] = id;
}

}  // namespace

absl::Status cuda_argmax(const ExecContext& ctx, const ArgmaxArgs& a) {
  if (a.logits == nullptr) return absl::InvalidArgumentError("argmax: logits is null");
  if (a.out == nullptr) return absl::InvalidArgumentError("argmax: out is null");
  if (a.rows <= 0) return absl::InvalidArgumentError(absl::StrCat("argmax: rows must be positive, got ", a.rows));
  if (a.vocab <= 0 || a.vocab > INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat("argmax: vocab must be in [1, 2^31), got ", a.vocab));
  }
  if (a.rows > INT32_MAX) return absl::InvalidArgumentError("argmax: too many rows");
  return cuda::launch_after_previous("argmax_kernel", argmax_kernel, dim3(unsigned(a.rows)), dim3(cuda::kArgmaxThreads),
                                     0, cuda::stream_of(ctx), a.logits, a.vocab, a.out);
}

}  // namespace samebits
