// ChatTemplate::recognise: the family of a model's Jinja chat template, and what varies within it,
// as a ChatFormat (for --describe; the template itself is run by core/chat/jinja).
//
// Recognised structures (as published by the model makers; see tests/pypi/check_chat_template.py):
//   ChatML   <|im_start|>role\n...<|im_end|>\n; an optional default system prompt inserted when the
//            first message is not a system message (SmolLM2, Qwen2, Qwen2.5).
//   Llama 3  <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>, content trimmed, BOS; 3.1
//            and 3.2 always open with a system turn carrying the knowledge cutoff and a date.
//   Mistral  [INST] ... [/INST] with the spacing the template uses, answers followed by EOS, the
//            system prompt merged into the first or the last user message (or refused).
#include <algorithm>

#include "core/chat/chat_template.h"
#include "core/chat/jinja_scan.h"

namespace pagedllm::chat {
namespace {

constexpr std::size_t kQuoteLength = 60;

using Kind = JinjaToken::Kind;
using Pattern = std::vector<TokenPattern>;

TokenPattern name(std::string text) { return {Kind::name, std::move(text), false}; }
TokenPattern op(std::string text) { return {Kind::op, std::move(text), false}; }
TokenPattern string(std::string text) { return {Kind::string, std::move(text), false}; }
TokenPattern any_string_captured() { return {Kind::string, "", true}; }

class Detector {
 public:
  Detector(std::string_view text, std::string_view source) : text_(text), source_(source), scan_(scan_jinja(text)) {}

  ChatTemplate run() {
    if (find_text("<|im_start|>") != nullptr) return ChatTemplate(chatml());
    if (find_text("<|start_header_id|>") != nullptr) return ChatTemplate(llama3());
    if (find_text("[INST]") != nullptr) return ChatTemplate(mistral());
    unknown("no ChatML, Llama 3 or Mistral markers");
  }

 private:
  ChatFormat chatml() {
    if (find_text("<think>") != nullptr) unknown("ChatML with reasoning blocks (<think>) is not supported");
    require_text("<|im_end|>");
    require_text("<|im_start|>assistant\n");
    ChatFormat format = ChatTemplate::named("chatml").format();
    // The default system prompt is the text of a literal "<|im_start|>system\n...<|im_end|>".
    const std::string system_start = "<|im_start|>system\n";
    for (const std::string& piece : scan_.texts) {
      const std::size_t start = piece.find(system_start);
      if (start == std::string::npos) continue;
      const std::size_t content = start + system_start.size();
      const std::size_t end = piece.find("<|im_end|>", content);
      if (end != std::string::npos) {
        format.default_system_prompt = piece.substr(content, end - content);
        break;
      }
    }
    apply_common(format);
    return format;
  }

  ChatFormat llama3() {
    require_text("<|end_header_id|>");
    require_text("<|eot_id|>");
    ChatFormat format = ChatTemplate::named("llama3").format();
    const auto knowledge = std::find_if(scan_.texts.begin(), scan_.texts.end(), [](const std::string& piece) {
      return piece.find("Cutting Knowledge Date") != std::string::npos;
    });
    if (knowledge != scan_.texts.end()) {
      // 3.1 / 3.2: "Cutting Knowledge Date: ...\n", then "Today Date: " + date_string + "\n\n".
      const Pattern date_line = {string("Today Date: "), op("+"), name("date_string"), op("+")};
      if (scan_.texts.end() - knowledge < 3 || *(knowledge + 1) != "Today Date: " ||
          !find_tokens(scan_.tokens, date_line)) {
        unknown("a Llama 3 system preamble pagedllm does not know");
      }
      format.name = "llama3.1";
      format.default_system_prompt = "";
      format.system_preamble = *knowledge + "Today Date: {date}" + *(knowledge + 2);
      format.default_date = capture({name("date_string"), op("="), any_string_captured()});
      format.date_format = capture({name("strftime_now"), op("("), any_string_captured(), op(")")});
    }
    apply_common(format);
    return format;
  }

