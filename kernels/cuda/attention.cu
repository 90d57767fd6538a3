// Paged causal attention on CUDA over a varlen batch (prefill chunks and decodes mixed), GQA.
//
// Segments (key ranges) per query at absolute position p come from the plan, exactly as on the CPU
// (kernels/cpu/attention.cpp):
//   invariant (kFixedSplitSize): [j*split_size, (j+1)*split_size) ∩ [0, p], aligned to absolute
//     positions, every key read from the paged cache (written by kv_write before attention);
//   default (kSplitCount): decode: [0, p] cut into min(split_count, p+1) equal parts (the count
//     comes from the batch); prefill (q_len > 1) with separate_new_keys: [0, cached) from the cache
//     and [cached, p] from this step's k_new/v_new, two partials.
// Order inside one segment, per (query, q head) row: keys in sub-blocks of 64 aligned to absolute
// positions (0, 64, 128, ...), visiting only sub-blocks that hold keys of the row's range; per
// sub-block: s = (q . k via mma.sync m16n8k16, fp32) * scale; m_blk = max over the row's keys;
// m' = max(m, m_blk); alpha = fixed_expf(m - m') (0 on the row's first sub-block); e_j =
// fixed_expf(s_j - m'); l = l*alpha + sum(e) (sum: each lane over its 16 columns in order, then
// lanes xor 1, xor 2); o = o*alpha + bf16(e) . v (mma.sync). A row's bits depend only on its q
// and its keys: rows never share a reduction, and sub-blocks outside its range leave it untouched.
// Merge of the segments of a row, in index order, empty ones skipped: the first partial is taken
// as is; then M' = max(M, m_c), a = fixed_expf(M - M'), b = fixed_expf(m_c - M'),
// L = L*a + l_c*b, O = O*a + o_c*b; out = bf16(O / L). This fold runs either in the block that
// computed all of a tile's segments, or in a merge kernel over partials stored in fp32 by blocks
// that computed one segment each (decode tiles, for parallelism): the same operations in the same
// order, so both give the same bits. Which one runs never depends on anything but speed.
// Invariant mode therefore gives a query the same bits alone or in any batch, chunked or not, in
// prefill or decode, with any block table or block size. Bits differ from the CPU backend's (the
// CPU reduces in 16 fixed lanes and merges with a global max); not promised. No atomics on floats.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/attention_host.h"
#include "kernels/cuda/attention_kernel.cuh"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/cuda_ops.h"

