// Checks of the errors model files raise: the message of the ModelFormatError an action throws,
// and that a message names every part it must (file, tensor or field, what was expected).
#pragma once

#include <boost/test/unit_test.hpp>

#include <functional>
#include <string>
#include <vector>

#include "core/model/model_errors.h"

namespace pagedllm::model::testing {

// what() of the ModelFormatError `action` throws, or "(no error)".
inline std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const ModelFormatError& error) {
    return error.what();
  }
  return "(no error)";
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Checks that `message` names every part, printing the message when it does not.
inline void expect_parts(const std::string& message, const std::vector<std::string>& parts) {
  for (const std::string& part : parts) {
    BOOST_TEST(contains(message, part), "'" << part << "' missing from: " << message);
  }
}

}  // namespace pagedllm::model::testing
