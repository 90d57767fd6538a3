#include "tests/support/test_support.h"

#include <cstring>

namespace samebits::testing {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

float nonzero_uniform(uint64_t& state, float scale) {
  // Uniform in [-scale, scale], never exactly zero.
  float u = float((splitmix64(state) >> 40) + 1) / float(1ull << 24);  // (0, 1]
  float sign = (splitmix64(state) & 1) ? 1.f : -1.f;
  return sign * u * scale;
}

template <typename T>
T sentinel() {
  T value;
  std::memset(&value, 0xA5, sizeof(T));
  return value;
}

}  // namespace

std::vector<bf16> random_bf16(size_t n, uint64_t seed, float scale) {
  std::vector<bf16> out(n);
  uint64_t state = seed * 0x2545F4914F6CDD1Dull + 1;
  for (auto& v : out) v = to_bf16(nonzero_uniform(state, scale));
  return out;
}

std::vector<float> random_f32(size_t n, uint64_t seed, float scale) {
  std::vector<float> out(n);
  uint64_t state = seed * 0x2545F4914F6CDD1Dull + 7;
  for (auto& v : out) v = nonzero_uniform(state, scale);
  return out;
}

template <typename T>
Guarded<T>::Guarded(size_t n, size_t guard) : n_(n), guard_(guard), storage_(n + 2 * guard, sentinel<T>()) {}

template <typename T>
std::string Guarded<T>::check_guards() const {
  const T s = sentinel<T>();
  for (size_t i = 0; i < storage_.size(); ++i) {
    if (i >= guard_ && i < guard_ + n_) continue;
    if (std::memcmp(&storage_[i], &s, sizeof(T)) != 0) {
      return i < guard_ ? "write before the buffer at offset -" + std::to_string(guard_ - i)
                        : "write past the buffer at offset +" + std::to_string(i - guard_ - n_);
    }
  }
  return "";
}

template class Guarded<bf16>;
template class Guarded<float>;
template class Guarded<int32_t>;
template class Guarded<int64_t>;

std::string source_dir() { return SAMEBITS_SOURCE_DIR; }

}  // namespace samebits::testing
