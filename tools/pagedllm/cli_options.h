// Command-line parsing shared by the subcommands (Boost.Program_options).
#pragma once

#include <boost/program_options.hpp>
#include <iostream>
#include <string>
#include <vector>

namespace pagedllm::cli {

// Parses `args` into `values`. Returns false after printing `description` when --help was
// given (the subcommand then returns 0); throws boost::program_options::error naming the option
// for a bad or missing one.
inline bool parse_options(const std::vector<std::string>& args,
                          const boost::program_options::options_description& description,
                          boost::program_options::variables_map& values,
                          const boost::program_options::positional_options_description* positional = nullptr) {
  namespace po = boost::program_options;
  po::command_line_parser parser(args);
  parser.options(description);
  if (positional != nullptr) parser.positional(*positional);
  po::store(parser.run(), values);
  if (values.count("help") != 0) {
    std::cout << description << '\n';
    return false;
  }
  po::notify(values);
  return true;
}

}  // namespace pagedllm::cli
