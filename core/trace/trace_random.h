// A deterministic random stream for trace synthesis: the same seed gives the same numbers with
// every compiler, standard library and platform.
//
// std:: distributions are implementation-defined (libstdc++ and libc++ draw different normals
// from the same engine), and libm's log / exp may differ in the last bit between libraries, so
// everything here is built from 64-bit integer arithmetic, IEEE-754 +, -, *, / and sqrt (all
// correctly rounded), frexp / ldexp (exact), and the portable_log / portable_exp below. The
// build compiles with -ffp-contract=off, so no fused multiply-add changes a rounding.
#pragma once

#include <cstdint>

namespace pagedllm::trace {

// Natural logarithm and exponential from basic operations only (relative error below 1e-15):
// bit-identical on every IEEE-754 platform, unlike std::log / std::exp.
double portable_log(double x);
double portable_exp(double x);

class TraceRandom {
 public:
  explicit TraceRandom(uint64_t seed);

  // An independent stream for one purpose (arrivals, lengths, ...): changing how many numbers one
  // purpose draws leaves the others unchanged.
  static TraceRandom stream(uint64_t seed, uint64_t purpose);

  uint64_t next_u64();                             // SplitMix64
  double uniform();                                // [0, 1), 53 random bits
  int64_t uniform_int(int64_t low, int64_t high);  // [low, high], unbiased (low <= high)
  double exponential(double mean);                 // mean >= 0
  double normal();                                 // standard normal (Marsaglia polar)
  double gamma(double shape, double scale);        // Marsaglia-Tsang; shape > 0, scale >= 0
  double lognormal(double mu, double sigma);       // exp(mu + sigma * normal())

 private:
  uint64_t state_;
  double spare_normal_ = 0.0;  // the polar method yields normals in pairs
  bool has_spare_normal_ = false;
};

}  // namespace pagedllm::trace
