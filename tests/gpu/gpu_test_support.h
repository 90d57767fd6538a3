// Helpers of the gpu tests: the CUDA backend or a visible skip, device buffers with guard regions
// (sentinel bytes before and after, checked after every op), transfers, NMSE, bitwise comparison.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace samebits::testing {

// The CUDA backend, or nullptr; *why says why not.
const Backend* gpu_backend(std::string* why = nullptr);

// True when the environment sets SAMEBITS_REQUIRE_GPU=1 (the nightly GPU gate does): a missing
// device is then a failure, not a skip, so a gate where every GPU test skipped cannot pass.
bool gpu_required();

#define SAMEBITS_REQUIRE_GPU()                                                                     \
  std::string _samebits_why;                                                                       \
  const ::samebits::Backend* gpu = ::samebits::testing::gpu_backend(&_samebits_why);              \
  if (gpu == nullptr) {                                                                            \
    if (::samebits::testing::gpu_required())                                                       \
      GTEST_FAIL() << "SAMEBITS_REQUIRE_GPU=1 but there is no CUDA backend: " << _samebits_why;    \
    GTEST_SKIP() << "no CUDA backend: " << _samebits_why;                                         \
  }

// n elements of T in a backend's memory with `guard` sentinel elements on each side.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer(const Backend& backend, size_t n, size_t guard = 256);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* data() { return base_ + guard_; }
  size_t size() const { return n_; }
  void upload(const std::vector<T>& host);  // host.size() == size()
  std::vector<T> download() const;
  // Empty when both guard regions still hold the sentinel.
  std::string check_guards() const;

 private:
  const Backend& backend_;
  size_t n_, guard_;
  T* base_ = nullptr;
};

// True when SAMEBITS_GPU_SANITIZER_SHAPES=1 (ci/gpu_sanitizers.sh sets it for racecheck, which
// slows shared-memory kernels 100-1000x): the heaviest sweeps then run a reduced list of shapes,
// chosen so that every kernel route and every assertion of the full list is still exercised.
bool sanitizer_shapes();

// The backend of the engine-level cases (GpuEngine, GpuScheduleAhead, GpuEngineOverlap and the
// engine case of GpuGraphs): `gpu`, or under sanitizer_shapes() a copy without mark / wait_mark, so
// that the model waits for each step with synchronize (a stream synchronize) instead of an event.
// Under racecheck (compute-sanitizer 2025.3.1) the tool's host memory grows with every step waited
// for by an event, until the out-of-memory killer ends the case (H100 hosts of 125.8 GiB,
// 2026-12-07: ~1.5 GB/s alone, the host in about two minutes, with CUDA graphs or without); waited
// for by a stream synchronize, the same cases stay at 2-20 GiB and finish clean
// (bench/cuda/notes/checks.md, its last section). Racecheck loses nothing by it: a mark is an event,
// not a kernel, and the tool serialises the steps anyway.
const Backend& engine_backend(const Backend& gpu);

// `full`, or `reduced` under sanitizer_shapes().
template <typename T>
std::vector<T> sweep(std::initializer_list<T> full, std::initializer_list<T> reduced) {
  return sanitizer_shapes() ? std::vector<T>(reduced) : std::vector<T>(full);
}

inline std::string mode_str(Mode m) { return std::string(mode_name(m)); }

// A device copy of a host vector.
template <typename T>
std::unique_ptr<DeviceBuffer<T>> device_copy(const Backend& backend, const std::vector<T>& host) {
  auto buf = std::make_unique<DeviceBuffer<T>>(backend, host.size());
  buf->upload(host);
  return buf;
}

// ||got - want||^2 / ||want||^2 over the values as fp64.
double nmse(const std::vector<float>& got, const std::vector<float>& want);
double nmse(const std::vector<bf16>& got, const std::vector<bf16>& want);

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}
// Index of the first element whose bytes differ, or -1.
template <typename T>
int64_t first_diff(const std::vector<T>& a, const std::vector<T>& b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return int64_t(i);
  }
  return a.size() == b.size() ? -1 : int64_t(n);
}

// Fails the test with the status when it is not OK.
#define SAMEBITS_ASSERT_OK(expr)                        \
  do {                                                  \
    const absl::Status _st = (expr);                    \
    ASSERT_TRUE(_st.ok()) << #expr << ": " << _st;      \
  } while (0)

}  // namespace samebits::testing
