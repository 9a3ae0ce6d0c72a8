// `pagedllm token-masks`: the tokens a structured-outputs constraint allows, step by step along
// given token sequences, over a model's vocabulary: to see why a constrained request generates
// what it does, and to compare the masks with another engine's (tests/pypi/check_token_masks.py
// holds them against llguidance's). One JSON object per line in, one per line out:
//   {"regex": R} | {"choice": [...]} | {"json_schema": S} | {"json_object": true} | {"grammar": GBNF},
//   optional "any_whitespace" (default true), "allow_additional_properties" (default false),
//   "tokens": [ids] (the path to walk), "stop_tokens": [ids] (default: the tokenizer's EOS)
//   -> {"masks": [hex, ...]}: the mask before each token and after the last, each as its 32-bit
//      words (bit id % 32 of word id / 32) in order, 8 hex digits a word; "refused_at": k when the
//      k-th token is not allowed (the masks stop there); {"error": "..."} when the constraint
//      does not compile, and beside the masks when a grammar proved too ambiguous to follow.
#include <boost/program_options.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/common/json_value.h"
#include "core/structured/constraint_vocabulary.h"
#include "core/structured/output_constraint.h"
#include "core/tokenizer/tokenizer.h"
#include "tools/pagedllm/cli_options.h"
#include "tools/pagedllm/subcommands.h"

namespace pagedllm::cli {
namespace {

namespace po = boost::program_options;
using structured::ConstraintKind;

constexpr int32_t kMaxLineDepth = 128;  // as the server's bodies: nlohmann's dump recurses per level

std::string hex_words(const structured::TokenBitmask& mask) {
  std::string out(mask.size() * 8, '0');
  for (std::size_t i = 0; i < mask.size(); ++i) std::snprintf(&out[i * 8], 9, "%08x", mask[i]);
  return out;
}

// The constraint a line names; throws std::invalid_argument naming the field.
structured::ConstraintSpec read_spec(const nlohmann::ordered_json& line) {
  structured::ConstraintSpec spec;
  int named = 0;
  if (const auto regex = line.find("regex"); regex != line.end()) {
    spec.kind = ConstraintKind::regex;
    spec.regex = regex->get<std::string>();
    ++named;
  }
  if (const auto choice = line.find("choice"); choice != line.end()) {
    spec.kind = ConstraintKind::choice;
    spec.choices = choice->get<std::vector<std::string>>();
    ++named;
  }
  if (const auto schema = line.find("json_schema"); schema != line.end()) {
    spec.kind = ConstraintKind::json_schema;
    spec.schema = *schema;
    ++named;
  }
  if (const auto grammar = line.find("grammar"); grammar != line.end()) {
    spec.kind = ConstraintKind::grammar;
    spec.grammar = grammar->get<std::string>();
    ++named;
  }
  if (const auto object = line.find("json_object"); object != line.end() && object->get<bool>()) {
    spec.kind = ConstraintKind::json_object;
    ++named;
  }
  if (named != 1) throw std::invalid_argument("give exactly one of regex, choice, json_schema, json_object, grammar");
  spec.layout.any_whitespace = line.value("any_whitespace", true);
  spec.layout.allow_additional_properties = line.value("allow_additional_properties", false);
  return spec;
}

nlohmann::json walk(structured::ConstraintCompiler& compiler, const nlohmann::ordered_json& line,
                    const std::vector<TokenId>& default_stops) {
  std::shared_ptr<structured::TokenMaskCache> cache;
  try {
    cache = compiler.compile(read_spec(line));
  } catch (const std::invalid_argument& error) {
    return {{"error", error.what()}};
  }
  const auto stops = line.contains("stop_tokens") ? line["stop_tokens"].get<std::vector<TokenId>>() : default_stops;
  structured::TokenMatcher matcher(cache, stops);
  nlohmann::json masks = nlohmann::json::array();
  structured::TokenBitmask mask;
  const auto tokens = line.value("tokens", std::vector<TokenId>{});
  nlohmann::json out;
  for (std::size_t k = 0; k <= tokens.size(); ++k) {
    matcher.fill_next_mask(mask);
    masks.push_back(hex_words(mask));
    if (k == tokens.size()) break;
    if (tokens[k] < 0 || tokens[k] >= compiler.vocab_size() || !matcher.accept(tokens[k])) {
      out["refused_at"] = k;
      break;
    }
  }
  // A grammar too ambiguous to follow: its masks allow only the stop tokens from where it failed.
  if (!matcher.failure().empty()) out["error"] = matcher.failure();
  out["masks"] = std::move(masks);
  return out;
}

}  // namespace

int run_token_masks(const std::vector<std::string>& args) {
  std::string tokenizer_path;
  std::string input = "-";
  po::options_description description("pagedllm token-masks options");
  // clang-format off
  description.add_options()
      ("help,h", "show this help")
      ("tokenizer", po::value(&tokenizer_path)->required(), "tokenizer.json, a model directory holding one, or a .gguf file")
      ("input-jsonl", po::value(&input)->default_value(input), "the constraints and token paths, one JSON line each; - for stdin");
  // clang-format on
  po::variables_map values;
  if (!parse_options(args, description, values)) return 0;
  const tokenizer::Tokenizer tokenizer = tokenizer::Tokenizer::from_path(tokenizer_path);
  structured::ConstraintCompiler compiler(structured::constraint_token_bytes(tokenizer, tokenizer.num_tokens()));
  std::vector<TokenId> default_stops;
  if (tokenizer.special_ids().eos) default_stops.push_back(*tokenizer.special_ids().eos);

  std::ifstream file;
  if (input != "-") {
    file.open(input, std::ios::binary);
    if (!file) throw std::runtime_error("cannot open " + input);
  }
  std::istream& in = input == "-" ? std::cin : file;
  std::string text;
  for (std::size_t number = 1; std::getline(in, text); ++number) {
    if (text.empty()) continue;
    const std::string where = input + ":" + std::to_string(number);
    nlohmann::ordered_json line;
    try {
      if (const std::size_t at = json_nesting_past(text, kMaxLineDepth); at != 0) {
        throw std::invalid_argument("nested deeper than " + std::to_string(kMaxLineDepth) + " levels at byte " +
                                    std::to_string(at));
      }
      line = nlohmann::ordered_json::parse(text);
      if (!line.is_object()) throw std::invalid_argument("expected a JSON object");
      if (default_stops.empty() && !line.contains("stop_tokens")) {
        throw std::invalid_argument("the tokenizer has no EOS: give stop_tokens");
      }
      std::cout << walk(compiler, line, default_stops).dump() << "\n";
    } catch (const nlohmann::json::exception& error) {
      throw std::runtime_error(where + ": " + error.what());
    } catch (const std::invalid_argument& error) {
      throw std::runtime_error(where + ": " + error.what());
    }
  }
  return 0;
}

}  // namespace pagedllm::cli
