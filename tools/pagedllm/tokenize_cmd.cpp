// `pagedllm tokenize`: encode or decode with a model's tokenizer (tokenizer.json, a model
// directory holding one, or a GGUF file), for people (--text) and for scripts (--input-jsonl:
// one JSON object per line in, one per line out), and export the vocabulary as tokenizer.json.
#include <boost/program_options.hpp>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/utf8.h"
#include "tools/pagedllm/cli_options.h"
#include "tools/pagedllm/subcommands.h"

namespace pagedllm::cli {
namespace {

namespace po = boost::program_options;

struct TokenizeOptions {
  std::string tokenizer_path;
  std::string text;
  std::string input_jsonl;
  std::string export_path;
  bool decode = false;
  bool no_special = false;
  bool no_add_special = false;
};

std::string dump(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<TokenId> parse_ids(const std::string& text) {
  std::vector<TokenId> ids;
  std::string cleaned = text;
  for (char& c : cleaned) {
    if (c == ',' || c == '[' || c == ']') c = ' ';
  }
  std::istringstream in(cleaned);
  long long id = 0;
  while (in >> id) ids.push_back(static_cast<TokenId>(id));
  if (!in.eof()) throw std::invalid_argument("--decode --text takes token ids separated by spaces or commas");
  return ids;
}

void print_human(const tokenizer::Tokenizer& tokenizer, const TokenizeOptions& options) {
  if (options.decode) {
    std::cout << tokenizer.decode(parse_ids(options.text), {options.no_special}) << "\n";
    return;
  }
  const std::vector<TokenId> ids = tokenizer.encode(options.text, {!options.no_add_special, !options.no_special});
  std::cout << ids.size() << " tokens\n" << dump(ids) << "\n";
  for (const TokenId id : ids) {
    std::cout << "  " << id << "\t" << dump(tokenizer.token_text(id)) << "\t"
              << dump(tokenizer::utf8_lossy(tokenizer.token_bytes(id))) << (tokenizer.is_special(id) ? "\tspecial" : "")
              << "\n";
  }
}

// One JSON object per line: {"text": ...} -> {"ids": [...]}, or with --decode the reverse.
void run_jsonl(const tokenizer::Tokenizer& tokenizer, const TokenizeOptions& options) {
  std::ifstream file;
  if (options.input_jsonl != "-") {
    file.open(options.input_jsonl, std::ios::binary);
    if (!file) throw std::runtime_error("cannot open " + options.input_jsonl);
  }
  std::istream& in = options.input_jsonl == "-" ? std::cin : file;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const std::string where = options.input_jsonl + ":" + std::to_string(number);
    nlohmann::json request;
    try {
      request = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& error) {
      throw std::runtime_error(where + ": not valid JSON: " + error.what());
    }
    if (options.decode) {
      if (!request.contains("ids") || !request["ids"].is_array())
        throw std::runtime_error(where + ": expected {\"ids\": [...]}");
      const auto ids = request["ids"].get<std::vector<TokenId>>();
      std::cout << dump({{"text", tokenizer.decode(ids, {options.no_special})}}) << "\n";
    } else {
      if (!request.contains("text") || !request["text"].is_string())
        throw std::runtime_error(where + ": expected {\"text\": \"...\"}");
      const std::string text = request["text"].get<std::string>();
      std::cout << dump({{"ids", tokenizer.encode(text, {!options.no_add_special, !options.no_special})}}) << "\n";
    }
  }
}

}  // namespace

int run_tokenize(const std::vector<std::string>& args) {
  TokenizeOptions options;
  po::options_description description("pagedllm tokenize options");
  // clang-format off
  description.add_options()
      ("help,h", "show this help")
      ("tokenizer", po::value(&options.tokenizer_path)->required(),
       "tokenizer.json, a model directory holding one, or a .gguf file")
      ("text", po::value(&options.text), "text to encode (with --decode: token ids, e.g. \"1 2 3\")")
      ("input-jsonl", po::value(&options.input_jsonl),
       "file of {\"text\": ...} lines (with --decode: {\"ids\": [...]}); - for stdin; prints one JSON line each")
      ("decode", po::bool_switch(&options.decode), "ids to text instead of text to ids")
      ("no-special", po::bool_switch(&options.no_special),
       "encode: special tokens in the text are plain text; decode: leave special tokens out")
      ("no-add-special", po::bool_switch(&options.no_add_special), "encode: no BOS / EOS from the post-processor")
      ("export-tokenizer-json", po::value(&options.export_path), "write the tokenizer as a HF tokenizer.json");
  // clang-format on
  po::variables_map values;
  if (!parse_options(args, description, values)) return 0;
  if (values.count("text") && values.count("input-jsonl"))
    throw std::invalid_argument("give --text or --input-jsonl, not both");
  if (!values.count("text") && !values.count("input-jsonl") && !values.count("export-tokenizer-json")) {
    throw std::invalid_argument("give --text, --input-jsonl or --export-tokenizer-json");
  }

  const tokenizer::Tokenizer tokenizer = tokenizer::Tokenizer::from_path(options.tokenizer_path);
  if (!options.export_path.empty()) {
    std::ofstream out(options.export_path, std::ios::binary | std::ios::trunc);
    out << tokenizer.to_tokenizer_json().dump(1, ' ', false, nlohmann::json::error_handler_t::strict) << "\n";
    if (!out) throw std::runtime_error("cannot write " + options.export_path);
  }
  if (values.count("text")) print_human(tokenizer, options);
  if (values.count("input-jsonl")) run_jsonl(tokenizer, options);
  return 0;
}

}  // namespace pagedllm::cli
