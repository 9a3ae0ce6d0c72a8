// The subcommands of the `pagedllm` binary. Each takes the arguments after its name.
#pragma once

#include <string>
#include <vector>

namespace pagedllm::cli {

int run_bench(const std::vector<std::string>& args);
int run_chat_template(const std::vector<std::string>& args);
int run_check(const std::vector<std::string>& args);
int run_dequantize(const std::vector<std::string>& args);
int run_generate(const std::vector<std::string>& args);
int run_inspect(const std::vector<std::string>& args);
int run_kv_demo(const std::vector<std::string>& args);
int run_make_model(const std::vector<std::string>& args);
int run_profile(const std::vector<std::string>& args);
int run_profile_import(const std::vector<std::string>& args);  // `profile import`
int run_plan(const std::vector<std::string>& args);
int run_replay(const std::vector<std::string>& args);
int run_score(const std::vector<std::string>& args);
int run_serve(const std::vector<std::string>& args);
int run_simulate(const std::vector<std::string>& args);
int run_token_masks(const std::vector<std::string>& args);
int run_tokenize(const std::vector<std::string>& args);
int run_trace(const std::vector<std::string>& args);
int run_version(const std::vector<std::string>& args);

}  // namespace pagedllm::cli
