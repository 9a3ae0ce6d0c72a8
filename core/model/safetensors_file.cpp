#include "core/model/safetensors_file.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <utility>

#include "core/model/half.h"
#include "core/model/model_errors.h"

namespace pagedllm::model {
namespace {

using nlohmann::json;

static_assert(std::endian::native == std::endian::little, "safetensors data is little endian and is read in place");

constexpr std::uint64_t kHeaderLengthBytes = 8;
// The reference implementation refuses larger headers; so does pagedllm (a corrupt length field
// must not make the parser allocate gigabytes).
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;
constexpr std::string_view kMetadataKey = "__metadata__";
constexpr std::string_view kSupported = "supported: F32, F16, BF16";

// Dtypes the format defines that pagedllm does not read: named as unsupported, not unknown.
constexpr std::string_view kOtherKnownDtypes[] = {"BOOL",    "U8",      "I8",  "I16",     "U16",    "I32",
                                                  "U32",     "I64",     "U64", "F64",     "C64",    "F8_E5M2",
                                                  "F8_E4M3", "F8_E8M0", "F4",  "F6_E2M3", "F6_E3M2"};

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

std::string range_text(std::uint64_t begin, std::uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

// The JSON type as a reader would name it in "expected X, found Y".
std::string json_kind(const json& value) {
  if (value.is_number_unsigned()) return "non-negative integer " + value.dump();
  if (value.is_number_integer()) return "negative integer " + value.dump();
  if (value.is_number_float()) return "number " + value.dump();
  return value.type_name();
}

// Reads the top-level object, remembering a tensor name given twice (nlohmann keeps the last).
json parse_header_json(std::string_view text, const std::string& file_name) {
  std::set<std::string> seen;
  std::string duplicate;
  const json::parser_callback_t note_duplicates = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 1 && event == json::parse_event_t::key && duplicate.empty()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!seen.insert(key).second) duplicate = key;
    }
    return true;
  };
  json header;
  try {
    header = json::parse(text.begin(), text.end(), note_duplicates);
  } catch (const json::exception& error) {
    throw ModelFormatError(file_name, "header", std::string("invalid JSON: ") + error.what());
  }
  if (!duplicate.empty()) {
    const std::string subject = duplicate == kMetadataKey ? "field '" + duplicate + "'" : tensor_subject(duplicate);
    throw ModelFormatError(file_name, subject, "appears twice in the header");
  }
  if (!header.is_object()) {
    throw ModelFormatError(file_name, "header", "expected a JSON object, found " + json_kind(header));
  }
  return header;
}

std::map<std::string, std::string> parse_metadata(const json& value, const std::string& file_name) {
  const std::string subject = "field '" + std::string(kMetadataKey) + "'";
  if (!value.is_object()) {
    throw ModelFormatError(file_name, subject, "expected an object, found " + json_kind(value));
  }
  std::map<std::string, std::string> metadata;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string()) {
      throw ModelFormatError(file_name, subject, "value of '" + key + "': expected a string, found " + json_kind(item));
    }
    metadata.emplace(key, item.get<std::string>());
  }
  return metadata;
}

const json& require_field(const json& entry, std::string_view field, const std::string& file_name,
                          const std::string& subject) {
  const auto found = entry.find(field);
  if (found == entry.end()) {
    throw ModelFormatError(file_name, subject, "missing field '" + std::string(field) + "'");
  }
  return *found;
}

SafetensorsDtype parse_dtype(const json& value, const std::string& file_name, const std::string& subject) {
  if (!value.is_string()) {
    throw ModelFormatError(file_name, subject, "'dtype': expected a string, found " + json_kind(value));
  }
  const std::string& text = value.get_ref<const std::string&>();
  if (const auto dtype = parse_safetensors_dtype(text)) return *dtype;
  const bool known =
      std::find(std::begin(kOtherKnownDtypes), std::end(kOtherKnownDtypes), text) != std::end(kOtherKnownDtypes);
  throw ModelFormatError(
      file_name, subject,
      (known ? "unsupported dtype '" : "unknown dtype '") + text + "' (" + std::string(kSupported) + ")");
}

// A JSON array of non-negative integers, as `shape` and `data_offsets` are.
std::vector<std::uint64_t> parse_unsigned_array(const json& value, std::string_view field, const std::string& file_name,
                                                const std::string& subject) {
  // Appended, not "'" + std::string(field): GCC 12 -O3 warns falsely (-Wrestrict) on the latter.
  std::string where = "'";
  where.append(field).append("'");
  if (!value.is_array()) {
    throw ModelFormatError(file_name, subject, where + ": expected an array, found " + json_kind(value));
  }
  std::vector<std::uint64_t> numbers;
  numbers.reserve(value.size());
  for (const json& item : value) {
    if (!item.is_number_unsigned()) {
      throw ModelFormatError(file_name, subject, where + ": expected non-negative integers, found " + json_kind(item));
    }
    numbers.push_back(item.get<std::uint64_t>());
  }
  return numbers;
}

