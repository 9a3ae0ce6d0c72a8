// Importing per-operator GPU timings in the layout GPU simulators publish (Vidur's mlp.csv and
// attention.csv): each step-table cell is the sum the header documents, interpolated between the
// profiled token counts; pairs the attention file lacks are filled along their row; rows of other
// models, tensor parallel sizes or block sizes are left out; bad input names file, line and column.
#include <boost/test/unit_test.hpp>
#include <sstream>
#include <string>

#include "core/model/model_shape.h"
#include "sim/operator_profile_import.h"
#include "sim/profile_cost_model.h"

namespace pagedllm::sim {
namespace {

// Two operators besides the embedding, at 1, 8 and 64 tokens, tensor parallel 1 and 2 (ms).
constexpr const char* kMlp =
    "time_stats.emb.median,time_stats.emb.mean,time_stats.attn_pre_proj.median,time_stats.attn_pre_proj.mean,"
    "time_stats.mlp_up_proj.median,time_stats.mlp_up_proj.mean,n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,"
    "use_gated_mlp,num_tokens,num_tensor_parallel_workers\n"
    "0.010,0.011,0.040,0.041,0.060,0.062,32,32,4096,11008,32768,True,64,1\n"
    "0.004,0.005,0.020,0.021,0.030,0.031,32,32,4096,11008,32768,True,8,1\n"
    "0.002,0.003,0.010,0.012,0.020,0.022,32,32,4096,11008,32768,True,1,1\n"
    "0.009,0.009,0.030,0.030,0.040,0.040,32,32,4096,11008,32768,True,64,2\n";

// Decode: batches 1 and 4 over 127 and 511 cached tokens (4 x 511 missing); prefill: chunks 64
// and 256 after 0 and 512 cached tokens; one row of another model and one of block size 32.
constexpr const char* kAttention =
    "time_stats.attn_decode.median,time_stats.attn_decode.mean,time_stats.attn_prefill.median,"
    "time_stats.attn_prefill.mean,time_stats.attn_kv_cache_save.median,time_stats.attn_kv_cache_save.mean,n_embd,"
    "n_q_head,n_kv_head,block_size,num_tensor_parallel_workers,max_model_len,batch_size,prefill_chunk_size,"
    "kv_cache_size,is_prefill\n"
    "0.005,0.006,,,0.001,0.001,4096,32,32,16,1,4096,1,0,127,False\n"
    "0.009,0.010,,,0.001,0.001,4096,32,32,16,1,4096,1,0,511,False\n"
    "0.012,0.013,,,0.002,0.002,4096,32,32,16,1,4096,4,0,127,False\n"
    ",,0.050,0.051,0.003,0.003,4096,32,32,16,1,4096,1,64,0,True\n"
    ",,0.090,0.091,0.003,0.003,4096,32,32,16,1,4096,1,64,512,True\n"
    ",,0.150,0.152,0.010,0.010,4096,32,32,16,1,4096,1,256,0,True\n"
    ",,0.300,0.301,0.010,0.010,4096,32,32,16,1,4096,1,256,512,True\n"
    "0.500,0.500,,,0.001,0.001,8192,64,8,16,1,4096,1,0,127,False\n"
    "0.700,0.700,,,0.001,0.001,4096,32,32,32,1,4096,1,0,127,False\n";

OperatorProfileImport config() {
  return {.shape = model::find_model_shape("llama-2-7b"),
          .tensor_parallel = 1,
          .block_size = 16,
          .statistic = "median",
          .device = "test GPU",
          .step_overhead_seconds = 0.0005,
          .swap_block_seconds = 1e-4,
          .copy_block_seconds = 2e-5};
}

StepProfile import_text(const OperatorProfileImport& settings, const std::string& mlp = kMlp,
                        const std::string& attention = kAttention) {
  std::istringstream mlp_in(mlp);
  std::istringstream attention_in(attention);
  return import_operator_profile(
      settings, {.mlp = mlp_in, .mlp_name = "mlp.csv", .attention = attention_in, .attention_name = "attention.csv"});
}

// The StepProfileError's message, or a note that none was thrown.
std::string import_error(const OperatorProfileImport& settings, const std::string& mlp,
                         const std::string& attention = kAttention) {
  try {
    import_text(settings, mlp, attention);
  } catch (const StepProfileError& error) {
    return error.what();
  }
  return "no error";
}

constexpr double kLayers = 32.0;

BOOST_AUTO_TEST_SUITE(operator_profile_import)

BOOST_AUTO_TEST_CASE(cells_are_the_operators_summed_over_the_layers) {
  const StepProfile profile = import_text(config());
  BOOST_TEST(profile.decode.rows == (std::vector<double>{1, 4}));
  BOOST_TEST(profile.decode.columns == (std::vector<double>{128, 512}));  // a decode attends to its cache and itself
  BOOST_TEST(profile.prefill.rows == (std::vector<double>{64, 256}));
  BOOST_TEST(profile.prefill.columns == (std::vector<double>{0, 512}));
  const double overhead = 0.0005;
  // Decode, one sequence over 127 cached tokens: the 1-token row of mlp.csv.
  BOOST_TEST(
      profile.decode.seconds[0][0] == overhead + 0.002e-3 + kLayers * ((0.010 + 0.020) * 1e-3 + (0.005 + 0.001) * 1e-3),
      boost::test_tools::tolerance(1e-12));
  // Four sequences: the layer between the 1- and 8-token rows, 3/7 of the way.
  const double layer4 = (0.030 + (0.050 - 0.030) * 3.0 / 7.0) * 1e-3;
  const double emb4 = (0.002 + (0.004 - 0.002) * 3.0 / 7.0) * 1e-3;
  BOOST_TEST(profile.decode.seconds[1][0] == overhead + emb4 + kLayers * (layer4 + 0.014e-3),
             boost::test_tools::tolerance(1e-12));
  // The 256-token chunk after 512 cached: beyond the last mlp row, extended along its last segment.
  const double layer256 = (0.100 + (0.100 - 0.050) / 56.0 * 192.0) * 1e-3;
  const double emb256 = (0.010 + (0.010 - 0.004) / 56.0 * 192.0) * 1e-3;
  BOOST_TEST(profile.prefill.seconds[1][1] == overhead + emb256 + kLayers * (layer256 + 0.310e-3),
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST(profile.tensor_parallel == 1);
  BOOST_TEST(profile.swap_out_block_seconds == 1e-4);
  BOOST_TEST(profile.copy_block_seconds == 2e-5);
  BOOST_TEST(profile.sample_seconds == 0.0);  // the files time neither the lm_head nor the sampler
}

BOOST_AUTO_TEST_CASE(a_pair_the_file_lacks_is_extended_along_its_row) {
  const StepProfile profile = import_text(config());
  BOOST_REQUIRE_EQUAL(profile.decode.filled_cells.size(), 1U);
  BOOST_TEST(profile.decode.filled_cells[0].first == 1);
  BOOST_TEST(profile.decode.filled_cells[0].second == 1);
  // The 4-sequence row has one measured cell: extended as a constant.
  BOOST_TEST(profile.decode.seconds[1][1] == profile.decode.seconds[1][0]);
  BOOST_TEST(profile.prefill.filled_cells.empty());
}

BOOST_AUTO_TEST_CASE(the_profile_prices_steps_through_the_measured_cost_model) {
  const StepProfile profile = import_text(config());
  const ProfileCostModel model({.profile = profile});
  BOOST_TEST(model.decode_seconds(1, 128) == profile.decode.seconds[0][0], boost::test_tools::tolerance(1e-12));
  BOOST_TEST(model.prefill_seconds(64, 256) == (profile.prefill.seconds[0][0] + profile.prefill.seconds[0][1]) / 2.0,
             boost::test_tools::tolerance(1e-12));
  // At tensor parallel 2 the all-reduces the caller prices are added; written and read back, the
  // tensor parallel size survives.
  OperatorProfileImport two = config();
  two.tensor_parallel = 2;
  two.all_reduce_seconds = [](double tokens) { return 1e-6 * tokens + 2e-5; };  // added to every cell
  const std::string attention_tp2 = std::string(
      "time_stats.attn_decode.median,time_stats.attn_prefill.median,n_embd,n_q_head,n_kv_head,block_size,"
      "num_tensor_parallel_workers,batch_size,prefill_chunk_size,kv_cache_size,is_prefill\n"
      "0.004,,4096,32,32,16,2,1,0,127,False\n,0.040,4096,32,32,16,2,1,64,0,True\n");
  const StepProfile parallel = import_text(two, kMlp, attention_tp2);
  BOOST_TEST(step_profile_from_json_text(to_json_text(parallel), "p.json").tensor_parallel == 2);
  BOOST_TEST(parallel.decode.seconds[0][0] == 0.0005 + 0.009e-3 + kLayers * (0.070e-3 + 0.004e-3) + 1e-6 + 2e-5,
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST(parallel.prefill.seconds[0][0] == 0.0005 + 0.009e-3 + kLayers * (0.070e-3 + 0.040e-3) + 64e-6 + 2e-5,
             boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(another_statistic_reads_its_own_columns) {
  OperatorProfileImport mean = config();
  mean.statistic = "mean";
  const StepProfile profile = import_text(mean);
  BOOST_TEST(profile.decode.seconds[0][0] == 0.0005 + 0.003e-3 + kLayers * ((0.012 + 0.022) * 1e-3 + 0.007e-3),
             boost::test_tools::tolerance(1e-12));
  OperatorProfileImport bad = config();
  bad.statistic = "p99";
  BOOST_TEST(import_error(bad, kMlp).find("statistic: expected min, max, mean or median") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(bad_input_names_the_file_line_and_column) {
  // A row of another model's shape (n_embd 5120) for the tensor parallel size imported.
  std::string other_model = kMlp;
  other_model.replace(other_model.find("32,32,4096,11008,32768,True,8,1"), 31, "32,32,5120,11008,32768,True,8,1");
  BOOST_TEST(import_error(config(), other_model).find("mlp.csv:3: n_embd: 5120 here, but the model simulated") !=
             std::string::npos);
  // A time that is not a number.
  std::string not_a_number = kMlp;
  not_a_number.replace(not_a_number.find("0.020,0.021"), 5, "fast!");
  BOOST_TEST(import_error(config(), not_a_number).find("mlp.csv:3: time_stats.attn_pre_proj.median: expected a time") !=
             std::string::npos);
  // No rows of the tensor parallel size asked for.
  OperatorProfileImport four = config();
  four.tensor_parallel = 4;
  BOOST_TEST(import_error(four, kMlp).find("no rows for tensor parallel size 4 (the file has 1, 2)") !=
             std::string::npos);
  // A missing column, and an attention file without prefill rows of this model.
  BOOST_TEST(import_error(config(), "time_stats.emb.median,num_tokens\n0.1,1\n").find("mlp.csv:1") !=
             std::string::npos);
  const std::string decode_only =
      "time_stats.attn_decode.median,n_embd,n_q_head,n_kv_head,block_size,num_tensor_parallel_workers,batch_size,"
      "prefill_chunk_size,kv_cache_size,is_prefill\n0.005,4096,32,32,16,1,1,0,127,False\n";
  BOOST_TEST(import_error(config(), kMlp, decode_only).find("attention.csv:1: is_prefill: no prefill rows with") !=
             std::string::npos);
  // A flag that is neither True nor False.
  BOOST_TEST(import_error(config(), kMlp, std::string(decode_only) + "0.005,4096,32,32,16,1,1,0,127,maybe\n")
                 .find("attention.csv:3: is_prefill: expected True or False") != std::string::npos);
  BOOST_TEST(import_error(config(), "").find("mlp.csv:0: empty file") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace pagedllm::sim
