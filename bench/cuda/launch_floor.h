// The floor under a replayed decode call of batch 1 (bench_attention.cpp's launch-floor rows): what
// the GPU takes for kernels that do nothing, and for one kernel that only reads a decode call's K
// and V bytes, launched as the decode kernels are (each a programmatic dependent of the kernel
// before it, launch_after_previous) and timed as graph replays. Subtracted from a decode row they
// split its time between the launches, the copies and the decode kernel's own chain of waits.
#pragma once
#include <cstdint>

namespace samebits::bench {

// Launches one empty kernel (1 block of 32 threads) on `stream`; false on a launch error.
bool launch_empty(void* stream);
// Launches a kernel of `blocks` blocks of `threads` threads that reads `bytes` (a multiple of 16 *
// blocks) from `src`, each block a contiguous run, eight 16-byte loads in flight per thread; it
// calls allow_next_kernel() once its first loads are issued, as the decode kernels do before their
// merge. `sink` receives a value only if the data folds to one that the filled buffers never give
// (so the loads cannot be dropped).
bool launch_read(void* stream, const void* src, int64_t bytes, int blocks, int threads, uint32_t* sink);

}  // namespace samebits::bench
