// ModelConfig from a Hugging Face config.json (field names and defaults as transformers'
// LlamaConfig, MistralConfig and Qwen2Config).
#include <fstream>
#include <sstream>

#include "core/model/model_config.h"
#include "core/model/model_errors.h"

namespace pagedllm::model {
namespace {

using nlohmann::json;

// Reads typed fields of one JSON object, naming the file and the field in every error.
class FieldReader {
 public:
  FieldReader(const json& object, const std::string& file) : object_(object), file_(file) {}

  const json* find(const char* name) const {
    const auto found = object_.find(name);
    return found == object_.end() || found->is_null() ? nullptr : &*found;
  }

  std::optional<std::int64_t> find_int(const char* name) const {
    const json* value = find(name);
    if (value == nullptr) return std::nullopt;
    if (!value->is_number_integer()) throw wrong_type(name, "an integer", *value);
    return value->get<std::int64_t>();
  }

  std::int64_t get_int(const char* name) const {
    if (const auto value = find_int(name)) return *value;
    throw missing(name);
  }

  std::optional<double> find_number(const char* name) const {
    const json* value = find(name);
    if (value == nullptr) return std::nullopt;
    if (!value->is_number()) throw wrong_type(name, "a number", *value);
    return value->get<double>();
  }

  std::optional<bool> find_bool(const char* name) const {
    const json* value = find(name);
    if (value == nullptr) return std::nullopt;
    if (!value->is_boolean()) throw wrong_type(name, "true or false", *value);
    return value->get<bool>();
  }

  std::optional<std::string> find_string(const char* name) const {
    const json* value = find(name);
    if (value == nullptr) return std::nullopt;
    if (!value->is_string()) throw wrong_type(name, "a string", *value);
    return value->get<std::string>();
  }

  // A token id, or a list of them (eos_token_id may be either).
  std::vector<std::int32_t> find_token_ids(const char* name) const {
    const json* value = find(name);
    if (value == nullptr) return {};
    std::vector<std::int32_t> ids;
    const auto add = [&](const json& item) {
      if (!item.is_number_integer() || item.get<std::int64_t>() < 0 ||
          item.get<std::int64_t>() > INT32_MAX) {
        throw wrong_type(name, "a token id or a list of token ids", *value);
      }
      ids.push_back(item.get<std::int32_t>());
    };
    if (value->is_array()) {
      for (const json& item : *value) add(item);
    } else {
      add(*value);
    }
    return ids;
  }

  ModelFormatError missing(const char* name) const {
    return ModelFormatError(file_, subject(name), "missing (required)");
  }
  ModelFormatError wrong_type(const char* name, const char* expected, const json& found) const {
    return ModelFormatError(file_, subject(name),
                            std::string("expected ") + expected + ", found " + found.dump());
  }
  ModelFormatError invalid(const char* name, const std::string& problem) const {
    return ModelFormatError(file_, subject(name), problem);
  }

  void set_prefix(std::string prefix) { prefix_ = std::move(prefix); }

 private:
  std::string subject(const char* name) const { return "field '" + prefix_ + name + "'"; }

