// Floors of the small-M linear tiles (bench_matmul.cpp's chain-floor and ring-floor rows). The
// invariant linear makes every output element ONE chain of k16 tensor-core steps in increasing k
// (kernels/cuda/sm90a/linear_tma.cu), so at small M, where a tile is such chains side by side
// (N = 4096: 64 tiles of 64 weight rows for 132 SMs), a tile cannot take less than K / 16 dependent
// steps. Here each block repeats dependent k16 steps with its operands already in registers or
// shared memory (no copies, no barriers, no epilogue): what one step of the chain costs on the
// machine, as the small-M tiles issue it: mma.sync m16n8k16 (each of four warps 16 rows x `n`
// columns, n / 8 independent mmas a step, as configuration 35's warps) or wgmma m64n16k16 (one
// warpgroup, groups of four steps committed with one group left in flight, as the swapped wgmma
// tiles). Outputs are nonsense; timing only.
#pragma once

namespace samebits::bench {

enum class ChainKind { kMmaSync, kWgmma };

struct ChainShape {
  ChainKind kind = ChainKind::kMmaSync;
  int n = 16;  // columns per warp (mma.sync: 8 or 16) or per warpgroup (wgmma: 16)
};

// Launches `blocks` blocks of one warpgroup, each thread `steps` dependent k16 steps (a multiple of
// 4); `sink` receives a value only if the accumulators fold to one they never give. False on a
// launch error or a shape without a kernel.
bool launch_chain_floor(void* stream, const ChainShape& shape, int blocks, int steps, float* sink);

// The ring floor (ring-floor rows): the small-M tiles' copies alone. One block per `box_rows` weight
// rows, as linear_tma.cu's swapped tiles: a producer thread fills a ring of `stages` stages, each a
// box_rows x 64 box of the weight [rows, K] and (with_x) a 16 x 64 box of x [16, K], by TMA onto a
// full mbarrier; the consumer warpgroup waits for each stage and releases it (every thread arrives
// on its empty mbarrier, as there) without reading it. No tensor-core work, no epilogue.
// tiled: the weight stored box by box ([rows / box_rows][K / 64][box_rows][64], each box one
// contiguous run of box_rows x 128 bytes) instead of row-major (each box box_rows pieces of 128
// bytes, K * 2 bytes apart): what a weight laid out for these tiles at load time would read.
struct RingShape {
  int box_rows = 64;  // 32, 64 or 128
  int stages = 20;
  bool with_x = true;
  bool tiled = false;
  // > 0: no ring; the same weight read by ordinary loads, one contiguous run a block (its rows),
  // this many threads a block (the bench's ring-floor/ldg rows: launch_floor.h's read kernel).
  int ldg_threads = 0;
  // The ring filled by cp.async (16 bytes a copy, the producer warpgroup's 128 threads, each
  // arriving on the stage's full mbarrier when its copies land) instead of TMA.
  bool cp_async = false;
};
// False on a launch error or a shape without a kernel (box_rows / stages 32 / 32, 64 / 20 or
// 128 / 10; cp_async only at 64 / 20, not tiled).
bool launch_ring_floor(void* stream, const RingShape& shape, const void* w, int rows, int K, const void* x);

}  // namespace samebits::bench
