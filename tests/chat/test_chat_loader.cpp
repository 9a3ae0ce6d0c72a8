// Finding a model's chat template: GGUF metadata, tokenizer_config.json (string or named list),
// chat_template.jinja, loaded to be run; and the one-line description `pagedllm inspect` prints.
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/chat/chat_template_loader.h"
#include "core/model/gguf_file.h"
#include "core/model/gguf_writer.h"
#include "tests/chat/known_templates.h"

namespace pagedllm::chat {
namespace {

namespace fs = std::filesystem;

using testing::kQwen2Template;

struct TempDir {
  fs::path path = fs::temp_directory_path() /
                  ("pagedllm_chat_loader_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  void write(const std::string& name, const std::string& text) const { std::ofstream(path / name) << text; }
  static int& counter() {
    static int next = 0;
    return next;
  }
};

std::string error_of(const std::string& directory) {
  try {
    load_chat_template(directory);
  } catch (const ChatTemplateError& error) {
    return error.what();
  }
  return "(loaded)";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(chat_loader)

BOOST_AUTO_TEST_CASE(tokenizer_config_string_list_and_jinja_file) {
  const TempDir dir;
  const std::string expected =
      "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
      "<|im_start|>assistant\n";
  dir.write("tokenizer_config.json", nlohmann::json{{"chat_template", kQwen2Template}}.dump());
  BOOST_TEST(load_chat_template(dir.path.string()).is_jinja());
  BOOST_TEST(load_chat_template(dir.path.string()).render({{"user", "Hi"}}) == expected);

  dir.write("tokenizer_config.json", nlohmann::json{{"chat_template",
                                                     {{{"name", "tool_use"}, {"template", "{{ tools }}"}},
                                                      {{"name", "default"}, {"template", kQwen2Template}}}}}
                                         .dump());
  BOOST_TEST(load_chat_template(dir.path.string()).render({{"user", "Hi"}}) == expected);

  dir.write("tokenizer_config.json", R"({"bos_token": "<s>"})");
  dir.write("chat_template.jinja", kQwen2Template);
  BOOST_TEST(load_chat_template(dir.path.string()).render({{"user", "Hi"}}) == expected);

  fs::remove(dir.path / "chat_template.jinja");
  const std::string missing = error_of(dir.path.string());
  BOOST_TEST(missing.find(dir.path.string()) == 0u, missing);
  BOOST_TEST(missing.find("no chat template") != std::string::npos, missing);

  // A template of no known family runs too.
  dir.write("tokenizer_config.json",
            R"({"chat_template": "{% for m in messages %}{{ m.role }}: {{ m }}\n{% endfor %}"})");
  BOOST_TEST(load_chat_template(dir.path.string()).render({{"user", "Hi"}}) ==
             "user: {'role': 'user', 'content': 'Hi'}\n");

  // One that does not parse is refused when loaded, naming the file and the line.
  dir.write("tokenizer_config.json", R"({"chat_template": "{% for m in messages %}\n{{ m.role }"})");
  const std::string syntax = error_of(dir.path.string());
  BOOST_TEST(syntax.find((dir.path / "tokenizer_config.json").string() + ", line 2: ") == 0u, syntax);
  BOOST_CHECK_THROW(load_chat_template(dir.path.string()), JinjaSyntaxError);
}

BOOST_AUTO_TEST_CASE(gguf_template_key) {
  const TempDir dir;
  const std::string path = (dir.path / "m.gguf").string();
  model::GgufWriter writer;
  writer.add_string("general.architecture", "llama");
  writer.add_string("tokenizer.chat_template", kQwen2Template);
  writer.write(path);
  const ChatTemplate chat = load_chat_template(model::GgufFile(path));
  BOOST_TEST(chat.description() == "the model's Jinja template (tokenizer.chat_template of " + path + ")");

  model::GgufWriter bare;
  bare.add_string("general.architecture", "llama");
  bare.write(path);
  try {
    load_chat_template(model::GgufFile(path));
    BOOST_FAIL("a GGUF without a template loaded one");
  } catch (const ChatTemplateError& error) {
    const std::string message = error.what();
    BOOST_TEST(message.find(path) == 0u, message);
    BOOST_TEST(message.find("tokenizer.chat_template") != std::string::npos, message);
  }
}

BOOST_AUTO_TEST_CASE(descriptions_say_what_was_recognised) {
  BOOST_TEST(ChatTemplate::named("llama3.1").description() == "llama3.1, BOS, dated system preamble (26 Jul 2024)");
  BOOST_TEST(ChatTemplate::named("mistral").description() == "mistral, BOS, system prompt in the last user message");
  BOOST_TEST(ChatTemplate::named("chatml").description() == "chatml");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::chat
