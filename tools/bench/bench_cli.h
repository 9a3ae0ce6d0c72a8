// The command line every benchmark shares: flags declared once with their help (the usage text is
// generated from them), --quick applied before the other flags, --help, typed values with errors
// that name the flag, and main()'s frame that turns errors into exit codes.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace pagedllm::bench {

// A command line the benchmark cannot run with; run_benchmark prints it with the usage and exits 2.
class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// One flag. A flag with an empty value_name is a switch: apply gets "".
struct BenchFlag {
  std::string name;        // "--steps"
  std::string value_name;  // "N", "PATH"; empty for a switch
  std::string help;        // one line, with the default where there is one
  std::function<void(std::string_view value)> apply;
  bool required = false;  // parse throws UsageError when it is absent
};

class BenchCommandLine {
 public:
  explicit BenchCommandLine(std::string program) : program_(std::move(program)) {}

  const std::string& program() const { return program_; }

  BenchCommandLine& add(BenchFlag flag);
  // --quick: small sizes for a smoke run. Applied before every other flag wherever it stands, so
  // sizes given explicitly override it.
  BenchCommandLine& add_quick(std::string help, std::function<void()> apply);

  // "usage: program [--flag V] ...", wrapped, then one line per flag.
  std::string usage() const;

  // Applies argv's flags. Returns false when --help or -h asked for the usage (printed on stdout).
  // Throws UsageError for an unknown flag, a missing value, a value its flag refuses or a required
  // flag left out.
  bool parse(int argc, char** argv) const;

 private:
  const BenchFlag* find(std::string_view name) const;

  std::string program_;
  std::vector<BenchFlag> flags_;
  std::function<void()> quick_;
};

// An integer in [minimum, maximum], whole text; UsageError naming the flag otherwise.
int64_t parse_integer(std::string_view flag, std::string_view text, int64_t minimum,
                      int64_t maximum = std::numeric_limits<int32_t>::max());
// A comma-separated list of such integers ("1,4,8"), at least one.
std::vector<int64_t> parse_integer_list(std::string_view flag, std::string_view text, int64_t minimum,
                                        int64_t maximum = std::numeric_limits<int32_t>::max());
// A comma-separated list of non-empty names, at least one.
std::vector<std::string> parse_name_list(std::string_view flag, std::string_view text);
// A finite number > 0, whole text; UsageError naming the flag otherwise.
double parse_positive_number(std::string_view flag, std::string_view text);

// main()'s frame: parses the command line, then runs `body` and returns its exit code. A
// UsageError prints "program: message" and the usage on stderr and returns 2; any other exception
// prints "program: message" and returns 1; --help returns 0.
int run_benchmark(const BenchCommandLine& command_line, int argc, char** argv, const std::function<int()>& body);

}  // namespace pagedllm::bench
