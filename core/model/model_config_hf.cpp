// ModelConfig from a Hugging Face config.json (field names and defaults as transformers'
// LlamaConfig, MistralConfig and Qwen2Config).
#include <fstream>
#include <sstream>

#include "core/common/json_value.h"
#include "core/model/model_config.h"
#include "core/model/model_errors.h"

namespace pagedllm::model {
namespace {

using nlohmann::json;

// A token id, or a list of them (eos_token_id may be either).
std::vector<std::int32_t> token_ids(const JsonValue& value) {
  if (!value.json().is_array()) return {value.token_id()};
  std::vector<std::int32_t> ids;
  for (std::size_t i = 0; i < value.size(); ++i) ids.push_back(value.at(i).token_id());
  return ids;
}

std::optional<std::int64_t> find_int(const JsonValue& object, std::string_view key) {
  const std::optional<JsonValue> value = object.find(key);
  return value ? std::optional<std::int64_t>(value->integer()) : std::nullopt;
}

std::optional<double> find_number(const JsonValue& object, std::string_view key) {
  const std::optional<JsonValue> value = object.find(key);
  return value ? std::optional<double>(value->number()) : std::nullopt;
}

std::optional<std::string> find_string(const JsonValue& object, std::string_view key) {
  const std::optional<JsonValue> value = object.find(key);
  return value ? std::optional<std::string>(value->string()) : std::nullopt;
}

struct ArchitectureName {
  const char* hf_class;
  const char* model_type;
};
constexpr ArchitectureName kArchitectures[] = {
    {"LlamaForCausalLM", "llama"}, {"MistralForCausalLM", "mistral"}, {"Qwen2ForCausalLM", "qwen2"}};

std::string read_architecture(const JsonValue& config) {
  if (const std::optional<JsonValue> list = config.find("architectures")) {
    if (!list->json().is_array() || list->json().empty() || !list->json()[0].is_string()) {
      list->fail_type("a list of class names");
    }
    const std::string& name = list->at(0).string();
    for (const ArchitectureName& known : kArchitectures) {
      if (name == known.hf_class) return known.model_type;
    }
    list->fail("unsupported architecture '" + name + "' (supported: " + kSupportedArchitectures + ")");
  }
  if (const std::optional<std::string> type = find_string(config, "model_type")) {
    for (const ArchitectureName& known : kArchitectures) {
      if (*type == known.model_type) return known.model_type;
    }
    config.at("model_type").fail("unsupported architecture '" + *type + "' (supported: llama, mistral, qwen2)");
  }
  throw JsonError("architectures",
                  "missing, and no 'model_type' either (supported: " + std::string(kSupportedArchitectures) + ")");
}

// `key`: "rope_scaling" (transformers 4) or "rope_parameters" (transformers 5, which also holds
// rope_theta and says rope_type "default" when there is no scaling).
RopeScaling read_rope_scaling(const JsonValue& config, std::string_view key) {
  const std::optional<JsonValue> fields = config.find(key);
  if (!fields) return {};
  fields->expect_object();
  // transformers accepts the legacy key "type" as well as "rope_type".
  std::optional<std::string> type = find_string(*fields, "rope_type");
  if (!type) type = find_string(*fields, "type");
  if (!type) fields->at("rope_type");  // fails: missing (required)
  RopeScaling scaling;
  if (*type == "default") return scaling;
  if (*type == "linear") {
    scaling.kind = RopeScaling::Kind::linear;
  } else if (*type == "llama3") {
    scaling.kind = RopeScaling::Kind::llama3;
  } else {
    throw JsonError(fields->path() + ".rope_type",
                    "unsupported rope scaling '" + *type + "' (supported: default, linear, llama3)");
  }
  scaling.factor = fields->at("factor").number();
  if (scaling.kind == RopeScaling::Kind::llama3) {
    // transformers requires all four for llama3.
    scaling.low_freq_factor = fields->at("low_freq_factor").number();
    scaling.high_freq_factor = fields->at("high_freq_factor").number();
    scaling.original_max_position_embeddings = fields->at("original_max_position_embeddings").integer();
  }
  return scaling;
}

ModelConfig read_config(const JsonValue& fields) {
  fields.expect_object();
  ModelConfig config;
  config.architecture = read_architecture(fields);
  config.hidden_size = fields.at("hidden_size").integer();
  config.num_layers = fields.at("num_hidden_layers").integer();
  config.num_heads = fields.at("num_attention_heads").integer();
  config.num_kv_heads = find_int(fields, "num_key_value_heads").value_or(config.num_heads);
  config.intermediate_size = fields.at("intermediate_size").integer();
  config.vocab_size = fields.at("vocab_size").integer();
  config.max_position_embeddings = fields.at("max_position_embeddings").integer();
  if (const auto head_dim = find_int(fields, "head_dim")) {
    config.head_dim = *head_dim;
  } else {
    if (config.num_heads <= 0 || config.hidden_size % config.num_heads != 0) {
      fields.at("num_attention_heads")
          .fail(std::to_string(config.num_heads) + " does not divide hidden_size " +
                std::to_string(config.hidden_size) + " (and no head_dim is given)");
    }
    config.head_dim = config.hidden_size / config.num_heads;
  }
  // transformers 5 writes rope_theta and the scaling inside "rope_parameters" only; older files
  // have top-level "rope_theta" and "rope_scaling". The nested form wins where both exist.
  config.rope_theta = find_number(fields, "rope_theta").value_or(10000.0);
  if (const std::optional<JsonValue> parameters = fields.find("rope_parameters")) {
    parameters->expect_object();
    if (const auto theta = find_number(*parameters, "rope_theta")) config.rope_theta = *theta;
    config.rope_scaling = read_rope_scaling(fields, "rope_parameters");
  } else {
    config.rope_scaling = read_rope_scaling(fields, "rope_scaling");
  }
  config.rms_norm_eps = find_number(fields, "rms_norm_eps").value_or(1e-6);
  config.tie_word_embeddings = fields.flag("tie_word_embeddings", false);
  if (const auto act = find_string(fields, "hidden_act"); act && *act != "silu") {
    fields.at("hidden_act").fail("unsupported activation '" + *act + "' (supported: silu)");
  }
  if (fields.flag("mlp_bias", false)) fields.at("mlp_bias").fail("MLP biases are not supported");
  if (config.architecture == "qwen2") {
    config.attention_bias = true;  // Qwen2 always has q/k/v biases (and no o_proj bias)
    // Transformers' Qwen2: with use_sliding_window, layers from max_window_layers on slide (its
    // default: 28); all of them (0) is one window for every layer, none (>= the layer count) is no
    // window; a mix is refused, since the forward applies one window to every layer.
    if (fields.flag("use_sliding_window", false)) {
      const std::int64_t max_window_layers = find_int(fields, "max_window_layers").value_or(28);
      if (max_window_layers == 0) {
        config.sliding_window = find_int(fields, "sliding_window");
      } else if (max_window_layers < config.num_layers) {
        fields.at("max_window_layers")
            .fail("layers " + std::to_string(max_window_layers) + " to " + std::to_string(config.num_layers - 1) +
                  " slide and the rest attend fully: a mix of windowed and full layers is not supported");
      }
    }
  } else {
    // Llama's attention_bias adds an o_proj bias too, which the Llama-family forward lacks.
    if (fields.flag("attention_bias", false)) {
      fields.at("attention_bias").fail("attention biases are not supported for " + config.architecture);
    }
    if (config.architecture == "mistral") config.sliding_window = find_int(fields, "sliding_window");
  }
  if (const std::optional<JsonValue> bos = fields.find("bos_token_id")) {
    const std::vector<std::int32_t> ids = token_ids(*bos);
    if (!ids.empty()) config.bos_token_id = ids.front();
  }
  if (const std::optional<JsonValue> eos = fields.find("eos_token_id")) config.eos_token_ids = token_ids(*eos);
  return config;
}

}  // namespace

ModelConfig parse_hf_config(const json& config_json, const std::string& file) {
  ModelConfig config;
  try {
    config = read_config(JsonValue(config_json));
  } catch (const JsonError& error) {
    throw ModelFormatError(file, error.path().empty() ? "" : "field '" + error.path() + "'", error.problem());
  }
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
