#include "core/tokenizer/bpe_trainer.h"

#include <algorithm>
#include <deque>
#include <queue>
#include <stdexcept>
#include <unordered_map>

#include "core/tokenizer/added_vocabulary.h"
#include "core/tokenizer/byte_level.h"
#include "core/tokenizer/pre_tokenizer.h"
#include "core/tokenizer/utf8.h"

namespace pagedllm::tokenizer {
namespace {

using PairKey = std::uint64_t;

PairKey pair_key(TokenId left, TokenId right) {
  return (static_cast<PairKey>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
}
TokenId left_of(PairKey key) { return static_cast<TokenId>(key >> 32); }
TokenId right_of(PairKey key) { return static_cast<TokenId>(key & 0xFFFFFFFFu); }

struct Word {
  std::vector<TokenId> symbols;
  std::int64_t count = 0;
};

struct Candidate {
  std::int64_t count;
  PairKey pair;
  // Highest count first; among equal counts the smaller pair.
  bool operator<(const Candidate& other) const {
    return count != other.count ? count < other.count : pair > other.pair;
  }
};

std::vector<PreTokenizerStep> pre_tokenizer_steps(const BpeTrainerConfig& config) {
  std::vector<PreTokenizerStep> steps;
  if (config.individual_digits) steps.push_back(DigitsStep{true});
  if (config.split_pattern.empty()) {
    steps.push_back(ByteLevelStep{false, true, true});
  } else {
    steps.push_back(SplitStep{config.split_pattern, true, SplitBehavior::isolated, false});
    steps.push_back(ByteLevelStep{false, true, false});
  }
  return steps;
}

void check_config(const BpeTrainerConfig& config) {
  const std::size_t minimum = config.special_tokens.size() + 256;
  if (config.vocab_size < 0 || static_cast<std::size_t>(config.vocab_size) < minimum) {
    throw std::invalid_argument("vocab_size " + std::to_string(config.vocab_size) + " is below the " +
                                std::to_string(minimum) + " special and byte tokens");
  }
  for (std::size_t i = 0; i < config.special_tokens.size(); ++i) {
    const std::string& token = config.special_tokens[i];
    if (token.empty() || !is_valid_utf8(token))
      throw std::invalid_argument("special token " + std::to_string(i) + " is empty or not UTF-8");
    if (std::find(config.special_tokens.begin(), config.special_tokens.begin() + static_cast<std::ptrdiff_t>(i),
                  token) != config.special_tokens.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw std::invalid_argument("special token '" + token + "' is given twice");
    }
  }
  for (const auto* named : {&config.bos_token, &config.eos_token}) {
    if (*named &&
        std::find(config.special_tokens.begin(), config.special_tokens.end(), **named) == config.special_tokens.end()) {
      throw std::invalid_argument("'" + **named + "' is not one of the special tokens");
    }
  }
}

// Distinct words of the corpus (raw bytes) with their counts, sorted by bytes.
std::vector<Word> count_words(std::string_view corpus, const BpeTrainerConfig& config, const PreTokenizer& pre,
                              TokenId first_byte_id) {
  std::vector<AddedTokenSpec> specials;
  for (const std::string& token : config.special_tokens)
    specials.push_back({0, token, true, false, false, false, false});
  const AddedVocabulary added(specials, false);
  std::string repaired;
  if (!is_valid_utf8(corpus)) {
    repaired = utf8_lossy(corpus);
    corpus = repaired;
  }
  std::vector<TextSegment> segments;
  added.split(corpus, AddedVocabulary::Pass::raw, true, segments);

  std::unordered_map<std::string_view, std::int64_t> counts;
  PieceBuffers pieces;
  std::deque<std::string> owned;  // words the pre-tokenizer built (stable addresses)
  for (const TextSegment& segment : segments) {
    if (segment.id >= 0) continue;
    pieces.clear();
    pre.split(segment.text, pieces);
    for (const std::string_view word : pieces.pieces) {
      const bool in_corpus = word.data() >= corpus.data() && word.data() < corpus.data() + corpus.size();
      if (in_corpus) {
        ++counts[word];
      } else {
        ++counts[owned.emplace_back(word)];
      }
    }
  }
  std::vector<std::pair<std::string_view, std::int64_t>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<Word> words;
  words.reserve(sorted.size());
  for (const auto& [text, count] : sorted) {
    Word word;
    word.count = count;
    for (const char c : text) word.symbols.push_back(first_byte_id + static_cast<std::uint8_t>(c));
    words.push_back(std::move(word));
  }
  return words;
}

class PairCounts {
 public:
  // Adds (sign +1) or removes (sign -1) the word's pairs. When adding, pairs that hold `watch`
  // (every pair when watch < 0) record the word and are appended to `touched`.
  void add_word(const Word& word, std::int32_t index, std::int64_t sign, TokenId watch,
                std::vector<PairKey>* touched = nullptr) {
    for (std::size_t i = 0; i + 1 < word.symbols.size(); ++i) {
      const PairKey key = pair_key(word.symbols[i], word.symbols[i + 1]);
      const std::int64_t count = (counts_[key] += sign * word.count);
      if (count == 0) counts_.erase(key);
      if (sign > 0 && (watch < 0 || word.symbols[i] == watch || word.symbols[i + 1] == watch)) {
        words_[key].push_back(index);
        if (touched != nullptr) touched->push_back(key);
      }
    }
  }
  std::int64_t count(PairKey key) const {
    const auto it = counts_.find(key);
    return it == counts_.end() ? 0 : it->second;
  }
  // The words recorded for the pair (some may no longer hold it), ascending, once each.
  std::vector<std::int32_t> take_words(PairKey key) {
    auto node = words_.extract(key);
    if (node.empty()) return {};
    std::vector<std::int32_t> list = std::move(node.mapped());
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
    return list;
  }
  const std::unordered_map<PairKey, std::int64_t>& counts() const { return counts_; }

 private:
  std::unordered_map<PairKey, std::int64_t> counts_;
  std::unordered_map<PairKey, std::vector<std::int32_t>> words_;
};

bool holds_pair(const Word& word, TokenId left, TokenId right) {
  for (std::size_t i = 0; i + 1 < word.symbols.size(); ++i) {
    if (word.symbols[i] == left && word.symbols[i + 1] == right) return true;
  }
  return false;
}

// Replaces each (left, right) in the word, left to right, by `merged`.
void merge_in_word(Word& word, TokenId left, TokenId right, TokenId merged) {
  std::size_t out = 0;
  for (std::size_t i = 0; i < word.symbols.size(); ++i) {
    if (i + 1 < word.symbols.size() && word.symbols[i] == left && word.symbols[i + 1] == right) {
      word.symbols[out++] = merged;
      ++i;
    } else {
      word.symbols[out++] = word.symbols[i];
    }
  }
  word.symbols.resize(out);
}

}  // namespace

TokenizerSpec train_bpe(std::string_view corpus, const BpeTrainerConfig& config) {
  check_config(config);
  TokenizerSpec spec;
  spec.source = "bpe-trainer";
  spec.pre_tokenizer = pre_tokenizer_steps(config);
  const PreTokenizer pre(spec.pre_tokenizer);  // throws std::invalid_argument for a bad pattern

  std::vector<std::string>& vocab = spec.model.vocab;
  std::unordered_map<std::string, TokenId> ids;
  for (const std::string& token : config.special_tokens) {
    ids.emplace(token, static_cast<TokenId>(vocab.size()));
    spec.added_tokens.push_back({static_cast<TokenId>(vocab.size()), token, true, false, false, false, false});
    vocab.push_back(token);
  }
  const auto first_byte_id = static_cast<TokenId>(vocab.size());
  for (unsigned byte = 0; byte < 256; ++byte) {
    std::string text = to_byte_level(std::string(1, static_cast<char>(byte)));
    // A special token that is itself one byte-level character would collide; none of the
    // usual ones ("<|endoftext|>") is.
    if (!ids.emplace(text, static_cast<TokenId>(vocab.size())).second) {
      throw std::invalid_argument("special token '" + text + "' is also a byte token");
    }
    vocab.push_back(std::move(text));
  }

  std::vector<Word> words = count_words(corpus, config, pre, first_byte_id);
  PairCounts pairs;
  for (std::size_t i = 0; i < words.size(); ++i) pairs.add_word(words[i], static_cast<std::int32_t>(i), +1, -1);
  std::priority_queue<Candidate> queue;
  for (const auto& [key, count] : pairs.counts()) queue.push({count, key});

  const auto target = static_cast<std::size_t>(config.vocab_size);
  while (vocab.size() < target && !queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    const std::int64_t current = pairs.count(top.pair);
    if (current != top.count) {  // stale: counts only fall, so re-queue with the true count
      if (current > 0) queue.push({current, top.pair});
      continue;
    }
    if (current < std::max<std::int64_t>(config.min_pair_count, 1)) break;

    const TokenId left = left_of(top.pair);
    const TokenId right = right_of(top.pair);
    std::string text = vocab[static_cast<std::size_t>(left)] + vocab[static_cast<std::size_t>(right)];
    spec.model.merges.emplace_back(vocab[static_cast<std::size_t>(left)], vocab[static_cast<std::size_t>(right)]);
    // Two pairs can spell the same token ("ab"+"c", "a"+"bc"): the second merge reuses its id.
    const auto [it, is_new] = ids.emplace(text, static_cast<TokenId>(vocab.size()));
    const TokenId merged = it->second;
    if (is_new) vocab.push_back(std::move(text));

    std::vector<PairKey> touched;
    for (const std::int32_t index : pairs.take_words(top.pair)) {
      Word& word = words[static_cast<std::size_t>(index)];
      if (!holds_pair(word, left, right)) continue;
      pairs.add_word(word, index, -1, -1);
      merge_in_word(word, left, right, merged);
      pairs.add_word(word, index, +1, merged, &touched);
    }
    // Counts of the other pairs only fell (their queue entries are fixed up when popped); the
    // pairs holding the merged token are new.
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (const PairKey key : touched) {
      if (const std::int64_t count = pairs.count(key); count > 0) queue.push({count, key});
    }
  }
  if (config.bos_token) {
    const TokenId bos = ids.at(*config.bos_token);
    spec.special_ids.bos = bos;
    spec.post_processor.push_back(
        TemplateStep{{{false, *config.bos_token, 0}, {true, "A", 0}},
                     {{false, *config.bos_token, 0}, {true, "A", 0}, {false, *config.bos_token, 1}, {true, "B", 1}},
                     {{*config.bos_token, {bos}, {*config.bos_token}}}});
  }
  if (config.eos_token) spec.special_ids.eos = ids.at(*config.eos_token);
  return spec;
}

}  // namespace pagedllm::tokenizer
