// Lookup of named presets (hardware, model shapes): case-insensitive, with the valid names listed.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace pagedllm {

template <class Preset>
std::string preset_names(const std::vector<Preset>& presets) {
  std::string names;
  for (const Preset& preset : presets) {
    if (!names.empty()) names += ", ";
    names += preset.name;
  }
  return names;
}

// The preset whose name equals `name` ignoring case; nullptr when there is none.
template <class Preset>
const Preset* find_preset(const std::vector<Preset>& presets, std::string_view name) {
  const auto same = [name](const std::string& candidate) {
    return std::equal(candidate.begin(), candidate.end(), name.begin(), name.end(), [](char a, char b) {
      return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
    });
  };
  const auto found = std::find_if(presets.begin(), presets.end(), [&](const Preset& p) { return same(p.name); });
  return found == presets.end() ? nullptr : &*found;
}

}  // namespace pagedllm