  ChatFormat mistral() {
    if (find_text("[SYSTEM_PROMPT]") != nullptr) unknown("Mistral with [SYSTEM_PROMPT] turns is not supported");
    if (find_tokens(scan_.tokens, {name("eos_token"), op("+"), {Kind::string, "", false}})) {
      unknown("text after the EOS token is not supported");
    }
    ChatFormat format = ChatTemplate::named("mistral").format();
    format.add_bos = mentions("bos_token");
    // The user turn is exactly the literals around the content: "[INST] " / " [INST] " and
    // "[/INST]" / " [/INST]".
    const std::string* open = find_text("[INST]");
    const std::string* close = find_text("[/INST]");
    if (close == nullptr || open->find("[/INST]") != std::string::npos) {
      unknown("[INST] and [/INST] are not separate strings");
    }
    format.user = {*open, *close, false, false};
    // The answer's prefix: a string of spaces added right before message['content'].
    std::string prefix;
    for (const Pattern& content : {Pattern{op("["), string("content"), op("]")}, Pattern{op("."), name("content")}}) {
      Pattern added = {any_string_captured(), op("+"), name("message")};
      added.insert(added.end(), content.begin(), content.end());
      for (const std::vector<std::string>& match : find_all_tokens(scan_.tokens, added)) {
        if (!match[0].empty() && match[0].find_first_not_of(' ') == std::string::npos) prefix = match[0];
      }
    }
    format.assistant = {prefix, "", trims_content(), mentions("eos_token")};
    if (!mentions("system_message")) {
      format.system_placement = SystemPlacement::unsupported;
    } else if (find_tokens(scan_.tokens, {name("loop"), op("."), name("last"), name("and"), name("system_message")})) {
      format.system_placement = SystemPlacement::last_user;
    } else if (find_tokens(scan_.tokens, {name("loop"), op("."), name("first"), name("and"), name("system_message")})) {
      format.system_placement = SystemPlacement::first_user;
    } else {
      unknown("a Mistral system message placement pagedllm does not know");
    }
    if (const auto separator =
            find_tokens(scan_.tokens, {name("system_message"), op("+"), any_string_captured(), op("+")})) {
      format.system_separator = separator->front();
    }
    format.alternate_roles = true;
    return format;
  }

  // BOS and trimming, for the families whose every turn has the same shape.
  void apply_common(ChatFormat& format) const {
    format.add_bos = mentions("bos_token");
    const bool trim = trims_content();
    format.system.trim = format.user.trim = format.assistant.trim = trim;
  }

  // `content | trim`, as message['content'] | trim or message.content | trim.
  bool trims_content() const {
    return find_tokens(scan_.tokens, {string("content"), op("]"), op("|"), name("trim")}) ||
           find_tokens(scan_.tokens, {op("."), name("content"), op("|"), name("trim")});
  }

  bool mentions(const char* identifier) const {
    return std::any_of(scan_.tokens.begin(), scan_.tokens.end(),
                       [&](const JinjaToken& token) { return token.kind == Kind::name && token.text == identifier; });
  }

  const std::string* find_text(std::string_view part) const {
    for (const std::string& piece : scan_.texts) {
      if (piece.find(part) != std::string::npos) return &piece;
    }
    return nullptr;
  }

  void require_text(std::string_view part) const {
    if (find_text(part) == nullptr) unknown("no '" + escaped(part) + "' string");
  }

  // The first captured text of the first match, or "".
  std::string capture(const Pattern& pattern) const {
    const auto match = find_tokens(scan_.tokens, pattern);
    return match ? match->front() : std::string();
  }

  static std::string escaped(std::string_view text) {
    std::string out;
    for (const char c : text) {
      if (c == '\n')
        out += "\\n";
      else if (c == '\t')
        out += "\\t";
      else
        out += c;
    }
    return out;
  }

  [[noreturn]] void unknown(const std::string& reason) const {
    std::size_t length = std::min(kQuoteLength, text_.size());
    while (length < text_.size() && length > 0 && (static_cast<unsigned char>(text_[length]) & 0xc0) == 0x80) {
      --length;  // do not cut a UTF-8 character
    }
    std::string quote = escaped(text_.substr(0, length));
    if (text_.size() > kQuoteLength) quote += "...";
    throw UnknownChatTemplateError(std::string(source_) + ": unrecognised chat template (" + reason +
                                   "); it begins \"" + quote +
                                   "\"; only ChatML, Llama 3 and Mistral templates have a format to describe "
                                   "(the template itself runs as Jinja)");
  }

  std::string_view text_;
  std::string_view source_;
  JinjaScan scan_;
};

}  // namespace

ChatTemplate ChatTemplate::recognise(std::string_view template_text, std::string_view source) {
  return Detector(template_text, source).run();
}

}  // namespace pagedllm::chat
