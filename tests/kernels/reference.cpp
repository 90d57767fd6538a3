// fp64 references (std:: math is fine here: references are not kernels).
#include "tests/kernels/reference.h"

#include <algorithm>
#include <cmath>

namespace samebits::testing {

LinearReference reference_linear(const std::vector<bf16>& x, const std::vector<bf16>& w,
                                 const bf16* bias, int64_t M, int64_t N, int64_t K) {
  LinearReference r;
  r.y.assign(size_t(M * N), 0.0);
  r.abs_sum.assign(size_t(M * N), 0.0);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      double s = 0.0, a = 0.0;
      for (int64_t k = 0; k < K; ++k) {
        double p = double(to_float(x[m * K + k])) * double(to_float(w[n * K + k]));
        s += p;
        a += std::fabs(p);
      }
      if (bias != nullptr) {
        s += to_float(bias[n]);
        a += std::fabs(to_float(bias[n]));
      }
      r.y[m * N + n] = s;
      r.abs_sum[m * N + n] = a;
    }
  }
  return r;
}

RmsNormReference reference_rmsnorm(const std::vector<bf16>& x, const std::vector<bf16>* residual,
                                   const std::vector<bf16>& weight, int64_t rows, int64_t dim,
                                   double eps) {
  RmsNormReference r;
  r.y.resize(size_t(rows * dim));
  r.h.resize(size_t(rows * dim));
  for (int64_t i = 0; i < rows * dim; ++i) {
    double h = to_float(x[i]);
    if (residual != nullptr) h = to_float(to_bf16(float(h + to_float((*residual)[i]))));
    r.h[i] = h;
  }
  for (int64_t row = 0; row < rows; ++row) {
    double ss = 0.0;
    for (int64_t i = 0; i < dim; ++i) ss += r.h[row * dim + i] * r.h[row * dim + i];
    double inv = 1.0 / std::sqrt(ss / double(dim) + eps);
    for (int64_t i = 0; i < dim; ++i) {
      r.y[row * dim + i] = r.h[row * dim + i] * inv * double(to_float(weight[i]));
    }
  }
  return r;
}

std::vector<double> reference_rope(const std::vector<bf16>& v, const std::vector<int32_t>& positions,
                                   int heads, int head_dim, double theta) {
  const int half = head_dim / 2;
  std::vector<double> out(v.size());
  for (size_t t = 0; t < positions.size(); ++t) {
    for (int h = 0; h < heads; ++h) {
      size_t base = (t * heads + h) * size_t(head_dim);
      for (int i = 0; i < half; ++i) {
        double angle = double(positions[t]) * std::pow(theta, -2.0 * i / head_dim);
        double c = std::cos(angle), s = std::sin(angle);
        double lo = to_float(v[base + i]), hi = to_float(v[base + i + half]);
        out[base + i] = lo * c - hi * s;
        out[base + i + half] = hi * c + lo * s;
      }
    }
  }
  return out;
}

std::vector<double> reference_silu_mul(const std::vector<bf16>& gate, const std::vector<bf16>& up) {
  std::vector<double> out(gate.size());
  for (size_t i = 0; i < gate.size(); ++i) {
    double g = to_float(gate[i]);
    out[i] = g / (1.0 + std::exp(-g)) * double(to_float(up[i]));
  }
  return out;
}

namespace {

float tree16(const float* lanes) {
  float t8[8], t4[4];
  for (int i = 0; i < 8; ++i) t8[i] = lanes[2 * i] + lanes[2 * i + 1];
  for (int i = 0; i < 4; ++i) t4[i] = t8[2 * i] + t8[2 * i + 1];
  return (t4[0] + t4[1]) + (t4[2] + t4[3]);
}

template <typename Term>
float lane_order(int64_t n, int parts, Term term) {
  int64_t part_len = (n + parts - 1) / parts;
  part_len = (part_len + 15) / 16 * 16;
  float total = 0.f;
  for (int64_t begin = 0; begin < n; begin += part_len) {
    float lanes[16] = {};
    for (int64_t k = begin; k < std::min(n, begin + part_len); ++k) lanes[(k - begin) % 16] += term(k);
    const float part = tree16(lanes);
    total = begin == 0 ? part : total + part;
  }
  return total;
}

}  // namespace

float lane_order_dot(const bf16* x, const bf16* w, int64_t K, int parts) {
  return lane_order(K, parts, [&](int64_t k) { return to_float(x[k]) * to_float(w[k]); });
}

float lane_order_sum_squares(const float* h, int64_t n, int parts) {
  return lane_order(n, parts, [&](int64_t k) { return h[k] * h[k]; });
}

}  // namespace samebits::testing
