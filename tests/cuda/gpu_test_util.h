// Helpers of the CUDA kernel tests: the GPU skip, device buffers, 16-bit conversions on the host,
// random inputs and the tolerance comparison against cpu_ref.
#pragma once

#include <cuda_runtime_api.h>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/device_info.h"
#include "cuda/kernels/dtype.h"

namespace pagedllm::cuda::testing {

// True when there is no usable GPU: then it has printed "SKIPPED GPU checks: <reason>" and
// checked that the reason is not empty, so a test never passes silently.
inline bool skip_without_gpu() {
  const DeviceQuery query = query_devices();
  if (!query.devices.empty()) return false;
  std::cout << "SKIPPED GPU checks: " << query.error << " ("
            << boost::unit_test::framework::current_test_case().p_name.get() << ")\n";
  BOOST_TEST(!query.error.empty());
  return true;
}

// Non-null, 16-byte aligned addresses that are never dereferenced: for argument checks that must
// fail before any pointer is used.
inline const void* fake(std::uintptr_t address) { return reinterpret_cast<const void*>(address); }
inline void* fake_mut(std::uintptr_t address) { return reinterpret_cast<void*>(address); }

// Waits for the device and surfaces any fault of the kernels enqueued so far.
inline void device_sync() { PAGEDLLM_CUDA_CHECK(cudaDeviceSynchronize()); }

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0) PAGEDLLM_CUDA_CHECK(cudaMalloc(&pointer_, bytes_));
  }
  template <typename T>
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size() * sizeof(T)) {
    upload(host);
  }
  ~DeviceBuffer() {
    if (pointer_ != nullptr) cudaFree(pointer_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return pointer_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(pointer_);
  }
  std::size_t bytes() const { return bytes_; }

  // All bytes 0xff: NaN as bf16, fp16 and fp32, -1 as integers, so unwritten outputs show.
  void poison() {
    if (bytes_ > 0) PAGEDLLM_CUDA_CHECK(cudaMemset(pointer_, 0xff, bytes_));
  }
  template <typename T>
  void upload(const std::vector<T>& host) {
    if (host.size() * sizeof(T) != bytes_) throw std::logic_error("DeviceBuffer::upload: size mismatch");
    if (bytes_ > 0) PAGEDLLM_CUDA_CHECK(cudaMemcpy(pointer_, host.data(), bytes_, cudaMemcpyHostToDevice));
  }
  template <typename T>
  std::vector<T> download() const {
    std::vector<T> host(bytes_ / sizeof(T));
    device_sync();
    if (bytes_ > 0) PAGEDLLM_CUDA_CHECK(cudaMemcpy(host.data(), pointer_, bytes_, cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  void* pointer_ = nullptr;
  std::size_t bytes_ = 0;
};

// --- 16-bit formats on the host (round to nearest even) ---------------------------------------

inline uint32_t float_bits(float f) {
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}
inline float bits_float(uint32_t bits) {
  float f = 0.0f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline uint16_t float_to_bf16(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  const uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}
inline float bf16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

inline uint16_t float_to_fp16(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return static_cast<uint16_t>(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (ax < 0x38800000u) {  // below 2^-14: a subnormal half (or zero), in units of 2^-24
    const double units = std::nearbyint(static_cast<double>(bits_float(ax)) * 16777216.0);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(units));
  }
  const uint32_t exponent = (ax >> 23) - 127u + 15u;
  const uint32_t mantissa = ax & 0x7fffffu;
  uint32_t h = (exponent << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) != 0u)) ++h;  // a carry into the exponent is right
  return static_cast<uint16_t>(sign | h);
}
inline float fp16_to_float(uint16_t h) {
  const uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 31) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  return bits_float(sign | ((exponent - 15u + 127u) << 23) | (mantissa << 13));
}

inline uint16_t to_bits(DType dtype, float f) { return dtype == DType::bf16 ? float_to_bf16(f) : float_to_fp16(f); }
inline float from_bits(DType dtype, uint16_t h) { return dtype == DType::bf16 ? bf16_to_float(h) : fp16_to_float(h); }

// n random values in [lo, hi], never zero, as 16-bit bits and as the fp32 they round to.
struct HalfData {
  std::vector<uint16_t> bits;
  std::vector<float> values;
};
inline HalfData random_halves(DType dtype, std::size_t n, std::mt19937_64& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  HalfData data;
  data.bits.resize(n);
  data.values.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    float v = dist(rng);
    uint16_t b = to_bits(dtype, v);
    if (from_bits(dtype, b) == 0.0f) b = to_bits(dtype, 0.5f * hi);
    data.bits[i] = b;
    data.values[i] = from_bits(dtype, b);
  }
  return data;
}

