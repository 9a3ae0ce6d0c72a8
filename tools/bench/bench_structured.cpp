// bench_structured: what structured outputs cost on the CPU (core/structured): compiling a
// constraint, and the allowed-token mask of one sequence at one step, over a real vocabulary,
// against issue 23's target (at most 50 us per sequence per step on SmolLM2's 49k vocabulary) and
// against the floor measured in the same run (copying a mask's bytes: a cached mask costs that).
//
//   bench_structured [--tokenizer PATH] [--generations N] [--max-tokens N] [--quick] [--json PATH]
//   bench_structured --tokenizer PATH --paths FILE --json PATH
//
// --tokenizer: a .gguf, a tokenizer.json or a directory holding one (SmolLM2's for the target);
// without it, a synthetic byte-level vocabulary of 49,152 tokens (random merges of text pieces).
// Each constraint is compiled (timed), then N generations walk it: at each step the sequence's
// mask is filled (timed), then a token drawn uniformly among the allowed ones is accepted (not
// timed), as a sampler would. The first walk meets states whose masks are not computed yet (a
// trie walk each); a second walk over the same tokens reads only cached masks.
//
// --paths: the constraints and token paths come from FILE instead (JSON lines: "name", one of
// "regex" / "json_schema" / "json_object" / "grammar", "any_whitespace", "paths": [[ids], ...]), walked the
// same way: tools/bench/structured_vs_llguidance.py times llguidance on the same paths beside it.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/structured/constraint_vocabulary.h"
#include "core/structured/output_constraint.h"
#include "core/tokenizer/tokenizer.h"
#include "tools/bench/bench_cli.h"
#include "tools/bench/bench_output.h"
#include "tools/bench/bench_timing.h"

namespace {

namespace structured = pagedllm::structured;
using pagedllm::TokenId;
using namespace pagedllm::bench;

constexpr double kMaskTargetUs = 50.0;
constexpr int32_t kSyntheticVocab = 49'152;  // SmolLM2's

struct Options {
  std::string tokenizer;
  std::string paths;  // --paths FILE
  int32_t generations = 20;
  int32_t max_tokens = 200;
  std::string json_path;
};

// Token bytes of the vocabulary, special tokens empty; the last id is the stop token.
std::vector<std::string> vocabulary(const Options& options, TokenId& stop_token) {
  std::vector<std::string> bytes;
  if (!options.tokenizer.empty()) {
    const auto tokenizer = pagedllm::tokenizer::Tokenizer::from_path(options.tokenizer);
    stop_token = tokenizer.special_ids().eos.value_or(0);
    return structured::constraint_token_bytes(tokenizer, tokenizer.num_tokens());
  }
  std::mt19937_64 rng(1);
  const std::string pieces[] = {"{", "}", "\"", ":", ",", " ", "\n",   "  ",    "[",    "]",   "the", "name", "id", "a",
                                "e", "s", "t",  "1", "2", "0", "true", "false", "null", "ing", "er",  "-",    "."};
  bytes.emplace_back();  // 0: the stop token
  for (int byte = 0; byte < 256; ++byte) bytes.emplace_back(1, static_cast<char>(byte));
  while (static_cast<int32_t>(bytes.size()) < kSyntheticVocab) {
    std::string token;
    const int parts = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < parts; ++i) token += pieces[rng() % std::size(pieces)];
    bytes.push_back(token);
  }
  stop_token = 0;
  return bytes;
}

// JSON in json.dumps' layout, written as GBNF (the same text structured_vs_llguidance.py gives).
constexpr const char* kJsonGrammar = R"(root   ::= value
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" (member (", " member)*)? "}"
member ::= string ": " value
array  ::= "[" (value (", " value)*)? "]"
string ::= "\"" ([^"\\\x00-\x1f] | "\\" ["\\/bfnrt])* "\""
number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
)";

