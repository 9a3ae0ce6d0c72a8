#include "core/tokenizer/normalizer.h"

#include <climits>
#include <stdexcept>

#ifdef PAGEDLLM_HAVE_ICU
#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>
#endif

namespace pagedllm::tokenizer {

#ifdef PAGEDLLM_HAVE_ICU

bool nfc_available() noexcept { return true; }

void to_nfc(std::string_view text, std::string& out) {
  if (text.size() > static_cast<std::size_t>(INT32_MAX)) throw std::length_error("NFC: text over 2 GiB");
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status)) throw std::runtime_error(std::string("ICU NFC: ") + u_errorName(status));
  const icu::StringPiece input(text.data(), static_cast<int32_t>(text.size()));
  out.clear();
  // Most text is already NFC: check first, copy without building anything.
  if (nfc->isNormalizedUTF8(input, status) && U_SUCCESS(status)) {
    out.assign(text);
    return;
  }
  status = U_ZERO_ERROR;
  icu::StringByteSink<std::string> sink(&out, static_cast<int32_t>(text.size()));
  nfc->normalizeUTF8(0, input, sink, nullptr, status);
  if (U_FAILURE(status)) throw std::runtime_error(std::string("ICU NFC: ") + u_errorName(status));
}

#else

bool nfc_available() noexcept { return false; }

void to_nfc(std::string_view, std::string&) {
  throw std::runtime_error("this pagedllm build has no NFC normalizer (built without ICU: install libicu-dev)");
}

#endif

}  // namespace pagedllm::tokenizer
