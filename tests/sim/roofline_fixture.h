// The simulator tests' usual cost model: the roofline of llama-2-7b on one H100 SXM.
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

}  // namespace pagedllm::test
