// linear's AVX2 path (kernels/cpu/simd_avx2.h): two ymm per output's 16 lanes, blocks of 1 row x 4
// columns (8 accumulators of the 16 registers), the 4 outputs' lane trees side by side. See
// kernels/cpu/linear_simd.h for why the bits equal the portable path's.
#include "kernels/cpu/linear_simd.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>  // system headers before the target pragma: their code stays baseline

#include <cstring>

#pragma GCC push_options
#pragma GCC target("avx2")
#include "kernels/cpu/linear_simd_body.h"
#include "kernels/cpu/simd_avx2.h"

namespace samebits::cpu {

void linear_tile_avx2(const LinearTile& t) { simd::tile<simd::Avx2, 1>(t); }

}  // namespace samebits::cpu

#pragma GCC pop_options
#else
namespace samebits::cpu {
void linear_tile_avx2(const LinearTile&) {}  // never chosen: isa_supported(kAvx2) is false
}  // namespace samebits::cpu
#endif
