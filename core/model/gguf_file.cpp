#include "core/model/gguf_file.h"

#include <cstring>
#include <limits>
#include <string_view>
#include <utility>

#include "core/model/model_errors.h"

namespace pagedllm::model {
namespace {

// Bounds-checked little-endian cursor over the header bytes. Every read names what it was
// reading when it runs past the end, so a truncated file says where it was cut.
class Cursor {
 public:
  Cursor(std::span<const std::byte> bytes, const std::string& file) : bytes_(bytes), file_(file) {}

  template <typename T>
  T read(const std::string& what) {
    require(sizeof(T), what);
    T value;
    std::memcpy(&value, bytes_.data() + position_, sizeof(T));
    position_ += sizeof(T);
    return value;
  }

  std::string read_string(const std::string& what) {
    const auto length = read<std::uint64_t>(what + " (string length)");
    require(length, what + " (string of " + std::to_string(length) + " bytes)");
    std::string text(reinterpret_cast<const char*>(bytes_.data() + position_), static_cast<std::size_t>(length));
    position_ += static_cast<std::size_t>(length);
    return text;
  }

  std::size_t position() const noexcept { return position_; }
  std::size_t remaining() const noexcept { return bytes_.size() - position_; }

  [[noreturn]] void fail(const std::string& subject, const std::string& problem) const {
    throw ModelFormatError(file_, subject, problem);
  }

 private:
  void require(std::uint64_t count, const std::string& what) const {
    if (count > remaining()) {
      fail(what, "file ends at byte " + std::to_string(bytes_.size()) + ", " + std::to_string(count) +
                     " bytes needed at offset " + std::to_string(position_) + " (truncated file?)");
    }
  }

