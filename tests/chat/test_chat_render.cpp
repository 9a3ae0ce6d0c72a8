// Rendering of the built-in formats: the exact text each family's Jinja template produces (the
// same conversations are cross-checked against Jinja2 by tests/pypi/check_chat_template.py).
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "core/chat/chat_template.h"
#include "core/chat/python_strip.h"

namespace pagedllm::chat {
namespace {

using Messages = std::vector<ChatMessage>;

std::string render(std::string_view name, const Messages& messages, bool generation_prompt = true,
                   std::optional<std::string> date = std::nullopt) {
  RenderOptions options;
  options.add_generation_prompt = generation_prompt;
  options.bos_token = "<BOS>";
  options.eos_token = "<EOS>";
  options.date_string = std::move(date);
  return ChatTemplate::named(name).render(messages, options);
}

std::string error_of(std::string_view name, const Messages& messages) {
  try {
    render(name, messages);
  } catch (const ChatTemplateError& error) {
    return error.what();
  }
  return "(no error)";
}

const Messages kMultiTurn = {{"user", "What is 2+2?"}, {"assistant", "4."}, {"user", "And 3+3?"}};
const Messages kSystemMultiTurn = {
    {"system", "Answer in French."}, {"user", "Hello"}, {"assistant", "Bonjour"}, {"user", "Thanks"}};

}  // namespace

BOOST_AUTO_TEST_SUITE(chat_render)

BOOST_AUTO_TEST_CASE(chatml_renders_every_message_as_a_turn) {
  BOOST_TEST(render("chatml", kMultiTurn) ==
             "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
             "<|im_start|>assistant\n4.<|im_end|>\n"
             "<|im_start|>user\nAnd 3+3?<|im_end|>\n"
             "<|im_start|>assistant\n");
  BOOST_TEST(render("chatml", {{"system", "S"}, {"user", " Q "}}, false) ==
             "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\n Q <|im_end|>\n");
}

BOOST_AUTO_TEST_CASE(chatml_inserts_the_default_system_prompt_only_without_a_system_message) {
  ChatFormat format = ChatTemplate::named("chatml").format();
  format.default_system_prompt = "You are a helpful assistant.";
  const ChatTemplate with_default(format);
  BOOST_TEST(with_default.render({{"user", "Hi"}}) ==
             "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
             "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  BOOST_TEST(with_default.render({{"system", "Mine."}, {"user", "Hi"}}, {false, "", "", {}}) ==
             "<|im_start|>system\nMine.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

BOOST_AUTO_TEST_CASE(llama3_trims_content_and_starts_with_bos) {
  BOOST_TEST(render("llama3", {{"system", "  Be brief.\n"}, {"user", "\tHi there \n"}}) ==
             "<BOS><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
             "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
             "<|start_header_id|>assistant<|end_header_id|>\n\n");
  BOOST_TEST(render("llama3", kMultiTurn, false) ==
             "<BOS><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
             "<|start_header_id|>assistant<|end_header_id|>\n\n4.<|eot_id|>"
             "<|start_header_id|>user<|end_header_id|>\n\nAnd 3+3?<|eot_id|>");
}

BOOST_AUTO_TEST_CASE(llama31_always_opens_with_the_dated_system_turn) {
  BOOST_TEST(render("llama3.1", {{"user", "Hi"}}) ==
             "<BOS><|start_header_id|>system<|end_header_id|>\n\n"
             "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>"
             "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
             "<|start_header_id|>assistant<|end_header_id|>\n\n");
  BOOST_TEST(render("llama3.1", {{"system", " Be brief. "}, {"user", "Hi"}}, false, "01 Jan 2025") ==
             "<BOS><|start_header_id|>system<|end_header_id|>\n\n"
             "Cutting Knowledge Date: December 2023\nToday Date: 01 Jan 2025\n\nBe brief.<|eot_id|>"
             "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>");
}

BOOST_AUTO_TEST_CASE(mistral_merges_the_system_prompt_into_the_last_user_message) {
  BOOST_TEST(render("mistral", kSystemMultiTurn) ==
             "<BOS>[INST] Hello[/INST] Bonjour<EOS>[INST] Answer in French.\n\nThanks[/INST]");
  // Ending with an answer, the system prompt has no user message to join and is dropped.
  BOOST_TEST(render("mistral", {{"system", "S"}, {"user", "Q"}, {"assistant", " A \n"}}) ==
             "<BOS>[INST] Q[/INST] A<EOS>");
}

BOOST_AUTO_TEST_CASE(mistral_v1_merges_the_system_prompt_into_the_first_user_message) {
  BOOST_TEST(render("mistral-v1", kSystemMultiTurn) ==
             "<BOS> [INST] Answer in French.\n\nHello [/INST] Bonjour<EOS> [INST] Thanks [/INST]");
  BOOST_TEST(render("mistral-v1", kMultiTurn, false) ==
             "<BOS> [INST] What is 2+2? [/INST] 4.<EOS> [INST] And 3+3? [/INST]");
}

BOOST_AUTO_TEST_CASE(mistral_requires_alternating_roles_and_names_the_message) {
  const std::string twice = error_of("mistral", {{"user", "a"}, {"user", "b"}});
  BOOST_TEST(twice.find("message 1") != std::string::npos, twice);
  BOOST_TEST(twice.find("expected 'assistant', found 'user'") != std::string::npos, twice);
  const std::string late_system = error_of("mistral", {{"user", "a"}, {"assistant", "b"}, {"system", "c"}});
  BOOST_TEST(late_system.find("message 2") != std::string::npos, late_system);
  const std::string first_answer = error_of("mistral-v1", {{"system", "s"}, {"assistant", "a"}});
  BOOST_TEST(first_answer.find("message 1") != std::string::npos, first_answer);
}

BOOST_AUTO_TEST_CASE(continue_final_message_leaves_the_assistant_turn_open) {
  const auto continued = [](std::string_view name, const Messages& messages) {
    RenderOptions options;
    options.add_generation_prompt = false;
    options.continue_final_message = true;
    options.bos_token = "<BOS>";
    options.eos_token = "<EOS>";
    return ChatTemplate::named(name).render(messages, options);
  };
  const Messages prefilled = {{"user", "Name a colour."}, {"assistant", "The colour is "}};
  BOOST_TEST(continued("chatml", prefilled) ==
             "<|im_start|>user\nName a colour.<|im_end|>\n<|im_start|>assistant\nThe colour is ");
  // Trimming templates trim the continued content too (as Hugging Face's cut after it does).
  BOOST_TEST(continued("llama3", prefilled) ==
             "<BOS><|start_header_id|>user<|end_header_id|>\n\nName a colour.<|eot_id|>"
             "<|start_header_id|>assistant<|end_header_id|>\n\nThe colour is");
  BOOST_TEST(continued("mistral", {{"system", "S"}, {"user", "Q"}, {"assistant", " A \n"}}) ==
             "<BOS>[INST] Q[/INST] A");
  // Hugging Face's rule, kept for token-exact prompts: trailing whitespace stays only when the
  // content has no leading whitespace.
  BOOST_TEST(continued("chatml", {{"user", "Q"}, {"assistant", " Once upon \n"}}) ==
             "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n Once upon");

  // Only an assistant message can be continued, and not with a generation prompt after it.
  try {
    continued("chatml", {{"user", "Q"}});
    BOOST_ERROR("a final user message was continued");
  } catch (const ChatTemplateError& error) {
    BOOST_TEST(std::string(error.what()).find("message 0: continue_final_message needs a final assistant message") !=
                   std::string::npos,
               error.what());
  }
  try {
    continued("chatml", {{"user", "Q"}, {"assistant", " \n"}});
    BOOST_ERROR("a blank final message was continued");
  } catch (const ChatTemplateError& error) {
    BOOST_TEST(std::string(error.what()).find("message 1: continue_final_message needs a final message with content") !=
                   std::string::npos,
               error.what());
  }
  RenderOptions both;
  both.continue_final_message = true;
  BOOST_CHECK_THROW(ChatTemplate::named("chatml").render(prefilled, both), ChatTemplateError);
}

BOOST_AUTO_TEST_CASE(unknown_roles_and_empty_conversations_are_refused) {
  const std::string tool = error_of("chatml", {{"user", "a"}, {"tool", "b"}});
  BOOST_TEST(tool.find("message 1: unknown role 'tool'") != std::string::npos, tool);
  BOOST_TEST(tool.find("system, user, assistant") != std::string::npos, tool);
  BOOST_TEST(error_of("llama3", {}).find("empty") != std::string::npos);
  BOOST_CHECK_THROW(ChatTemplate::named("vicuna"), ChatTemplateError);
}

BOOST_AUTO_TEST_CASE(trim_strips_python_whitespace_including_unicode_spaces) {
  BOOST_TEST(python_strip("\u3000\u00a0 x y\t\n\u2003") == "x y");
  BOOST_TEST(python_strip("\x1c\x1f z \x85") == "z \x85");  // a lone byte 0x85 is not UTF-8: kept
  BOOST_TEST(python_strip("\u0085z\u0085") == "z");
  BOOST_TEST(python_strip("\u200bz") == "\u200bz");  // zero-width space is not whitespace
  BOOST_TEST(python_strip("é ") == "é");
  BOOST_TEST(python_strip(" \t ").empty());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::chat