struct Case {
  std::string name;
  structured::ConstraintSpec spec;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  const auto schema_case = [&](std::string name, const char* schema) {
    Case c{std::move(name), {}};
    c.spec.kind = structured::ConstraintKind::json_schema;
    c.spec.schema = nlohmann::ordered_json::parse(schema);
    out.push_back(std::move(c));
  };
  // A Pydantic model through OpenAI's strict schema: $defs, an enum, ranges, an Optional, a list.
  schema_case("pydantic_record", R"({"$defs": {"Place": {"type": "object", "additionalProperties": false,
      "properties": {"site": {"type": "string", "maxLength": 12}, "floor": {"type": "integer", "minimum": 0, "maximum": 40}},
      "required": ["site", "floor"]}},
    "type": "object", "additionalProperties": false,
    "properties": {"sensor": {"type": "string"}, "unit": {"enum": ["celsius", "kelvin"]},
      "value": {"type": "integer", "minimum": -50, "maximum": 150}, "place": {"$ref": "#/$defs/Place"},
      "note": {"anyOf": [{"type": "string"}, {"type": "null"}]}, "flags": {"type": "array", "items": {"type": "boolean"}}},
    "required": ["sensor", "unit", "value", "place", "note", "flags"]})");
  // A tool's arguments: flat, strings and numbers, some optional.
  schema_case("tool_arguments", R"({"type": "object", "properties": {"city": {"type": "string"},
      "country": {"type": "string", "minLength": 2, "maxLength": 2}, "days": {"type": "integer", "minimum": 1, "maximum": 14},
      "units": {"enum": ["metric", "imperial"]}, "lat": {"type": "number"}, "lon": {"type": "number"},
      "hourly": {"type": "boolean"}, "lang": {"type": "string"}}, "required": ["city", "days"]})");
  Case object{"json_object", {}};
  object.spec.kind = structured::ConstraintKind::json_object;
  out.push_back(std::move(object));
  Case regex{"regex_date_time", {}};
  regex.spec.kind = structured::ConstraintKind::regex;
  regex.spec.regex = R"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2})?(Z|[+-][0-9]{2}:[0-9]{2}))";
  out.push_back(std::move(regex));
  // Any JSON value as a GBNF grammar, nested without bound (a pushdown automaton, not a DFA).
  Case grammar{"gbnf_json", {}};
  grammar.spec.kind = structured::ConstraintKind::grammar;
  grammar.spec.grammar = kJsonGrammar;
  out.push_back(std::move(grammar));
  return out;
}

std::vector<TokenId> allowed_ids(const structured::TokenBitmask& mask, int32_t vocab) {
  std::vector<TokenId> ids;
  for (TokenId id = 0; id < vocab; ++id) {
    if (structured::is_allowed(mask, id)) ids.push_back(id);
  }
  return ids;
}

struct Timings {
  std::vector<double> first_walk_us;  // masks computed on first use included
  std::vector<double> cached_us;      // the same steps again: cached masks only
};

// Walks each path twice (first use, then cached), timing the mask before each of its tokens.
Timings walk_paths(const std::shared_ptr<structured::TokenMaskCache>& cache, TokenId stop_token,
                   const std::vector<std::vector<TokenId>>& paths) {
  Timings timings;
  structured::TokenBitmask mask;
  uint64_t folded = 0;
  for (std::vector<double>* samples : {&timings.first_walk_us, &timings.cached_us}) {
    for (const std::vector<TokenId>& tokens : paths) {
      structured::TokenMatcher matcher(cache, {stop_token});
      for (const TokenId token : tokens) {
        const auto start = Clock::now();
        matcher.fill_next_mask(mask);
        samples->push_back(elapsed_ns(start, Clock::now()) / 1e3);
        folded += mask[static_cast<size_t>(token) / 32];
        if (!matcher.accept(token)) throw std::runtime_error("a path's token is not allowed by its constraint");
      }
    }
  }
  consume(folded);
  return timings;
}

// The generations' token sequences, drawn uniformly among the allowed tokens (seeded).
Timings walk(const std::shared_ptr<structured::TokenMaskCache>& cache, TokenId stop_token, const Options& options) {
  Timings timings;
  std::mt19937_64 rng(7);
  structured::TokenBitmask mask;
  std::vector<std::vector<TokenId>> generations;
  uint64_t folded = 0;
  for (int32_t g = 0; g < options.generations; ++g) {
    structured::TokenMatcher matcher(cache, {stop_token});
    std::vector<TokenId> tokens;
    for (int32_t step = 0; step < options.max_tokens && !matcher.ended(); ++step) {
      const auto start = Clock::now();
      matcher.fill_next_mask(mask);
      timings.first_walk_us.push_back(elapsed_ns(start, Clock::now()) / 1e3);
      const std::vector<TokenId> allowed = allowed_ids(mask, cache->vocab_size());
      if (allowed.empty()) break;
      const TokenId token = allowed[rng() % allowed.size()];
      matcher.accept(token);
      tokens.push_back(token);
    }
    generations.push_back(std::move(tokens));
  }
  for (const std::vector<TokenId>& tokens : generations) {
    structured::TokenMatcher matcher(cache, {stop_token});
    for (const TokenId token : tokens) {
      const auto start = Clock::now();
      matcher.fill_next_mask(mask);
      timings.cached_us.push_back(elapsed_ns(start, Clock::now()) / 1e3);
      folded += mask[static_cast<size_t>(token) / 32];
      matcher.accept(token);
    }
  }
  consume(folded);
  return timings;
}

