// The normalizers pagedllm supports: none, or Unicode NFC (what Qwen2's tokenizer.json asks for),
// done with ICU when the build found it (PAGEDLLM_HAVE_ICU).
#pragma once

#include <string>
#include <string_view>

namespace pagedllm::tokenizer {

// Whether this build can apply NFC.
bool nfc_available() noexcept;

// NFC of valid UTF-8 text, into `out` (replacing its contents). Throws std::runtime_error when
// !nfc_available().
void to_nfc(std::string_view text, std::string& out);

}  // namespace pagedllm::tokenizer
