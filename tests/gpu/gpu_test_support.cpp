#include "tests/gpu/gpu_test_support.h"

#include <cmath>
#include <cstdlib>

namespace samebits::testing {

bool gpu_required() {
  const char* v = std::getenv("SAMEBITS_REQUIRE_GPU");
  return v != nullptr && std::string(v) == "1";
}

bool sanitizer_shapes() {
  const char* v = std::getenv("SAMEBITS_GPU_SANITIZER_SHAPES");
  return v != nullptr && std::string(v) == "1";
}

const Backend& engine_backend(const Backend& gpu) {
  if (!sanitizer_shapes()) return gpu;
  static const Backend waits_by_synchronize = [&] {
    Backend b = gpu;
    b.description = gpu.description + " [steps waited by synchronize]";
    b.mark = nullptr;
    b.wait_mark = nullptr;
    return b;
  }();
  return waits_by_synchronize;
}

const Backend* gpu_backend(std::string* why) { return cuda_backend(why); }

template <typename T>
DeviceBuffer<T>::DeviceBuffer(const Backend& backend, size_t n, size_t guard)
    : backend_(backend), n_(n), guard_(guard) {
  absl::StatusOr<void*> p = backend.alloc((n + 2 * guard) * sizeof(T));
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return;
  base_ = static_cast<T*>(*p);
  std::vector<unsigned char> sentinel((n + 2 * guard) * sizeof(T), 0xA5);
  EXPECT_TRUE(backend.upload(base_, sentinel.data(), sentinel.size()).ok());
}

template <typename T>
DeviceBuffer<T>::~DeviceBuffer() {
  if (base_ != nullptr) backend_.free(base_);
}

template <typename T>
void DeviceBuffer<T>::upload(const std::vector<T>& host) {
  ASSERT_EQ(host.size(), n_);
  const absl::Status st = backend_.upload(data(), host.data(), n_ * sizeof(T));
  ASSERT_TRUE(st.ok()) << st;
}

template <typename T>
std::vector<T> DeviceBuffer<T>::download() const {
  std::vector<T> host(n_);
  const absl::Status st = backend_.download(host.data(), base_ + guard_, n_ * sizeof(T));
  EXPECT_TRUE(st.ok()) << st;
  return host;
}

template <typename T>
std::string DeviceBuffer<T>::check_guards() const {
  std::vector<unsigned char> all((n_ + 2 * guard_) * sizeof(T));
  const absl::Status st = backend_.download(all.data(), base_, all.size());
  if (!st.ok()) return std::string(st.message());
  const size_t lo = guard_ * sizeof(T), hi = (guard_ + n_) * sizeof(T);
  for (size_t i = 0; i < all.size(); ++i) {
    if (i >= lo && i < hi) continue;
    if (all[i] != 0xA5) {
      return i < lo ? "write before the buffer at byte -" + std::to_string(lo - i)
                    : "write past the buffer at byte +" + std::to_string(i - hi);
    }
  }
  return "";
}

template class DeviceBuffer<bf16>;
template class DeviceBuffer<float>;
template class DeviceBuffer<int32_t>;
template class DeviceBuffer<int64_t>;

namespace {
template <typename T, typename F>
double nmse_of(const std::vector<T>& got, const std::vector<T>& want, F widen) {
  if (got.size() != want.size()) return INFINITY;
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = widen(got[i]), w = widen(want[i]);
    if (std::isnan(g) || std::isnan(w)) return INFINITY;
    num += (g - w) * (g - w);
    den += w * w;
  }
  return den == 0 ? num : num / den;
}
}  // namespace

double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  return nmse_of(got, want, [](float v) { return double(v); });
}
double nmse(const std::vector<bf16>& got, const std::vector<bf16>& want) {
  return nmse_of(got, want, [](bf16 v) { return double(to_float(v)); });
}

}  // namespace samebits::testing