// The floor: copying one mask's bytes (what a cached state's fill does), timed the same way.
double copy_floor_us(int32_t vocab) {
  const structured::TokenBitmask source(static_cast<size_t>(vocab + 31) / 32, 0x5a5a5a5au);
  structured::TokenBitmask target(source.size());
  std::vector<double> samples;
  for (int i = 0; i < 2000; ++i) {
    const auto start = Clock::now();
    std::memcpy(target.data(), source.data(), source.size() * sizeof(uint32_t));
    samples.push_back(elapsed_ns(start, Clock::now()) / 1e3);
    consume(target[static_cast<size_t>(i) % target.size()]);
  }
  return median(samples);
}

// --paths: each line's constraint compiled (timed) and its paths walked; the results as JSON.
int run_paths(const Options& options) {
  TokenId stop_token = 0;
  const std::vector<std::string> bytes = vocabulary(options, stop_token);
  std::ifstream in(options.paths);
  if (!in) throw std::runtime_error("cannot open " + options.paths);
  Json results = Json::array();
  std::string text;
  while (std::getline(in, text)) {
    if (text.empty()) continue;
    const auto line = nlohmann::ordered_json::parse(text);
    structured::ConstraintSpec spec;
    if (line.contains("regex")) {
      spec.kind = structured::ConstraintKind::regex;
      spec.regex = line["regex"].get<std::string>();
    } else if (line.contains("json_schema")) {
      spec.kind = structured::ConstraintKind::json_schema;
      spec.schema = line["json_schema"];
    } else if (line.contains("grammar")) {
      spec.kind = structured::ConstraintKind::grammar;
      spec.grammar = line["grammar"].get<std::string>();
    } else {
      spec.kind = structured::ConstraintKind::json_object;
    }
    spec.layout.any_whitespace = line.value("any_whitespace", true);
    const auto paths = line["paths"].get<std::vector<std::vector<TokenId>>>();
    structured::ConstraintCompiler compiler(bytes);
    std::shared_ptr<structured::TokenMaskCache> cache;
    const double compile_ms = time_ns([&] { cache = compiler.compile(spec); }) / 1e6;
    Timings timings = walk_paths(cache, stop_token, paths);
    std::sort(timings.first_walk_us.begin(), timings.first_walk_us.end());
    std::sort(timings.cached_us.begin(), timings.cached_us.end());
    results.push_back({{"constraint", line.value("name", "")},
                       {"compile_ms", compile_ms},
                       {"states", cache->num_states()},
                       {"steps", timings.first_walk_us.size()},
                       {"first_walk_us_p50", percentile(timings.first_walk_us, 0.5)},
                       {"first_walk_us_p99", percentile(timings.first_walk_us, 0.99)},
                       {"cached_us_p50", percentile(timings.cached_us, 0.5)},
                       {"cached_us_p99", percentile(timings.cached_us, 0.99)}});
  }
  write_json_file(options.json_path, {{"benchmark", "bench_structured --paths"},
                                      {"build", build_json(build_info())},
                                      {"vocab_size", bytes.size()},
                                      {"results", results}});
  return 0;
}

