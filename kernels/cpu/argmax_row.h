// One row's argmax, shared by argmax.cpp and sample.cpp (temperature 0 is greedy).
#pragma once
#include <cstdint>

namespace samebits::cpu {

// The lowest index among the maxima; NaN never wins; all NaN gives 0.
inline int32_t argmax_row(const float* logits, int64_t vocab) {
  int64_t best = -1;
  float best_value = 0.0f;
  for (int64_t i = 0; i < vocab; ++i) {
    float v = logits[i];
    if (v != v) continue;
    if (best < 0 || v > best_value) {  // strict: a tie keeps the lower id
      best = i;
      best_value = v;
    }
  }
  return best < 0 ? 0 : int32_t(best);
}

}  // namespace samebits::cpu
