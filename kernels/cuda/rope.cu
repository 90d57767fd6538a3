// rope on CUDA (NeoX / HF rotate_half layout), in place on q and k, from the fp32 table
// (make_rope_table): out[i] = q[i]*c_i - q[i+D/2]*s_i, out[i+D/2] = q[i+D/2]*c_i + q[i]*s_i in fp32
// (kernels/rope_math.h: each product rounded, then the add), rounded to bf16. The CPU's arithmetic, so
// the bits equal the CPU's. Pointwise, no reduction: identical in both modes; one thread per
// rotated pair. A position outside [0, max_position) skips its token and is reported by the next
// synchronize (the CPU checks them all first; positions live in device memory here).
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/op_checks.h"
#include "kernels/rope_math.h"

namespace samebits {
namespace {

__global__ void rope_kernel(RopeArgs a, cuda::DeviceError* box) {
  cuda::wait_for_previous_kernel();
  const int half = a.head_dim / 2;
  const int heads = a.num_q_heads + a.num_kv_heads;
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t per_token = int64_t(heads) * half;
  if (i >= a.T * per_token) return;
  const int64_t t = i / per_token;
  const int rest = int(i % per_token);
  const int h = rest / half, j = rest % half;
  const int32_t pos = a.positions[t];
  if (pos < 0 || pos >= a.max_position) {
    if (rest == 0) cuda::report_device_error(box, cuda::kErrRopePosition, t, pos, a.max_position);
    return;
  }
  bf16* v = h < a.num_q_heads ? a.q + (t * a.num_q_heads + h) * a.head_dim
                              : a.k + (t * a.num_kv_heads + (h - a.num_q_heads)) * a.head_dim;
  const float* row = a.table + int64_t(pos) * a.head_dim;
  const float c = row[j], s = row[half + j];
  const float lo = to_float(v[j]), hi = to_float(v[j + half]);
  v[j] = rope_lo(lo, hi, c, s);
  v[j + half] = rope_hi(lo, hi, c, s);
}

}  // namespace

absl::Status cuda_rope(const ExecContext& ctx, const RopeArgs& a) {
  if (absl::Status shape = check_rope_shape(a); !shape.ok()) return shape;
  const int64_t n = a.T * int64_t(a.num_q_heads + a.num_kv_heads) * (a.head_dim / 2);
  return cuda::launch_after_previous("rope_kernel", rope_kernel, dim3(unsigned(cuda::ceil_div64(n, 256))), dim3(256), 0,
                                     cuda::stream_of(ctx), a, cuda::device_error_mailbox());
}

}  // namespace samebits