namespace samebits {
namespace {

using cuda::AttnItem;
using cuda::AttnParams;
using cuda::MergeJob;

absl::Status invalid(const std::string& what) { return attention_invalid(what); }

// Segments of a tile whose last row sits at position p_max.
int tile_segments(const AttentionPlan& plan, int64_t cached, int64_t q_len, int64_t p_max) {
  if (attention_reads_new_keys(plan, q_len)) return cached > 0 ? 2 : 1;
  return num_splits(plan, p_max + 1);
}

size_t align256(size_t n) { return (n + 255) / 256 * 256; }

template <int HD>
absl::Status launch(const AttnParams& base, const std::vector<AttnItem>& items, const std::vector<MergeJob>& jobs,
                    int64_t partial_floats, cudaStream_t stream) {
  constexpr int kSmem = cuda::kAttnRows * HD * 2 + 4 * cuda::kAttnKeys * HD * 2;
  static bool attribute_set = false;
  if (!attribute_set) {
    SAMEBITS_CUDA_TRY(cudaFuncSetAttribute(cuda::attention_kernel<HD>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    attribute_set = true;
  }
  const size_t o_items = 0;
  const size_t o_jobs = align256(sizeof(AttnItem) * items.size());
  const size_t o_partials = align256(o_jobs + sizeof(MergeJob) * jobs.size());
  absl::StatusOr<void*> buf = cuda::scratch(o_partials + sizeof(float) * size_t(partial_floats));
  if (!buf.ok()) return buf.status();
  char* p = static_cast<char*>(*buf);
  AttnParams params = base;
  params.items = reinterpret_cast<const AttnItem*>(p + o_items);
  params.partials = reinterpret_cast<float*>(p + o_partials);
  SAMEBITS_CUDA_TRY(cudaMemcpyAsync(p + o_items, items.data(), sizeof(AttnItem) * items.size(), cudaMemcpyHostToDevice,
                                    stream));
  if (!jobs.empty()) {
    SAMEBITS_CUDA_TRY(cudaMemcpyAsync(p + o_jobs, jobs.data(), sizeof(MergeJob) * jobs.size(), cudaMemcpyHostToDevice,
                                      stream));
  }
  cuda::attention_kernel<HD><<<unsigned(items.size()), cuda::kAttnThreads, kSmem, stream>>>(params);
  SAMEBITS_RETURN_IF_ERROR(cuda::check_launch("attention_kernel"));
  if (!jobs.empty()) {
    cuda::attention_merge_kernel<HD><<<unsigned(jobs.size()), 16 * 32, 0, stream>>>(
        params, reinterpret_cast<const MergeJob*>(p + o_jobs));
    SAMEBITS_RETURN_IF_ERROR(cuda::check_launch("attention_merge_kernel"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status cuda_attention(const ExecContext& ctx, const AttentionArgs& a) {
  SAMEBITS_RETURN_IF_ERROR(check_attention_shape(a));
  if (a.head_dim != 64 && a.head_dim != 128) {
    return absl::UnimplementedError(absl::StrCat("attention: head_dim = ", a.head_dim,
                                                 " (the CUDA kernels support 64 and 128)"));
  }
  if (a.num_seqs == 0 || a.T == 0) return absl::OkStatus();
  cudaStream_t stream = cuda::stream_of(ctx);

  // The batch's structure on the host: the caller's mirrors, or a (synchronising) download.
  std::vector<int32_t> qs_copy, ctx_copy;
  const int32_t* qs = a.host_query_start;
  const int32_t* cl = a.host_context_lens;
  if (qs == nullptr || cl == nullptr) {
    qs_copy.resize(size_t(a.num_seqs) + 1);
    ctx_copy.resize(size_t(a.num_seqs));
    SAMEBITS_CUDA_TRY(cudaStreamSynchronize(stream));
    SAMEBITS_CUDA_TRY(cudaMemcpy(qs_copy.data(), a.query_start, sizeof(int32_t) * qs_copy.size(), cudaMemcpyDeviceToHost));
    SAMEBITS_CUDA_TRY(cudaMemcpy(ctx_copy.data(), a.context_lens, sizeof(int32_t) * ctx_copy.size(), cudaMemcpyDeviceToHost));
    qs = qs_copy.data();
    cl = ctx_copy.data();
  }
  // Block table entries live in device memory: the kernel checks them (reported by synchronize).
  SAMEBITS_RETURN_IF_ERROR(check_attention_sequences(a, qs, cl, nullptr));

  // Work list: tiles of 64 rows per (sequence, kv head). Tiles of one warp's rows (decodes) with
  // several segments compute one segment per block and are merged afterwards; all others fold
  // their segments in the block. Longest tiles first (scheduling only).
  const int group = a.num_q_heads / a.num_kv_heads;
  const int HD = a.head_dim;
  std::vector<AttnItem> folded, split;
  std::vector<MergeJob> jobs;
  std::vector<int64_t> folded_work;
  int64_t partial_floats = 0;
  for (int s = 0; s < a.num_seqs; ++s) {
    const int64_t q_len = int64_t(qs[s + 1]) - qs[s];
    const int64_t cached = int64_t(cl[s]) - q_len;
    const int64_t rows = q_len * group;
    for (int64_t row0 = 0; row0 < rows; row0 += cuda::kAttnRows) {
      const int nrows = int(std::min<int64_t>(cuda::kAttnRows, rows - row0));
      const int64_t p_max = cached + (row0 + nrows - 1) / group;
      const int nseg = tile_segments(a.plan, cached, q_len, p_max);
      for (int g = 0; g < a.num_kv_heads; ++g) {
        if (nrows <= 16 && nseg > 1) {
          const int64_t base = partial_floats;
          partial_floats += int64_t(nseg) * nrows * (HD + 2);
          for (int c = 0; c < nseg; ++c) split.push_back(AttnItem{s, g, int(row0), nrows, c, c + 1, base});
          jobs.push_back(MergeJob{s, g, int(row0), nrows, nseg, base});
        } else {
          folded.push_back(AttnItem{s, g, int(row0), nrows, 0, nseg, -1});
          folded_work.push_back(p_max);
        }
      }
    }
  }
  std::vector<size_t> order(folded.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return folded_work[x] > folded_work[y]; });
  std::vector<AttnItem> items;
  items.reserve(folded.size() + split.size());
  for (size_t i : order) items.push_back(folded[i]);
  items.insert(items.end(), split.begin(), split.end());
  if (items.empty()) return absl::OkStatus();
  if (items.size() > INT32_MAX || jobs.size() > INT32_MAX) return invalid("too many work items");

  AttnParams params{};
  params.q = a.q;
  params.k_new = a.k_new;
  params.v_new = a.v_new;
  params.k_cache = a.k_cache;
  params.v_cache = a.v_cache;
  params.query_start = a.query_start;
  params.context_lens = a.context_lens;
  params.block_tables = a.block_tables;
  params.max_blocks_per_seq = a.max_blocks_per_seq;
  params.num_q_heads = a.num_q_heads;
  params.num_kv_heads = a.num_kv_heads;
  params.block_size = a.block_size;
  params.num_blocks = a.num_blocks;
  params.scale = a.scale;
  params.split_count_kind = a.plan.kind == AttentionPlan::Kind::kSplitCount ? 1 : 0;
  params.split_size = a.plan.split_size;
  params.split_count = a.plan.split_count;
  params.separate_new_keys = a.plan.separate_new_keys ? 1 : 0;
  params.out = a.out;
  params.mailbox = cuda::device_error_mailbox();
  if (HD == 64) return launch<64>(params, items, jobs, partial_floats, stream);
  return launch<128>(params, items, jobs, partial_floats, stream);
}

}  // namespace samebits
