// `pagedllm chat-template`: render a conversation with a chat template, to see the prompt a
// model gets and to cross-check pagedllm's Jinja interpreter and formats against Jinja2
// (tests/pypi/check_chat_template.py).
//
// The template comes from a file (Jinja text, run; a .json file is a user format, see
// core/chat/chat_template.h), a built-in name, or a GGUF file's tokenizer.chat_template (whose
// BOS / EOS token texts are then the defaults of --bos / --eos). The messages are passed to a
// Jinja template as given (tool_calls, tool_call_id, name included), --tools-json as `tools`.
// The rendered text is printed as is, without a trailing newline. --describe prints a format as
// JSON instead: a built-in or JSON format, or the format recognised in a Jinja template of a
// family pagedllm knows (ChatML, Llama 3, Mistral); other templates have none to describe.
#include <boost/program_options.hpp>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/chat/chat_template.h"
#include "core/chat/chat_template_loader.h"
#include "core/model/gguf_file.h"
#include "tools/pagedllm/cli_options.h"
#include "tools/pagedllm/subcommands.h"

namespace pagedllm::cli {
namespace {

namespace po = boost::program_options;

struct ChatTemplateOptions {
  std::string template_file;
  std::string template_name;
  std::string gguf_path;
  std::string messages_path;
  std::string tools_path;
  bool no_generation_prompt = false;
  bool continue_final_message = false;
  std::optional<std::string> bos;
  std::optional<std::string> eos;
  std::optional<std::string> date;
  bool describe = false;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A JSON file, keys in the order written (a template's tojson prints them in that order).
nlohmann::ordered_json read_json(const std::string& path) {
  try {
    return nlohmann::ordered_json::parse(read_text(path));
  } catch (const nlohmann::json::exception& error) {
    throw std::runtime_error(path + ": not valid JSON: " + error.what());
  }
}

// [{"role": "...", "content": "...", ...}, ...]
nlohmann::ordered_json read_messages(const std::string& path) {
  nlohmann::ordered_json messages = read_json(path);
  if (!messages.is_array()) throw std::runtime_error(path + ": expected a JSON array of messages");
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const nlohmann::ordered_json& message = messages[i];
    if (!message.is_object() || !message.contains("role") || !message["role"].is_string()) {
      throw std::runtime_error(path + ": message " + std::to_string(i) + ": expected an object with a string \"role\"");
    }
  }
  return messages;
}

// The text of token `key`'s id in the GGUF vocabulary ("" when the file has no such token).
std::string gguf_token_text(const model::GgufFile& file, const std::string& key) {
  const auto id = file.find_u64(key);
  if (!id) return {};
  const std::vector<std::string> tokens = file.get_string_array("tokenizer.ggml.tokens");
  return *id < tokens.size() ? tokens[*id] : std::string();
}

}  // namespace

int run_chat_template(const std::vector<std::string>& args) {
  ChatTemplateOptions options;
  po::options_description description("pagedllm chat-template options");
  // clang-format off
  description.add_options()
      ("help,h", "show this help")
      ("template-file", po::value(&options.template_file),
       "a Jinja chat template (run) or a .json user format")
      ("template-name", po::value(&options.template_name),
       "a built-in format: chatml, llama3, llama3.1, mistral, mistral-v1")
      ("gguf", po::value(&options.gguf_path), "use the tokenizer.chat_template of this GGUF file")
      ("messages-json", po::value(&options.messages_path),
       "the conversation: [{\"role\": \"system|user|assistant|tool\", \"content\": \"...\", ...}, ...]")
      ("tools-json", po::value(&options.tools_path), "a JSON list of tools, the template's `tools` (default: none)")
      ("no-generation-prompt", po::bool_switch(&options.no_generation_prompt),
       "do not append the assistant turn opening")
      ("continue-final-message", po::bool_switch(&options.continue_final_message),
       "leave the final assistant message open for the model to continue (implies --no-generation-prompt)")
      ("bos", po::value<std::string>(), "BOS token text (default: the GGUF's, else empty)")
      ("eos", po::value<std::string>(), "EOS token text (default: the GGUF's, else empty)")
      ("date", po::value<std::string>(), "the date Llama 3.1 templates print (default: theirs)")
      ("describe", po::bool_switch(&options.describe),
       "print the format as JSON (a built-in or JSON format, or a ChatML / Llama 3 / Mistral Jinja template's)");
  // clang-format on
  po::variables_map values;
  if (!parse_options(args, description, values)) return 0;
  if (values.count("bos")) options.bos = values["bos"].as<std::string>();
  if (values.count("eos")) options.eos = values["eos"].as<std::string>();
  if (values.count("date")) options.date = values["date"].as<std::string>();
  const int num_sources = !options.template_file.empty() + !options.template_name.empty() + !options.gguf_path.empty();
  if (num_sources != 1) {
    throw std::invalid_argument("give exactly one of --template-file, --template-name, --gguf");
  }

  chat::RenderOptions render;
  std::optional<chat::ChatTemplate> chat_template;
  if (!options.template_name.empty()) {
    chat_template = chat::ChatTemplate::named(options.template_name);
  } else if (!options.template_file.empty()) {
    chat_template = ends_with(options.template_file, ".json")
                        ? chat::ChatTemplate::from_file(options.template_file)
                        : chat::ChatTemplate::from_jinja(read_text(options.template_file), options.template_file);
  } else {
    const model::GgufFile gguf(options.gguf_path);
    chat_template = chat::load_chat_template(gguf);
    render.bos_token = gguf_token_text(gguf, "tokenizer.ggml.bos_token_id");
    render.eos_token = gguf_token_text(gguf, "tokenizer.ggml.eos_token_id");
  }
  if (options.describe) {
    const std::string source = options.template_file.empty() ? options.gguf_path : options.template_file;
    const chat::ChatFormat format = chat_template->is_jinja()
                                        ? chat::ChatTemplate::recognise(chat_template->jinja_text(), source).format()
                                        : chat_template->format();
    std::cout << chat::to_format_json(format).dump(2) << "\n";
    return 0;
  }
  if (options.messages_path.empty()) throw std::invalid_argument("--messages-json is required");
  if (options.bos) render.bos_token = *options.bos;
  if (options.eos) render.eos_token = *options.eos;
  render.date_string = options.date;
  render.continue_final_message = options.continue_final_message;
  render.add_generation_prompt = !options.no_generation_prompt && !options.continue_final_message;
  if (!options.tools_path.empty()) render.tools = read_json(options.tools_path);
  std::cout << chat_template->render_json(read_messages(options.messages_path), render);
  std::cout.flush();
  return 0;
}

}  // namespace pagedllm::cli