int run(const Options& options) {
  if (!options.paths.empty()) {
    if (options.json_path.empty()) throw std::invalid_argument("--paths writes its results with --json PATH");
    return run_paths(options);
  }
  TokenId stop_token = 0;
  const std::vector<std::string> bytes = vocabulary(options, stop_token);
  const auto vocab = static_cast<int32_t>(bytes.size());
  std::printf("%s\n", build_line(build_info()).c_str());
  std::printf("vocabulary: %s, %d tokens; %d generations of up to %d tokens per constraint\n",
              options.tokenizer.empty() ? "synthetic byte-level" : options.tokenizer.c_str(), vocab,
              options.generations, options.max_tokens);
  const double floor_us = copy_floor_us(vocab);
  std::printf("floor: copying one mask (%d bytes) %.2f us\n\n", (vocab + 31) / 32 * 4, floor_us);
  std::printf("%-16s %9s %7s %7s %9s %9s %9s %9s %9s %10s\n", "constraint", "compile", "states", "steps", "first p50",
              "first p99", "first max", "cached50", "cached99", "p99/target");
  Json results = Json::array();
  bool within_target = true;
  for (const Case& c : cases()) {
    structured::ConstraintCompiler compiler(bytes);
    std::shared_ptr<structured::TokenMaskCache> cache;
    const double compile_ms = time_ns([&] { cache = compiler.compile(c.spec); }) / 1e6;
    Timings timings = walk(cache, stop_token, options);
    std::sort(timings.first_walk_us.begin(), timings.first_walk_us.end());
    std::sort(timings.cached_us.begin(), timings.cached_us.end());
    const double cached_p99 = percentile(timings.cached_us, 0.99);
    within_target = within_target && cached_p99 <= kMaskTargetUs;
    std::printf("%-16s %7.1fms %7d %7zu %7.1fus %7.1fus %7.0fus %7.2fus %7.2fus %10s\n", c.name.c_str(), compile_ms,
                cache->num_states(), timings.first_walk_us.size(), percentile(timings.first_walk_us, 0.5),
                percentile(timings.first_walk_us, 0.99), timings.first_walk_us.back(),
                percentile(timings.cached_us, 0.5), cached_p99, format_ratio(ratio(cached_p99, kMaskTargetUs)).c_str());
    results.push_back({{"constraint", c.name},
                       {"compile_ms", compile_ms},
                       {"states", cache->num_states()},
                       {"masks_computed", cache->num_computed()},
                       {"steps", timings.first_walk_us.size()},
                       {"first_walk_us_p50", percentile(timings.first_walk_us, 0.5)},
                       {"first_walk_us_p99", percentile(timings.first_walk_us, 0.99)},
                       {"first_walk_us_max", timings.first_walk_us.back()},
                       {"cached_us_p50", percentile(timings.cached_us, 0.5)},
                       {"cached_us_p99", cached_p99},
                       {"cached_p50_over_copy_floor", ratio(percentile(timings.cached_us, 0.5), floor_us)}});
  }
  std::printf("\nmask per sequence per step, cached states: p99 %s the %.0f us target on every constraint\n",
              within_target ? "within" : "NOT within", kMaskTargetUs);
  if (!options.json_path.empty()) {
    write_json_file(options.json_path, {{"benchmark", "bench_structured"},
                                        {"build", build_json(build_info())},
                                        {"vocab_size", vocab},
                                        {"copy_floor_us", floor_us},
                                        {"target_us", kMaskTargetUs},
                                        {"results", results}});
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  BenchCommandLine command_line("bench_structured");
  command_line
      .add({"--tokenizer", "PATH",
            "a .gguf, tokenizer.json or its directory (default: a synthetic 49,152-token vocabulary)",
            [&](std::string_view v) { options.tokenizer = std::string(v); }})
      .add({"--generations", "N", "generations walked per constraint (default 20)",
            [&](std::string_view v) {
              options.generations = static_cast<int32_t>(parse_integer("--generations", v, 1));
            }})
      .add(
          {"--max-tokens", "N", "tokens per generation at most (default 200)",
           [&](std::string_view v) { options.max_tokens = static_cast<int32_t>(parse_integer("--max-tokens", v, 1)); }})
      .add({"--paths", "FILE", "constraints and token paths to walk, JSON lines (see the header)",
            [&](std::string_view v) { options.paths = std::string(v); }})
      .add({"--json", "PATH", "also write the results as JSON",
            [&](std::string_view v) { options.json_path = std::string(v); }})
      .add_quick("3 generations of 40 tokens", [&] {
        options.generations = 3;
        options.max_tokens = 40;
      });
  return run_benchmark(command_line, argc, argv, [&] { return run(options); });
}
