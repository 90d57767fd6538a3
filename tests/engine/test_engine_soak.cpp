// The engine soak, short (label unit): 1500 requests through the same checks as the nightly
// 100,000-request soak (test_engine_soak_slow.cpp).
#include <gtest/gtest.h>

#include "tests/engine/soak.h"

namespace samebits::testing {
namespace {

TEST(EngineSoak, ShortStreamUnderKvPressure) {
  const SoakFigures f = run_soak(1500, 11, 50);
  expect_soak_clean(f);
}

}  // namespace
}  // namespace samebits::testing
