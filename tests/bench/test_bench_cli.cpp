// The benchmarks' shared command line (tools/bench/bench_cli.h): flags, --quick first, errors that
// name the flag, required flags, the generated usage, and main()'s exit codes.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/bench/bench_cli.h"

namespace bench = pagedllm::bench;

namespace {

struct Sizes {
  int32_t steps = 1000;
  int32_t sequences = 1024;
  bool quick = false;
  bool verbose = false;
  std::string path;
};

bench::BenchCommandLine command_line(Sizes& sizes) {
  bench::BenchCommandLine cli("bench_test");
  cli.add({"--steps", "N", "timed steps (default 1000)",
           [&](std::string_view v) { sizes.steps = static_cast<int32_t>(bench::parse_integer("--steps", v, 1)); }});
  cli.add({"--sequences", "N", "requests (default 1024)", [&](std::string_view v) {
             sizes.sequences = static_cast<int32_t>(bench::parse_integer("--sequences", v, 1, 4096));
           }});
  cli.add_quick("small sizes", [&] {
    sizes.quick = true;
    sizes.steps = 40;
    sizes.sequences = 128;
  });
  cli.add({"--verbose", "", "say more", [&](std::string_view) { sizes.verbose = true; }});
  cli.add({"--json", "PATH", "also write JSON", [&](std::string_view v) { sizes.path = std::string(v); }});
  return cli;
}

// argv as main() gets it; the strings live as long as the Args.
struct Args {
  explicit Args(std::vector<std::string> words) : words_(std::move(words)) {
    words_.insert(words_.begin(), "bench_test");
    for (std::string& word : words_) pointers_.push_back(word.data());
  }
  int argc() const { return static_cast<int>(pointers_.size()); }
  char** argv() { return pointers_.data(); }

 private:
  std::vector<std::string> words_;
  std::vector<char*> pointers_;
};

Sizes parsed(std::vector<std::string> words) {
  Sizes sizes;
  Args args(std::move(words));
  BOOST_REQUIRE(command_line(sizes).parse(args.argc(), args.argv()));
  return sizes;
}

std::string usage_error(std::vector<std::string> words) {
  Sizes sizes;
  Args args(std::move(words));
  try {
    command_line(sizes).parse(args.argc(), args.argv());
  } catch (const bench::UsageError& error) {
    return error.what();
  }
  BOOST_FAIL("no UsageError");
  return "";
}

}  // namespace

BOOST_AUTO_TEST_CASE(flags_set_their_fields_and_defaults_stay_otherwise) {
  const Sizes plain = parsed({});
  BOOST_TEST(plain.steps == 1000);
  BOOST_TEST(!plain.verbose);
  const Sizes set = parsed({"--steps", "7", "--verbose", "--json", "out.json"});
  BOOST_TEST(set.steps == 7);
  BOOST_TEST(set.sequences == 1024);
  BOOST_TEST(set.verbose);
  BOOST_TEST(set.path == "out.json");
}

BOOST_AUTO_TEST_CASE(quick_applies_first_so_explicit_sizes_win_wherever_they_stand) {
  for (const std::vector<std::string>& words :
       {std::vector<std::string>{"--steps", "7", "--quick"}, std::vector<std::string>{"--quick", "--steps", "7"}}) {
    const Sizes sizes = parsed(words);
    BOOST_TEST(sizes.quick);
    BOOST_TEST(sizes.steps == 7);
    BOOST_TEST(sizes.sequences == 128);
  }
}

BOOST_AUTO_TEST_CASE(errors_name_the_flag_and_the_value) {
  BOOST_TEST(usage_error({"--bogus"}) == "unknown flag '--bogus'");
  BOOST_TEST(usage_error({"--steps"}) == "--steps needs a value (N)");
  BOOST_TEST(usage_error({"--steps", "0"}) == "--steps needs an integer in [1, 2147483647], got '0'");
  BOOST_TEST(usage_error({"--steps", "12x"}) == "--steps needs an integer in [1, 2147483647], got '12x'");
  BOOST_TEST(usage_error({"--sequences", "5000"}) == "--sequences needs an integer in [1, 4096], got '5000'");
}