SafetensorsTensorInfo parse_tensor(const std::string& name, const json& entry, std::uint64_t data_size,
                                   const std::string& file_name) {
  const std::string subject = tensor_subject(name);
  if (!entry.is_object()) {
    throw ModelFormatError(file_name, subject, "expected an object, found " + json_kind(entry));
  }
  SafetensorsTensorInfo tensor;
  tensor.name = name;
  tensor.dtype = parse_dtype(require_field(entry, "dtype", file_name, subject), file_name, subject);
  tensor.shape = parse_unsigned_array(require_field(entry, "shape", file_name, subject), "shape", file_name, subject);
  const std::vector<std::uint64_t> offsets = parse_unsigned_array(
      require_field(entry, "data_offsets", file_name, subject), "data_offsets", file_name, subject);
  if (offsets.size() != 2) {
    throw ModelFormatError(
        file_name, subject,
        "'data_offsets': expected [begin, end], found " + std::to_string(offsets.size()) + " numbers");
  }
  tensor.begin = offsets[0];
  tensor.end = offsets[1];
  if (tensor.end < tensor.begin) {
    throw ModelFormatError(file_name, subject,
                           "'data_offsets' " + range_text(tensor.begin, tensor.end) + ": end is before begin");
  }
  if (tensor.end > data_size) {
    throw ModelFormatError(file_name, subject,
                           "'data_offsets' " + range_text(tensor.begin, tensor.end) +
                               " extend beyond the data section of " + std::to_string(data_size) + " bytes");
  }
  // Element count and byte size, refusing a shape whose product overflows 64 bits.
  std::uint64_t num_elements = 1;
  bool overflow = false;
  for (const std::uint64_t dim : tensor.shape) {
    if (dim != 0 && num_elements > UINT64_MAX / dim) overflow = true;
    num_elements *= dim;
  }
  const std::uint64_t element_size = dtype_size(tensor.dtype);
  if (overflow || num_elements > UINT64_MAX / element_size) {
    throw ModelFormatError(file_name, subject,
                           "shape " + shape_text(tensor.shape) + " has more elements than fit in memory");
  }
  tensor.num_elements = num_elements;
  const std::uint64_t expected_bytes = num_elements * element_size;
  if (tensor.num_bytes() != expected_bytes) {
    throw ModelFormatError(file_name, subject,
                           "shape " + shape_text(tensor.shape) + " of " + std::string(to_string(tensor.dtype)) +
                               " needs " + std::to_string(expected_bytes) + " bytes, 'data_offsets' " +
                               range_text(tensor.begin, tensor.end) + " hold " + std::to_string(tensor.num_bytes()));
  }
  return tensor;
}

// Two tensors may not share a byte (empty tensors occupy none).
void check_no_overlap(const std::vector<SafetensorsTensorInfo>& tensors, const std::string& file_name) {
  std::vector<const SafetensorsTensorInfo*> by_offset;
  for (const SafetensorsTensorInfo& tensor : tensors) {
    if (tensor.num_bytes() != 0) by_offset.push_back(&tensor);
  }
  std::sort(by_offset.begin(), by_offset.end(), [](const auto* a, const auto* b) { return a->begin < b->begin; });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    const SafetensorsTensorInfo& previous = *by_offset[i - 1];
    const SafetensorsTensorInfo& current = *by_offset[i];
    if (current.begin < previous.end) {
      throw ModelFormatError(file_name, tensor_subject(current.name),
                             "'data_offsets' " + range_text(current.begin, current.end) + " overlap tensor '" +
                                 previous.name + "' " + range_text(previous.begin, previous.end));
    }
  }
}

void check_data_size(const SafetensorsTensorInfo& tensor, std::span<const std::byte> data, const char* caller) {
  if (data.size() != tensor.num_elements * dtype_size(tensor.dtype)) {
    throw std::invalid_argument(std::string(caller) + ": tensor '" + tensor.name + "' needs " +
                                std::to_string(tensor.num_elements * dtype_size(tensor.dtype)) + " bytes, given " +
                                std::to_string(data.size()));
  }
}

}  // namespace

std::string_view to_string(SafetensorsDtype dtype) noexcept {
  switch (dtype) {
    case SafetensorsDtype::f32:
      return "F32";
    case SafetensorsDtype::f16:
      return "F16";
    case SafetensorsDtype::bf16:
      return "BF16";
  }
  return "?";
}

std::size_t dtype_size(SafetensorsDtype dtype) noexcept { return dtype == SafetensorsDtype::f32 ? 4 : 2; }

std::optional<SafetensorsDtype> parse_safetensors_dtype(std::string_view text) noexcept {
  if (text == "F32") return SafetensorsDtype::f32;
  if (text == "F16") return SafetensorsDtype::f16;
  if (text == "BF16") return SafetensorsDtype::bf16;
  return std::nullopt;
}

