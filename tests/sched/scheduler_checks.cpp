// Checks for the scheduler table tests: phase tables of the recorded steps, token comparisons, aborts.
#include "tests/sched/scheduler_checks.h"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace pagedllm::test {

namespace {

std::string render(const std::vector<Ran>& ran, const std::vector<Preempted>& preempted, size_t swap_out,
                   size_t swap_in, size_t copies) {
  std::ostringstream out;
  out << "ran";
  for (const Ran& entry : ran) out << " r" << entry.request << ":" << entry.num_tokens;
  if (!preempted.empty()) {
    out << " | preempted";
    for (const Preempted& entry : preempted) out << " r" << entry.request << "/" << mode_name(entry.mode);
  }
  if (swap_out + swap_in + copies > 0) out << " | out " << swap_out << " in " << swap_in << " copies " << copies;
  return out.str();
}

std::string render(const StepRecord& record) {
  std::vector<Ran> ran;
  for (const RanSequence& entry : record.ran) {
    const int32_t tokens = entry.end - entry.start;
    if (!ran.empty() && ran.back().request == entry.request) {
      ran.back().num_tokens += tokens;
    } else {
      ran.push_back({entry.request, tokens});
    }
  }
  std::vector<Preempted> preempted;
  for (const sched::PreemptedGroup& entry : record.preempted) preempted.push_back({entry.request, entry.mode});
  return render(ran, preempted, record.swap_out.size(), record.swap_in.size(), record.copies.size());
}

std::string render(const Phase& phase) {
  return render(phase.ran, phase.preempted, static_cast<size_t>(phase.swap_out), static_cast<size_t>(phase.swap_in),
                static_cast<size_t>(phase.copies));
}

// The whole timeline, sequence by sequence: printed when a table does not match.
std::string describe(const std::vector<StepRecord>& steps) {
  std::ostringstream out;
  for (const StepRecord& record : steps) {
    out << "  step " << record.step << ": " << render(record) << " |";
    for (const RanSequence& ran : record.ran) {
      out << " seq " << ran.seq << " [" << ran.start << "," << ran.end << ")" << (ran.prefill ? " prefill" : "")
          << " blocks";
      for (const kv::BlockId block : ran.block_table) out << " " << block;
      out << ";";
    }
    out << "\n";
  }
  return out.str();
}

// The same requests on an ample pool: the reference for "the final tokens are unchanged".
std::map<RequestId, engine::RequestOutput> ample_run(const std::vector<RequestSpec>& specs) {
  Harness harness({.num_device_blocks = 256});
  for (const RequestSpec& spec : specs) harness.add(spec);
  harness.run_to_completion();
  std::map<RequestId, engine::RequestOutput> outputs;
  for (const RequestSpec& spec : specs) outputs[spec.id] = harness.output(spec.id);
  return outputs;
}

HeldBlocks held_blocks(const kv::KvCacheManager& kv, const std::vector<SeqId>& seqs) {
  std::set<kv::BlockId> device;
  std::set<kv::BlockId> host;
  for (const SeqId seq : seqs) {
    if (!kv.contains(seq)) continue;
    const auto table = kv.block_table(seq);
    (kv.is_swapped(seq) ? host : device).insert(table.begin(), table.end());
  }
  return {static_cast<int32_t>(device.size()), static_cast<int32_t>(host.size())};
}

}  // namespace

// --- the tables --------------------------------------------------------------------------------

std::string reason(FinishReason finish_reason) { return sched::to_string(finish_reason); }

const char* mode_name(PreemptionMode mode) { return mode == kSwap ? "swap" : "recompute"; }

