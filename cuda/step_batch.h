// StepBatch: one step plan flattened into the integer arrays the CUDA kernels read, built on the
// host (no CUDA here, so it is tested on any machine) and uploaded with one copy per step.
//
// The plan lists decodes first, then prefill chunks. The batch keeps that order: the leading run
// of sequences with exactly one new token (every decode, and a one-token prompt chunk that happens
// to follow them) is the decode kernel's part, rows [0, num_decode_seqs) of the per-sequence
// arrays; the rest is the prefill kernel's. Token rows follow the sequences in order, so each
// attention kernel reads one contiguous range of query rows and writes one range of outputs.
//
// A CUDA-graph decode step is padded to its captured batch size (pad_decode_batch): the padding
// rows compute garbage that is never read (their slot is -1, so nothing is written to the cache;
// they attend one key of block 0) and the block tables take the captured row width.
#pragma once

#include <cstdint>
#include <vector>

#include "core/sched/step_plan.h"

namespace pagedllm::cuda {

struct StepBatch {
  // Per token, in sequence order: [num_tokens].
  std::vector<int32_t> token_ids;
  std::vector<int32_t> positions;
  std::vector<int64_t> slot_mapping;  // block * block_size + offset; -1 for padding rows

  // Per sequence: [num_seqs].
  int32_t num_decode_seqs = 0;        // rows [0, num_decode_seqs) go to the decode kernel
  std::vector<int32_t> seq_lens;      // keys attended after this step (the sequence's `end`)
  std::vector<int32_t> block_tables;  // [num_seqs][table_width], unused entries 0
  int32_t table_width = 0;            // max_blocks_per_seq of both attention kernels
  int32_t max_decode_seq_len = 0;     // bound on seq_lens of the decode rows (sizes its grid)

  // Prefill part, relative to its own first token and sequence: [num_prefill_seqs (+ 1)].
  std::vector<int32_t> query_starts;    // rows [query_starts[s], query_starts[s + 1]) are s's
  std::vector<int32_t> context_starts;  // position of s's first query
  int32_t max_query_len = 0;

  // Rows of the final hidden states whose logits are computed, one per sampled sequence in plan
  // order (index into the token rows). [num_logits_rows]
  std::vector<int32_t> logits_rows;
  std::vector<int32_t> logits_sequence;  // the plan's sequence index of each logits row

  int32_t num_tokens() const noexcept { return static_cast<int32_t>(token_ids.size()); }
  int32_t num_seqs() const noexcept { return static_cast<int32_t>(seq_lens.size()); }
  int32_t num_prefill_seqs() const noexcept { return num_seqs() - num_decode_seqs; }
  bool is_pure_decode() const noexcept { return num_decode_seqs == num_seqs(); }
};

// Flattens `plan` (block size `block_size`; table rows as wide as the widest block table of the
// step, or `min_table_width` when that is wider). Reuses `batch`'s storage. Throws
// std::invalid_argument when a sequence's block table cannot hold its tokens (a core bug).
void build_step_batch(const sched::StepPlan& plan, int32_t block_size, StepBatch& batch, int32_t min_table_width = 0);

// The shapes a decode CUDA graph is captured for.
struct DecodePadding {
  int32_t batch_size = 0;   // sequences (and token rows, and logits rows)
  int32_t table_width = 0;  // block-table entries per row
  int32_t max_seq_len = 0;  // the decode kernel's bound on seq_lens (max_model_len)
};

// Pads a pure-decode batch to padding.batch_size sequences, re-lays its block tables at
// padding.table_width entries per row and sets max_decode_seq_len to padding.max_seq_len.
// logits_rows grows to every row (the graph computes them all); logits_sequence keeps the real
// ones. Preconditions: is_pure_decode(), every sequence sampled, num_seqs() <= batch_size, the
// widest table fits table_width, the longest sequence fits max_seq_len.
void pad_decode_batch(StepBatch& batch, const DecodePadding& padding);

}  // namespace pagedllm::cuda
