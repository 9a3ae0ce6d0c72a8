#include "cuda/step_batch.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/common/check.h"

namespace pagedllm::cuda {

namespace {

void clear(StepBatch& batch) {
  batch.token_ids.clear();
  batch.positions.clear();
  batch.slot_mapping.clear();
  batch.num_decode_seqs = 0;
  batch.seq_lens.clear();
  batch.block_tables.clear();
  batch.table_width = 0;
  batch.max_decode_seq_len = 0;
  batch.query_starts.clear();
  batch.context_starts.clear();
  batch.max_query_len = 0;
  batch.logits_rows.clear();
  batch.logits_sequence.clear();
}

}  // namespace

void build_step_batch(const sched::StepPlan& plan, int32_t block_size, StepBatch& batch, int32_t min_table_width) {
  PAGEDLLM_ASSERT(block_size > 0, "block size must be positive");
  clear(batch);
  const auto& sequences = plan.sequences;

  int32_t width = std::max(min_table_width, 0);
  while (batch.num_decode_seqs < static_cast<int32_t>(sequences.size()) &&
         sequences[static_cast<size_t>(batch.num_decode_seqs)].num_new_tokens() == 1) {
    ++batch.num_decode_seqs;
  }
  for (const sched::ScheduledSequence& scheduled : sequences) {
    width = std::max(width, static_cast<int32_t>(scheduled.block_table.size()));
  }
  batch.table_width = width;
  batch.block_tables.assign(sequences.size() * static_cast<size_t>(width), 0);
  batch.query_starts.push_back(0);

  for (size_t index = 0; index < sequences.size(); ++index) {
    const sched::ScheduledSequence& scheduled = sequences[index];
    const int64_t capacity = static_cast<int64_t>(scheduled.block_table.size()) * block_size;
    if (scheduled.start < 0 || scheduled.end <= scheduled.start || scheduled.end > capacity ||
        scheduled.end > static_cast<int32_t>(scheduled.tokens.size())) {
      throw std::invalid_argument(
          "step " + std::to_string(plan.step) + ", sequence " + std::to_string(scheduled.seq) + ": tokens [" +
          std::to_string(scheduled.start) + ", " + std::to_string(scheduled.end) + ") do not fit its " +
          std::to_string(scheduled.block_table.size()) + " blocks of " + std::to_string(block_size) + " (or its " +
          std::to_string(scheduled.tokens.size()) + " tokens)");
    }
    std::copy(scheduled.block_table.begin(), scheduled.block_table.end(),
              batch.block_tables.begin() + static_cast<std::ptrdiff_t>(index * static_cast<size_t>(width)));
    for (int32_t position = scheduled.start; position < scheduled.end; ++position) {
      const kv::BlockId block = scheduled.block_table[static_cast<size_t>(position / block_size)];
      // A new token's block is live: only blocks before the sliding window are released (kNoBlock),
      // and write_kv_cache would skip its negative slot as padding.
      PAGEDLLM_ASSERT(block != kv::kNoBlock, "step batch: a new token's block was released");
      batch.token_ids.push_back(scheduled.tokens[static_cast<size_t>(position)]);
      batch.positions.push_back(position);
      batch.slot_mapping.push_back(static_cast<int64_t>(block) * block_size + position % block_size);
    }
    batch.seq_lens.push_back(scheduled.end);
    if (static_cast<int32_t>(index) < batch.num_decode_seqs) {
      batch.max_decode_seq_len = std::max(batch.max_decode_seq_len, scheduled.end);
    } else {
      batch.context_starts.push_back(scheduled.start);
      batch.query_starts.push_back(batch.query_starts.back() + scheduled.num_new_tokens());
      batch.max_query_len = std::max(batch.max_query_len, scheduled.num_new_tokens());
    }
    if (scheduled.sample) {
      // A verify pass (k proposals, a chunk of k + 1 tokens) samples its last k + 1 rows.
      for (int32_t back = scheduled.num_proposed_tokens; back >= 0; --back) {
        batch.logits_rows.push_back(batch.num_tokens() - 1 - back);
        batch.logits_sequence.push_back(static_cast<int32_t>(index));
      }
    }
  }
}

void pad_decode_batch(StepBatch& batch, const DecodePadding& padding) {
  const int32_t num_seqs = batch.num_seqs();
  const int32_t batch_size = padding.batch_size;
  const int32_t table_width = padding.table_width;
  PAGEDLLM_ASSERT(batch.is_pure_decode(), "only pure decode steps are padded");
  PAGEDLLM_ASSERT(num_seqs <= batch_size, "the batch is larger than its padded size");
  PAGEDLLM_ASSERT(batch.table_width <= table_width, "a block table is wider than the captured width");
  PAGEDLLM_ASSERT(batch.max_decode_seq_len <= padding.max_seq_len, "a sequence is longer than the captured bound");
  PAGEDLLM_ASSERT(static_cast<int32_t>(batch.logits_rows.size()) == num_seqs, "every decode row must be sampled");
  if (table_width != batch.table_width) {
    std::vector<int32_t> tables(static_cast<size_t>(batch_size) * static_cast<size_t>(table_width), 0);
    for (int32_t s = 0; s < num_seqs; ++s) {
      const auto from = batch.block_tables.begin() + static_cast<std::ptrdiff_t>(s) * batch.table_width;
      std::copy(from, from + batch.table_width, tables.begin() + static_cast<std::ptrdiff_t>(s) * table_width);
    }
    batch.block_tables = std::move(tables);
    batch.table_width = table_width;
  } else {
    batch.block_tables.resize(static_cast<size_t>(batch_size) * static_cast<size_t>(table_width), 0);
  }
  // Padding rows: token 0 at position 0, attending one key (block 0, slot 0), writing nothing.
  batch.token_ids.resize(static_cast<size_t>(batch_size), 0);
  batch.positions.resize(static_cast<size_t>(batch_size), 0);
  batch.slot_mapping.resize(static_cast<size_t>(batch_size), -1);
  batch.seq_lens.resize(static_cast<size_t>(batch_size), 1);
  for (int32_t row = num_seqs; row < batch_size; ++row) batch.logits_rows.push_back(row);
  batch.num_decode_seqs = batch_size;
  batch.max_decode_seq_len = padding.max_seq_len;
}

}  // namespace pagedllm::cuda