  const json& object_;
  const std::string& file_;
  std::string prefix_;  // "rope_scaling." inside the nested object
};

struct ArchitectureName {
  const char* hf_class;
  const char* model_type;
};
constexpr ArchitectureName kArchitectures[] = {
    {"LlamaForCausalLM", "llama"}, {"MistralForCausalLM", "mistral"}, {"Qwen2ForCausalLM", "qwen2"}};

std::string read_architecture(const FieldReader& fields) {
  if (const json* list = fields.find("architectures")) {
    if (!list->is_array() || list->empty() || !(*list)[0].is_string()) {
      throw fields.wrong_type("architectures", "a list of class names", *list);
    }
    const std::string name = (*list)[0].get<std::string>();
    for (const ArchitectureName& known : kArchitectures) {
      if (name == known.hf_class) return known.model_type;
    }
    throw fields.invalid("architectures", "unsupported architecture '" + name +
                                              "' (supported: " + kSupportedArchitectures + ")");
  }
  if (const auto type = fields.find_string("model_type")) {
    for (const ArchitectureName& known : kArchitectures) {
      if (*type == known.model_type) return known.model_type;
    }
    throw fields.invalid("model_type", "unsupported architecture '" + *type +
                                           "' (supported: llama, mistral, qwen2)");
  }
  throw fields.invalid("architectures", "missing, and no 'model_type' either (supported: " +
                                            std::string(kSupportedArchitectures) + ")");
}

// `key`: "rope_scaling" (transformers 4) or "rope_parameters" (transformers 5, which also holds
// rope_theta and says rope_type "default" when there is no scaling).
RopeScaling read_rope_scaling(const json& config, const std::string& file, const std::string& key) {
  const auto found = config.find(key);
  if (found == config.end() || found->is_null()) return {};
  if (!found->is_object()) {
    throw ModelFormatError(file, "field '" + key + "'", "expected an object, found " + found->dump());
  }
  FieldReader fields(*found, file);
  fields.set_prefix(key + ".");
  // transformers accepts the legacy key "type" as well as "rope_type".
  std::optional<std::string> type = fields.find_string("rope_type");
  if (!type) type = fields.find_string("type");
  if (!type) throw fields.missing("rope_type");
  RopeScaling scaling;
  if (*type == "default") return scaling;
  if (*type == "linear") {
    scaling.kind = RopeScaling::Kind::linear;
  } else if (*type == "llama3") {
    scaling.kind = RopeScaling::Kind::llama3;
  } else {
    throw fields.invalid("rope_type", "unsupported rope scaling '" + *type +
                                          "' (supported: default, linear, llama3)");
  }
  const auto factor = fields.find_number("factor");
  if (!factor) throw fields.missing("factor");
  scaling.factor = *factor;
  if (scaling.kind == RopeScaling::Kind::llama3) {
    // transformers requires all four for llama3.
    const auto low = fields.find_number("low_freq_factor");
    const auto high = fields.find_number("high_freq_factor");
    if (!low) throw fields.missing("low_freq_factor");
    if (!high) throw fields.missing("high_freq_factor");
    scaling.low_freq_factor = *low;
    scaling.high_freq_factor = *high;
    scaling.original_max_position_embeddings = fields.get_int("original_max_position_embeddings");
  }
  return scaling;
}

}  // namespace

ModelConfig parse_hf_config(const json& config_json, const std::string& file) {
  if (!config_json.is_object()) {
    throw ModelFormatError(file, "", "expected a JSON object, found " +
                                         std::string(config_json.type_name()));
  }
  const FieldReader fields(config_json, file);
  ModelConfig config;
  config.architecture = read_architecture(fields);
  config.hidden_size = fields.get_int("hidden_size");
  config.num_layers = fields.get_int("num_hidden_layers");
  config.num_heads = fields.get_int("num_attention_heads");
  config.num_kv_heads = fields.find_int("num_key_value_heads").value_or(config.num_heads);
  config.intermediate_size = fields.get_int("intermediate_size");
  config.vocab_size = fields.get_int("vocab_size");
  config.max_position_embeddings = fields.get_int("max_position_embeddings");
  if (const auto head_dim = fields.find_int("head_dim")) {
    config.head_dim = *head_dim;
  } else {
    if (config.num_heads <= 0 || config.hidden_size % config.num_heads != 0) {
      throw fields.invalid("num_attention_heads",
                           std::to_string(config.num_heads) + " does not divide hidden_size " +
                               std::to_string(config.hidden_size) + " (and no head_dim is given)");
    }
    config.head_dim = config.hidden_size / config.num_heads;
  }
  // transformers 5 writes rope_theta and the scaling inside "rope_parameters" only; older files
  // have top-level "rope_theta" and "rope_scaling". The nested form wins where both exist.
  config.rope_theta = fields.find_number("rope_theta").value_or(10000.0);
  if (const json* parameters = fields.find("rope_parameters"); parameters != nullptr && !parameters->is_null()) {
    if (!parameters->is_object()) throw fields.wrong_type("rope_parameters", "an object", *parameters);
    FieldReader nested(*parameters, file);
    nested.set_prefix("rope_parameters.");
    if (const auto theta = nested.find_number("rope_theta")) config.rope_theta = *theta;
    config.rope_scaling = read_rope_scaling(config_json, file, "rope_parameters");
  } else {
    config.rope_scaling = read_rope_scaling(config_json, file, "rope_scaling");
  }
  config.rms_norm_eps = fields.find_number("rms_norm_eps").value_or(1e-6);
  config.tie_word_embeddings = fields.find_bool("tie_word_embeddings").value_or(false);
  if (const auto act = fields.find_string("hidden_act"); act && *act != "silu") {
    throw fields.invalid("hidden_act", "unsupported activation '" + *act + "' (supported: silu)");
  }
  if (fields.find_bool("mlp_bias").value_or(false)) {
    throw fields.invalid("mlp_bias", "MLP biases are not supported");
  }
  if (config.architecture == "qwen2") {
    config.attention_bias = true;  // Qwen2 always has q/k/v biases (and no o_proj bias)
    if (fields.find_bool("use_sliding_window").value_or(false)) {
      config.sliding_window = fields.find_int("sliding_window");
    }
  } else {
    // Llama's attention_bias adds an o_proj bias too, which the Llama-family forward lacks.
    if (fields.find_bool("attention_bias").value_or(false)) {
      throw fields.invalid("attention_bias", "attention biases are not supported for " +
                                                 config.architecture);
    }
    if (config.architecture == "mistral") config.sliding_window = fields.find_int("sliding_window");
  }
  if (const auto bos = fields.find_token_ids("bos_token_id"); !bos.empty()) {
    config.bos_token_id = bos.front();
  }
  config.eos_token_ids = fields.find_token_ids("eos_token_id");
  validate(config, file);
  return config;
}

ModelConfig read_hf_config(const std::string& config_json_path) {
  std::ifstream in(config_json_path, std::ios::binary);
  if (!in) throw ModelFormatError(config_json_path, "", "cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  json config;
  try {
    config = json::parse(text.str());
  } catch (const json::exception& error) {
    throw ModelFormatError(config_json_path, "", std::string("invalid JSON: ") + error.what());
  }
  return parse_hf_config(config, config_json_path);
}

}  // namespace pagedllm::model
