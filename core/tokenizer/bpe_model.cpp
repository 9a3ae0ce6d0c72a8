#include "core/tokenizer/bpe_model.h"

#include <algorithm>
#include <bit>

#include "core/model/model_errors.h"
#include "core/tokenizer/byte_level.h"

namespace pagedllm::tokenizer {
namespace {

using model::ModelFormatError;

std::uint64_t pair_key(TokenId left, TokenId right) noexcept {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
}

std::size_t pair_hash(std::uint64_t key) noexcept {
  return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 17);
}

// Lowest rank first, then leftmost: std::push_heap keeps the "largest" on top.
bool later_candidate(const BpeScratch::Candidate& a, const BpeScratch::Candidate& b) noexcept {
  return a.rank > b.rank || (a.rank == b.rank && a.position > b.position);
}

}  // namespace

BpeModel::BpeModel(const BpeSpec& spec, const std::string& source, const SpecFieldNames& fields)
    : fuse_unk_(spec.fuse_unk), ignore_merges_(spec.ignore_merges) {
  token_ids_.reserve(spec.vocab.size());
  for (std::size_t id = 0; id < spec.vocab.size(); ++id) {
    const auto [it, inserted] = token_ids_.emplace(spec.vocab[id], static_cast<TokenId>(id));
    if (!inserted) {
      throw ModelFormatError(source, field_subject(fields, fields.vocab),
                             "token '" + spec.vocab[id] + "' appears twice (ids " + std::to_string(it->second) +
                                 " and " + std::to_string(id) + ")");
    }
  }
  for (unsigned byte = 0; byte < 256; ++byte) {
    const auto it = token_ids_.find(to_byte_level(std::string(1, static_cast<char>(byte))));
    byte_ids_[byte] = it == token_ids_.end() ? -1 : it->second;
  }
  if (spec.unk_token) {
    const auto it = token_ids_.find(*spec.unk_token);
    if (it == token_ids_.end()) {
      throw ModelFormatError(source, field_subject(fields, "model.unk_token"),
                             "'" + *spec.unk_token + "' is not in the vocabulary");
    }
    unk_id_ = it->second;
  }

  const std::size_t table_size = std::bit_ceil(std::max<std::size_t>(16, spec.merges.size() * 2));
  merge_table_.assign(table_size, MergeEntry{});
  std::string merged;
  for (std::size_t rank = 0; rank < spec.merges.size(); ++rank) {
    const auto& [left, right] = spec.merges[rank];
    const auto field = [&] { return field_subject(fields, fields.merges + "[" + std::to_string(rank) + "]"); };
    const auto left_it = token_ids_.find(left);
    const auto right_it = token_ids_.find(right);
    if (left_it == token_ids_.end() || right_it == token_ids_.end()) {
      throw ModelFormatError(source, field(),
                             "'" + (left_it == token_ids_.end() ? left : right) + "' is not in the vocabulary");
    }
    merged.assign(left).append(right);
    const auto merged_it = token_ids_.find(merged);
    if (merged_it == token_ids_.end()) {
      throw ModelFormatError(source, field(), "the merged token '" + merged + "' is not in the vocabulary");
    }
    // A repeated pair keeps its last rank, as HF's merge map does.
    insert_merge(left_it->second, right_it->second, static_cast<std::uint32_t>(rank), merged_it->second);
  }

  if (ignore_merges_) {
    for (std::size_t id = 0; id < spec.vocab.size(); ++id) {
      if (auto bytes = from_byte_level(spec.vocab[id])) word_ids_.emplace(std::move(*bytes), static_cast<TokenId>(id));
    }
  }
}

void BpeModel::insert_merge(TokenId left, TokenId right, std::uint32_t rank, TokenId new_id) {
  const std::uint64_t key = pair_key(left, right);
  const std::size_t mask = merge_table_.size() - 1;
  for (std::size_t slot = pair_hash(key) & mask;; slot = (slot + 1) & mask) {
    MergeEntry& entry = merge_table_[slot];
    if (entry.key == kEmpty || entry.key == key) {
      entry = {key, rank, new_id};
      return;
    }
  }
}

