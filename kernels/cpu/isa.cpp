#include "kernels/cpu/isa.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <unistd.h>

namespace samebits::cpu {
namespace {

Isa best_supported() {
  return isa_supported(Isa::kAvx512) ? Isa::kAvx512 : isa_supported(Isa::kAvx2) ? Isa::kAvx2 : Isa::kPortable;
}

// SAMEBITS_CPU_ISA names a path; an unknown or unsupported one is reported once and ignored.
Isa initial_isa() {
  const char* env = std::getenv("SAMEBITS_CPU_ISA");
  if (env == nullptr || *env == '\0') return best_supported();
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512}) {
    if (isa_name(isa) == env) {
      if (isa_supported(isa)) return isa;
      std::fprintf(stderr, "samebits: SAMEBITS_CPU_ISA=%s: not supported by this CPU; using %s\n", env,
                   std::string(isa_name(best_supported())).c_str());
      return best_supported();
    }
  }
  std::fprintf(stderr, "samebits: SAMEBITS_CPU_ISA=%s: not one of portable, avx2, avx512; using %s\n", env,
               std::string(isa_name(best_supported())).c_str());
  return best_supported();
}

std::atomic<Isa>& active() {
  static std::atomic<Isa> isa{initial_isa()};
  return isa;
}

}  // namespace

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    default: return "portable";
  }
}

// The vector paths are written with GCC target pragmas; other compilers (clang builds the fuzz
// targets) take the portable path, which gives the same bits.
bool isa_supported(Isa isa) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  switch (isa) {
    case Isa::kPortable: return true;
    case Isa::kAvx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");  // fixed_expf
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
  }
  return false;
#else
  return isa == Isa::kPortable;
#endif
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512})
    if (isa_supported(isa)) out.push_back(isa);
  return out;
}

Isa active_isa() { return active().load(std::memory_order_relaxed); }

void set_active_isa(Isa isa) {
  if (isa_supported(isa)) active().store(isa, std::memory_order_relaxed);
}

int64_t per_core_cache_bytes() {
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return l2 > 0 ? int64_t(l2) : int64_t(1) << 20;
}

}  // namespace samebits::cpu