// num_rows rows of row_elems 16-bit values, each followed by `padding` NaNs (0x7FFF is a NaN in
// bf16 and fp16): rows as a wider buffer holds them, so that a kernel reading the gaps shows it.
inline std::vector<uint16_t> strided_rows(const std::vector<uint16_t>& packed, int64_t num_rows, int64_t row_elems,
                                          int64_t padding) {
  std::vector<uint16_t> wide(static_cast<std::size_t>(num_rows * (row_elems + padding)), uint16_t{0x7FFF});
  for (int64_t row = 0; row < num_rows; ++row) {
    std::copy_n(packed.begin() + row * row_elems, row_elems, wide.begin() + row * (row_elems + padding));
  }
  return wide;
}

inline std::vector<float> to_floats(DType dtype, const std::vector<uint16_t>& bits) {
  std::vector<float> values(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) values[i] = from_bits(dtype, bits[i]);
  return values;
}

// --- Comparison with the reference ------------------------------------------------------------

struct Tolerance {
  double atol = 1e-3;
  double rtol = 1.6e-2;
};
// vLLM's kernel-test tolerances for bf16 against fp32; fp16 (3 more mantissa bits) tighter.
inline Tolerance tolerance_for(DType dtype) {
  return dtype == DType::bf16 ? Tolerance{1e-3, 1.6e-2} : Tolerance{1e-3, 4e-3};
}

struct Comparison {
  std::size_t violations = 0;  // elements outside atol + rtol * |ref| (NaN included)
  std::size_t first_violation = 0;
  double normalized_error = 0.0;  // ||out - ref|| / ||ref||
  double max_abs_error = 0.0;
};

inline Comparison compare(std::span<const float> out, std::span<const float> ref, Tolerance tol) {
  if (out.size() != ref.size()) throw std::logic_error("compare: size mismatch");
  Comparison c;
  double diff_sq = 0.0;
  double ref_sq = 0.0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double d = std::abs(static_cast<double>(out[i]) - static_cast<double>(ref[i]));
    diff_sq += d * d;
    ref_sq += static_cast<double>(ref[i]) * static_cast<double>(ref[i]);
    if (!(d <= tol.atol + tol.rtol * std::abs(static_cast<double>(ref[i])))) {
      if (c.violations == 0) c.first_violation = i;
      ++c.violations;
    }
    if (!(d <= c.max_abs_error)) c.max_abs_error = d;  // NaN sticks
  }
  c.normalized_error = ref_sq > 0.0 ? std::sqrt(diff_sq / ref_sq) : std::sqrt(diff_sq);
  return c;
}

// Reports one case: the normalized error always, the first bad element on failure.
inline void check_close(const std::string& name, std::span<const float> out, std::span<const float> ref,
                        Tolerance tol) {
  const Comparison c = compare(out, ref, tol);
  BOOST_TEST_MESSAGE(name << ": ||out-ref||/||ref|| = " << c.normalized_error
                          << ", max |out-ref| = " << c.max_abs_error);
  BOOST_TEST(c.violations == 0u, name << ": " << c.violations << " of " << out.size()
                                      << " elements outside tolerance; first at " << c.first_violation << ": out "
                                      << (out.empty() ? 0.0f : out[c.first_violation]) << " ref "
                                      << (ref.empty() ? 0.0f : ref[c.first_violation]));
}

}  // namespace pagedllm::cuda::testing
