// Which vector instruction set the CPU kernels use: chosen once at run time from the CPU's features
// (the widest available), overridable with SAMEBITS_CPU_ISA=portable|avx2|avx512 or by tests. Every
// path computes the same fixed lane order (kernels/cpu/lanes.h), so the choice changes speed, never
// bits; tests run each available path against the portable one bitwise.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace samebits::cpu {

enum class Isa { kPortable, kAvx2, kAvx512 };  // kAvx2: AVX2 and FMA

std::string_view isa_name(Isa isa);
bool isa_supported(Isa isa);           // this CPU has the instructions (and this build has the code)
std::vector<Isa> supported_isas();     // portable first
Isa active_isa();                      // what the kernels use now
void set_active_isa(Isa isa);          // must be supported; tests and benchmarks

// Bytes of the cache one core has to itself (its L2), as the system reports it; 1 MiB when it does
// not. Kernels choose schedules by it (prefetching), never arithmetic.
int64_t per_core_cache_bytes();

}  // namespace samebits::cpu
