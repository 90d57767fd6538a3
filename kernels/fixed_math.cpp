// Double-precision exp/log/sincos for tables computed once, the rope table, and the sampling RNG.
// Built only from +, -, *, / and bit manipulation (see fixed_math.h for why).
#include "kernels/fixed_math.h"

#include <cstring>

#include "xxhash.h"

namespace samebits {
namespace {

double bits_double(uint64_t u) {
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}
uint64_t double_bits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}
// 2^n for n in [-1022, 1023].
double pow2(int n) { return bits_double(uint64_t(n + 1023) << 52); }

// Round half away from zero, for |v| well inside int64 range.
int64_t round_to_int(double v) { return int64_t(v + (v >= 0.0 ? 0.5 : -0.5)); }

// ln2 split as in fdlibm: the head has 32 significant bits, so n * kLn2Hi is exact for |n| < 2^20.
constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;

}  // namespace

double fixed_exp(double x) {
  if (x != x) return x;
  if (x > 709.782712893383973096) return bits_double(0x7ff0000000000000ull);
  if (x < -745.2) return 0.0;
  int64_t n = round_to_int(x * 1.44269504088896338700);
  double nd = double(n);
  double r = (x - nd * kLn2Hi) - nd * kLn2Lo;  // |r| <= ~0.347
  // Taylor series to r^14/14!: truncation < 1e-18 relative for |r| <= 0.35.
  double p = 1.0;
  for (int k = 14; k >= 1; --k) p = 1.0 + p * r / double(k);
  if (n > 1023) return (p * pow2(1023)) * pow2(int(n - 1023));
  if (n < -1022) return (p * pow2(-1022)) * pow2(int(n + 1022));
  return p * pow2(int(n));
}

double fixed_log(double x) {
  if (x != x) return x;
  if (x < 0.0) return bits_double(0x7ff8000000000000ull);
  if (x == 0.0) return -bits_double(0x7ff0000000000000ull);
  if (x > 1.7976931348623157e308) return x;  // +inf
  int e = 0;
  if (x < 2.2250738585072014e-308) {  // subnormal: scale into the normal range first
    x *= pow2(54);
    e -= 54;
  }
  uint64_t u = double_bits(x);
  e += int((u >> 52) & 0x7ff) - 1023;
  double m = bits_double((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull);  // [1, 2)
  if (m > 1.41421356237309504880) {  // keep m in [sqrt(1/2), sqrt(2)) so |s| <= 0.1716
    m *= 0.5;
    e += 1;
  }
  // log(m) = 2 atanh(s), s = (m-1)/(m+1) = 2 (s + s^3/3 + s^5/5 + ...); s^2 <= 0.0295, so 15
  // terms leave < 1e-22.
  double s = (m - 1.0) / (m + 1.0);
  double s2 = s * s;
  double series = 0.0;
  for (int k = 29; k >= 1; k -= 2) series = 1.0 / double(k) + s2 * series;
  double log_m = 2.0 * s * series;
  double ed = double(e);
  return ed * kLn2Hi + (ed * kLn2Lo + log_m);
}

void fixed_sincos(double x, double* s, double* c) {
  if (x != x || x - x != 0.0) {  // NaN or inf
    double nan = bits_double(0x7ff8000000000000ull);
    *s = nan;
    *c = nan;
    return;
  }
  // x = q * pi/2 + r with pi/2 split in three (fdlibm's pio2_1, pio2_2, pio2_2t: 33 + 33 + more
  // bits), so q * head and q * middle are exact for |q| < 2^20 (|x| < ~1.6e6; rope angles stay far
  // below). 2*pi periodicity is the q mod 4 below.
  constexpr double kPio2_1 = 1.57079632673412561417e+00;
  constexpr double kPio2_2 = 6.07710050630396597660e-11;
  constexpr double kPio2_2t = 2.02226624879595063154e-21;
  int64_t q = round_to_int(x * 6.36619772367581382433e-01);  // x * 2/pi
  double qd = double(q);
  double r = ((x - qd * kPio2_1) - qd * kPio2_2) - qd * kPio2_2t;  // |r| <= ~pi/4
  double r2 = r * r;
  // Taylor series of sin and cos to r^21 / r^20: truncation < 1e-20 for |r| <= pi/4.
  double sin_r = 0.0, cos_r = 0.0;
  {
    double t = 1.0;  // sin: r * (1 - r^2/(2*3) * (1 - r^2/(4*5) * (...)))
    for (int k = 20; k >= 2; k -= 2) t = 1.0 - r2 / double(k * (k + 1)) * t;
    sin_r = r * t;
    double u = 1.0;  // cos: 1 - r^2/(1*2) * (1 - r^2/(3*4) * (...))
    for (int k = 19; k >= 1; k -= 2) u = 1.0 - r2 / double(k * (k + 1)) * u;
    cos_r = u;
  }
  switch (int(((q % 4) + 4) % 4)) {
    case 0: *s = sin_r; *c = cos_r; break;
    case 1: *s = cos_r; *c = -sin_r; break;
    case 2: *s = -sin_r; *c = -cos_r; break;
    default: *s = -cos_r; *c = sin_r; break;
  }
}

std::vector<float> make_rope_table(double theta, int head_dim, int64_t max_position) {
  if (head_dim <= 0 || head_dim % 2 != 0 || max_position <= 0 || !(theta > 0.0)) return {};
  const int half = head_dim / 2;
  std::vector<double> inv_freq(half);
  const double log_theta = fixed_log(theta);
  for (int i = 0; i < half; ++i) inv_freq[i] = fixed_exp(-(2.0 * i / head_dim) * log_theta);
  std::vector<float> table(size_t(max_position) * head_dim);
  for (int64_t p = 0; p < max_position; ++p) {
    float* row = table.data() + p * head_dim;
    for (int i = 0; i < half; ++i) {
      double s, c;
      fixed_sincos(double(p) * inv_freq[i], &s, &c);
      row[i] = float(c);
      row[half + i] = float(s);
    }
  }
  return table;
}

double sampling_uniform(uint64_t seed, uint64_t step) {
  unsigned char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(step >> (8 * i));
  uint64_t h = XXH3_64bits_withSeed(bytes, sizeof bytes, seed);
  return double(h >> 11) * (1.0 / 9007199254740992.0);  // top 53 bits / 2^53
}

}  // namespace samebits
