// The training text for the tiny model's vocabulary (see embedded_corpus.cpp).
#pragma once

#include <string_view>

namespace pagedllm::make_model {

std::string_view embedded_corpus();

}  // namespace pagedllm::make_model