const BpeModel::MergeEntry* BpeModel::find_merge(TokenId left, TokenId right) const noexcept {
  const std::uint64_t key = pair_key(left, right);
  const std::size_t mask = merge_table_.size() - 1;
  for (std::size_t slot = pair_hash(key) & mask;; slot = (slot + 1) & mask) {
    const MergeEntry& entry = merge_table_[slot];
    if (entry.key == key) return &entry;
    if (entry.key == kEmpty) return nullptr;
  }
}

void BpeModel::push_candidate(BpeScratch& scratch, std::int32_t left_position) const {
  const BpeScratch::Symbol& left = scratch.symbols[static_cast<std::size_t>(left_position)];
  const BpeScratch::Symbol& right = scratch.symbols[static_cast<std::size_t>(left.next)];
  if (const MergeEntry* merge = find_merge(left.id, right.id)) {
    scratch.heap.push_back({merge->rank, left_position, merge->new_id});
    std::push_heap(scratch.heap.begin(), scratch.heap.end(), later_candidate);
  }
}

void BpeModel::encode_word(std::string_view bytes, std::vector<TokenId>& out, BpeScratch& scratch) const {
  if (bytes.empty()) return;
  if (ignore_merges_) {
    if (const auto it = word_ids_.find(std::string(bytes)); it != word_ids_.end()) {
      out.push_back(it->second);
      return;
    }
  }

  auto& symbols = scratch.symbols;
  symbols.clear();
  bool previous_unknown = false;
  for (const char c : bytes) {
    const TokenId id = byte_ids_[static_cast<std::uint8_t>(c)];
    if (id >= 0) {
      symbols.push_back({id, 0, 0, false});
      previous_unknown = false;
    } else if (unk_id_) {  // without an unk token, a byte with no token is dropped (as HF)
      if (!(fuse_unk_ && previous_unknown)) symbols.push_back({*unk_id_, 0, 0, false});
      previous_unknown = true;
    }
  }
  if (symbols.size() <= 1) {
    if (!symbols.empty()) out.push_back(symbols.front().id);
    return;
  }
  const auto num_symbols = static_cast<std::int32_t>(symbols.size());
  for (std::int32_t i = 0; i < num_symbols; ++i) {
    symbols[static_cast<std::size_t>(i)].prev = i - 1;
    symbols[static_cast<std::size_t>(i)].next = i + 1 < num_symbols ? i + 1 : -1;
  }

  scratch.heap.clear();
  for (std::int32_t i = 0; i + 1 < num_symbols; ++i) push_candidate(scratch, i);
  while (!scratch.heap.empty()) {
    std::pop_heap(scratch.heap.begin(), scratch.heap.end(), later_candidate);
    const BpeScratch::Candidate top = scratch.heap.back();
    scratch.heap.pop_back();
    BpeScratch::Symbol& left = symbols[static_cast<std::size_t>(top.position)];
    if (left.removed || left.next < 0) continue;
    BpeScratch::Symbol& right = symbols[static_cast<std::size_t>(left.next)];
    // A stale candidate: the pair at this position changed since it was pushed.
    const MergeEntry* merge = find_merge(left.id, right.id);
    if (merge == nullptr || merge->new_id != top.new_id) continue;
    left.id = top.new_id;
    right.removed = true;
    left.next = right.next;
    if (left.next >= 0) symbols[static_cast<std::size_t>(left.next)].prev = top.position;
    if (left.prev >= 0) push_candidate(scratch, left.prev);
    if (left.next >= 0) push_candidate(scratch, top.position);
  }
  for (std::int32_t i = 0; i >= 0; i = symbols[static_cast<std::size_t>(i)].next) {
    out.push_back(symbols[static_cast<std::size_t>(i)].id);
  }
}

}  // namespace pagedllm::tokenizer
