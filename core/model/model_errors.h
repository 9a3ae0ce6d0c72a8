// Errors raised while reading model files (config.json, safetensors, GGUF, tokenizer.json).
//
// Every error names the file, the tensor or field at fault (when there is one) and what was
// expected, so that a user can tell a truncated download from a wrong architecture.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace pagedllm::model {

class ModelFormatError : public std::runtime_error {
 public:
  // what(): "<file>: <subject>: <problem>" (subject omitted when empty).
  ModelFormatError(std::string file, std::string subject, const std::string& problem)
      : std::runtime_error(compose(file, subject, problem)), file_(std::move(file)), subject_(std::move(subject)) {}

  const std::string& file() const noexcept { return file_; }
  // The tensor or field at fault, e.g. "tensor 'blk.0.attn_q.weight'" or "field 'hidden_size'".
  const std::string& subject() const noexcept { return subject_; }

 private:
  static std::string compose(const std::string& file, const std::string& subject, const std::string& problem) {
    std::string text = file;
    if (!subject.empty()) text += ": " + subject;
    text += ": " + problem;
    return text;
  }

  std::string file_;
  std::string subject_;
};

// The subject of an error about one tensor: "tensor '<name>'".
inline std::string tensor_subject(std::string_view name) { return "tensor '" + std::string(name) + "'"; }

}  // namespace pagedllm::model