BOOST_AUTO_TEST_CASE(a_required_flag_must_be_given) {
  std::string model;
  bench::BenchCommandLine cli("bench_test");
  cli.add({"--model", "M", "the model", [&](std::string_view v) { model = std::string(v); }, /*required=*/true});
  Args missing({});
  BOOST_CHECK_EXCEPTION(cli.parse(missing.argc(), missing.argv()), bench::UsageError,
                        [](const bench::UsageError& e) { return std::string(e.what()) == "--model is required"; });
  Args given({"--model", "tiny"});
  BOOST_TEST(cli.parse(given.argc(), given.argv()));
  BOOST_TEST(model == "tiny");
  BOOST_TEST(cli.usage().find("usage: bench_test --model M\n") == 0);  // not bracketed: not optional
}

BOOST_AUTO_TEST_CASE(a_flag_declared_twice_is_a_programming_error) {
  bench::BenchCommandLine cli("bench_test");
  cli.add({"--steps", "N", "", [](std::string_view) {}});
  BOOST_CHECK_THROW(cli.add({"--steps", "N", "", [](std::string_view) {}}), std::logic_error);
}

BOOST_AUTO_TEST_CASE(the_usage_lists_every_flag_within_100_columns) {
  Sizes sizes;
  const std::string usage = command_line(sizes).usage();
  for (const char* flag : {"[--steps N]", "[--sequences N]", "[--quick]", "[--verbose]", "[--json PATH]"}) {
    BOOST_TEST(usage.find(flag) != std::string::npos, flag);
  }
  BOOST_TEST(usage.find("  --json PATH    also write JSON\n") != std::string::npos, usage);
  bench::BenchCommandLine wide("bench_wide");
  for (int i = 0; i < 20; ++i) wide.add({"--flag-" + std::to_string(i), "VALUE", "help", [](std::string_view) {}});
  std::istringstream lines(wide.usage());
  int synopsis_lines = 0;
  for (std::string line; std::getline(lines, line);) {
    BOOST_TEST(line.size() <= 100u, line);
    if (line.rfind("usage:", 0) == 0 || line.rfind("          ", 0) == 0) ++synopsis_lines;
  }
  BOOST_TEST(synopsis_lines > 1);  // wrapped, continuation lines aligned under the first flag
}

BOOST_AUTO_TEST_CASE(lists_and_numbers) {
  BOOST_TEST(bench::parse_integer_list("--batches", "1,4,8", 1) == (std::vector<int64_t>{1, 4, 8}));
  BOOST_CHECK_THROW(bench::parse_integer_list("--batches", "1,,8", 1), bench::UsageError);
  BOOST_CHECK_THROW(bench::parse_integer_list("--batches", "1,0", 1), bench::UsageError);
  BOOST_CHECK_THROW(bench::parse_integer_list("--batches", "", 1), bench::UsageError);
  BOOST_TEST(bench::parse_name_list("--models", "a,b") == (std::vector<std::string>{"a", "b"}));
  BOOST_CHECK_THROW(bench::parse_name_list("--models", "a,"), bench::UsageError);
  BOOST_TEST(bench::parse_positive_number("--load", "0.9") == 0.9);
  for (const char* bad : {"0", "-1", "", "1x", "nan", "inf"}) {
    BOOST_CHECK_THROW(bench::parse_positive_number("--load", bad), bench::UsageError);
  }
}

BOOST_AUTO_TEST_CASE(run_benchmark_turns_outcomes_into_exit_codes) {
  Sizes sizes;
  const auto run = [&](std::vector<std::string> words, const std::function<int()>& body) {
    Args args(std::move(words));
    return bench::run_benchmark(command_line(sizes), args.argc(), args.argv(), body);
  };
  bool ran = false;
  BOOST_TEST(run({"--steps", "3"}, [&] {
               ran = true;
               return 0;
             }) == 0);
  BOOST_TEST(ran);
  BOOST_TEST(sizes.steps == 3);  // the body sees the parsed configuration
  BOOST_TEST(run({}, [] { return 5; }) == 5);
  ran = false;
  BOOST_TEST(run({"--bogus"}, [&] {
               ran = true;
               return 0;
             }) == 2);
  BOOST_TEST(!ran);
  BOOST_TEST(run({"--help"}, [&] {
               ran = true;
               return 0;
             }) == 0);
  BOOST_TEST(!ran);
  BOOST_TEST(run({}, []() -> int { throw std::runtime_error("disk full"); }) == 1);
  BOOST_TEST(run({}, []() -> int { throw bench::UsageError("--x is required"); }) == 2);
}
