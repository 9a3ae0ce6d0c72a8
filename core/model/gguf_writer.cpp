#include "core/model/gguf_writer.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <stdexcept>

namespace pagedllm::model {
namespace {

constexpr std::uint32_t kGgufVersion = 3;
constexpr std::size_t kMaxTensorNameBytes = 63;  // ggml's GGML_MAX_NAME, less its terminator
constexpr std::uint64_t kMaxAlignment = 65536;

[[noreturn]] void reject_key(const std::string& key, const std::string& problem) {
  throw std::invalid_argument("GgufWriter: key '" + key + "': " + problem);
}

[[noreturn]] void reject_tensor(const std::string& name, const std::string& problem) {
  throw std::invalid_argument("GgufWriter: tensor '" + name + "': " + problem);
}

bool is_unsigned(GgufValueType type) {
  return type == GgufValueType::u8 || type == GgufValueType::u16 || type == GgufValueType::u32 ||
         type == GgufValueType::u64;
}

bool is_signed(GgufValueType type) {
  return type == GgufValueType::i8 || type == GgufValueType::i16 || type == GgufValueType::i32 ||
         type == GgufValueType::i64;
}

std::uint64_t unsigned_max(GgufValueType type) {
  switch (type) {
    case GgufValueType::u8:
      return std::numeric_limits<std::uint8_t>::max();
    case GgufValueType::u16:
      return std::numeric_limits<std::uint16_t>::max();
    case GgufValueType::u32:
      return std::numeric_limits<std::uint32_t>::max();
    default:
      return std::numeric_limits<std::uint64_t>::max();
  }
}

template <typename T>
std::pair<std::int64_t, std::int64_t> range_of() {
  return {std::numeric_limits<T>::min(), std::numeric_limits<T>::max()};
}

// [min, max] of a signed type.
std::pair<std::int64_t, std::int64_t> signed_range(GgufValueType type) {
  switch (type) {
    case GgufValueType::i8:
      return range_of<std::int8_t>();
    case GgufValueType::i16:
      return range_of<std::int16_t>();
    case GgufValueType::i32:
      return range_of<std::int32_t>();
    default:
      return range_of<std::int64_t>();
  }
}

// Whether an integer value (either alternative) fits an integer type.
bool integer_fits(const GgufValue& value, GgufValueType type) {
  const auto* u = std::get_if<std::uint64_t>(&value.value);
  const auto* i = std::get_if<std::int64_t>(&value.value);
  if (u == nullptr && i == nullptr) return false;
  if (is_unsigned(type)) {
    if (i != nullptr && *i < 0) return false;
    const std::uint64_t magnitude = u != nullptr ? *u : static_cast<std::uint64_t>(*i);
    return magnitude <= unsigned_max(type);
  }
  const auto [low, high] = signed_range(type);
  if (u != nullptr) return *u <= static_cast<std::uint64_t>(high);
  return *i >= low && *i <= high;
}

std::string type_name(GgufValueType type) {
  static constexpr const char* kNames[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                           "bool", "string", "array", "u64", "i64", "f64"};
  const auto code = static_cast<std::uint32_t>(type);
  return code < std::size(kNames) ? kNames[code] : "type " + std::to_string(code);
}

void check_value(const std::string& key, const GgufValue& value, int depth) {
  const GgufValueType type = value.type;
  const std::string expected = "expected a " + type_name(type) + " value";
  if (is_unsigned(type) || is_signed(type)) {
    if (!integer_fits(value, type)) reject_key(key, expected + " that fits it");
    return;
  }
  switch (type) {
    case GgufValueType::f32: {
      const auto* d = std::get_if<double>(&value.value);
      if (d == nullptr) reject_key(key, expected);
      if (std::isfinite(*d) && std::fabs(*d) > std::numeric_limits<float>::max()) {
        reject_key(key, "f32 value out of range");
      }
      return;
    }
    case GgufValueType::f64:
      if (!std::holds_alternative<double>(value.value)) reject_key(key, expected);
      return;
    case GgufValueType::boolean:
      if (!std::holds_alternative<bool>(value.value)) reject_key(key, expected);
      return;
    case GgufValueType::string:
      if (!std::holds_alternative<std::string>(value.value)) reject_key(key, expected);
      return;
    case GgufValueType::array: {
      const auto* array = std::get_if<GgufArray>(&value.value);
      if (array == nullptr) reject_key(key, expected);
      if (depth + 1 >= kGgufMaxArrayNesting && array->element_type == GgufValueType::array) {
        reject_key(key, "arrays nested more than " + std::to_string(kGgufMaxArrayNesting) + " deep");
      }
      for (const GgufValue& item : array->items) {
        if (item.type != array->element_type) {
          reject_key(key, "array of " + type_name(array->element_type) + " holds a " + type_name(item.type));
        }
        check_value(key, item, depth + 1);
      }
      return;
    }
    default:
      reject_key(key, "unknown value type " + type_name(type));
  }
}

// Little-endian serialisation of the header (the host is little endian, as GGUF).
class ByteSink {
 public:
  template <typename T>
  void put(T value) {
    const std::size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &value, sizeof(T));
  }

