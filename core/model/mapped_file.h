// A read-only memory map of a whole file (safetensors and GGUF tensor data are read in place).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace pagedllm::model {

class MappedFile {
 public:
  // Throws ModelFormatError naming the path if the file cannot be opened or mapped.
  explicit MappedFile(std::string path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const noexcept { return path_; }
  std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }
  std::size_t size() const noexcept { return size_; }

 private:
  std::string path_;
  const std::byte* data_ = nullptr;  // owned mapping (nullptr for an empty file)
  std::size_t size_ = 0;
};

}  // namespace pagedllm::model
