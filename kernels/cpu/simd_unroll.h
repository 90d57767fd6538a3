// SAMEBITS_UNROLL: fully unrolls a loop over a block's registers in the CPU kernels' vector bodies
// (linear, attention, rmsnorm), so that accumulators stay in registers (GCC's -O2 keeps a
// non-unrolled array of them in memory).
#pragma once

#define SAMEBITS_UNROLL _Pragma("GCC unroll 16")
