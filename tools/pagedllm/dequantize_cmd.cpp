// `pagedllm dequantize`: export the tensors of a GGUF file to fp32.
//
// Each tensor becomes DIR/<name>.f32: raw little-endian float32 in the file's element order
// (dims[0] varies fastest, i.e. row-major over the shape read outermost first). DIR/index.json
// lists [{name, dims (innermost first, as GGUF), shape (outermost first), type, num_elements,
// file}]. tests/pypi/check_dequant.py compares these files with gguf-py bit for bit.
#include <bit>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/model/dequantize.h"
#include "core/model/gguf_file.h"
#include "tools/pagedllm/cli_options.h"
#include "tools/pagedllm/subcommands.h"

namespace pagedllm::cli {
namespace {

namespace po = boost::program_options;
namespace fs = std::filesystem;
using model::GgufFile;
using model::GgufTensorInfo;

static_assert(std::endian::native == std::endian::little, "the .f32 files are little endian");

struct DequantizeOptions {
  std::string gguf_path;
  std::string out_dir;
  std::vector<std::string> tensor_names;
  bool list = false;
};

std::string type_name(const GgufTensorInfo& tensor) {
  const auto traits = model::ggml_type_traits(static_cast<std::uint32_t>(tensor.type));
  return traits ? std::string(traits->name) : std::to_string(static_cast<std::uint32_t>(tensor.type));
}

std::string dims_text(const std::vector<std::uint64_t>& dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

void print_list(const GgufFile& file) {
  std::printf("%s: GGUF v%u, %zu key/values, %zu tensors\n", file.path().c_str(), file.version(),
              file.header().metadata.size(), file.tensors().size());
  for (const GgufTensorInfo& tensor : file.tensors()) {
    std::printf("  %-40s %-5s dims %-20s %12llu values %12llu bytes\n", tensor.name.c_str(), type_name(tensor).c_str(),
                dims_text(tensor.dims).c_str(), static_cast<unsigned long long>(tensor.num_elements),
                static_cast<unsigned long long>(tensor.num_bytes));
  }
}

// A file name for a tensor: its name with anything but [A-Za-z0-9._-] replaced by '_', never
// starting with '.', made unique with a numeric suffix. index.json maps names to files.
std::string file_name_for(const std::string& tensor_name, std::set<std::string>& taken) {
  std::string stem = tensor_name;
  for (char& c : stem) {
    const bool safe =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!safe) c = '_';
  }
  if (stem.empty() || stem.front() == '.') stem.insert(stem.begin(), '_');
  std::string name = stem + ".f32";
  for (int suffix = 1; taken.contains(name); ++suffix) {
    name = stem + "-" + std::to_string(suffix) + ".f32";
  }
  taken.insert(name);
  return name;
}

std::vector<const GgufTensorInfo*> select_tensors(const GgufFile& file, const std::vector<std::string>& names) {
  std::vector<const GgufTensorInfo*> selected;
  if (names.empty()) {
    for (const GgufTensorInfo& tensor : file.tensors()) selected.push_back(&tensor);
  } else {
    for (const std::string& name : names) {
      const GgufTensorInfo* tensor = file.find_tensor(name);
      if (tensor == nullptr) throw std::invalid_argument("no tensor named '" + name + "' in " + file.path());
      selected.push_back(tensor);
    }
  }
  // Refuse before writing anything, naming every tensor that cannot be exported.
  std::string refused;
  for (const GgufTensorInfo* tensor : selected) {
    const auto traits = model::ggml_type_traits(static_cast<std::uint32_t>(tensor->type));
    if (!traits || !traits->dequantizable) refused += " " + tensor->name + " (" + type_name(*tensor) + ")";
  }
  if (!refused.empty()) throw std::invalid_argument("cannot dequantize:" + refused);
  return selected;
}

int dequantize_file(const DequantizeOptions& options) {
  const GgufFile file(options.gguf_path);
  if (options.list) {
    print_list(file);
    return 0;
  }
  if (options.out_dir.empty()) throw std::invalid_argument("--out DIR is required (or --list)");
  const std::vector<const GgufTensorInfo*> selected = select_tensors(file, options.tensor_names);
  fs::create_directories(options.out_dir);

  const auto start = std::chrono::steady_clock::now();
  nlohmann::json index = nlohmann::json::array();
  std::set<std::string> taken;
  std::uint64_t num_values = 0;
  for (const GgufTensorInfo* tensor : selected) {
    const std::vector<float> values = model::dequantize_tensor(file, *tensor);
    const std::string name = file_name_for(tensor->name, taken);
    const fs::path path = fs::path(options.out_dir) / name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(values.data()),
              static_cast<std::streamsize>(values.size() * sizeof(float)));
    if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
    const std::vector<std::uint64_t> shape(tensor->dims.rbegin(), tensor->dims.rend());
    index.push_back({{"name", tensor->name},
                     {"dims", tensor->dims},
                     {"shape", shape},
                     {"type", type_name(*tensor)},
                     {"num_elements", tensor->num_elements},
                     {"file", name}});
    num_values += tensor->num_elements;
  }
  const fs::path index_path = fs::path(options.out_dir) / "index.json";
  std::ofstream index_file(index_path);
  index_file << index.dump(1) << "\n";
  if (!index_file.flush()) throw std::runtime_error("cannot write " + index_path.string());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("dequantized %zu tensors (%llu values) from %s into %s in %.2f s\n", selected.size(),
              static_cast<unsigned long long>(num_values), file.path().c_str(), options.out_dir.c_str(), seconds);
  return 0;
}

}  // namespace

int run_dequantize(const std::vector<std::string>& args) {
  DequantizeOptions options;
  po::options_description description(
      "pagedllm dequantize FILE.gguf --out DIR [--tensor NAME ...] [--list]\n"
      "writes each tensor as DIR/<name>.f32 (raw little-endian float32) and DIR/index.json");
  // clang-format off
  description.add_options()
      ("help,h", "show this help")
      ("file", po::value(&options.gguf_path)->required(), "the GGUF file")
      ("out,o", po::value(&options.out_dir), "output directory (created if missing)")
      ("tensor,t", po::value(&options.tensor_names)->composing(),
       "only this tensor (repeatable; default: all)")
      ("list", po::bool_switch(&options.list), "list the tensors and write nothing");
  // clang-format on
  po::positional_options_description positional;
  positional.add("file", 1);
  po::variables_map values;
  if (!parse_options(args, description, values, &positional)) return 0;
  return dequantize_file(options);
}

}  // namespace pagedllm::cli