  void put_string(const std::string& text) {
    put<std::uint64_t>(text.size());
    const auto* begin = reinterpret_cast<const std::byte*>(text.data());
    bytes_.insert(bytes_.end(), begin, begin + text.size());
  }

  void pad_to(std::uint64_t alignment) { bytes_.resize((bytes_.size() + alignment - 1) / alignment * alignment); }

  const std::vector<std::byte>& bytes() const noexcept { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
};

std::uint64_t integer_bits(const GgufValue& value) {
  if (const auto* u = std::get_if<std::uint64_t>(&value.value)) return *u;
  return static_cast<std::uint64_t>(std::get<std::int64_t>(value.value));
}

// The payload of a checked value (its type code is written by the caller).
void put_payload(ByteSink& sink, const GgufValue& value) {
  switch (value.type) {
    case GgufValueType::u8:
    case GgufValueType::i8:
      sink.put(static_cast<std::uint8_t>(integer_bits(value)));
      return;
    case GgufValueType::u16:
    case GgufValueType::i16:
      sink.put(static_cast<std::uint16_t>(integer_bits(value)));
      return;
    case GgufValueType::u32:
    case GgufValueType::i32:
      sink.put(static_cast<std::uint32_t>(integer_bits(value)));
      return;
    case GgufValueType::u64:
    case GgufValueType::i64:
      sink.put(integer_bits(value));
      return;
    case GgufValueType::f32:
      sink.put(static_cast<float>(std::get<double>(value.value)));
      return;
    case GgufValueType::f64:
      sink.put(std::get<double>(value.value));
      return;
    case GgufValueType::boolean:
      sink.put(static_cast<std::uint8_t>(std::get<bool>(value.value) ? 1 : 0));
      return;
    case GgufValueType::string:
      sink.put_string(std::get<std::string>(value.value));
      return;
    case GgufValueType::array: {
      const auto& array = std::get<GgufArray>(value.value);
      sink.put(static_cast<std::uint32_t>(array.element_type));
      sink.put<std::uint64_t>(array.items.size());
      for (const GgufValue& item : array.items) put_payload(sink, item);
      return;
    }
  }
}

std::uint64_t padded(std::uint64_t size, std::uint64_t alignment) {
  return (size + alignment - 1) / alignment * alignment;
}

// A FILE* that closes itself; write() checks every call.
struct FileCloser {
  void operator()(std::FILE* file) const noexcept { std::fclose(file); }
};

}  // namespace

void GgufWriter::add(std::string key, GgufValue value) {
  if (keys_.contains(key)) reject_key(key, "added twice");
  check_value(key, value, 0);
  if (key == "general.alignment") {
    const auto* alignment = std::get_if<std::uint64_t>(&value.value);
    const auto* signed_alignment = std::get_if<std::int64_t>(&value.value);
    const std::uint64_t amount = alignment != nullptr          ? *alignment
                                 : signed_alignment != nullptr ? static_cast<std::uint64_t>(*signed_alignment)
                                                               : 0;
    // gguf-py honours the key only as a u32.
    if (value.type != GgufValueType::u32 || amount == 0 || (amount & (amount - 1)) != 0 || amount > kMaxAlignment) {
      reject_key(key, "expected a u32 power of two up to " + std::to_string(kMaxAlignment));
    }
    alignment_ = amount;
  }
  keys_.insert(key);
  metadata_.emplace_back(std::move(key), std::move(value));
}

void GgufWriter::add_u8(std::string key, std::uint8_t value) {
  add(std::move(key), {GgufValueType::u8, std::uint64_t{value}});
}
void GgufWriter::add_i8(std::string key, std::int8_t value) {
  add(std::move(key), {GgufValueType::i8, std::int64_t{value}});
}
void GgufWriter::add_u16(std::string key, std::uint16_t value) {
  add(std::move(key), {GgufValueType::u16, std::uint64_t{value}});
}
void GgufWriter::add_i16(std::string key, std::int16_t value) {
  add(std::move(key), {GgufValueType::i16, std::int64_t{value}});
}
void GgufWriter::add_u32(std::string key, std::uint32_t value) {
  add(std::move(key), {GgufValueType::u32, std::uint64_t{value}});
}
void GgufWriter::add_i32(std::string key, std::int32_t value) {
  add(std::move(key), {GgufValueType::i32, std::int64_t{value}});
}
void GgufWriter::add_u64(std::string key, std::uint64_t value) { add(std::move(key), {GgufValueType::u64, value}); }
void GgufWriter::add_i64(std::string key, std::int64_t value) { add(std::move(key), {GgufValueType::i64, value}); }
void GgufWriter::add_f32(std::string key, float value) { add(std::move(key), {GgufValueType::f32, double{value}}); }
void GgufWriter::add_f64(std::string key, double value) { add(std::move(key), {GgufValueType::f64, value}); }
void GgufWriter::add_bool(std::string key, bool value) { add(std::move(key), {GgufValueType::boolean, value}); }
void GgufWriter::add_string(std::string key, std::string value) {
  add(std::move(key), {GgufValueType::string, std::move(value)});
}

void GgufWriter::add_array(std::string key, GgufValueType element_type, std::vector<GgufValue> items) {
  add(std::move(key), {GgufValueType::array, GgufArray{element_type, std::move(items)}});
}

void GgufWriter::add_string_array(std::string key, const std::vector<std::string>& values) {
  std::vector<GgufValue> items;
  items.reserve(values.size());
  for (const std::string& text : values) items.push_back({GgufValueType::string, text});
  add_array(std::move(key), GgufValueType::string, std::move(items));
}

void GgufWriter::add_f32_array(std::string key, std::span<const float> values) {
  std::vector<GgufValue> items;
  items.reserve(values.size());
  for (const float number : values) items.push_back({GgufValueType::f32, double{number}});
  add_array(std::move(key), GgufValueType::f32, std::move(items));
}

void GgufWriter::add_i32_array(std::string key, std::span<const std::int32_t> values) {
  std::vector<GgufValue> items;
  items.reserve(values.size());
  for (const std::int32_t number : values) items.push_back({GgufValueType::i32, std::int64_t{number}});
  add_array(std::move(key), GgufValueType::i32, std::move(items));
}

void GgufWriter::add_u32_array(std::string key, std::span<const std::uint32_t> values) {
  std::vector<GgufValue> items;
  items.reserve(values.size());
  for (const std::uint32_t number : values) items.push_back({GgufValueType::u32, std::uint64_t{number}});
  add_array(std::move(key), GgufValueType::u32, std::move(items));
}

void GgufWriter::add_tensor(std::string name, std::vector<std::uint64_t> dims, GgmlType type,
                            std::vector<std::byte> data) {
  if (name.empty()) reject_tensor(name, "empty name");
  if (name.size() > kMaxTensorNameBytes) {
    reject_tensor(name, "name longer than " + std::to_string(kMaxTensorNameBytes) + " bytes");
  }
  if (tensor_names_.contains(name)) reject_tensor(name, "added twice");
  const std::optional<GgmlTypeTraits> traits = ggml_type_traits(static_cast<std::uint32_t>(type));
  if (!traits) reject_tensor(name, "unknown ggml type " + std::to_string(static_cast<std::uint32_t>(type)));
  if (dims.empty() || dims.size() > kGgufMaxDims) {
    reject_tensor(name, "expected 1 to " + std::to_string(kGgufMaxDims) + " dims, got " + std::to_string(dims.size()));
  }
  std::uint64_t num_elements = 1;
  for (const std::uint64_t dim : dims) {
    if (dim == 0 || num_elements > std::numeric_limits<std::uint64_t>::max() / dim) {
      reject_tensor(name, "a dim is zero or the element count overflows");
    }
    num_elements *= dim;
  }
  if (dims[0] % traits->block_size != 0) {
    reject_tensor(name, "row length " + std::to_string(dims[0]) + " is not a multiple of the " +
                            std::string(traits->name) + " block size " + std::to_string(traits->block_size));
  }
  const std::uint64_t num_bytes = num_elements / traits->block_size * traits->type_size;
  if (data.size() != num_bytes) {
    reject_tensor(name, std::to_string(num_elements) + " " + std::string(traits->name) + " values take " +
                            std::to_string(num_bytes) + " bytes, got " + std::to_string(data.size()));
  }
  tensor_names_.insert(name);
  tensors_.push_back({std::move(name), std::move(dims), type, std::move(data)});
}

void GgufWriter::write(const std::string& path) const {
  ByteSink header;
  header.put(kGgufMagic);
  header.put(kGgufVersion);
  header.put<std::uint64_t>(tensors_.size());
  header.put<std::uint64_t>(metadata_.size());
  for (const auto& [key, value] : metadata_) {
    header.put_string(key);
    header.put(static_cast<std::uint32_t>(value.type));
    put_payload(header, value);
  }
  std::uint64_t offset = 0;
  for (const Tensor& tensor : tensors_) {
    header.put_string(tensor.name);
    header.put(static_cast<std::uint32_t>(tensor.dims.size()));
    for (const std::uint64_t dim : tensor.dims) header.put(dim);
    header.put(static_cast<std::uint32_t>(tensor.type));
    header.put(offset);
    offset += padded(tensor.data.size(), alignment_);
  }
  header.pad_to(alignment_);

  const std::string partial = path + ".partial";
  auto fail = [&](const std::string& what) {
    const int error = errno;
    std::remove(partial.c_str());
    throw std::runtime_error(path + ": cannot " + what + ": " + std::strerror(error));
  };
  {
    std::unique_ptr<std::FILE, FileCloser> file(std::fopen(partial.c_str(), "wb"));
    if (!file) fail("create " + partial);
    auto put = [&](const void* bytes, std::size_t size) {
      if (size != 0 && std::fwrite(bytes, 1, size, file.get()) != size) fail("write");
    };
    put(header.bytes().data(), header.bytes().size());
    const std::vector<std::byte> zeros(alignment_);
    for (const Tensor& tensor : tensors_) {
      put(tensor.data.data(), tensor.data.size());
      put(zeros.data(), padded(tensor.data.size(), alignment_) - tensor.data.size());
    }
    if (std::fflush(file.get()) != 0) fail("write");
    if (std::fclose(file.release()) != 0) fail("close");
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) fail("rename " + partial + " to it");
}

}  // namespace pagedllm::model
