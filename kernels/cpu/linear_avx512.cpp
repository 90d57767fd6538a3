// linear's AVX-512 path (kernels/cpu/simd_avx512.h): one zmm per output's 16 lanes, blocks of 4 rows x
// 4 columns (16 accumulators), the 16 outputs' lane trees side by side. See kernels/cpu/linear_simd.h
// for why the bits equal the portable path's.
#include "kernels/cpu/linear_simd.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>  // system headers before the target pragma: their code stays baseline

#include <cstring>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl")
// GCC 12's own intrinsics headers trip these (their "undefined" vectors); nothing in this file does.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/cpu/linear_simd_body.h"
#include "kernels/cpu/simd_avx512.h"

namespace samebits::cpu {

void linear_tile_avx512(const LinearTile& t) { simd::tile<simd::Avx512, 4>(t); }

}  // namespace samebits::cpu

#pragma GCC pop_options
#else
namespace samebits::cpu {
void linear_tile_avx512(const LinearTile&) {}  // never chosen: isa_supported(kAvx512) is false
}  // namespace samebits::cpu
#endif
