// Shared helpers for tests: seeded random data and guarded buffers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/bf16.h"

namespace samebits::testing {

// Fresh, seeded, non-zero data in [-scale, scale].
std::vector<bf16> random_bf16(size_t n, uint64_t seed, float scale = 1.f);
std::vector<float> random_f32(size_t n, uint64_t seed, float scale = 1.f);

// A buffer with sentinel guard regions before and after; check_guards() reports any write
// outside [data(), data() + size()).
template <typename T>
class Guarded {
 public:
  explicit Guarded(size_t n, size_t guard = 64);
  T* data() { return storage_.data() + guard_; }
  const T* data() const { return storage_.data() + guard_; }
  size_t size() const { return n_; }
  // Empty when both guards are intact; otherwise which side and index.
  std::string check_guards() const;

 private:
  size_t n_, guard_;
  std::vector<T> storage_;
};

std::string source_dir();  // repository root

}  // namespace samebits::testing
