// Loading tokenizer.json and GGUF vocabularies; every malformed input is reported with the file
// and the field at fault.
#include <boost/test/unit_test.hpp>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/model/gguf_file.h"
#include "core/model/gguf_writer.h"
#include "core/model/model_errors.h"
#include "core/tokenizer/gguf_pre_tokenizer.h"
#include "core/tokenizer/normalizer.h"
#include "core/tokenizer/pre_tokenizer.h"
#include "core/tokenizer/tokenizer.h"
#include "tests/tokenizer/tiny_tokenizers.h"

namespace pagedllm::tokenizer {
namespace {

using nlohmann::json;
using Ids = std::vector<TokenId>;
namespace fs = std::filesystem;

// A small valid tokenizer.json (Llama 3 layout) to damage one field at a time.
json valid_document() {
  TokenizerSpec spec = testing::byte_level_spec({{"a", "b"}, {"\xC4\xA0", "ab"}});  // "ab" = 256, " ab" = 257
  spec.pre_tokenizer = {SplitStep{std::string(kLlama3Pattern)}, ByteLevelStep{false, true, false}};
  spec.added_tokens = {{258, "<|begin|>", true, false, false, false, false}};
  spec.post_processor = {
      TemplateStep{{{false, "<|begin|>", 0}, {true, "A", 0}}, {}, {{"<|begin|>", {258}, {"<|begin|>"}}}}};
  return Tokenizer(spec).to_tokenizer_json();
}

// Loads `document` and returns the error's subject, failing the test if it loads.
std::string load_error(const std::string& text, const std::string& expected_in_message = "") {
  try {
    Tokenizer::from_tokenizer_json_text(text, "tok.json");
  } catch (const model::ModelFormatError& error) {
    BOOST_TEST(error.file() == "tok.json");
    if (!expected_in_message.empty())
      BOOST_TEST(std::string(error.what()).find(expected_in_message) != std::string::npos, error.what());
    return error.subject();
  }
  BOOST_FAIL("expected ModelFormatError");
  return {};
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("pagedllm_tok_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A GGUF vocabulary: bytes, merges, then three control tokens.
model::GgufWriter gguf_vocabulary(const std::string& pre, const std::string& model_name = "gpt2") {
  const TokenizerSpec spec =
      testing::byte_level_spec({{"a", "b"}, {"1", "2"}}, {"<|endoftext|>", "<|im_start|>", "<|im_end|>"});
  model::GgufWriter writer;
  writer.add_string("general.architecture", "llama");
  writer.add_string("tokenizer.ggml.model", model_name);
  writer.add_string("tokenizer.ggml.pre", pre);
  writer.add_string_array("tokenizer.ggml.tokens", spec.model.vocab);
  std::vector<std::int32_t> types(spec.model.vocab.size(), 1);
  for (std::size_t id = 258; id < types.size(); ++id) types[id] = 3;
  writer.add_i32_array("tokenizer.ggml.token_type", types);
  writer.add_string_array("tokenizer.ggml.merges", {"a b", "1 2"});
  writer.add_u32("tokenizer.ggml.bos_token_id", 259);
  writer.add_u32("tokenizer.ggml.eos_token_id", 260);
  return writer;
}

std::string gguf_error(const model::GgufWriter& writer, const fs::path& path) {
  writer.write(path.string());
  try {
    Tokenizer::from_gguf(model::GgufFile(path.string()));
  } catch (const model::ModelFormatError& error) {
    BOOST_TEST(error.file() == path.string());
    return error.subject() + " | " + error.what();
  }
  BOOST_FAIL("expected ModelFormatError");
  return {};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(tokenizer_json_loading)

BOOST_AUTO_TEST_CASE(a_written_tokenizer_json_loads_back_the_same) {
  const json document = valid_document();
  const Tokenizer tokenizer = Tokenizer::from_tokenizer_json_text(document.dump(), "tok.json");
  BOOST_TEST(tokenizer.encode("ab ab") == (Ids{258, 256, 257}), boost::test_tools::per_element());
  BOOST_TEST(tokenizer.special_ids().bos.value() == 258);
  BOOST_TEST(tokenizer.to_tokenizer_json() == document);
  // Merges written as "left right" strings (older files) read the same.
  json legacy = document;
  legacy["model"]["merges"] = json::array({"a b", "\xC4\xA0 ab"});
  BOOST_TEST(Tokenizer::from_tokenizer_json_text(legacy.dump(), "tok.json").encode("ab ab") == (Ids{258, 256, 257}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(errors_name_the_file_and_the_field) {
  BOOST_TEST(load_error("{\"model\": ", "not valid JSON") == "");
  json document = valid_document();
  document.erase("model");
  BOOST_TEST(load_error(document.dump(), "missing") == "field 'model'");
  document = valid_document();
  document["model"].erase("merges");
  BOOST_TEST(load_error(document.dump()) == "field 'model.merges'");
  document = valid_document();
  document["pre_tokenizer"]["pretokenizers"][1] = {{"type", "Metaspace"}, {"replacement", "_"}};
  BOOST_TEST(load_error(document.dump(), "unsupported 'Metaspace'") == "field 'pre_tokenizer.pretokenizers[1].type'");
  document = valid_document();
  document["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(?<";
  BOOST_TEST(load_error(document.dump(), "invalid pattern") == "field 'pre_tokenizer.pretokenizers[0].pattern.Regex'");
  document = valid_document();
  document["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Sideways";
  BOOST_TEST(load_error(document.dump()) == "field 'pre_tokenizer.pretokenizers[0].behavior'");
  document = valid_document();
  document["pre_tokenizer"] = document["pre_tokenizer"]["pretokenizers"][0];
  BOOST_TEST(load_error(document.dump(), "no ByteLevel step") == "field 'pre_tokenizer'");
  document = valid_document();
  document["normalizer"] = {{"type", "Lowercase"}};
  BOOST_TEST(load_error(document.dump(), "unsupported 'Lowercase'") == "field 'normalizer.type'");
  document = valid_document();
  document["decoder"] = {{"type", "Metaspace"}};
  BOOST_TEST(load_error(document.dump()) == "field 'decoder.type'");
  document = valid_document();
  document["model"]["vocab"]["ab"] = 9999;
  BOOST_TEST(load_error(document.dump(), "outside") == "field 'model.vocab[\"ab\"]'");
  document = valid_document();
  document["model"]["merges"][1] = json::array({"\xC4\xA0", "zz"});
  BOOST_TEST(load_error(document.dump(), "'zz' is not in the vocabulary") == "field 'model.merges[1]'");
  document = valid_document();
  document["model"]["type"] = "WordPiece";
  BOOST_TEST(load_error(document.dump(), "unsupported 'WordPiece'") == "field 'model.type'");
  document = valid_document();
  document["post_processor"] = {{"type", "RobertaProcessing"}};
  BOOST_TEST(load_error(document.dump()) == "field 'post_processor.type'");
  document = valid_document();
  document["added_tokens"][0].erase("content");
  BOOST_TEST(load_error(document.dump()) == "field 'added_tokens[0].content'");
}

BOOST_AUTO_TEST_CASE(a_model_directory_reads_tokenizer_config_for_special_ids) {
  const TempDir dir;
  write_text(dir.path / "tokenizer.json", valid_document().dump());
  write_text(dir.path / "tokenizer_config.json",
             R"({"bos_token": {"content": "<|begin|>"}, "eos_token": "ab", "pad_token": "<pad>"})");
  const Tokenizer tokenizer = Tokenizer::from_path(dir.path.string());
  BOOST_TEST(tokenizer.special_ids().bos.value() == 258);
  BOOST_TEST(tokenizer.special_ids().eos.value() == 256);
  BOOST_TEST(!tokenizer.special_ids().pad.has_value());
  write_text(dir.path / "tokenizer_config.json", R"({"eos_token": "<nope>"})");
  try {
    Tokenizer::from_tokenizer_json((dir.path / "tokenizer.json").string());
    BOOST_FAIL("expected ModelFormatError");
  } catch (const model::ModelFormatError& error) {
    BOOST_TEST(error.file() == (dir.path / "tokenizer_config.json").string());
    BOOST_TEST(error.subject() == "field 'eos_token'");
  }
  BOOST_CHECK_THROW(Tokenizer::from_path((dir.path / "missing.json").string()), model::ModelFormatError);
}

BOOST_AUTO_TEST_CASE(nfc_normalizes_or_is_refused_by_name) {
  json document = valid_document();
  document["normalizer"] = {{"type", "NFC"}};
  if (!nfc_available()) {
    BOOST_TEST(load_error(document.dump(), "ICU") == "field 'normalizer'");
    return;
  }
  const Tokenizer tokenizer = Tokenizer::from_tokenizer_json_text(document.dump(), "tok.json");
  // "e" + combining acute becomes the single character é (bytes C3 A9).
  BOOST_TEST(tokenizer.encode("e\xCC\x81", {false, true}) == (Ids{0xC3, 0xA9}), boost::test_tools::per_element());
  BOOST_TEST(tokenizer.to_tokenizer_json()["normalizer"] == (json{{"type", "NFC"}}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(gguf_loading)

BOOST_AUTO_TEST_CASE(a_gguf_vocabulary_loads_with_its_pre_tokenizer_and_special_tokens) {
  const TempDir dir;
  const fs::path path = dir.path / "vocab.gguf";
  model::GgufWriter writer = gguf_vocabulary("smollm");
  writer.add_bool("tokenizer.ggml.add_bos_token", true);
  writer.write(path.string());
  const Tokenizer tokenizer = Tokenizer::from_path(path.string());
  BOOST_TEST(tokenizer.num_tokens() == 261);
  BOOST_TEST(tokenizer.special_ids().bos.value() == 259);
  BOOST_TEST(tokenizer.special_ids().eos.value() == 260);
  // smollm: digits apart (so "12" never merges), BOS first, control tokens matched.
  BOOST_TEST(tokenizer.encode("ab 12<|im_end|>") == (Ids{259, 256, ' ', '1', '2', 260}),
             boost::test_tools::per_element());
  BOOST_TEST(tokenizer.is_special(258));
  BOOST_TEST(tokenizer.decode(Ids{259, 256, 260}, {true}) == "ab");
  // The exported tokenizer.json loads into the same tokenizer.
  const Tokenizer exported = Tokenizer::from_tokenizer_json_text(tokenizer.to_tokenizer_json().dump(), "x.json");
  BOOST_TEST(exported.encode("ab 12<|im_end|>") == tokenizer.encode("ab 12<|im_end|>"),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(gguf_errors_name_the_file_and_the_key) {
  const TempDir dir;
  const fs::path path = dir.path / "bad.gguf";
  BOOST_TEST(gguf_error(gguf_vocabulary("smollm", "llama"), path).rfind("key 'tokenizer.ggml.model' | ", 0) == 0u);
  const std::string unknown = gguf_error(gguf_vocabulary("mystery-bpe"), path);
  BOOST_TEST(unknown.rfind("key 'tokenizer.ggml.pre' | ", 0) == 0u);
  BOOST_TEST(unknown.find("'mystery-bpe'") != std::string::npos);
  BOOST_TEST(unknown.find("llama-bpe") != std::string::npos);  // the known names are listed

  model::GgufWriter writer;
  const TokenizerSpec spec = testing::byte_level_spec({});
  writer.add_string("tokenizer.ggml.model", "gpt2");
  writer.add_string("tokenizer.ggml.pre", "gpt2");
  writer.add_string_array("tokenizer.ggml.tokens", spec.model.vocab);
  writer.add_string_array("tokenizer.ggml.merges", {"ab"});
  BOOST_TEST(gguf_error(writer, path).rfind("key 'tokenizer.ggml.merges[0]' | ", 0) == 0u);

  writer = model::GgufWriter();
  writer.add_string("tokenizer.ggml.model", "gpt2");
  writer.add_string_array("tokenizer.ggml.tokens", spec.model.vocab);
  writer.add_string_array("tokenizer.ggml.merges", {});
  writer.add_u32("tokenizer.ggml.bos_token_id", 256);
  BOOST_TEST(gguf_error(writer, path).rfind("key 'tokenizer.ggml.bos_token_id' | ", 0) == 0u);

  writer = model::GgufWriter();
  writer.add_string("tokenizer.ggml.model", "gpt2");
  writer.add_string_array("tokenizer.ggml.merges", {});
  BOOST_TEST(gguf_error(writer, path).rfind("key 'tokenizer.ggml.tokens' | ", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(every_known_gguf_pre_tokenizer_compiles) {
  for (const char* name : {"default", "gpt2", "gpt-2", "llama3", "llama-bpe", "smollm", "qwen2"}) {
    const auto pre = gguf_pre_tokenizer(name);
    BOOST_TEST_REQUIRE(pre.has_value(), name);
    BOOST_TEST(!testing::pre_tokenize(pre->steps, "Hello, world 12345!\n").empty());
  }
  BOOST_TEST(gguf_pre_tokenizer("llama-bpe")->ignore_merges);
  BOOST_TEST(!gguf_pre_tokenizer("nonsense").has_value());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::tokenizer
