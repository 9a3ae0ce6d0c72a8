#include "cpu_ref/cpu_executor.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "core/common/check.h"
#include "core/sampling/proposal_verify.h"

namespace pagedllm::cpu_ref {
kv::KvLayout kv_layout_for(const model::ModelConfig& config, int32_t block_size, int32_t num_blocks) {
  return kv::KvLayout{.num_layers = static_cast<int32_t>(config.num_layers),
                      .num_kv_heads = static_cast<int32_t>(config.num_kv_heads),
                      .head_dim = static_cast<int32_t>(config.head_dim),
                      .block_size = block_size,
                      .num_blocks = num_blocks};
}

int32_t num_kv_blocks_for_bytes(const model::ModelConfig& config, int32_t block_size, std::uint64_t bytes) {
  // K and V, every layer, fp32: the elements of one block across the tier.
  const std::uint64_t block_bytes = kv_layout_for(config, block_size, 1).total_elements() * sizeof(float);
  return static_cast<int32_t>(std::min<std::uint64_t>(bytes / block_bytes, kv::kMaxBlocksPerTier));
}

CpuExecutor::CpuExecutor(std::shared_ptr<const LlamaModel> model, const CpuExecutorConfig& config)
    : model_(std::move(model)),
      config_(config),
      cache_(kv_layout_for(model_->config(), config.cache.block_size, config.cache.num_device_blocks),
             config.cache.num_host_blocks) {}

sched::StepResult CpuExecutor::execute(const sched::StepPlan& plan) {
  const auto start = std::chrono::steady_clock::now();
  // OpenMP's thread count is a setting of the calling thread, so it is applied here, on the
  // thread that runs the forward pass (a server's engine thread, not the one that built us).
  if (config_.num_threads > 0 && omp_get_max_threads() != config_.num_threads) {
    omp_set_num_threads(config_.num_threads);
  }
  cache_.apply_block_operations(plan);

  batch_.clear();
  for (const sched::ScheduledSequence& scheduled : plan.sequences) {
    const auto sequence = static_cast<int32_t>(batch_.block_tables.size());
    batch_.block_tables.push_back(scheduled.block_table);
    for (int32_t position = scheduled.start; position < scheduled.end; ++position) {
      batch_.tokens.push_back(scheduled.tokens[static_cast<size_t>(position)]);
      batch_.positions.push_back(position);
      batch_.sequence_index.push_back(sequence);
    }
    // A verify pass needs the row of each proposal and of the token before them.
    if (!scheduled.sample) continue;
    for (int32_t back = scheduled.num_proposed_tokens; back >= 0; --back) {
      batch_.logits_rows.push_back(batch_.num_tokens() - 1 - back);
    }
  }

  sched::StepResult result;
  if (batch_.num_tokens() > 0) {
    const std::vector<float> logits = model_->forward(batch_, cache_);
    const auto vocab = static_cast<size_t>(model_->vocab_size());
    size_t row = 0;
    for (const sched::ScheduledSequence& scheduled : plan.sequences) {
      if (!scheduled.sample) continue;
      const auto rows = static_cast<size_t>(scheduled.num_proposed_tokens) + 1;
      const std::span<const float> rows_logits(logits.data() + row * vocab, rows * vocab);
      row += rows;
      if (config_.logits_observer) {
        for (size_t r = 0; r < rows; ++r) config_.logits_observer(scheduled, rows_logits.subspan(r * vocab, vocab));
      }
      result.outputs.push_back(rows == 1 ? sampler_.sample(scheduled, rows_logits)
                                         : sampling::verify_proposals(sampler_, scheduled, rows_logits, vocab));
    }
  }
  result.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace pagedllm::cpu_ref
