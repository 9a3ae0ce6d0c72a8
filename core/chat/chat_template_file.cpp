// ChatTemplate::from_file: a user-supplied format in the JSON documented in chat_template.h.
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/chat/chat_template.h"

namespace pagedllm::chat {
namespace {

using nlohmann::json;

class FormatReader {
 public:
  explicit FormatReader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    throw ChatTemplateError(path_ + ": " + (key.empty() ? "" : "key '" + key + "': ") + problem);
  }

  json load() const {
    std::ifstream in(path_, std::ios::binary);
    if (!in) fail("", "cannot open");
    std::ostringstream text;
    text << in.rdbuf();
    try {
      return json::parse(text.str());
    } catch (const json::exception& error) {
      fail("", std::string("invalid JSON: ") + error.what());
    }
  }

  void refuse_unknown_keys(const json& object, const std::set<std::string>& known, const std::string& where) const {
    for (const auto& [key, value] : object.items()) {
      if (known.count(key) == 0) fail(where + key, "unknown key (a typo?)");
    }
  }

  std::string string_or(const json& object, const std::string& key, const std::string& where,
                        std::string fallback) const {
    const auto found = object.find(key);
    if (found == object.end()) return fallback;
    if (!found->is_string()) fail(where + key, std::string("expected a string, found ") + found->type_name());
    return found->get<std::string>();
  }

  bool bool_or(const json& object, const std::string& key, const std::string& where, bool fallback) const {
    const auto found = object.find(key);
    if (found == object.end()) return fallback;
    if (!found->is_boolean()) fail(where + key, std::string("expected true or false, found ") + found->type_name());
    return found->get<bool>();
  }

  TurnFormat turn(const json& root, const std::string& role) const {
    const auto found = root.find(role);
    if (found == root.end()) fail(role, "missing (required: system, user and assistant)");
    if (!found->is_object()) fail(role, std::string("expected an object, found ") + found->type_name());
    const std::string where = role + ".";
    refuse_unknown_keys(*found, {"prefix", "suffix", "trim", "eos"}, where);
    return {string_or(*found, "prefix", where, ""), string_or(*found, "suffix", where, ""),
            bool_or(*found, "trim", where, false), bool_or(*found, "eos", where, false)};
  }

  SystemPlacement placement(const json& root) const {
    const std::string text = string_or(root, "system_placement", "", "turn");
    if (text == "turn") return SystemPlacement::own_turn;
    if (text == "first_user") return SystemPlacement::first_user;
    if (text == "last_user") return SystemPlacement::last_user;
    if (text == "none") return SystemPlacement::unsupported;
    fail("system_placement", "unknown placement '" + text + "' (known: turn, first_user, last_user, none)");
  }

 private:
  std::string path_;
};

}  // namespace

ChatTemplate ChatTemplate::from_file(const std::string& path) {
  const FormatReader reader(path);
  const json root = reader.load();
  if (!root.is_object()) reader.fail("", std::string("expected a JSON object, found ") + root.type_name());
  reader.refuse_unknown_keys(
      root,
      {"name", "bos", "system", "user", "assistant", "generation_prompt", "default_system_prompt", "system_placement",
       "system_separator", "alternate_roles", "system_preamble", "default_date", "date_format"},
      "");
  ChatFormat format;
  format.family = ChatFamily::custom;
  format.name = reader.string_or(root, "name", "", path);
  format.add_bos = reader.bool_or(root, "bos", "", false);
  format.system = reader.turn(root, "system");
  format.user = reader.turn(root, "user");
  format.assistant = reader.turn(root, "assistant");
  format.generation_prompt = reader.string_or(root, "generation_prompt", "", "");
  if (root.contains("default_system_prompt") && !root["default_system_prompt"].is_null()) {
    format.default_system_prompt = reader.string_or(root, "default_system_prompt", "", "");
  }
  format.system_placement = reader.placement(root);
  format.system_separator = reader.string_or(root, "system_separator", "", "\n\n");
  format.alternate_roles = reader.bool_or(root, "alternate_roles", "", false);
  format.system_preamble = reader.string_or(root, "system_preamble", "", "");
  format.default_date = reader.string_or(root, "default_date", "", "");
  format.date_format = reader.string_or(root, "date_format", "", "");
  return ChatTemplate(std::move(format));
}

nlohmann::json to_format_json(const ChatFormat& format) {
  const auto turn = [](const TurnFormat& t) {
    return json{{"prefix", t.prefix}, {"suffix", t.suffix}, {"trim", t.trim}, {"eos", t.eos}};
  };
  const char* placement = format.system_placement == SystemPlacement::own_turn     ? "turn"
                          : format.system_placement == SystemPlacement::first_user ? "first_user"
                          : format.system_placement == SystemPlacement::last_user  ? "last_user"
                                                                                   : "none";
  json out{{"name", format.name},
           {"bos", format.add_bos},
           {"system", turn(format.system)},
           {"user", turn(format.user)},
           {"assistant", turn(format.assistant)},
           {"generation_prompt", format.generation_prompt},
           {"system_placement", placement},
           {"system_separator", format.system_separator},
           {"alternate_roles", format.alternate_roles},
           {"system_preamble", format.system_preamble},
           {"date_format", format.date_format},
           {"default_date", format.default_date}};
  if (format.default_system_prompt) out["default_system_prompt"] = *format.default_system_prompt;
  return out;
}

}  // namespace pagedllm::chat
