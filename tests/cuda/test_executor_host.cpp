// The CUDA executor's host-side logic, which needs no GPU: flattening a step plan into the
// kernels' arrays, padding decode steps for CUDA graphs, the upload arena, the weight placement
// (fused qkv and gate_up), the 16-bit conversion of weights, KV sizing, graph batch sizes and
// which rows fall back to host sampling.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/model/half.h"
#include "core/model/model_config.h"
#include "cuda/cuda_executor.h"
#include "cuda/device_model.h"
#include "cuda/kv_sizing.h"
#include "cuda/step_batch.h"
#include "cuda/step_inputs.h"

namespace cuda = pagedllm::cuda;
namespace kv = pagedllm::kv;
namespace model = pagedllm::model;
namespace sched = pagedllm::sched;
using pagedllm::TokenId;

namespace {

// Owns what a plan's spans point at.
struct PlanFixture {
  struct Entry {
    std::vector<TokenId> tokens;
    std::vector<kv::BlockId> table;
    int32_t start = 0;
    int32_t end = 0;
    int32_t num_prompt = 0;
    bool sample = true;
  };
  std::vector<Entry> entries;
  sched::SamplingParams params;
  sched::StepPlan plan;

  void add(int32_t num_tokens, int32_t start, int32_t end, std::vector<kv::BlockId> table, int32_t num_prompt,
           bool sample) {
    Entry entry;
    for (int32_t i = 0; i < num_tokens; ++i)
      entry.tokens.push_back(100 + static_cast<TokenId>(entries.size()) * 10 + i);
    entry.table = std::move(table);
    entry.start = start;
    entry.end = end;
    entry.num_prompt = num_prompt;
    entry.sample = sample;
    entries.push_back(std::move(entry));
  }
  const sched::StepPlan& build() {
    plan.sequences.clear();
    for (size_t i = 0; i < entries.size(); ++i) {
      const Entry& e = entries[i];
      plan.sequences.push_back(sched::ScheduledSequence{.request = static_cast<sched::RequestId>(i),
                                                        .seq = static_cast<pagedllm::SeqId>(i),
                                                        .tokens = e.tokens,
                                                        .start = e.start,
                                                        .end = e.end,
                                                        .num_prompt_tokens = e.num_prompt,
                                                        .block_table = e.table,
                                                        .sample = e.sample,
                                                        .params = &params,
                                                        .allowed_tokens = {}});
    }
    return plan;
  }
};

model::ModelConfig small_config(bool bias, bool tied) {
  model::ModelConfig c;
  c.architecture = bias ? "qwen2" : "llama";
  c.hidden_size = 64;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  c.intermediate_size = 96;
  c.vocab_size = 50;
  c.max_position_embeddings = 128;
  c.attention_bias = bias;
  c.tie_word_embeddings = tied;
  return c;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(executor_host)

BOOST_AUTO_TEST_CASE(step_batch_flattens_decodes_then_prefill_chunks) {
  PlanFixture f;
  f.add(10, 9, 10, {7, 3}, 4, true);      // decode at position 9 (block 3, slot 1 of block size 8)
  f.add(20, 19, 20, {1, 2, 5}, 5, true);  // decode at 19 (block 5, slot 3)
  f.add(30, 8, 13, {4, 6}, 30, false);    // prompt chunk [8, 13): not sampled
  f.add(3, 0, 3, {9}, 3, true);           // whole prompt of 3
  cuda::StepBatch batch;
  cuda::build_step_batch(f.build(), 8, batch);

  BOOST_TEST(batch.num_decode_seqs == 2);
  BOOST_TEST(batch.num_prefill_seqs() == 2);
  BOOST_TEST(batch.num_tokens() == 2 + 5 + 3);
  BOOST_TEST(batch.table_width == 3);
  BOOST_TEST(batch.positions == (std::vector<int32_t>{9, 19, 8, 9, 10, 11, 12, 0, 1, 2}),
             boost::test_tools::per_element());
  BOOST_TEST(batch.token_ids[0] == 109);
  BOOST_TEST(batch.token_ids[1] == 129);
  BOOST_TEST(batch.token_ids[2] == 128);
  BOOST_TEST(batch.slot_mapping == (std::vector<int64_t>{3 * 8 + 1, 5 * 8 + 3, 6 * 8 + 0, 6 * 8 + 1, 6 * 8 + 2,
                                                         6 * 8 + 3, 6 * 8 + 4, 72, 73, 74}),
             boost::test_tools::per_element());
  BOOST_TEST(batch.seq_lens == (std::vector<int32_t>{10, 20, 13, 3}), boost::test_tools::per_element());
  BOOST_TEST(batch.max_decode_seq_len == 20);
  BOOST_TEST(batch.query_starts == (std::vector<int32_t>{0, 5, 8}), boost::test_tools::per_element());
  BOOST_TEST(batch.context_starts == (std::vector<int32_t>{8, 0}), boost::test_tools::per_element());
  BOOST_TEST(batch.max_query_len == 5);
  BOOST_TEST(batch.block_tables == (std::vector<int32_t>{7, 3, 0, 1, 2, 5, 4, 6, 0, 9, 0, 0}),
             boost::test_tools::per_element());
  // Sampled: both decodes and the whole prompt; their last token rows.
  BOOST_TEST(batch.logits_rows == (std::vector<int32_t>{0, 1, 9}), boost::test_tools::per_element());
  BOOST_TEST(batch.logits_sequence == (std::vector<int32_t>{0, 1, 3}), boost::test_tools::per_element());
  BOOST_TEST(!batch.is_pure_decode());
}

BOOST_AUTO_TEST_CASE(step_batch_reuse_clears_the_previous_step) {
  PlanFixture first;
  first.add(30, 0, 30, {1, 2}, 30, true);
  cuda::StepBatch batch;
  cuda::build_step_batch(first.build(), 16, batch);
  PlanFixture second;
  second.add(5, 4, 5, {8}, 2, true);
  cuda::build_step_batch(second.build(), 16, batch);
  BOOST_TEST(batch.num_tokens() == 1);
  BOOST_TEST(batch.is_pure_decode());
  BOOST_TEST(batch.query_starts.size() == 1u);
  BOOST_TEST(batch.max_query_len == 0);
  BOOST_TEST(batch.logits_rows.size() == 1u);
}

BOOST_AUTO_TEST_CASE(step_batch_refuses_a_table_too_short_for_the_tokens) {
  PlanFixture f;
  f.add(20, 0, 20, {1}, 20, true);  // 20 tokens in one block of 16
  cuda::StepBatch batch;
  BOOST_CHECK_THROW(cuda::build_step_batch(f.build(), 16, batch), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(a_one_token_prompt_chunk_after_the_decodes_goes_to_the_decode_kernel) {
  PlanFixture f;
  f.add(10, 9, 10, {1}, 4, true);
  f.add(6, 5, 6, {2}, 6, true);  // the last prompt token alone (e.g. after a prefix-cache hit)
  cuda::StepBatch batch;
  cuda::build_step_batch(f.build(), 16, batch);
  BOOST_TEST(batch.num_decode_seqs == 2);
  BOOST_TEST(batch.is_pure_decode());
  BOOST_TEST(batch.max_decode_seq_len == 10);
}

BOOST_AUTO_TEST_CASE(padding_a_decode_batch_for_a_graph) {
  PlanFixture f;
  f.add(10, 9, 10, {7, 3}, 4, true);
  f.add(3, 2, 3, {5}, 2, true);
  cuda::StepBatch batch;
  cuda::build_step_batch(f.build(), 8, batch);
  cuda::pad_decode_batch(batch, cuda::DecodePadding{.batch_size = 4, .table_width = 5, .max_seq_len = 40});
  BOOST_TEST(batch.num_seqs() == 4);
  BOOST_TEST(batch.num_tokens() == 4);
  BOOST_TEST(batch.num_decode_seqs == 4);
  BOOST_TEST(batch.table_width == 5);
  BOOST_TEST(batch.max_decode_seq_len == 40);
  BOOST_TEST(batch.block_tables == (std::vector<int32_t>{7, 3, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}),
             boost::test_tools::per_element());
  BOOST_TEST(batch.slot_mapping == (std::vector<int64_t>{25, 42, -1, -1}), boost::test_tools::per_element());
  BOOST_TEST(batch.seq_lens == (std::vector<int32_t>{10, 3, 1, 1}), boost::test_tools::per_element());
  BOOST_TEST(batch.logits_rows == (std::vector<int32_t>{0, 1, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST(batch.logits_sequence == (std::vector<int32_t>{0, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(the_upload_arena_keeps_fixed_aligned_regions_with_the_tables_last) {
  const cuda::StepInputLimits limits{.max_tokens = 100, .max_seqs = 7, .max_table_width = 9};
  const cuda::StepInputLayout layout = cuda::plan_step_inputs(limits);
  const std::vector<size_t> offsets{layout.slot_mapping, layout.token_ids,    layout.positions,
                                    layout.seq_lens,     layout.query_starts, layout.context_starts,
                                    layout.logits_rows,  layout.block_tables};
  for (size_t i = 0; i < offsets.size(); ++i) {
    BOOST_TEST(offsets[i] % 16 == 0u);
    if (i > 0) BOOST_TEST(offsets[i] > offsets[i - 1]);
  }
  BOOST_TEST(layout.token_ids - layout.slot_mapping >= 100 * sizeof(int64_t));
  BOOST_TEST(layout.total_bytes >= layout.block_tables + 7 * 9 * sizeof(int32_t));

  PlanFixture f;
  f.add(10, 9, 10, {7, 3}, 4, true);
  f.add(30, 8, 13, {4, 6}, 30, true);
  cuda::StepBatch batch;
  cuda::build_step_batch(f.build(), 8, batch);
  std::vector<char> arena(layout.total_bytes, 0);
  const size_t used = cuda::stage_step_inputs(batch, limits, layout, arena.data());
  BOOST_TEST(used == layout.block_tables + 2 * 2 * sizeof(int32_t));
  int64_t slot = 0;
  std::memcpy(&slot, arena.data() + layout.slot_mapping + sizeof(int64_t), sizeof slot);
  BOOST_TEST(slot == 6 * 8);
  int32_t table_entry = 0;
  std::memcpy(&table_entry, arena.data() + layout.block_tables + 3 * sizeof(int32_t), sizeof table_entry);
  BOOST_TEST(table_entry == 6);

  const cuda::StepInputLimits small{.max_tokens = 4, .max_seqs = 7, .max_table_width = 9};
  std::vector<char> small_arena(cuda::plan_step_inputs(small).total_bytes);
  BOOST_CHECK_THROW(cuda::stage_step_inputs(batch, small, cuda::plan_step_inputs(small), small_arena.data()),
                    std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(weights_are_placed_with_fused_projections_back_to_back) {
  for (const bool bias : {false, true}) {
    for (const bool tied : {false, true}) {
      const model::ModelConfig c = small_config(bias, tied);
      const cuda::DeviceWeightLayout layout = cuda::plan_device_weights(c);
      BOOST_TEST(layout.layers.size() == 2u);
      const auto find = [&](const std::string& name) -> const cuda::WeightPlacement& {
        for (const auto& placement : layout.tensors) {
          if (placement.name == name) return placement;
        }
        throw std::logic_error("no placement for " + name);
      };
      for (int layer = 0; layer < 2; ++layer) {
        const std::string prefix = "model.layers." + std::to_string(layer) + ".";
        const auto& q = find(prefix + "self_attn.q_proj.weight");
        const auto& k = find(prefix + "self_attn.k_proj.weight");
        const auto& v = find(prefix + "self_attn.v_proj.weight");
        BOOST_TEST(q.offset == layout.layers[static_cast<size_t>(layer)].qkv);
        BOOST_TEST(q.offset % cuda::kWeightAlignment == 0u);
        BOOST_TEST(k.offset == q.offset + q.elements * 2);
        BOOST_TEST(v.offset == k.offset + k.elements * 2);
        BOOST_TEST(q.elements == 64u * 64u);
        BOOST_TEST(k.elements == 32u * 64u);
        const auto& gate = find(prefix + "mlp.gate_proj.weight");
        const auto& up = find(prefix + "mlp.up_proj.weight");
        BOOST_TEST(gate.offset == layout.layers[static_cast<size_t>(layer)].gate_up);
        BOOST_TEST(up.offset == gate.offset + gate.elements * 2);
        if (bias) {
          const auto& qb = find(prefix + "self_attn.q_proj.bias");
          BOOST_TEST(qb.offset == layout.layers[static_cast<size_t>(layer)].qkv_bias);
          BOOST_TEST(find(prefix + "self_attn.k_proj.bias").offset == qb.offset + 64 * 2);
          BOOST_TEST(find(prefix + "self_attn.v_proj.bias").offset == qb.offset + 96 * 2);
        }
      }
      if (tied) {
        BOOST_TEST(layout.lm_head == layout.embedding);
      } else {
        BOOST_TEST(layout.lm_head == find("lm_head.weight").offset);
      }
      // No two tensors overlap, and all fit.
      for (size_t i = 0; i + 1 < layout.tensors.size(); ++i) {
        BOOST_TEST(layout.tensors[i].offset + layout.tensors[i].elements * 2 <= layout.tensors[i + 1].offset);
      }
      BOOST_TEST(layout.tensors.back().offset + layout.tensors.back().elements * 2 <= layout.total_bytes);
    }
  }
}

BOOST_AUTO_TEST_CASE(weights_become_16_bit_by_round_to_nearest_even) {
  model::HostTensor f32{.shape = {3}, .dtype = model::WeightDType::f32, .f32 = {1.0f, -2.5f, 1.00390625f}, .bf16 = {}};
  const std::vector<uint16_t> bf16 = cuda::to_device_bits(f32, cuda::DType::bf16);
  BOOST_TEST(bf16[0] == model::float_to_bf16(1.0f));
  BOOST_TEST(bf16[1] == model::float_to_bf16(-2.5f));
  BOOST_TEST(bf16[2] == 0x3f80u);  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even
  const std::vector<uint16_t> fp16 = cuda::to_device_bits(f32, cuda::DType::fp16);
  BOOST_TEST(fp16[0] == 0x3c00u);
  BOOST_TEST(fp16[2] == 0x3c04u);  // exact in fp16
  model::HostTensor bf{.shape = {1}, .dtype = model::WeightDType::bf16, .f32 = {}, .bf16 = {0x4049}};
  BOOST_TEST(cuda::to_device_bits(bf, cuda::DType::bf16)[0] == 0x4049u);
  BOOST_TEST(cuda::to_device_bits(bf, cuda::DType::fp16)[0] == model::float_to_fp16(model::bf16_to_float(0x4049)));
  model::HostTensor wrong{.shape = {2}, .dtype = model::WeightDType::f32, .f32 = {1.0f}, .bf16 = {}};
  BOOST_CHECK_THROW(cuda::to_device_bits(wrong, cuda::DType::bf16), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(kv_sizing_follows_vllm) {
  model::ModelConfig llama8b;  // Llama-3-8B: 32 layers, 8 KV heads of 128
  llama8b.num_layers = 32;
  llama8b.num_kv_heads = 8;
  llama8b.head_dim = 128;
  const uint64_t block = cuda::kv_block_bytes(llama8b, 16);
  BOOST_TEST(block == 2ull * 32 * 8 * 128 * 16 * 2);  // 2 MiB
  const uint64_t gib = 1ull << 30;
  const cuda::KvSizingInput input{.total_memory_bytes = 80 * gib,
                                  .used_memory_bytes = 18 * gib,
                                  .gpu_memory_utilization = 0.9,
                                  .swap_space_bytes = 4 * gib,
                                  .block_bytes = block,
                                  .block_size = 16,
                                  .max_model_len = 8192};
  const cuda::KvSizing sizing = cuda::size_kv_cache(input);
  // 0.9 * 80 - 18 = 54 GiB of 2 MiB blocks; 4 GiB of swap.
  BOOST_TEST(sizing.num_device_blocks == 54 * 512);
  BOOST_TEST(sizing.num_host_blocks == 4 * 512);
  BOOST_TEST(sizing.device_tokens(16) == 54 * 512 * 16);
  BOOST_TEST(cuda::describe_kv_sizing(sizing, input) ==
             "GPU blocks: 27648 (442368 tokens), CPU blocks: 2048, max concurrency for max_model_len 8192: 54.00x");

  cuda::KvSizingInput full = input;
  full.used_memory_bytes = 75 * gib;
  try {
    cuda::size_kv_cache(full);
    BOOST_FAIL("expected no room for the KV cache");
  } catch (const std::runtime_error& error) {
    BOOST_TEST(std::string(error.what()).find("gpu_memory_utilization") != std::string::npos);
  }
  cuda::KvSizingInput bad = input;
  bad.gpu_memory_utilization = 1.5;
  BOOST_CHECK_THROW(cuda::size_kv_cache(bad), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(kv_sizing_with_a_draft_model_gives_both_caches_the_same_block_count) {
  // Llama-3-8B's 2 MiB blocks beside Llama-3.2-1B's (16 layers, 8 KV heads of 64: 0.5 MiB), as
  // vLLM splits the cache between a target and its draft: each device block is paired with one of
  // the draft's; the host tier (the target's swap space) is the target's alone.
  model::ModelConfig llama8b;
  llama8b.num_layers = 32;
  llama8b.num_kv_heads = 8;
  llama8b.head_dim = 128;
  model::ModelConfig llama1b;
  llama1b.num_layers = 16;
  llama1b.num_kv_heads = 8;
  llama1b.head_dim = 64;
  const uint64_t gib = 1ull << 30;
  const cuda::KvSizingInput input{.total_memory_bytes = 80 * gib,
                                  .used_memory_bytes = 20 * gib,
                                  .gpu_memory_utilization = 0.9,
                                  .swap_space_bytes = 4 * gib,
                                  .block_bytes = cuda::kv_block_bytes(llama8b, 16),
                                  .companion_block_bytes = cuda::kv_block_bytes(llama1b, 16),
                                  .block_size = 16,
                                  .max_model_len = 8192};
  BOOST_TEST(input.companion_block_bytes == 512ull * 1024);
  const cuda::KvSizing sizing = cuda::size_kv_cache(input);
  // 0.9 * 80 - 20 = 52 GiB of 2.5 MiB pairs; 4 GiB of 2 MiB swap blocks.
  BOOST_TEST(sizing.num_device_blocks == static_cast<int32_t>(52 * gib / (2.5 * 1024 * 1024)));
  BOOST_TEST(sizing.num_host_blocks == 4 * 512);
  const std::string line = cuda::describe_kv_sizing(sizing, input);
  BOOST_TEST(line.find("GPU blocks: 21299 (340784 tokens), CPU blocks: 2048") == 0u, line);
  BOOST_TEST(line.find("sized with a draft cache of as many blocks (0.500 MiB each)") != std::string::npos, line);

  cuda::KvSizingInput full = input;
  full.used_memory_bytes = 72 * gib - 2 * 1024 * 1024;  // room for one 2 MiB block, not for the pair
  try {
    cuda::size_kv_cache(full);
    BOOST_FAIL("expected no room for a block and its draft block");
  } catch (const std::runtime_error& error) {
    BOOST_TEST(std::string(error.what()).find("one block needs 2.50 MiB") != std::string::npos, error.what());
  }
}

BOOST_AUTO_TEST_CASE(decode_graph_sizes_cover_every_batch_up_to_the_limit) {
  BOOST_TEST(cuda::decode_graph_batch_sizes(1) == (std::vector<int32_t>{1}), boost::test_tools::per_element());
  BOOST_TEST(cuda::decode_graph_batch_sizes(5) == (std::vector<int32_t>{1, 2, 4, 5}), boost::test_tools::per_element());
  BOOST_TEST(cuda::decode_graph_batch_sizes(20) == (std::vector<int32_t>{1, 2, 4, 8, 16, 20}),
             boost::test_tools::per_element());
  const std::vector<int32_t> large = cuda::decode_graph_batch_sizes(1024);
  BOOST_TEST(large.back() == 256);
  BOOST_TEST(large.size() == 3u + 32u);  // 1, 2, 4, then 8..256 by 8
}

BOOST_AUTO_TEST_CASE(rows_the_device_sampler_cannot_serve_go_to_the_host) {
  sched::SamplingParams params;
  sched::ScheduledSequence row;
  row.params = &params;
  BOOST_TEST(!cuda::needs_host_sampling(row));
  params.temperature = 0.7f;
  params.top_k = 40;
  params.top_p = 0.9f;
  BOOST_TEST(!cuda::needs_host_sampling(row));
  const auto with = [&](auto change) {
    sched::SamplingParams changed = params;
    sched::ScheduledSequence copy = row;
    change(changed, copy);
    copy.params = &changed;
    return cuda::needs_host_sampling(copy);
  };
  BOOST_TEST(with([](sched::SamplingParams& p, sched::ScheduledSequence&) { p.min_p = 0.1f; }));
  BOOST_TEST(with([](sched::SamplingParams& p, sched::ScheduledSequence&) { p.repetition_penalty = 1.1f; }));
  BOOST_TEST(with([](sched::SamplingParams& p, sched::ScheduledSequence&) { p.presence_penalty = 0.5f; }));
  BOOST_TEST(with([](sched::SamplingParams& p, sched::ScheduledSequence&) { p.frequency_penalty = 0.5f; }));
  BOOST_TEST(with([](sched::SamplingParams& p, sched::ScheduledSequence&) { p.logprobs = 0; }));
  BOOST_TEST(with([](sched::SamplingParams&, sched::ScheduledSequence& s) { s.num_samples = 2; }));
  BOOST_TEST(with([](sched::SamplingParams&, sched::ScheduledSequence& s) { s.num_beam_candidates = 4; }));
  BOOST_TEST(with([](sched::SamplingParams& p, sched::ScheduledSequence&) { p.logit_bias = {{3, -100.0f}}; }));
  BOOST_TEST(with([](sched::SamplingParams& p, sched::ScheduledSequence&) { p.allowed_token_ids = {3, 4}; }));
  BOOST_TEST(with([](sched::SamplingParams& p, sched::ScheduledSequence&) { p.bad_words_token_ids = {{3}}; }));

  // min_tokens: the host sampler suppresses the stop tokens until that many outputs are out.
  const std::vector<TokenId> tokens = {5, 6, 7, 8, 9};  // 3 prompt tokens, 2 outputs so far
  const auto min_tokens = [&](int32_t count, std::vector<TokenId> stop_ids) {
    return with([&](sched::SamplingParams& p, sched::ScheduledSequence& s) {
      p.min_tokens = count;
      p.all_stop_token_ids = stop_ids;
      s.tokens = tokens;
      s.num_prompt_tokens = 3;
    });
  };
  BOOST_TEST(min_tokens(3, {2}));   // the third output is being sampled: still held back
  BOOST_TEST(!min_tokens(2, {2}));  // two are out: a stop token may come
  BOOST_TEST(!min_tokens(3, {}));   // nothing to suppress (ignore_eos, no stop ids)
}

BOOST_AUTO_TEST_SUITE_END()
