// The engine soak (label slow, nightly): 100,000 requests on the tiny model under KV pressure;
// RSS may grow by at most 16 MiB after the first 10% (nothing per request is kept).
// SAMEBITS_SOAK_REQUESTS overrides the count.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/engine/soak.h"

namespace samebits::testing {
namespace {

TEST(EngineSoakSlow, HundredThousandRequests) {
  const char* env = std::getenv("SAMEBITS_SOAK_REQUESTS");
  const int64_t n = env ? std::atoll(env) : 100000;
  const SoakFigures f = run_soak(n, 5, 1000);
  expect_soak_clean(f);
  EXPECT_LT(f.rss_end_mib - f.rss_warm_mib, 16.0);
}

}  // namespace
}  // namespace samebits::testing
