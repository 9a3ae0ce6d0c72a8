// The simulator tests' usual cost model (the roofline of llama-2-7b on one H100 SXM), and a GPU
// of round figures for prices worked out by hand.
#pragma once

#include <memory>

#include "core/model/model_shape.h"
#include "sim/cost_model.h"
#include "sim/hardware.h"
#include "sim/roofline_cost_model.h"

namespace pagedllm::test {

inline std::shared_ptr<const sim::CostModel> llama2_7b_on_h100() {
  sim::RooflineConfig roofline;
  roofline.hardware = sim::find_hardware("h100-sxm");
  roofline.model = model::find_model_shape("llama-2-7b");
  return std::make_shared<const sim::RooflineCostModel>(roofline);
}

// 1,000 FLOP/s and 100 bytes/s: times are FLOPs / 1000 and bytes / 100.
inline sim::HardwareSpec round_hardware() {
  return {.name = "round",
          .peak_flops = 1000.0,
          .memory_bandwidth = 100.0,
          .memory_bytes = 1 << 20,
          .host_link_bandwidth = 10.0,
          .gpu_link_bandwidth = 50.0,
          .usd_per_gpu_hour = 1.0};
}

}  // namespace pagedllm::test
