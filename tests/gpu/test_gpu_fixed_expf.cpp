// fixed_expf on the device against the host over all 2^32 fp32 inputs: the same bits for every
// input, and the contract of tests/support/expf_accuracy.h (|err| < 2 ulp for normal results,
// exact inf, +0 and NaN) measured on every one of them. The inverse: the device form with its
// multiply-adds rounded twice is seen to differ from the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <thread>
#include <vector>

#include "kernels/fixed_math.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/support/expf_accuracy.h"
#if defined(SAMEBITS_HAVE_CUDA)
#include "kernels/cuda/cuda_ops.h"
#endif

namespace samebits::testing {
namespace {

#if defined(SAMEBITS_HAVE_CUDA)
struct RangeCheck {
  int64_t differ = 0;
  uint32_t first_differ = 0;
  ExpfAccuracy accuracy;
};

// Compares device results for the bit patterns first + i with the host's fixed_expf, on all cores.
RangeCheck check_range(uint32_t first, const std::vector<float>& device) {
  const int64_t n = int64_t(device.size());
  const int64_t workers = std::max<int64_t>(1, std::thread::hardware_concurrency());
  std::vector<RangeCheck> parts(static_cast<size_t>(workers));
  std::vector<std::thread> threads;
  for (int64_t w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      RangeCheck& part = parts[size_t(w)];
      for (int64_t i = w * n / workers; i < (w + 1) * n / workers; ++i) {
        const uint32_t b = first + uint32_t(i);
        const float x = bits_float(b), got = device[size_t(i)];
        if (float_bits(got) != float_bits(fixed_expf(x)) && part.differ++ == 0) part.first_differ = b;
        part.accuracy.add(x, got);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  RangeCheck all;
  for (const RangeCheck& part : parts) {
    if (part.differ > 0 && all.differ == 0) all.first_differ = part.first_differ;
    all.differ += part.differ;
    all.accuracy.merge(part.accuracy);
  }
  return all;
}

TEST(GpuFixedExpf, EqualsHostBitForBitOverAllInputs) {
  SAMEBITS_REQUIRE_GPU();
  // Under the sanitizers one chunk (2^22 inputs from 0x3f000000: |x| in [0.5, 4)) is enough.
  const int64_t chunk = sanitizer_shapes() ? int64_t(1) << 22 : int64_t(1) << 28;
  const uint64_t begin = sanitizer_shapes() ? 0x3f000000u : 0u;
  const uint64_t end = sanitizer_shapes() ? begin + uint64_t(chunk) : uint64_t(1) << 32;
  DeviceBuffer<float> buf(*gpu, size_t(chunk));
  RangeCheck all;
  for (uint64_t first = begin; first < end; first += uint64_t(chunk)) {
    SAMEBITS_ASSERT_OK(cuda_fixed_expf_range(uint32_t(first), chunk, buf.data(), false));
    const RangeCheck part = check_range(uint32_t(first), buf.download());
    if (part.differ > 0 && all.differ == 0) all.first_differ = part.first_differ;
    all.differ += part.differ;
    all.accuracy.merge(part.accuracy);
  }
  EXPECT_EQ(buf.check_guards(), "");
  EXPECT_EQ(all.differ, 0) << "first at bit pattern 0x" << std::hex << all.first_differ;
  EXPECT_EQ(all.accuracy.checked, int64_t(end - begin));
  EXPECT_TRUE(all.accuracy.ok()) << all.accuracy.describe();
  std::cout << "[ info ] device fixed_expf: " << all.accuracy.describe() << "\n";
}

TEST(GpuFixedExpf, TwiceRoundedDeviceFormIsSeen) {
  SAMEBITS_REQUIRE_GPU();
  const int64_t n = int64_t(1) << 22;
  DeviceBuffer<float> buf(*gpu, size_t(n));
  SAMEBITS_ASSERT_OK(cuda_fixed_expf_range(0x3f000000u, n, buf.data(), true));
  EXPECT_GT(check_range(0x3f000000u, buf.download()).differ, 0);
}
#endif

}  // namespace
}  // namespace samebits::testing
