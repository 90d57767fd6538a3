// Input of tests/cli/test_ptxas_guard_script.cpp (compiled there, never linked): two wgmma products
// into the same accumulators; with STRAY_WRITE an ordinary instruction writes one of them while the
// first product is in flight, and ptxas serialises the kernel's wgmma.
#include "kernels/cuda/sm90a/wgmma_ops.cuh"

__global__ void two_products(float* out, unsigned long long desc_a, unsigned long long desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  float d[32];
  for (int i = 0; i < 32; ++i) d[i] = 0.0f;
  samebits::cuda::wgmma_fence();
  samebits::cuda::wgmma_m64k16<64>(d, desc_a, desc_b);
  samebits::cuda::wgmma_commit();
#ifdef STRAY_WRITE
  d[0] = out[1];
#endif
  samebits::cuda::wgmma_m64k16<64>(d, desc_a, desc_b);
  samebits::cuda::wgmma_commit();
  samebits::cuda::wgmma_wait<0>();
  for (int i = 0; i < 32; ++i) out[threadIdx.x * 32 + i] = d[i];
#endif
}
