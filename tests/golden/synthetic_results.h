// Results built from synthetic token streams (no engine): `samples` observations of which the
// ones listed in `forks` (sample -> fork token) differ from the main stream from that token on.
#pragma once
#include <map>

#include "harness/golden/results.h"

namespace samebits::testing {

TargetObservation synthetic_observation(int sample, int length, int fork_at = -1, int logit_fork_at = -1);
RunResults synthetic_results(int samples, const std::map<int, int>& forks, Mode mode = Mode::kDefault);

}  // namespace samebits::testing
