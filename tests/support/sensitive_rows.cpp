#include "tests/support/sensitive_rows.h"

#include <algorithm>
#include <cmath>

#include "tests/support/test_support.h"

namespace samebits::testing {
namespace {

// Distance, in fp32 ulps of v, from v to the nearest midpoint between two bf16 values.
double ulps_to_bf16_midpoint(double v) {
  int e;
  double m = std::frexp(std::fabs(v), &e);  // v = m * 2^e, m in [0.5, 1)
  double scaled = m * 256.0;                // bf16 keeps 8 significant bits: integers here
  double frac = scaled - std::floor(scaled);
  return std::fabs(frac - 0.5) * 65536.0;   // one unit of `scaled` is 2^16 fp32 ulps
}

}  // namespace

SensitiveRows sensitive_rmsnorm_rows(int64_t rows, int64_t dim, bool with_residual, double eps) {
  SensitiveRows pool;
  pool.x = random_bf16(size_t(rows * dim), 505 + dim, 4.0f);
  pool.residual = random_bf16(size_t(rows * dim), 606 + dim, 0.25f);
  const int64_t tuner = dim / 2 + 3;
  for (int64_t r = 0; r < rows; ++r) {
    bf16* x = pool.x.data() + r * dim;
    const bf16* res = pool.residual.data() + r * dim;
    auto h_of = [&](int64_t i, bf16 xi) {
      float v = to_float(xi);
      return with_residual ? double(round_bf16(v + to_float(res[i]))) : double(v);
    };
    double ss_rest = 0.0;
    std::vector<double> mantissas;  // distinct |h| mantissas: y's rounding depends only on them
    for (int64_t i = 0; i < dim; ++i) {
      if (i == tuner) continue;
      double h = h_of(i, x[i]);
      ss_rest += h * h;
      int e;
      mantissas.push_back(std::frexp(std::fabs(h), &e));
    }
    std::sort(mantissas.begin(), mantissas.end());
    mantissas.erase(std::unique(mantissas.begin(), mantissas.end()), mantissas.end());
    double best = 1e9;
    bf16 best_value = x[tuner];
    for (uint32_t bits = 0x3b80; bits < 0x3f00 && best > 0.25; ++bits) {  // |value| in [2^-8, 0.5)
      for (uint16_t sign : {uint16_t(0), uint16_t(0x8000)}) {
        bf16 candidate{uint16_t(bits | sign)};
        double h = h_of(tuner, candidate);
        double inv = 1.0 / std::sqrt((ss_rest + h * h) / double(dim) + eps);
        for (double m : mantissas) {
          double d = ulps_to_bf16_midpoint(m * inv);
          if (d < best) {
            best = d;
            best_value = candidate;
          }
        }
      }
    }
    x[tuner] = best_value;
  }
  return pool;
}

}  // namespace samebits::testing
