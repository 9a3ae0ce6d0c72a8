// The benchmarks' shared command line (bench_cli.h).
#include "tools/bench/bench_cli.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <system_error>
#include <utility>

namespace pagedllm::bench {
namespace {

constexpr size_t kUsageWidth = 100;
constexpr std::string_view kQuickFlag = "--quick";

std::string synopsis_of(const BenchFlag& flag) {
  const std::string text = flag.name + (flag.value_name.empty() ? "" : " " + flag.value_name);
  return flag.required ? text : "[" + text + "]";
}

}  // namespace

BenchCommandLine& BenchCommandLine::add(BenchFlag flag) {
  if (find(flag.name) != nullptr || flag.name == kQuickFlag) {
    throw std::logic_error(program_ + ": flag " + flag.name + " declared twice");
  }
  flags_.push_back(std::move(flag));
  return *this;
}

BenchCommandLine& BenchCommandLine::add_quick(std::string help, std::function<void()> apply) {
  quick_ = apply;
  flags_.push_back({std::string(kQuickFlag), "", std::move(help), [apply](std::string_view) { apply(); }});
  return *this;
}

const BenchFlag* BenchCommandLine::find(std::string_view name) const {
  const auto it = std::find_if(flags_.begin(), flags_.end(), [&](const BenchFlag& flag) { return flag.name == name; });
  return it == flags_.end() ? nullptr : &*it;
}

std::string BenchCommandLine::usage() const {
  const std::string lead = "usage: " + program_;
  std::string text = lead;
  size_t line_start = 0;
  for (const BenchFlag& flag : flags_) {
    const std::string part = synopsis_of(flag);
    if (text.size() - line_start + 1 + part.size() > kUsageWidth) {
      text += "\n" + std::string(lead.size(), ' ');
      line_start = text.size() - lead.size();
    }
    text += " " + part;
  }
  text += "\n";
  size_t column = 0;
  for (const BenchFlag& flag : flags_) column = std::max(column, flag.name.size() + 1 + flag.value_name.size());
  for (const BenchFlag& flag : flags_) {
    std::string left = flag.name + (flag.value_name.empty() ? "" : " " + flag.value_name);
    left.resize(column, ' ');
    text += "  " + left + "  " + flag.help + "\n";
  }
  return text;
}

bool BenchCommandLine::parse(int argc, char** argv) const {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  if (std::find(args.begin(), args.end(), "--help") != args.end() ||
      std::find(args.begin(), args.end(), "-h") != args.end()) {
    std::fputs(usage().c_str(), stdout);
    return false;
  }
  if (quick_ && std::find(args.begin(), args.end(), kQuickFlag) != args.end()) quick_();
  std::vector<const BenchFlag*> given;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view name = args[i];
    const BenchFlag* flag = find(name);
    if (flag == nullptr) throw UsageError("unknown flag '" + std::string(name) + "'");
    given.push_back(flag);
    if (flag->name == kQuickFlag) continue;  // applied first
    if (flag->value_name.empty()) {
      flag->apply("");
      continue;
    }
    if (i + 1 >= args.size()) throw UsageError(flag->name + " needs a value (" + flag->value_name + ")");
    flag->apply(args[++i]);
  }
  for (const BenchFlag& flag : flags_) {
    if (flag.required && std::find(given.begin(), given.end(), &flag) == given.end()) {
      throw UsageError(flag.name + " is required");
    }
  }
  return true;
}

int64_t parse_integer(std::string_view flag, std::string_view text, int64_t minimum, int64_t maximum) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value < minimum || value > maximum) {
    throw UsageError(std::string(flag) + " needs an integer in [" + std::to_string(minimum) + ", " +
                     std::to_string(maximum) + "], got '" + std::string(text) + "'");
  }
  return value;
}

std::vector<std::string> parse_name_list(std::string_view flag, std::string_view text) {
  std::vector<std::string> names;
  size_t start = 0;
  while (true) {
    const size_t comma = std::min(text.find(',', start), text.size());
    if (comma == start) throw UsageError(std::string(flag) + ": empty item in '" + std::string(text) + "'");
    names.emplace_back(text.substr(start, comma - start));
    if (comma == text.size()) return names;
    start = comma + 1;
  }
}

std::vector<int64_t> parse_integer_list(std::string_view flag, std::string_view text, int64_t minimum,
                                        int64_t maximum) {
  std::vector<int64_t> values;
  for (const std::string& item : parse_name_list(flag, text))
    values.push_back(parse_integer(flag, item, minimum, maximum));
  return values;
}

double parse_positive_number(std::string_view flag, std::string_view text) {
  const std::string copy(text);
  char* end = nullptr;
  const double value = copy.empty() ? 0.0 : std::strtod(copy.c_str(), &end);
  if (copy.empty() || end != copy.c_str() + copy.size() || !(value > 0.0) || !std::isfinite(value)) {
    throw UsageError(std::string(flag) + " needs a positive number, got '" + copy + "'");
  }
  return value;
}

int run_benchmark(const BenchCommandLine& command_line, int argc, char** argv, const std::function<int()>& body) {
  const char* program = command_line.program().c_str();
  try {
    if (!command_line.parse(argc, argv)) return 0;
    return body();
  } catch (const UsageError& error) {
    std::fprintf(stderr, "%s: %s\n%s", program, error.what(), command_line.usage().c_str());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: %s\n", program, error.what());
    return 1;
  }
}

}  // namespace pagedllm::bench