const SafetensorsTensorInfo* SafetensorsHeader::find(std::string_view name) const noexcept {
  const auto found =
      std::lower_bound(tensors.begin(), tensors.end(), name,
                       [](const SafetensorsTensorInfo& tensor, std::string_view key) { return tensor.name < key; });
  return found != tensors.end() && found->name == name ? &*found : nullptr;
}

SafetensorsHeader parse_safetensors_header(std::span<const std::byte> bytes, const std::string& file_name) {
  if (bytes.size() < kHeaderLengthBytes) {
    throw ModelFormatError(file_name, "header length",
                           "expected at least 8 bytes, the file has " + std::to_string(bytes.size()));
  }
  std::uint64_t header_length = 0;
  std::memcpy(&header_length, bytes.data(), sizeof header_length);
  const std::uint64_t available = bytes.size() - kHeaderLengthBytes;
  if (header_length > available) {
    throw ModelFormatError(file_name, "header length",
                           "the header claims " + std::to_string(header_length) + " bytes, only " +
                               std::to_string(available) + " follow the length field");
  }
  if (header_length > kMaxHeaderBytes) {
    throw ModelFormatError(
        file_name, "header length",
        std::to_string(header_length) + " bytes exceeds the limit of " + std::to_string(kMaxHeaderBytes));
  }
  SafetensorsHeader header;
  header.data_offset = kHeaderLengthBytes + header_length;
  header.data_size = bytes.size() - header.data_offset;

  const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + kHeaderLengthBytes, header_length);
  const json root = parse_header_json(text, file_name);
  for (const auto& [key, entry] : root.items()) {
    if (key == kMetadataKey) {
      header.metadata = parse_metadata(entry, file_name);
    } else {
      header.tensors.push_back(parse_tensor(key, entry, header.data_size, file_name));
    }
  }
  // nlohmann's objects iterate in key order already; sort anyway so find() never depends on it.
  std::sort(header.tensors.begin(), header.tensors.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  check_no_overlap(header.tensors, file_name);
  return header;
}

std::vector<float> tensor_to_f32(const SafetensorsTensorInfo& tensor, std::span<const std::byte> data) {
  check_data_size(tensor, data, "tensor_to_f32");
  std::vector<float> values(tensor.num_elements);
  if (values.empty()) return values;
  if (tensor.dtype == SafetensorsDtype::f32) {
    std::memcpy(values.data(), data.data(), values.size() * sizeof(float));
    return values;
  }
  // The mapping need not be 2-byte aligned: read each element through memcpy.
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint16_t bits = 0;
    std::memcpy(&bits, data.data() + 2 * i, sizeof bits);
    values[i] = tensor.dtype == SafetensorsDtype::f16 ? fp16_to_float(bits) : bf16_to_float(bits);
  }
  return values;
}

std::vector<std::uint16_t> tensor_to_bf16(const SafetensorsTensorInfo& tensor, std::span<const std::byte> data) {
  check_data_size(tensor, data, "tensor_to_bf16");
  std::vector<std::uint16_t> values(tensor.num_elements);
  if (values.empty()) return values;
  if (tensor.dtype == SafetensorsDtype::bf16) {
    std::memcpy(values.data(), data.data(), values.size() * sizeof(std::uint16_t));
    return values;
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    float value = 0.0f;
    if (tensor.dtype == SafetensorsDtype::f32) {
      std::memcpy(&value, data.data() + 4 * i, sizeof value);
    } else {
      std::uint16_t bits = 0;
      std::memcpy(&bits, data.data() + 2 * i, sizeof bits);
      value = fp16_to_float(bits);
    }
    values[i] = float_to_bf16(value);
  }
  return values;
}

SafetensorsFile::SafetensorsFile(std::string path)
    : file_(std::make_shared<const MappedFile>(std::move(path))),
      header_(parse_safetensors_header(file_->bytes(), file_->path())) {}

const SafetensorsTensorInfo& SafetensorsFile::tensor(std::string_view name) const {
  const SafetensorsTensorInfo* found = find_tensor(name);
  if (found == nullptr) throw ModelFormatError(path(), tensor_subject(name), "not in this file");
  return *found;
}

std::span<const std::byte> SafetensorsFile::tensor_data(const SafetensorsTensorInfo& tensor) const noexcept {
  return file_->bytes().subspan(header_.data_offset + tensor.begin, tensor.num_bytes());
}

std::vector<float> SafetensorsFile::read_f32(std::string_view name) const {
  const SafetensorsTensorInfo& info = tensor(name);
  return tensor_to_f32(info, tensor_data(info));
}

std::vector<std::uint16_t> SafetensorsFile::read_bf16(std::string_view name) const {
  const SafetensorsTensorInfo& info = tensor(name);
  return tensor_to_bf16(info, tensor_data(info));
}

}  // namespace pagedllm::model
