// OpenMP helper for the CPU kernels. Threads only ever take whole work items (rows, tiles, or
// whole split parts in default mode); no floating-point reduction is shared between threads, so
// results never depend on the thread count.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "kernels/ops.h"

namespace samebits::cpu {

// ExecContext::num_threads, or OpenMP's default when it is 0.
inline int thread_count(const ExecContext& ctx) {
  return ctx.num_threads > 0 ? ctx.num_threads : omp_get_max_threads();
}

// Calls body(i) for every i in [0, items), items shared out in dynamic chunks; jobs
// smaller than min_work_per_thread (in the caller's units of work, `work_per_item` per item) run
// on fewer threads, since starting a team costs microseconds.
template <typename Body>
void parallel_for(const ExecContext& ctx, int64_t items, Body&& body, int64_t work_per_item = 1,
                  int64_t min_work_per_thread = 1) {
  if (items <= 0) return;
  int64_t threads = std::min<int64_t>(thread_count(ctx), items);
  if (min_work_per_thread > 1) {
    int64_t total = items * std::max<int64_t>(1, work_per_item);
    threads = std::min<int64_t>(threads, std::max<int64_t>(1, total / min_work_per_thread));
  }
  if (threads <= 1) {
    for (int64_t i = 0; i < items; ++i) body(i);
    return;
  }
  // Dynamic chunks (about 8 per thread): on a machine shared with other processes a descheduled
  // thread does not hold the others back. Which thread computes an item never changes its bits.
  const int64_t chunk = std::max<int64_t>(1, items / (threads * 8));
#pragma omp parallel for num_threads(int(threads)) schedule(dynamic, chunk)
  for (int64_t i = 0; i < items; ++i) body(i);
}

}  // namespace samebits::cpu
