// The subcommands of the `pagedllm` binary. Each takes the arguments after its name.
#pragma once

#include <string>
#include <vector>

namespace pagedllm::cli {

int run_kv_demo(const std::vector<std::string>& args);
int run_version(const std::vector<std::string>& args);

}  // namespace pagedllm::cli
