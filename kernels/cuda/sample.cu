// sample on CUDA: seeded sampling per row with the CPU's arithmetic (kernels/cpu/sample.cpp), so the
// same logits give the same token. temperature 0 -> argmax (lowest id among the maxima). Otherwise:
// candidates are the non-NaN logits with (l - l_max) / T >= fixed_expf's underflow bound, ordered
// by (logit desc, id asc) through a radix sort of 64-bit keys (orderable logit bits, -0 as +0, then
// the complemented id: no reliance on sort stability); top-k keeps the first k; p_i =
// fixed_expf((l_i - l_max) / T) in fp32 (computed in parallel); one thread adds them in order in
// double into prefix sums cum_i (the CPU's total, mass and cumulative are exactly these prefix
// sums, added in the same order); top-p keeps the smallest prefix with cum >= top_p * total; the
// sample is the first candidate with cum > uniform * kept mass. uniform comes from the host
// (SamplingRow::uniform = sampling_uniform(seed, step)). Nothing depends on the batch: identical
// in both modes. Sampled rows are processed in groups to bound the scratch memory.
#include <cub/device/device_segmented_radix_sort.cuh>

#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/argmax_block.cuh"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/fixed_math.h"

namespace samebits {
namespace {

constexpr int kRowsPerGroup = 32;

struct RowJob {
  int32_t row;  // row of the logits / out
  float temperature;
  int32_t top_k;
  float top_p;
  double uniform;
};

struct RowState {
  float lmax;
  int32_t greedy;
  int32_t count;  // candidates
  int32_t done;   // 1: the answer is greedy (no finite softmax)
};

__device__ __forceinline__ uint64_t candidate_key(float l, int32_t id) {
  uint32_t u = float_bits(l == 0.0f ? 0.0f : l);
  u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (uint64_t(u) << 32) | uint64_t(~uint32_t(id));
}

__device__ __forceinline__ float key_logit(uint64_t key) {
  uint32_t u = uint32_t(key >> 32);
  u = (u & 0x80000000u) ? (u & 0x7fffffffu) : ~u;
  return bits_float(u);
}

__device__ __forceinline__ int32_t key_id(uint64_t key) { return int32_t(~uint32_t(key)); }

// One block per job: greedy answer, l_max, candidate keys (non-candidates get key 0, sorted last).
__global__ void __launch_bounds__(cuda::kArgmaxThreads)
    sample_keys_kernel(const float* logits, int64_t vocab, const RowJob* jobs, RowState* states,
                       uint64_t* keys) {
  const RowJob job = jobs[blockIdx.x];
  const float* row = logits + int64_t(job.row) * vocab;
  const int32_t greedy = cuda::block_argmax(row, vocab);
  const float lmax = row[greedy];
  const bool done = lmax != lmax || lmax - lmax != 0.0f;
  uint64_t* out = keys + int64_t(blockIdx.x) * vocab;
  int count = 0;
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
    const float l = row[i];
    bool candidate = !done && l == l && !(__fdiv_rn(l - lmax, job.temperature) < kExpUnderflow);
    out[i] = candidate ? candidate_key(l, int32_t(i)) : 0ull;
    count += candidate ? 1 : 0;
  }
  __shared__ int counts[cuda::kArgmaxThreads / 32];
#pragma unroll
  for (int o = 16; o >= 1; o >>= 1) count += __shfl_xor_sync(0xffffffffu, count, o);
  if ((threadIdx.x & 31) == 0) counts[threadIdx.x >> 5] = count;
  __syncthreads();
  if (threadIdx.x == 0) {
    int total = 0;
    for (int w = 0; w < cuda::kArgmaxThreads / 32; ++w) total += counts[w];
    states[blockIdx.x] = RowState{lmax, greedy, total, done ? 1 : 0};
  }
}

// One block per job over the sorted keys: probabilities in parallel, prefix sums by one thread,
// then the two searches in parallel (a minimum over indices: exact).
__global__ void __launch_bounds__(cuda::kArgmaxThreads)
    sample_pick_kernel(const RowJob* jobs, const RowState* states, const uint64_t* sorted, int64_t vocab,
                       float* prob, double* cum, int32_t* out) {
  const RowJob job = jobs[blockIdx.x];
  const RowState st = states[blockIdx.x];
  if (st.done || st.count == 0) {
    if (threadIdx.x == 0) out[job.row] = st.greedy;
    return;
  }
  const uint64_t* keys = sorted + int64_t(blockIdx.x) * vocab;
  float* p = prob + int64_t(blockIdx.x) * vocab;
  double* c = cum + int64_t(blockIdx.x) * vocab;
  const int kept = (job.top_k > 0 && job.top_k < st.count) ? job.top_k : st.count;
  for (int i = threadIdx.x; i < kept; i += blockDim.x) {
    p[i] = fixed_expf(__fdiv_rn(key_logit(keys[i]) - st.lmax, job.temperature));
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int i = 0; i < kept; ++i) {
      total += double(p[i]);
      c[i] = total;
    }
  }
  __syncthreads();
  __shared__ int first[cuda::kArgmaxThreads / 32];
  __shared__ int prefix_shared;
  auto block_min = [&](int v) {
#pragma unroll
    for (int o = 16; o >= 1; o >>= 1) v = min(v, __shfl_xor_sync(0xffffffffu, v, o));
    if ((threadIdx.x & 31) == 0) first[threadIdx.x >> 5] = v;
    __syncthreads();
    int m = first[0];
    for (int w = 1; w < cuda::kArgmaxThreads / 32; ++w) m = min(m, first[w]);
    __syncthreads();
    return m;
  };
  const double threshold = double(job.top_p) * c[kept - 1];
  int mine = kept;
  for (int i = threadIdx.x; i < kept; i += blockDim.x) {
    if (c[i] >= threshold) {
      mine = i;
      break;
    }
  }
  const int found = block_min(mine);
  if (threadIdx.x == 0) prefix_shared = found < kept ? found + 1 : kept;
  __syncthreads();
  const int prefix = prefix_shared;
  const double target = job.uniform * c[prefix - 1];
  mine = prefix;
  for (int i = threadIdx.x; i < prefix; i += blockDim.x) {
    if (c[i] > target) {
      mine = i;
      break;
    }
  }
  const int pick = block_min(mine);
  if (threadIdx.x == 0) out[job.row] = key_id(keys[pick < prefix ? pick : prefix - 1]);
}

