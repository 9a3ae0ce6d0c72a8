// The BPE model: encodes one pre-tokenized word (raw bytes) into token ids by applying merges
// lowest rank first, leftmost first among equal ranks (HF's Word::merge_all: a binary heap over
// a linked list of symbols, O(n log n) per word).
//
// It works on bytes rather than on the byte-level characters HF's BPE sees: each character of
// the byte-level form stands for one byte, so the two are the same computation. Tokens whose
// text holds a character outside the byte map can never come out of BPE; they stay in the
// vocabulary for decoding and added-token matching.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/common/types.h"
#include "core/tokenizer/tokenizer_spec.h"

namespace pagedllm::tokenizer {

// Reused across the words of one encode call.
struct BpeScratch {
  struct Symbol {
    TokenId id;
    std::int32_t prev;
    std::int32_t next;
    bool removed;
  };
  struct Candidate {
    std::uint32_t rank;
    std::int32_t position;
    TokenId new_id;
  };
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
};

class BpeModel {
 public:
  // Throws ModelFormatError (naming `source` and the field) for a merge whose parts or result are
  // not in the vocabulary, an unknown unk_token, or a repeated vocabulary entry.
  BpeModel(const BpeSpec& spec, const std::string& source, const SpecFieldNames& fields);

  // Appends the ids of one word (raw bytes).
  void encode_word(std::string_view bytes, std::vector<TokenId>& out, BpeScratch& scratch) const;

 private:
  struct MergeEntry {
    std::uint64_t key = kEmpty;  // (left << 32) | right
    std::uint32_t rank = 0;
    TokenId new_id = 0;
  };
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};

  const MergeEntry* find_merge(TokenId left, TokenId right) const noexcept;
  void insert_merge(TokenId left, TokenId right, std::uint32_t rank, TokenId new_id);
  void push_candidate(BpeScratch& scratch, std::int32_t left_position) const;

  std::unordered_map<std::string, TokenId> token_ids_;  // byte-level text -> id
  std::unordered_map<std::string, TokenId> word_ids_;   // raw bytes -> id (ignore_merges only)
  std::array<TokenId, 256> byte_ids_{};                 // -1: the byte has no token
  std::vector<MergeEntry> merge_table_;                 // open addressing, power-of-two size
  std::optional<TokenId> unk_id_;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
};

}  // namespace pagedllm::tokenizer
