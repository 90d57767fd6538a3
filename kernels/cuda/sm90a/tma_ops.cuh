// The bulk tensor copy engine (TMA) and thread-block clusters for the sm_90a linear kernels:
// tensor maps of K-major bf16 matrices (128-byte swizzled boxes of box_rows x 64 values, zeros
// beyond the matrix), 2-d tile copies completing on an mbarrier (optionally multicast to several
// CTAs of the cluster, each receiving the same bytes at the same shared-memory offset and signalled
// on its own mbarrier at the same offset), and the cluster rank / barrier / remote-arrive helpers.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/bf16.h"

namespace samebits::cuda {

constexpr int kTmaBoxK = 64;  // one 128-byte swizzled row of bf16 per box row

// A launch of blocks of `threads` threads and `smem` bytes of dynamic shared memory in clusters of
// `ctas` CTAs along x (the cluster attribute is set for 1 too); `attribute` (one element) must
// outlive the config.
inline cudaLaunchConfig_t cluster_launch_config(int ctas, int threads, int smem, cudaStream_t stream,
                                                cudaLaunchAttribute* attribute) {
  cudaLaunchConfig_t config = {};
  attribute[0].id = cudaLaunchAttributeClusterDimension;
  attribute[0].val.clusterDim.x = unsigned(ctas);
  attribute[0].val.clusterDim.y = 1;
  attribute[0].val.clusterDim.z = 1;
  config.blockDim = dim3(unsigned(threads));
  config.dynamicSmemBytes = size_t(smem);
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = 1;
  return config;
}

// A [rows, K] bf16 row-major matrix as boxes of box_rows x kTmaBoxK values, 128-byte swizzled;
// reads beyond rows or K return zeros (and still count as box bytes for complete_tx).
absl::Status make_tma_map(CUtensorMap* map, const bf16* ptr, int rows, int K, int box_rows);

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, int k, int row, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(k), "r"(row), "r"(bar)
      : "memory");
}
// The same box written into every CTA of the cluster named in cta_mask, at offset dst of each, and
// counted on each one's mbarrier at offset bar.
__device__ __forceinline__ void tma_load_2d_multicast(uint32_t dst, const CUtensorMap* map, int k, int row,
                                                      uint32_t bar, uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(k), "r"(row), "r"(bar), "h"(cta_mask)
      : "memory");
}
// Writes the box at shared-memory offset src (laid out as the map's box, swizzled) to the tensor at
// (col, row), clipped to the tensor's bounds; one bulk group per call (committed here).
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, uint32_t src, int col, int row) {
  asm volatile(
      "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
      "cp.async.bulk.commit_group;\n" ::"l"(reinterpret_cast<uint64_t>(map)),
      "r"(col), "r"(row), "r"(src)
      : "memory");
}
// This thread's bulk stores: all but the newest N have read their shared-memory source.
template <int N>
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
// This thread's bulk stores have all completed (their writes are done).
__device__ __forceinline__ void tma_store_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
// Barrier `id` (1..15) among `threads` threads (whole warps), e.g. one warpgroup.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// Arrives at barrier `id` without waiting (the waiters there count `threads`, these included).
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ uint32_t cluster_cta_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t cluster_index() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t cluster_count() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%nclusterid.x;\n" : "=r"(r));
  return r;
}
// Every thread of every CTA of the cluster: earlier shared-memory writes (barrier initialisation)
// become visible cluster-wide, and no CTA leaves while another may still signal its barriers.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// Arrives on the mbarrier at offset `bar` of CTA `cta` of the cluster (this CTA included), with
// the default release at CTA scope: what it orders is the arriving warpgroup's wgmma reads, already
// retired (wgmma.wait_group); a cluster-scope release fence made every stage hand-over microseconds
// long (measured on the H200: 2-CTA kernels at 0.3-0.55 of cuBLAS instead of 0.8+).
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t cta) {
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
      "}\n" ::"r"(bar),
      "r"(cta)
      : "memory");
}
#endif

}  // namespace samebits::cuda