__global__ void segment_offsets_kernel(int* offsets, int n, int64_t vocab) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) offsets[i] = int(i * vocab);
}

absl::Status validate_row(int64_t r, const SamplingRow& p) {
  if (!(p.temperature >= 0.0f) || p.temperature - p.temperature != 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat("sample: row ", r, " temperature must be finite and >= 0, got ", p.temperature));
  }
  if (p.top_k < 0) return absl::InvalidArgumentError(absl::StrCat("sample: row ", r, " top_k must be >= 0, got ", p.top_k));
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat("sample: row ", r, " top_p must be in (0, 1], got ", p.top_p));
  }
  if (!(p.uniform >= 0.0 && p.uniform < 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat("sample: row ", r, " uniform must be in [0, 1), got ", p.uniform));
  }
  return absl::OkStatus();
}

size_t align256(size_t n) { return (n + 255) / 256 * 256; }

}  // namespace

absl::Status cuda_sample(const ExecContext& ctx, const SampleArgs& a) {
  if (a.logits == nullptr) return absl::InvalidArgumentError("sample: logits is null");
  if (a.params == nullptr) return absl::InvalidArgumentError("sample: params is null");
  if (a.out == nullptr) return absl::InvalidArgumentError("sample: out is null");
  if (a.rows <= 0) return absl::InvalidArgumentError(absl::StrCat("sample: rows must be positive, got ", a.rows));
  if (a.vocab <= 0 || a.vocab > INT32_MAX / kRowsPerGroup) {
    return absl::InvalidArgumentError(absl::StrCat("sample: vocab must be in [1, 2^26), got ", a.vocab));
  }
  std::vector<RowJob> jobs;
  for (int64_t r = 0; r < a.rows; ++r) {
    SAMEBITS_RETURN_IF_ERROR(validate_row(r, a.params[r]));
    const SamplingRow& p = a.params[r];
    if (p.temperature != 0.0f) jobs.push_back(RowJob{int32_t(r), p.temperature, p.top_k, p.top_p, p.uniform});
  }
  // Greedy answers for every row first; sampled rows overwrite theirs in stream order.
  SAMEBITS_RETURN_IF_ERROR(cuda_argmax(ctx, ArgmaxArgs{a.logits, a.rows, a.vocab, a.out}));
  if (jobs.empty()) return absl::OkStatus();

  cudaStream_t stream = cuda::stream_of(ctx);
  const int64_t V = a.vocab;
  const int G = kRowsPerGroup;
  size_t sort_temp = 0;
  SAMEBITS_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortKeysDescending(
      nullptr, sort_temp, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr), int(G * V), G,
      static_cast<const int*>(nullptr), static_cast<const int*>(nullptr), 0, 64, stream));
  // Scratch layout: jobs | states | offsets | keys | sorted | prob | cum | sort temp.
  const size_t o_jobs = 0;
  const size_t o_states = align256(o_jobs + sizeof(RowJob) * G);
  const size_t o_offsets = align256(o_states + sizeof(RowState) * G);
  const size_t o_keys = align256(o_offsets + sizeof(int) * (G + 1));
  const size_t o_sorted = align256(o_keys + sizeof(uint64_t) * G * V);
  const size_t o_prob = align256(o_sorted + sizeof(uint64_t) * G * V);
  const size_t o_cum = align256(o_prob + sizeof(float) * G * V);
  const size_t o_temp = align256(o_cum + sizeof(double) * G * V);
  absl::StatusOr<void*> buf = cuda::scratch(o_temp + sort_temp);
  if (!buf.ok()) return buf.status();
  char* base = static_cast<char*>(*buf);
  RowJob* d_jobs = reinterpret_cast<RowJob*>(base + o_jobs);
  RowState* d_states = reinterpret_cast<RowState*>(base + o_states);
  int* d_offsets = reinterpret_cast<int*>(base + o_offsets);
  uint64_t* d_keys = reinterpret_cast<uint64_t*>(base + o_keys);
  uint64_t* d_sorted = reinterpret_cast<uint64_t*>(base + o_sorted);
  float* d_prob = reinterpret_cast<float*>(base + o_prob);
  double* d_cum = reinterpret_cast<double*>(base + o_cum);
  void* d_temp = base + o_temp;

  for (size_t g0 = 0; g0 < jobs.size(); g0 += G) {
    const int n = int(std::min<size_t>(G, jobs.size() - g0));
    SAMEBITS_CUDA_TRY(cudaMemcpyAsync(d_jobs, jobs.data() + g0, sizeof(RowJob) * n, cudaMemcpyHostToDevice, stream));
    segment_offsets_kernel<<<1, 64, 0, stream>>>(d_offsets, n, V);
    SAMEBITS_RETURN_IF_ERROR(cuda::check_launch("segment_offsets_kernel"));
    sample_keys_kernel<<<n, cuda::kArgmaxThreads, 0, stream>>>(a.logits, V, d_jobs, d_states, d_keys);
    SAMEBITS_RETURN_IF_ERROR(cuda::check_launch("sample_keys_kernel"));
    size_t temp_bytes = sort_temp;
    SAMEBITS_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortKeysDescending(
        d_temp, temp_bytes, d_keys, d_sorted, int(n * V), n, d_offsets, d_offsets + 1, 0, 64, stream));
    sample_pick_kernel<<<n, cuda::kArgmaxThreads, 0, stream>>>(d_jobs, d_states, d_sorted, V, d_prob, d_cum,
                                                                a.out);
    SAMEBITS_RETURN_IF_ERROR(cuda::check_launch("sample_pick_kernel"));
    // The host's job vector is copied from pageable memory (staged before the call returns), and
    // the next group reuses the device buffers only after this group's kernels (stream order).
  }
  return absl::OkStatus();
}

}  // namespace samebits
