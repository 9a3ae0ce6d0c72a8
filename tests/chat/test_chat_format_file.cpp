// User-supplied chat formats (JSON) and the Jinja scanner underneath detection.
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/chat/chat_template.h"
#include "core/chat/jinja_scan.h"

namespace pagedllm::chat {
namespace {

namespace fs = std::filesystem;

// A JSON file in the temp directory, removed afterwards.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text)
      : path((fs::temp_directory_path() /
              ("pagedllm_chat_format_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++) + ".json"))
                 .string()) {
    std::ofstream(path) << text;
  }
  ~TempFile() { std::filesystem::remove(path); }
  static int& counter() {
    static int next = 0;
    return next;
  }
};

std::string file_error(const std::string& text, std::string* path = nullptr) {
  const TempFile file(text);
  if (path != nullptr) *path = file.path;
  try {
    ChatTemplate::from_file(file.path);
  } catch (const ChatTemplateError& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(chat_format_file)

BOOST_AUTO_TEST_CASE(json_format_renders_as_written) {
  const TempFile file(R"({
    "name": "zephyr",
    "bos": true,
    "system": {"prefix": "<|system|>\n", "suffix": "</s>\n"},
    "user": {"prefix": "<|user|>\n", "suffix": "</s>\n", "trim": true},
    "assistant": {"prefix": "<|assistant|>\n", "suffix": "\n", "eos": true},
    "generation_prompt": "<|assistant|>\n",
    "default_system_prompt": "Be kind."
  })");
  const ChatTemplate chat = ChatTemplate::from_file(file.path);
  BOOST_TEST(to_string(chat.family()) == "custom");
  BOOST_TEST(chat.format().name == "zephyr");
  BOOST_TEST(chat.render({{"user", " Hi "}, {"assistant", "Hello"}, {"user", "Bye"}}, {true, "<s>", "</s>", {}}) ==
             "<s><|system|>\nBe kind.</s>\n<|user|>\nHi</s>\n<|assistant|>\nHello\n</s>"
             "<|user|>\nBye</s>\n<|assistant|>\n");
}

BOOST_AUTO_TEST_CASE(detected_format_round_trips_through_json) {
  const ChatTemplate mistral = ChatTemplate::named("mistral-v1");
  const TempFile file(to_format_json(mistral.format()).dump());
  const ChatTemplate back = ChatTemplate::from_file(file.path);
  const std::vector<ChatMessage> messages = {{"system", "S"}, {"user", "Q"}, {"assistant", "A"}, {"user", "R"}};
  const RenderOptions options{true, "<s>", "</s>", {}};
  BOOST_TEST(back.render(messages, options) == mistral.render(messages, options));
  BOOST_CHECK_THROW(back.render({{"user", "a"}, {"user", "b"}}), ChatTemplateError);  // alternation kept
}

BOOST_AUTO_TEST_CASE(format_errors_name_the_file_and_the_key) {
  std::string path;
  const std::string typo = file_error(R"({"system": {}, "user": {"prefx": "x"}, "assistant": {}})", &path);
  BOOST_TEST(typo.find(path) == 0u, typo);
  BOOST_TEST(typo.find("key 'user.prefx'") != std::string::npos, typo);
  const std::string missing = file_error(R"({"system": {}, "user": {}})");
  BOOST_TEST(missing.find("key 'assistant'") != std::string::npos, missing);
  const std::string type = file_error(R"({"system": {}, "user": {}, "assistant": {}, "bos": "yes"})");
  BOOST_TEST(type.find("key 'bos'") != std::string::npos, type);
  BOOST_TEST(type.find("expected true or false") != std::string::npos, type);
  const std::string placement =
      file_error(R"({"system": {}, "user": {}, "assistant": {}, "system_placement": "middle"})");
  BOOST_TEST(placement.find("unknown placement 'middle'") != std::string::npos, placement);
  BOOST_TEST(file_error("{not json").find("invalid JSON") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(scanner_applies_huggingface_whitespace_control) {
  // trim_blocks eats the newline after a block tag; lstrip_blocks the indentation before one;
  // "-" strips all whitespace on its side; variable tags keep their surroundings.
  const JinjaScan scan = scan_jinja("{% if x %}\n    A {{ y }} \n  {% endif %}\nB\n  {{- 'C' -}}  \n D\n");
  BOOST_TEST(scan.texts == std::vector<std::string>({"    A ", " \n", "B", "C", "D"}),
             boost::test_tools::per_element());
  BOOST_TEST(find_tokens(scan.tokens, {{JinjaToken::Kind::name, "if"}, {JinjaToken::Kind::name, "x"}}).has_value());
  // Comments vanish; "+" keeps the indentation; a trailing newline of the template is dropped.
  const JinjaScan kept = scan_jinja("{# note #}\n  {%+ if x %}E{% endif %}\n");
  BOOST_TEST(kept.texts == std::vector<std::string>({"  ", "E"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(scanner_decodes_python_string_escapes) {
  BOOST_TEST(decode_jinja_string(R"(a\nb\t\\\'\"\x41\u00e9\U0001F600\101)") == "a\nb\t\\'\"A\u00e9\U0001F600A");
  BOOST_TEST(decode_jinja_string(R"(\q\)") == "\\q\\");  // unknown escapes stay, as in Python
  const JinjaScan scan = scan_jinja(R"({{ 'it\'s' + "say \"hi\"" }})");
  BOOST_TEST(scan.texts == std::vector<std::string>({"it's", "say \"hi\""}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(scanner_tokens_match_expressions_within_one_tag) {
  using Kind = JinjaToken::Kind;
  const JinjaScan scan = scan_jinja(
      "{%- if loop.last and system_message is defined %}{{ system_message + '\\n\\n' + x }}"
      "{{ a + }}{{ 'b' }}");
  const auto separator = find_tokens(
      scan.tokens, {{Kind::name, "system_message"}, {Kind::op, "+"}, {Kind::string, "", true}, {Kind::op, "+"}});
  BOOST_TEST(separator.value_or(std::vector<std::string>{"(none)"}).front() == "\n\n");
  BOOST_TEST(
      find_tokens(scan.tokens, {{Kind::name, "loop"}, {Kind::op, "."}, {Kind::name, "last"}, {Kind::name, "and"}})
          .has_value());
  // "a +" and "'b'" sit in different tags: no match across them.
  BOOST_TEST(!find_tokens(scan.tokens, {{Kind::op, "+"}, {Kind::string, "b"}}).has_value());
  BOOST_TEST(find_all_tokens(scan.tokens, {{Kind::op, "+"}}).size() == 3u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::chat
