#include "core/spec/speculative_config.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

namespace pagedllm::spec {
namespace {

[[noreturn]] void refuse(const std::string& field, const std::string& problem) {
  throw std::invalid_argument("--speculative-config: " + field + ": " + problem);
}

int32_t read_count(const nlohmann::json& object, const char* field) {
  const nlohmann::json& value = object.at(field);
  if (!value.is_number_integer()) refuse(field, "must be an integer, got " + value.dump());
  const auto number = value.get<int64_t>();
  if (number < 1 || number > 1024) refuse(field, "must be in [1, 1024], got " + std::to_string(number));
  return static_cast<int32_t>(number);
}

}  // namespace

const char* to_string(SpeculativeMethod method) {
  switch (method) {
    case SpeculativeMethod::none:
      return "none";
    case SpeculativeMethod::ngram:
      return "ngram";
    case SpeculativeMethod::draft_model:
      return "draft_model";
  }
  return "unknown";
}

SpeculativeConfig parse_speculative_config(std::string_view json) {
  nlohmann::json object;
  try {
    object = nlohmann::json::parse(json);
  } catch (const nlohmann::json::parse_error& error) {
    throw std::invalid_argument(std::string("--speculative-config: not JSON: ") + error.what());
  }
  if (!object.is_object()) throw std::invalid_argument("--speculative-config: must be a JSON object");
  for (const auto& [key, value] : object.items()) {
    if (key != "method" && key != "model" && key != "num_speculative_tokens" && key != "prompt_lookup_min" &&
        key != "prompt_lookup_max" && key != "disable_by_batch_size" && key != "simulated_draft_rate" &&
        key != "simulated_acceptance" && key != "simulated_seed") {
      refuse(key,
             "unknown key (known: method, model, num_speculative_tokens, prompt_lookup_min, prompt_lookup_max, "
             "disable_by_batch_size, simulated_draft_rate, simulated_acceptance, simulated_seed)");
    }
  }
  SpeculativeConfig config;
  if (object.contains("model")) {
    const nlohmann::json& model = object.at("model");
    if (!model.is_string() || model.get<std::string>().empty()) {
      refuse("model", "must be the draft model's path or name, got " + model.dump());
    }
    config.draft_model = model.get<std::string>();
  }
  // vLLM infers the method from the model: a "model" alone is a draft model.
  if (!object.contains("method") && config.draft_model.empty()) {
    refuse("method", "missing (\"ngram\", or \"draft_model\" with \"model\")");
  }
  const nlohmann::json method = object.contains("method") ? object.at("method") : nlohmann::json("draft_model");
  if (!method.is_string()) refuse("method", "must be a string, got " + method.dump());
  const auto name = method.get<std::string>();
  if (name == "ngram") {
    config.method = SpeculativeMethod::ngram;
    if (!config.draft_model.empty()) refuse("model", "the ngram method proposes from the sequence itself: drop it");
  } else if (name == "draft_model") {
    config.method = SpeculativeMethod::draft_model;
    if (config.draft_model.empty()) refuse("model", "missing: the draft model's path or name");
    for (const char* lookup : {"prompt_lookup_min", "prompt_lookup_max"}) {
      if (object.contains(lookup)) refuse(lookup, "applies to the ngram method only");
    }
  } else if (name == "eagle" || name == "eagle3" || name == "medusa" || name == "mtp") {
    refuse("method", "\"" + name +
                         "\" is not supported yet; this build proposes by n-gram lookup (\"ngram\") or a draft model "
                         "(\"draft_model\")");
  } else {
    refuse("method", "unknown method \"" + name + "\" (supported: \"ngram\", \"draft_model\")");
  }
  if (!object.contains("num_speculative_tokens")) refuse("num_speculative_tokens", "missing");
  config.num_speculative_tokens = read_count(object, "num_speculative_tokens");
  const bool has_min = object.contains("prompt_lookup_min");
  const bool has_max = object.contains("prompt_lookup_max");
  config.prompt_lookup_min = has_min ? read_count(object, "prompt_lookup_min") : 0;
  config.prompt_lookup_max = has_max ? read_count(object, "prompt_lookup_max") : 0;
  if (config.method == SpeculativeMethod::ngram) {  // vLLM's defaults
    if (!has_min && !has_max) {
      config.prompt_lookup_min = config.prompt_lookup_max = 5;
    } else if (!has_min) {
      config.prompt_lookup_min = config.prompt_lookup_max;
    } else if (!has_max) {
      config.prompt_lookup_max = config.prompt_lookup_min;
    }
  }
  if (object.contains("disable_by_batch_size")) {
    config.disable_by_batch_size =
        object.at("disable_by_batch_size").is_null() ? 0 : read_count(object, "disable_by_batch_size");
  }
  const bool draft_model = config.method == SpeculativeMethod::draft_model;
  if (draft_model && object.contains("simulated_draft_rate")) {
    refuse("simulated_draft_rate", "a draft model drafts at every decode step: give simulated_acceptance alone");
  }
  if (!draft_model && object.contains("simulated_draft_rate") != object.contains("simulated_acceptance")) {
    refuse(object.contains("simulated_draft_rate") ? "simulated_acceptance" : "simulated_draft_rate",
           "the simulator's model needs both simulated_draft_rate and simulated_acceptance");
  }
  if (object.contains("simulated_acceptance")) {
    SimulatedAcceptance simulated;
    simulated.draft_rate = 1.0;
    if (!draft_model) {
      const nlohmann::json& rate = object.at("simulated_draft_rate");
      if (!rate.is_number()) refuse("simulated_draft_rate", "must be a number, got " + rate.dump());
      simulated.draft_rate = rate.get<double>();
    }
    const nlohmann::json& rates = object.at("simulated_acceptance");
    if (!rates.is_array()) refuse("simulated_acceptance", "must be an array of numbers, got " + rates.dump());
    for (const nlohmann::json& entry : rates) {
      if (!entry.is_number()) refuse("simulated_acceptance", "must be an array of numbers, got " + rates.dump());
      simulated.accepted_per_position.push_back(entry.get<double>());
    }
    if (object.contains("simulated_seed")) {
      const nlohmann::json& seed = object.at("simulated_seed");
      if (!seed.is_number_unsigned()) refuse("simulated_seed", "must be a non-negative integer, got " + seed.dump());
      simulated.seed = seed.get<uint64_t>();
    }
    config.simulated = std::move(simulated);
  } else if (object.contains("simulated_seed")) {
    refuse("simulated_seed", "seeds the simulator's draws: give it with simulated_acceptance");
  }
  if (config.prompt_lookup_min > config.prompt_lookup_max) {
    refuse("prompt_lookup_min", std::to_string(config.prompt_lookup_min) + " is above prompt_lookup_max (" +
                                    std::to_string(config.prompt_lookup_max) + ")");
  }
  return config;
}

void validate(const SpeculativeConfig& config, int32_t max_num_batched_tokens) {
  if (!config.enabled()) return;
  if (config.num_speculative_tokens < 1) {
    refuse("num_speculative_tokens", "must be >= 1, got " + std::to_string(config.num_speculative_tokens));
  }
  if (config.num_speculative_tokens + 1 > max_num_batched_tokens) {
    refuse("num_speculative_tokens", std::to_string(config.num_speculative_tokens) +
                                         " proposals and the token they follow do not fit a step's budget "
                                         "(max_num_batched_tokens " +
                                         std::to_string(max_num_batched_tokens) + ")");
  }
  if (config.simulated) {
    const SimulatedAcceptance& simulated = *config.simulated;
    if (!(simulated.draft_rate >= 0.0 && simulated.draft_rate <= 1.0)) {
      refuse("simulated_draft_rate", "must be in [0, 1], got " + std::to_string(simulated.draft_rate));
    }
    const std::vector<double>& rates = simulated.accepted_per_position;
    if (static_cast<int32_t>(rates.size()) != config.num_speculative_tokens) {
      refuse("simulated_acceptance", "needs one rate per proposal (" + std::to_string(config.num_speculative_tokens) +
                                         "), got " + std::to_string(rates.size()));
    }
    for (size_t j = 0; j < rates.size(); ++j) {
      if (!(rates[j] >= 0.0 && rates[j] <= (j == 0 ? 1.0 : rates[j - 1]))) {
        refuse("simulated_acceptance", "entry " + std::to_string(j) + " (" + std::to_string(rates[j]) +
                                           ") must be in [0, 1] and at most the one before it");
      }
    }
  }
  if (config.disable_by_batch_size < 0) {
    refuse("disable_by_batch_size", "must be >= 0, got " + std::to_string(config.disable_by_batch_size));
  }
  if (config.method == SpeculativeMethod::draft_model && config.draft_model.empty()) {
    refuse("model", "missing: the draft model's path or name");
  }
  if (config.method == SpeculativeMethod::ngram &&
      (config.prompt_lookup_min < 1 || config.prompt_lookup_min > config.prompt_lookup_max)) {
    refuse("prompt_lookup_min", "must be in [1, prompt_lookup_max], got " + std::to_string(config.prompt_lookup_min) +
                                    " and " + std::to_string(config.prompt_lookup_max));
  }
}

std::string describe(const SpeculativeConfig& config) {
  if (!config.enabled()) return "off";
  std::string text = std::string(to_string(config.method)) + " k=" + std::to_string(config.num_speculative_tokens);
  if (config.method == SpeculativeMethod::ngram) {
    text += " lookup " + std::to_string(config.prompt_lookup_min) + "-" + std::to_string(config.prompt_lookup_max);
  } else {
    text += " (" + config.draft_model + ")";
  }
  if (config.disable_by_batch_size > 0)
    text += ", off above " + std::to_string(config.disable_by_batch_size) + " requests";
  if (config.simulated) {
    text += ", simulated: drafts at " + std::to_string(config.simulated->draft_rate).substr(0, 5) + " of decodes";
    if (config.simulated->seed != 0) text += ", seed " + std::to_string(config.simulated->seed);
  }
  return text;
}

}  // namespace pagedllm::spec
