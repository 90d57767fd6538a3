// sample: seeded sampling per row (ops.h). temperature 0 -> argmax (lowest id among the maxima).
// Otherwise candidates are the non-NaN logits ordered by (logit desc, id asc); top-k keeps the
// first k; p_i = fixed_expf((l_i - l_max) / T) in fp32, summed sequentially in that order in
// double; top-p keeps the smallest prefix whose mass >= top_p * total; the sample is the first
// candidate whose cumulative mass > uniform * kept mass, uniform = sampling_uniform(seed, step)
// computed by the caller. Nothing depends on the batch: identical in both modes; threads take rows.
//
// Candidates with (l - l_max) / T below fixed_expf's underflow bound have p = 0 exactly and sit at
// the tail of the order, so dropping them before the sort changes neither top-k, top-p nor the pick.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/argmax_row.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/threading.h"
#include "kernels/fixed_math.h"

namespace samebits {
namespace {

struct Candidate {
  float logit;
  int32_t id;
};

absl::Status validate_row(int64_t r, const SamplingRow& p) {
  if (!(p.temperature >= 0.0f) || p.temperature - p.temperature != 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat("sample: row ", r, " temperature must be finite and >= 0, got ", p.temperature));
  }
  if (p.top_k < 0) {
    return absl::InvalidArgumentError(absl::StrCat("sample: row ", r, " top_k must be >= 0, got ", p.top_k));
  }
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat("sample: row ", r, " top_p must be in (0, 1], got ", p.top_p));
  }
  if (!(p.uniform >= 0.0 && p.uniform < 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat("sample: row ", r, " uniform must be in [0, 1), got ", p.uniform));
  }
  return absl::OkStatus();
}

int32_t sample_row(const float* logits, int64_t vocab, const SamplingRow& p) {
  const int32_t greedy = cpu::argmax_row(logits, vocab);
  if (p.temperature == 0.0f) return greedy;
  const float lmax = logits[greedy];
  // All NaN, all -inf, or a +inf maximum: no finite softmax; the maximum (lowest id) is the answer.
  if (lmax != lmax || lmax - lmax != 0.0f) return greedy;
  const float T = p.temperature;

  std::vector<Candidate> cands;
  cands.reserve(size_t(std::min<int64_t>(vocab, 4096)));
  for (int64_t i = 0; i < vocab; ++i) {
    float l = logits[i];
    if (l != l) continue;
    if ((l - lmax) / T < kExpUnderflow) continue;  // p == 0 exactly (see the header comment)
    cands.push_back({l, int32_t(i)});
  }
  auto before = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  size_t kept = cands.size();
  if (p.top_k > 0 && size_t(p.top_k) < kept) {
    kept = size_t(p.top_k);
    std::partial_sort(cands.begin(), cands.begin() + kept, cands.end(), before);
  } else {
    std::sort(cands.begin(), cands.end(), before);
  }
  std::vector<float> prob(kept);
  double total = 0.0;
  for (size_t i = 0; i < kept; ++i) {
    prob[i] = fixed_expf((cands[i].logit - lmax) / T);
    total += prob[i];
  }
  // top-p: the smallest prefix whose mass reaches top_p * total.
  const double threshold = double(p.top_p) * total;
  double mass = 0.0;
  size_t prefix = kept;
  for (size_t i = 0; i < kept; ++i) {
    mass += prob[i];
    if (mass >= threshold) {
      prefix = i + 1;
      break;
    }
  }
  const double target = p.uniform * mass;
  double cumulative = 0.0;
  for (size_t i = 0; i < prefix; ++i) {
    cumulative += prob[i];
    if (cumulative > target) return cands[i].id;
  }
  return cands[prefix - 1].id;  // unreachable for uniform < 1; kept for safety
}

}  // namespace

absl::Status cpu_sample(const ExecContext& ctx, const SampleArgs& a) {
  if (a.logits == nullptr) return absl::InvalidArgumentError("sample: logits is null");
  if (a.params == nullptr) return absl::InvalidArgumentError("sample: params is null");
  if (a.out == nullptr) return absl::InvalidArgumentError("sample: out is null");
  if (a.rows <= 0) return absl::InvalidArgumentError(absl::StrCat("sample: rows must be positive, got ", a.rows));
  if (a.vocab <= 0 || a.vocab > INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat("sample: vocab must be in [1, 2^31), got ", a.vocab));
  }
  for (int64_t r = 0; r < a.rows; ++r) {
    if (absl::Status s = validate_row(r, a.params[r]); !s.ok()) return s;
  }
  cpu::parallel_for(ctx, a.rows, [&](int64_t r) {
    a.out[r] = sample_row(a.logits + r * a.vocab, a.vocab, a.params[r]);
  }, a.vocab * 16, 1 << 16);
  return absl::OkStatus();
}

}  // namespace samebits
