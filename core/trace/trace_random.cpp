#include "core/trace/trace_random.h"

#include <array>
#include <cmath>
#include <limits>

#include "core/common/mix.h"

namespace pagedllm::trace {
namespace {

// ln 2 split so that k * kLn2Hi is exact for |k| < 2^11 (Cody and Waite's range reduction).
constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kInvLn2 = 1.44269504088896338700e+00;
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kExpOverflow = 709.782712893383973096;  // ln(DBL_MAX)
constexpr double kExpUnderflow = -745.2;                 // below: rounds to 0 (subnormal limit)

// 1/k! for k = 0..13: the Taylor series of exp on |r| <= ln(2)/2 to below 1e-17.
constexpr std::array<double, 14> kInverseFactorials = [] {
  std::array<double, 14> values{};
  double factorial = 1.0;
  for (size_t k = 0; k < values.size(); ++k) {
    if (k > 0) factorial *= static_cast<double>(k);
    values[k] = 1.0 / factorial;
  }
  return values;
}();

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

}  // namespace

double portable_exp(double x) {
  if (std::isnan(x)) return x;
  if (x > kExpOverflow) return std::numeric_limits<double>::infinity();
  if (x < kExpUnderflow) return 0.0;
  // x = k ln2 + r with |r| <= ln2 / 2; exp(x) = 2^k exp(r).
  const double k = std::floor(x * kInvLn2 + 0.5);
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;
  double sum = kInverseFactorials.back();
  for (size_t i = kInverseFactorials.size() - 1; i-- > 0;) sum = sum * r + kInverseFactorials[i];
  return std::ldexp(sum, static_cast<int>(k));
}

double portable_log(double x) {
  if (std::isnan(x) || x < 0.0) return std::numeric_limits<double>::quiet_NaN();
  if (x == 0.0) return -std::numeric_limits<double>::infinity();
  if (std::isinf(x)) return x;
  // x = m 2^e with m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(s), s = (m - 1) / (m + 1).
  int exponent = 0;
  double m = std::frexp(x, &exponent);
  if (m < kSqrtHalf) {
    m *= 2.0;
    --exponent;
  }
  const double f = m - 1.0;  // exact: m is within a factor 2 of 1
  const double s = f / (2.0 + f);
  const double z = s * s;  // <= 0.0295: 11 odd terms reach below 1e-17
  double series = 1.0 / 23.0;
  for (int k = 21; k >= 1; k -= 2) series = series * z + 1.0 / k;
  const double log_m = 2.0 * s * series;
  const double e = static_cast<double>(exponent);
  return e * kLn2Hi + (e * kLn2Lo + log_m);
}

TraceRandom::TraceRandom(uint64_t seed) : state_(seed) {}

TraceRandom TraceRandom::stream(uint64_t seed, uint64_t purpose) {
  return TraceRandom(mix64(seed ^ mix64(purpose * kGolden + 1)));
}

uint64_t TraceRandom::next_u64() {
  state_ += kGolden;
  uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double TraceRandom::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

int64_t TraceRandom::uniform_int(int64_t low, int64_t high) {
  const uint64_t span = static_cast<uint64_t>(high) - static_cast<uint64_t>(low) + 1;
  if (span == 0) return static_cast<int64_t>(next_u64());  // the whole 64-bit range
  // Reject the lowest 2^64 mod span values so that every residue is equally likely.
  const uint64_t threshold = (0 - span) % span;
  uint64_t x = next_u64();
  while (x < threshold) x = next_u64();
  return static_cast<int64_t>(static_cast<uint64_t>(low) + x % span);
}

double TraceRandom::exponential(double mean) {
  return mean * (0.0 - portable_log(1.0 - uniform()));  // 1 - u in (0, 1]; 0.0 - 0.0 is +0
}

double TraceRandom::normal() {
  if (has_spare_normal_) {
    has_spare_normal_ = false;
    return spare_normal_;
  }
  double u = 0.0;
  double v = 0.0;
  double s = 0.0;
  do {
    u = 2.0 * uniform() - 1.0;
    v = 2.0 * uniform() - 1.0;
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  const double factor = std::sqrt(-2.0 * portable_log(s) / s);
  spare_normal_ = v * factor;
  has_spare_normal_ = true;
  return u * factor;
}

double TraceRandom::gamma(double shape, double scale) {
  if (shape < 1.0) {
    // Boost: if G ~ Gamma(shape + 1) and U ~ U(0, 1], G U^(1/shape) ~ Gamma(shape).
    const double boosted = gamma(shape + 1.0, scale);
    const double u = 1.0 - uniform();
    return boosted * portable_exp(portable_log(u) / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x = 0.0;
    double v = 0.0;
    do {
      x = normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = uniform();
    const double x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2) return d * v * scale;  // the cheap squeeze
    if (portable_log(u) < 0.5 * x2 + d * (1.0 - v + portable_log(v))) return d * v * scale;
  }
}

double TraceRandom::lognormal(double mu, double sigma) { return portable_exp(mu + sigma * normal()); }

}  // namespace pagedllm::trace
