// libFuzzer target: EBNF grammars (guided_grammar, structured_outputs.grammar), text a client
// writes. Any text must compile or end in GrammarError; a compiled grammar's masks must agree with
// its matcher along a walk over a small vocabulary (every allowed token accepted, every refused one
// refused), unless the grammar proves too ambiguous to follow (GrammarAmbiguityError ends the walk).
// Any other exception, a crash, a hang or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/structured/grammar_automaton.h"
#include "core/structured/grammar_matcher.h"
#include "core/structured/grammar_parser.h"

namespace {

namespace structured = pagedllm::structured;

// Every single byte, and some multi-byte pieces that straddle the usual grammar tokens.
std::shared_ptr<const structured::TokenTrie> small_vocabulary() {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(std::string(1, static_cast<char>(b)));
  for (const char* piece : {"ab", "\",", "\"}", "{\"", "()", "((", "))", "12", " a", "\xC3\xA9", "::", "[]", "a\""}) {
    tokens.emplace_back(piece);
  }
  return std::make_shared<const structured::TokenTrie>(tokens);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::shared_ptr<const structured::TokenTrie> trie = small_vocabulary();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  structured::RegexLimits limits;
  limits.max_nfa_states = 20'000;  // small: a fuzz input must run in milliseconds
  limits.max_dfa_states = 2'000;
  std::shared_ptr<const structured::PushdownGrammar> grammar;
  try {
    grammar = std::make_shared<const structured::PushdownGrammar>(structured::compile_grammar(text, limits));
  } catch (const structured::GrammarError&) {
    return 0;
  }
  auto masks = std::make_shared<structured::GrammarMasks>(grammar, trie);
  try {
    structured::GrammarMatcher matcher(masks);
    std::vector<std::uint32_t> mask(static_cast<std::size_t>(trie->vocab_size() + 31) / 32);
    for (std::size_t step = 0; step < 12; ++step) {
      matcher.fill_mask(mask);
      pagedllm::TokenId pick = -1;
      for (pagedllm::TokenId token = 0; token < trie->vocab_size(); ++token) {
        structured::GrammarMatcher probe = matcher;
        if (structured::is_allowed(mask, token) != probe.accept(trie->bytes(token))) __builtin_trap();
        if (structured::is_allowed(mask, token) && (pick < 0 || (data[step % size] + token) % 7 == 0)) pick = token;
      }
      if (pick < 0) break;
      if (!matcher.accept(trie->bytes(pick))) __builtin_trap();
    }
  } catch (const structured::GrammarAmbiguityError&) {
    return 0;  // bounded: GrammarMasks::kMaxLiveStacks parses at most
  }
  return 0;
}