  std::span<const std::byte> bytes_;
  const std::string& file_;
  std::size_t position_ = 0;
};

// Smallest encoded size of one value of a type: bounds an array's claimed length before any
// allocation, so a corrupt count cannot ask for terabytes.
std::uint64_t min_encoded_size(GgufValueType type) {
  switch (type) {
    case GgufValueType::u8:
    case GgufValueType::i8:
    case GgufValueType::boolean:
      return 1;
    case GgufValueType::u16:
    case GgufValueType::i16:
      return 2;
    case GgufValueType::u32:
    case GgufValueType::i32:
    case GgufValueType::f32:
      return 4;
    case GgufValueType::u64:
    case GgufValueType::i64:
    case GgufValueType::f64:
    case GgufValueType::string:
      return 8;
    case GgufValueType::array:
      return 12;
  }
  return 1;
}

bool known_value_type(std::uint32_t code) { return code <= 12; }

GgufValue read_value(Cursor& cursor, GgufValueType type, const std::string& key, int depth) {
  GgufValue result;
  result.type = type;
  switch (type) {
    case GgufValueType::u8:
      result.value = std::uint64_t{cursor.read<std::uint8_t>(key)};
      break;
    case GgufValueType::i8:
      result.value = std::int64_t{cursor.read<std::int8_t>(key)};
      break;
    case GgufValueType::u16:
      result.value = std::uint64_t{cursor.read<std::uint16_t>(key)};
      break;
    case GgufValueType::i16:
      result.value = std::int64_t{cursor.read<std::int16_t>(key)};
      break;
    case GgufValueType::u32:
      result.value = std::uint64_t{cursor.read<std::uint32_t>(key)};
      break;
    case GgufValueType::i32:
      result.value = std::int64_t{cursor.read<std::int32_t>(key)};
      break;
    case GgufValueType::u64:
      result.value = cursor.read<std::uint64_t>(key);
      break;
    case GgufValueType::i64:
      result.value = cursor.read<std::int64_t>(key);
      break;
    case GgufValueType::f32:
      result.value = double{cursor.read<float>(key)};
      break;
    case GgufValueType::f64:
      result.value = cursor.read<double>(key);
      break;
    case GgufValueType::boolean: {
      const auto byte = cursor.read<std::uint8_t>(key);
      if (byte > 1) cursor.fail("key '" + key + "'", "bool must be 0 or 1, found " + std::to_string(byte));
      result.value = byte == 1;
      break;
    }
    case GgufValueType::string:
      result.value = cursor.read_string("key '" + key + "'");
      break;
    case GgufValueType::array: {
      if (depth >= kGgufMaxArrayNesting) cursor.fail("key '" + key + "'", "arrays nested too deeply");
      const auto element_code = cursor.read<std::uint32_t>("key '" + key + "' (array type)");
      if (!known_value_type(element_code)) {
        cursor.fail("key '" + key + "'", "unknown array element type " + std::to_string(element_code));
      }
      const auto element_type = static_cast<GgufValueType>(element_code);
      const auto count = cursor.read<std::uint64_t>("key '" + key + "' (array length)");
      if (count > cursor.remaining() / min_encoded_size(element_type)) {
        cursor.fail("key '" + key + "'", "array of " + std::to_string(count) + " elements does not fit in the " +
                                             std::to_string(cursor.remaining()) + " bytes left");
      }
      GgufArray array;
      array.element_type = element_type;
      array.items.reserve(static_cast<std::size_t>(count));
      for (std::uint64_t i = 0; i < count; ++i) {
        array.items.push_back(read_value(cursor, element_type, key, depth + 1));
      }
      result.value = std::move(array);
      break;
    }
  }
  return result;
}

GgufTensorInfo read_tensor_info(Cursor& cursor) {
  GgufTensorInfo tensor;
  tensor.name = cursor.read_string("tensor name");
  const std::string subject = tensor_subject(tensor.name);
  const auto num_dims = cursor.read<std::uint32_t>(subject + " (n_dims)");
  if (num_dims == 0 || num_dims > kGgufMaxDims) {
    cursor.fail(subject,
                "expected 1 to " + std::to_string(kGgufMaxDims) + " dimensions, found " + std::to_string(num_dims));
  }
  tensor.num_elements = 1;
  for (std::uint32_t d = 0; d < num_dims; ++d) {
    const auto dim = cursor.read<std::uint64_t>(subject + " (dims)");
    if (dim == 0 || dim > (std::uint64_t{1} << 40) ||
        tensor.num_elements > std::numeric_limits<std::uint64_t>::max() / dim) {
      cursor.fail(subject,
                  "dimension " + std::to_string(d) + " = " + std::to_string(dim) + " is zero or absurdly large");
    }
    tensor.dims.push_back(dim);
    tensor.num_elements *= dim;
  }
  const auto type_code = cursor.read<std::uint32_t>(subject + " (type)");
  const auto traits = ggml_type_traits(type_code);
  if (!traits) cursor.fail(subject, "unknown ggml type code " + std::to_string(type_code));
  tensor.type = static_cast<GgmlType>(type_code);
  if (tensor.dims[0] % traits->block_size != 0) {
    cursor.fail(subject, "row length " + std::to_string(tensor.dims[0]) + " is not a multiple of the " +
                             std::string(traits->name) + " block size " + std::to_string(traits->block_size));
  }
  const std::uint64_t num_blocks = tensor.num_elements / traits->block_size;
  if (num_blocks > std::numeric_limits<std::uint64_t>::max() / traits->type_size) {
    cursor.fail(subject, "byte size overflows");
  }
  tensor.num_bytes = num_blocks * traits->type_size;
  tensor.offset = cursor.read<std::uint64_t>(subject + " (offset)");
  return tensor;
}

}  // namespace

GgufHeader parse_gguf_header(std::span<const std::byte> bytes, const std::string& file_name) {
  Cursor cursor(bytes, file_name);
  const auto magic = cursor.read<std::uint32_t>("magic");
  if (magic != kGgufMagic) {
    cursor.fail("magic", "expected \"GGUF\" (a GGUF file), found bytes that are not");
  }
  GgufHeader header;
  header.version = cursor.read<std::uint32_t>("version");
  if (header.version != 2 && header.version != 3) {
    cursor.fail("version", "expected GGUF version 2 or 3, found " + std::to_string(header.version));
  }
  const auto num_tensors = cursor.read<std::uint64_t>("tensor_count");
  const auto num_keys = cursor.read<std::uint64_t>("kv_count");
  // Each key costs at least 12 bytes and each tensor at least 28: reject counts the file cannot hold.
  if (num_keys > cursor.remaining() / 12) {
    cursor.fail("kv_count", std::to_string(num_keys) + " key/values cannot fit in the file");
  }
  for (std::uint64_t i = 0; i < num_keys; ++i) {
    std::string key = cursor.read_string("key " + std::to_string(i));
    const auto type_code = cursor.read<std::uint32_t>("key '" + key + "' (type)");
    if (!known_value_type(type_code)) {
      cursor.fail("key '" + key + "'", "unknown value type " + std::to_string(type_code));
    }
    GgufValue value = read_value(cursor, static_cast<GgufValueType>(type_code), key, 0);
    if (!header.metadata.emplace(key, std::move(value)).second) {
      cursor.fail("key '" + key + "'", "appears twice");
    }
  }
  if (num_tensors > cursor.remaining() / 28) {
    cursor.fail("tensor_count", std::to_string(num_tensors) + " tensors cannot fit in the file");
  }
  header.tensors.reserve(static_cast<std::size_t>(num_tensors));
  for (std::uint64_t i = 0; i < num_tensors; ++i) header.tensors.push_back(read_tensor_info(cursor));

  if (auto it = header.metadata.find("general.alignment"); it != header.metadata.end()) {
    const auto* alignment = std::get_if<std::uint64_t>(&it->second.value);
    if (alignment == nullptr || *alignment == 0 || (*alignment & (*alignment - 1)) != 0 || *alignment > 65536) {
      cursor.fail("key 'general.alignment'", "expected a power of two unsigned integer");
    }
    header.alignment = *alignment;
  }
  const std::uint64_t end_of_header = cursor.position();
  header.data_offset = (end_of_header + header.alignment - 1) / header.alignment * header.alignment;
  const std::uint64_t data_size = bytes.size() >= header.data_offset ? bytes.size() - header.data_offset : 0;
  if (!header.tensors.empty() && bytes.size() < header.data_offset) {
    cursor.fail("data section", "file ends at byte " + std::to_string(bytes.size()) + " before the data section at " +
                                    std::to_string(header.data_offset) + " (truncated file?)");
  }
  for (const GgufTensorInfo& tensor : header.tensors) {
    if (tensor.offset % header.alignment != 0) {
      cursor.fail(tensor_subject(tensor.name), "data offset " + std::to_string(tensor.offset) +
                                                   " is not a multiple of the alignment " +
                                                   std::to_string(header.alignment));
    }
    if (tensor.offset > data_size || tensor.num_bytes > data_size - tensor.offset) {
      cursor.fail(tensor_subject(tensor.name),
                  "data [" + std::to_string(tensor.offset) + ", " + std::to_string(tensor.offset + tensor.num_bytes) +
                      ") lies outside the data section of " + std::to_string(data_size) + " bytes (truncated file?)");
    }
  }
  return header;
}

GgufFile::GgufFile(std::string file_path)
    : file_(std::make_shared<const MappedFile>(std::move(file_path))),
      header_(parse_gguf_header(file_->bytes(), file_->path())) {
  for (std::size_t i = 0; i < header_.tensors.size(); ++i) {
    if (!tensor_index_.emplace(header_.tensors[i].name, i).second) {
      throw ModelFormatError(file_->path(), tensor_subject(header_.tensors[i].name), "appears twice");
    }
  }
}

const GgufValue* GgufFile::find(const std::string& key) const {
  const auto it = header_.metadata.find(key);
  return it == header_.metadata.end() ? nullptr : &it->second;
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &header_.tensors[it->second];
}

std::span<const std::byte> GgufFile::tensor_data(const GgufTensorInfo& tensor) const {
  return file_->bytes().subspan(static_cast<std::size_t>(header_.data_offset + tensor.offset),
                                static_cast<std::size_t>(tensor.num_bytes));
}

namespace {

[[noreturn]] void wrong_type(const std::string& file, const std::string& key, const char* expected) {
  throw ModelFormatError(file, "key '" + key + "'", std::string("expected ") + expected);
}

}  // namespace

std::optional<std::uint64_t> GgufFile::find_u64(const std::string& key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::nullopt;
  if (const auto* u = std::get_if<std::uint64_t>(&value->value)) return *u;
  if (const auto* i = std::get_if<std::int64_t>(&value->value); i != nullptr && *i >= 0) {
    return static_cast<std::uint64_t>(*i);
  }
  wrong_type(path(), key, "a non-negative integer");
}

std::uint64_t GgufFile::get_u64(const std::string& key) const {
  if (auto value = find_u64(key)) return *value;
  throw ModelFormatError(path(), "key '" + key + "'", "missing (expected a non-negative integer)");
}

std::optional<std::int64_t> GgufFile::find_i64(const std::string& key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::nullopt;
  if (const auto* i = std::get_if<std::int64_t>(&value->value)) return *i;
  if (const auto* u = std::get_if<std::uint64_t>(&value->value);
      u != nullptr && *u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return static_cast<std::int64_t>(*u);
  }
  wrong_type(path(), key, "an integer");
}

std::optional<double> GgufFile::find_f64(const std::string& key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::nullopt;
  if (const auto* d = std::get_if<double>(&value->value)) return *d;
  if (const auto* u = std::get_if<std::uint64_t>(&value->value)) return static_cast<double>(*u);
  if (const auto* i = std::get_if<std::int64_t>(&value->value)) return static_cast<double>(*i);
  wrong_type(path(), key, "a number");
}

std::optional<bool> GgufFile::find_bool(const std::string& key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::nullopt;
  if (const auto* b = std::get_if<bool>(&value->value)) return *b;
  wrong_type(path(), key, "a bool");
}

std::optional<std::string> GgufFile::find_string(const std::string& key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::nullopt;
  if (const auto* s = std::get_if<std::string>(&value->value)) return *s;
  wrong_type(path(), key, "a string");
}

std::string GgufFile::get_string(const std::string& key) const {
  if (auto value = find_string(key)) return *value;
  throw ModelFormatError(path(), "key '" + key + "'", "missing (expected a string)");
}

std::vector<std::string> GgufFile::get_string_array(const std::string& key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) throw ModelFormatError(path(), "key '" + key + "'", "missing (expected an array of strings)");
  const auto* array = std::get_if<GgufArray>(&value->value);
  if (array == nullptr || array->element_type != GgufValueType::string) {
    wrong_type(path(), key, "an array of strings");
  }
  std::vector<std::string> result;
  result.reserve(array->items.size());
  for (const GgufValue& item : array->items) result.push_back(std::get<std::string>(item.value));
  return result;
}

std::vector<std::int64_t> GgufFile::get_int_array(const std::string& key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) throw ModelFormatError(path(), "key '" + key + "'", "missing (expected an array of integers)");
  const auto* array = std::get_if<GgufArray>(&value->value);
  if (array == nullptr) wrong_type(path(), key, "an array of integers");
  std::vector<std::int64_t> result;
  result.reserve(array->items.size());
  for (const GgufValue& item : array->items) {
    if (const auto* i = std::get_if<std::int64_t>(&item.value)) {
      result.push_back(*i);
    } else if (const auto* u = std::get_if<std::uint64_t>(&item.value)) {
      result.push_back(static_cast<std::int64_t>(*u));
    } else {
      wrong_type(path(), key, "an array of integers");
    }
  }
  return result;
}

}  // namespace pagedllm::model
