#include "core/chat/chat_template_loader.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/model/gguf_file.h"

namespace pagedllm::chat {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// tokenizer_config.json's "chat_template": a string, or named templates (the "default" one).
std::optional<std::string> template_from_tokenizer_config(const fs::path& path) {
  const std::optional<std::string> text = read_file(path);
  if (!text) return std::nullopt;
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::exception& error) {
    throw ChatTemplateError(path.string() + ": invalid JSON: " + error.what());
  }
  const auto found = config.find("chat_template");
  if (found == config.end() || found->is_null()) return std::nullopt;
  if (found->is_string()) return found->get<std::string>();
  if (found->is_array()) {
    for (const nlohmann::json& named : *found) {
      if (named.is_object() && named.value("name", "") == "default" && named.contains("template") &&
          named["template"].is_string()) {
        return named["template"].get<std::string>();
      }
    }
  }
  throw ChatTemplateError(path.string() +
                          ": key 'chat_template': expected a string or a list holding a \"default\" template");
}

}  // namespace

ChatTemplate load_chat_template(const model::GgufFile& file) {
  const std::string key = "tokenizer.chat_template";
  const std::optional<std::string> text = file.find_string(key);
  if (!text) throw ChatTemplateError(file.path() + ": key '" + key + "': missing (the model ships no chat template)");
  return ChatTemplate::from_jinja(*text, key + " of " + file.path());
}

ChatTemplate load_chat_template(const std::string& model_directory) {
  const fs::path config = fs::path(model_directory) / "tokenizer_config.json";
  if (const std::optional<std::string> text = template_from_tokenizer_config(config)) {
    return ChatTemplate::from_jinja(*text, config.string());
  }
  const fs::path jinja = fs::path(model_directory) / "chat_template.jinja";
  if (const std::optional<std::string> text = read_file(jinja)) return ChatTemplate::from_jinja(*text, jinja.string());
  throw ChatTemplateError(model_directory +
                          ": no chat template (neither tokenizer_config.json \"chat_template\" "
                          "nor chat_template.jinja)");
}

}  // namespace pagedllm::chat
