#include "core/tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <stdexcept>

#include "core/tokenizer/byte_level.h"

namespace pagedllm::tokenizer {
namespace {

using Segment = PieceBuffers::Segment;

// HF's fold for MergedWithPrevious / Contiguous (forward) and MergedWithNext (backward): a
// segment joins the last kept one when `joins` says so.
template <typename Joins>
void fold_segments(const std::vector<Segment>& segments, bool backward, Joins joins, std::vector<Segment>& out) {
  out.clear();
  bool previous_match = false;
  const auto visit = [&](const Segment& segment) {
    if (joins(segment, previous_match) && !out.empty()) {
      if (backward) {
        out.back().start = segment.start;
      } else {
        out.back().end = segment.end;
      }
    } else {
      out.push_back(segment);
    }
    previous_match = segment.is_match;
  };
  if (backward) {
    std::for_each(segments.rbegin(), segments.rend(), visit);
    std::reverse(out.begin(), out.end());
  } else {
    std::for_each(segments.begin(), segments.end(), visit);
  }
}

}  // namespace

void split_around_matches(std::string_view piece, const std::vector<RegexMatch>& matches, bool invert,
                          SplitBehavior behavior, PieceBuffers& buffers, std::vector<std::string_view>& out) {
  if (piece.empty()) return;
  std::vector<Segment>& segments = buffers.segments;
  segments.clear();
  std::size_t previous = 0;
  for (const RegexMatch& match : matches) {
    if (previous != match.start) segments.push_back({previous, match.start, invert});
    segments.push_back({match.start, match.end, !invert});
    previous = match.end;
  }
  if (previous != piece.size()) segments.push_back({previous, piece.size(), invert});

  const std::vector<Segment>* kept = &segments;
  switch (behavior) {
    case SplitBehavior::isolated:
      break;
    case SplitBehavior::removed:
      buffers.merged.clear();
      for (const Segment& segment : segments) {
        if (!segment.is_match) buffers.merged.push_back(segment);
      }
      kept = &buffers.merged;
      break;
    case SplitBehavior::merged_with_previous:
      fold_segments(
          segments, false, [](const Segment& s, bool previous_match) { return s.is_match && !previous_match; },
          buffers.merged);
      kept = &buffers.merged;
      break;
    case SplitBehavior::merged_with_next:
      fold_segments(
          segments, true, [](const Segment& s, bool previous_match) { return s.is_match && !previous_match; },
          buffers.merged);
      kept = &buffers.merged;
      break;
    case SplitBehavior::contiguous:
      fold_segments(
          segments, false, [](const Segment& s, bool previous_match) { return s.is_match == previous_match; },
          buffers.merged);
      kept = &buffers.merged;
      break;
  }
  for (const Segment& segment : *kept) {
    if (segment.end > segment.start) out.push_back(piece.substr(segment.start, segment.end - segment.start));
  }
}

PreTokenizer::PreTokenizer(const std::vector<PreTokenizerStep>& steps) {
  std::size_t num_byte_level = 0;
  for (std::size_t index = 0; index < steps.size(); ++index) {
    const PreTokenizerStep& step = steps[index];
    CompiledStep compiled;
    try {
      if (const auto* split = std::get_if<SplitStep>(&step)) {
        compiled.regex.emplace(split->pattern, split->is_regex ? Regex::Syntax::pattern : Regex::Syntax::literal);
        compiled.behavior = split->behavior;
        compiled.invert = split->invert;
      } else if (const auto* digits = std::get_if<DigitsStep>(&step)) {
        // HF tests char::is_numeric, i.e. the categories Nd, Nl and No.
        compiled.regex.emplace("\\p{N}");
        compiled.behavior = digits->individual_digits ? SplitBehavior::isolated : SplitBehavior::contiguous;
      } else {
        const auto& byte_level = std::get<ByteLevelStep>(step);
        compiled.kind = Kind::byte_level;
        compiled.add_prefix_space = byte_level.add_prefix_space;
        if (byte_level.use_regex) compiled.regex.emplace(kGpt2Pattern);
        byte_level_step_ = index;
        ++num_byte_level;
      }
    } catch (const std::invalid_argument& error) {
      throw std::invalid_argument("step " + std::to_string(index) + ": " + error.what());
    }
    steps_.push_back(std::move(compiled));
  }
  if (num_byte_level != 1) {
    throw std::invalid_argument(num_byte_level == 0
                                    ? "no ByteLevel step (pagedllm reads byte-level BPE tokenizers only)"
                                    : "more than one ByteLevel step");
  }
}

void PreTokenizer::apply(const CompiledStep& step, bool map_to_byte_level, std::string_view piece,
                         PieceBuffers& buffers) const {
  if (step.kind == Kind::split) {
    buffers.matches.clear();
    step.regex->find_all(piece, buffers.matches);
    split_around_matches(piece, buffers.matches, step.invert, step.behavior, buffers, buffers.next);
    return;
  }
  if (step.add_prefix_space && piece.front() != ' ') {
    std::string& prefixed = buffers.storage.emplace_back();
    prefixed.reserve(piece.size() + 1);
    prefixed.push_back(' ');
    prefixed.append(piece);
    piece = prefixed;
  }
  const std::size_t first = buffers.next.size();
  if (step.regex) {
    buffers.matches.clear();
    step.regex->find_all(piece, buffers.matches);
    split_around_matches(piece, buffers.matches, false, SplitBehavior::isolated, buffers, buffers.next);
  } else {
    buffers.next.push_back(piece);
  }
  if (map_to_byte_level) {
    for (std::size_t i = first; i < buffers.next.size(); ++i) {
      buffers.next[i] = buffers.storage.emplace_back(to_byte_level(buffers.next[i]));
    }
  }
}

void PreTokenizer::split(std::string_view text, PieceBuffers& buffers) const {
  if (text.empty()) return;
  // The words of this call are appended after what buffers.pieces already holds.
  std::vector<std::string_view> current{text};
  const bool steps_follow_byte_level = byte_level_step_ + 1 < steps_.size();
  for (std::size_t index = 0; index < steps_.size(); ++index) {
    buffers.next.clear();
    const bool map = index == byte_level_step_ && steps_follow_byte_level;
    for (const std::string_view piece : current) apply(steps_[index], map, piece, buffers);
    current.swap(buffers.next);
  }
  if (steps_follow_byte_level) {
    // Back from the byte-level form to the bytes it stands for (every character maps).
    for (std::string_view& piece : current) {
      piece = buffers.storage.emplace_back(from_byte_level(piece).value_or(std::string()));
    }
  }
  buffers.pieces.insert(buffers.pieces.end(), current.begin(), current.end());
}

}  // namespace pagedllm::tokenizer
