// The wgmma prefill's interior run (attention_prefill.cu's walk): the leading sub-blocks of a
// segment's hull that every row of the tile sees whole, so that the walk visits them in a loop
// without the masked softmax paths. Plain integer code, usable on host and device: the kernel calls
// it, and tests/kernels/test_prefill_interior_run.cpp checks it against every row's key range
// (kernels/attention_host.h) on the host, where CI runs.
#pragma once
#include <cstdint>

#include "kernels/bf16.h"  // SAMEBITS_HD

namespace samebits {

inline constexpr int kInteriorRunKeys = 64;  // the walk's sub-block (kAttnKeys)

// End of the interior run of a segment whose hull's sub-blocks start at `first` and whose last
// sub-block starts at `last` (visited apart: the run ends there at the latest), given the end of
// the range of the tile's first row (its query has the lowest position), which the caller has
// found non-empty (else there is no run), and the begin of its last row's range. The plans' ranges
// are empty for a prefix of the positions, their ends never decrease with the position and neither
// do the begins of the non-empty ones (kernels/plan.h): with the first row's range non-empty every
// row's is, and every row sees [ceil64(hi_begin), floor64(lo_end)). The run is kept only where it
// starts at `first`. Returns its end; `first` for none.
SAMEBITS_HD int interior_run_end_of(int64_t lo_end, int64_t hi_begin, int first, int last) {
  const int64_t b = (hi_begin + kInteriorRunKeys - 1) / kInteriorRunKeys * kInteriorRunKeys;
  const int64_t e = lo_end / kInteriorRunKeys * kInteriorRunKeys;
  // (the device's 64-bit min, as the kernel had it before this header; on the host a select)
#if defined(__CUDA_ARCH__)
  return b == first && b < e ? int(min(e, int64_t(last))) : first;
#else
  return b == first && b < e ? int(e < int64_t(last) ? e : int64_t(last)) : first;
#endif
}

}  // namespace samebits