void expect_phases(const std::vector<StepRecord>& steps, const std::vector<Phase>& phases) {
  bool matched = true;
  int64_t next = 0;
  for (const Phase& phase : phases) {
    BOOST_TEST_REQUIRE(phase.first_step == next, "phases must be contiguous: expected one from step " << next);
    for (int64_t s = phase.first_step; s <= phase.last_step; ++s) {
      const std::string expected = render(phase);
      const std::string actual =
          s < static_cast<int64_t>(steps.size()) ? render(steps[static_cast<size_t>(s)]) : "(never ran)";
      BOOST_TEST_CONTEXT("step " << s) { BOOST_TEST(actual == expected); }
      matched = matched && actual == expected;
    }
    next = phase.last_step + 1;
  }
  BOOST_TEST(static_cast<int64_t>(steps.size()) == next, "steps ran beyond the table: " << steps.size());
  matched = matched && static_cast<int64_t>(steps.size()) == next;
  if (!matched) BOOST_TEST_MESSAGE("the steps as they ran:\n" << describe(steps));
}

// --- other checks ------------------------------------------------------------------------------

std::vector<Range> ranges_of(const std::vector<StepRecord>& steps, SeqId seq) {
  std::vector<Range> ranges;
  for (const StepRecord& record : steps) {
    for (const RanSequence& ran : record.ran) {
      if (ran.seq == seq) ranges.emplace_back(ran.start, ran.end);
    }
  }
  return ranges;
}

std::string render(const std::vector<Range>& ranges) {
  std::ostringstream out;
  for (const auto& [start, end] : ranges) out << "[" << start << "," << end << ") ";
  return out.str();
}

bool decodes_come_first(const StepRecord& record) {
  return std::is_partitioned(record.ran.begin(), record.ran.end(), [](const RanSequence& ran) { return !ran.prefill; });
}

std::vector<kv::BlockId> table_of(const kv::KvCacheManager& kv, SeqId seq) {
  const auto table = kv.block_table(seq);
  return {table.begin(), table.end()};
}

std::vector<std::vector<TokenId>> completion_tokens(const engine::RequestOutput& output) {
  std::vector<std::vector<TokenId>> tokens;
  for (const engine::Completion& completion : output.completions) tokens.push_back(completion.tokens);
  return tokens;
}

void expect_same_tokens(const Harness& harness, const std::vector<RequestSpec>& specs,
                        const std::vector<RequestId>& ids) {
  const auto reference = ample_run(specs);
  for (const RequestId id : ids) {
    BOOST_TEST_CONTEXT("request " << id) {
      const engine::RequestOutput& output = harness.output(id);
      BOOST_TEST(output.finished);
      BOOST_TEST(completion_tokens(output) == completion_tokens(reference.at(id)));
    }
  }
}

void abort_and_check(Harness& harness, RequestId id, HeldBlocks expected_held) {
  const std::vector<SeqId> seqs = harness.seqs_of(id);
  const HeldBlocks held = held_blocks(harness.kv(), seqs);
  BOOST_TEST(held.device == expected_held.device);
  BOOST_TEST(held.host == expected_held.host);
  const kv::KvStats before = harness.kv().stats();

  BOOST_TEST_REQUIRE(harness.engine().abort_request(id));
  const kv::KvStats after = harness.kv().stats();
  BOOST_TEST(after.num_free_device_blocks == before.num_free_device_blocks + held.device);
  BOOST_TEST(after.num_free_host_blocks == before.num_free_host_blocks + held.host);
  for (const SeqId seq : seqs) BOOST_TEST(!harness.kv().contains(seq));
  BOOST_CHECK_NO_THROW(harness.engine().scheduler().check_invariants());
  BOOST_TEST(!harness.engine().abort_request(id), "a second abort finds nothing to abort");

  harness.step();
  const engine::RequestOutput* output = harness.last_output(id);
  BOOST_TEST_REQUIRE(output != nullptr, "the step after the abort must report request " << id);
  BOOST_TEST(output->finished);
  BOOST_TEST(reason(output->finish_reason) == "abort");
  for (const engine::Completion& completion : output->completions) {
    BOOST_TEST(reason(completion.finish_reason) == "abort");
  }
  for (const RanSequence& ran : harness.steps().back().ran) BOOST_TEST(ran.request != id, "the aborted request ran");
}

}  // namespace pagedllm::test
