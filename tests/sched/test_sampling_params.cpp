// sched::validate(SamplingParams): every field's bounds, and the context-length check.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/sched/sampling_params.h"

namespace sched = pagedllm::sched;

namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

struct Case {
  int32_t num_prompt_tokens = 8;
  sched::RequestLimits limits{.max_model_len = 128, .max_logprobs = 20};
};

using Edit = std::function<void(sched::SamplingParams&)>;

sched::SamplingParams edited(const Edit& edit) {
  sched::SamplingParams params;
  edit(params);
  return params;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Validation must refuse with an error whose field() is `field` and whose message holds every one
// of `message_parts` (the field's name and its bound).
void expect_refused(const sched::SamplingParams& params, const std::string& field,
                    const std::vector<std::string>& message_parts, const Case& c = {}) {
  try {
    sched::validate(params, c.num_prompt_tokens, c.limits);
    BOOST_ERROR("accepted; expected a refusal of field '" << field << "'");
  } catch (const sched::InvalidRequestError& error) {
    BOOST_TEST(error.field() == field, "field() is '" << error.field() << "', expected '" << field << "'");
    for (const std::string& part : message_parts) {
      BOOST_TEST(contains(error.what(), part), "message '" << error.what() << "' lacks '" << part << "'");
    }
  }
}

void expect_valid(const sched::SamplingParams& params, const Case& c = {}) {
  BOOST_CHECK_NO_THROW(sched::validate(params, c.num_prompt_tokens, c.limits));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sampling_params)

BOOST_AUTO_TEST_CASE(default_parameters_are_valid) { expect_valid(sched::SamplingParams{}); }

BOOST_AUTO_TEST_CASE(values_on_every_bound_are_valid) {
  const std::vector<Edit> edits = {
      [](auto& p) { p.n = 1; },
      [](auto& p) { p.n = 4; },
      [](auto& p) {
        p.beam_width = 3;
        p.n = 3;
      },
      [](auto& p) { p.temperature = 0.0f; },
      [](auto& p) { p.temperature = 100.0f; },
      [](auto& p) { p.top_p = 1.0f; },
      [](auto& p) { p.top_p = 1e-6f; },
      [](auto& p) { p.top_k = -1; },
      [](auto& p) { p.top_k = 0; },
      [](auto& p) { p.top_k = 50; },
      [](auto& p) { p.min_p = 0.0f; },
      [](auto& p) { p.min_p = 1.0f; },
      [](auto& p) { p.repetition_penalty = 1e-3f; },
      [](auto& p) { p.presence_penalty = -2.0f; },
      [](auto& p) { p.presence_penalty = 2.0f; },
      [](auto& p) { p.frequency_penalty = -2.0f; },
      [](auto& p) { p.frequency_penalty = 2.0f; },
      [](auto& p) { p.max_tokens = 1; },
      [](auto& p) { p.min_tokens = p.max_tokens; },
      [](auto& p) { p.logprobs = 0; },
      [](auto& p) { p.logprobs = 20; },
      [](auto& p) {
        p.stop = {"a", "\n\n"};
      },
  };
  for (size_t i = 0; i < edits.size(); ++i) {
    BOOST_TEST_CONTEXT("edit " << i) { expect_valid(edited(edits[i])); }
  }
}

BOOST_AUTO_TEST_CASE(n_below_one_is_refused) {
  expect_refused(edited([](auto& p) { p.n = 0; }), "n", {"n must be", "at least 1", "got 0"});
  expect_refused(edited([](auto& p) { p.n = -2; }), "n", {"at least 1", "got -2"});
}

BOOST_AUTO_TEST_CASE(negative_beam_width_is_refused) {
  expect_refused(edited([](auto& p) { p.beam_width = -1; }), "beam_width", {"beam_width", "at least 0", "got -1"});
}

BOOST_AUTO_TEST_CASE(n_above_beam_width_is_refused_with_beam_search) {
  expect_refused(edited([](auto& p) {
                   p.beam_width = 2;
                   p.n = 3;
                 }),
                 "n", {"at most beam_width (2)", "got 3"});
  // Without beam search n is free.
  expect_valid(edited([](auto& p) {
    p.beam_width = 0;
    p.n = 3;
  }));
}

BOOST_AUTO_TEST_CASE(temperature_must_be_finite_and_non_negative) {
  for (const float value : {-0.1f, -kInf, kInf, kNan}) {
    BOOST_TEST_CONTEXT("temperature " << value) {
      expect_refused(edited([&](auto& p) { p.temperature = value; }), "temperature", {"temperature", "non-negative"});
    }
  }
}

BOOST_AUTO_TEST_CASE(top_p_outside_zero_exclusive_to_one_is_refused) {
  for (const float value : {0.0f, -0.5f, 1.0001f, 2.0f, kNan}) {
    BOOST_TEST_CONTEXT("top_p " << value) {
      expect_refused(edited([&](auto& p) { p.top_p = value; }), "top_p", {"top_p", "in (0, 1]"});
    }
  }
}

BOOST_AUTO_TEST_CASE(top_k_below_minus_one_is_refused) {
  expect_refused(edited([](auto& p) { p.top_k = -2; }), "top_k", {"top_k", "-1, 0 (all tokens) or positive", "got -2"});
}

BOOST_AUTO_TEST_CASE(min_p_outside_zero_to_one_is_refused) {
  for (const float value : {-0.01f, 1.01f, kNan}) {
    BOOST_TEST_CONTEXT("min_p " << value) {
      expect_refused(edited([&](auto& p) { p.min_p = value; }), "min_p", {"min_p", "in [0, 1]"});
    }
  }
}

BOOST_AUTO_TEST_CASE(repetition_penalty_must_be_positive_and_finite) {
  for (const float value : {0.0f, -1.0f, kInf, kNan}) {
    BOOST_TEST_CONTEXT("repetition_penalty " << value) {
      expect_refused(edited([&](auto& p) { p.repetition_penalty = value; }), "repetition_penalty",
                     {"repetition_penalty", "a positive number"});
    }
  }
}

BOOST_AUTO_TEST_CASE(presence_and_frequency_penalties_outside_minus_two_to_two_are_refused) {
  for (const float value : {-2.01f, 2.01f, kNan}) {
    BOOST_TEST_CONTEXT("penalty " << value) {
      expect_refused(edited([&](auto& p) { p.presence_penalty = value; }), "presence_penalty",
                     {"presence_penalty", "in [-2, 2]"});
      expect_refused(edited([&](auto& p) { p.frequency_penalty = value; }), "frequency_penalty",
                     {"frequency_penalty", "in [-2, 2]"});
    }
  }
}

BOOST_AUTO_TEST_CASE(max_tokens_below_one_is_refused) {
  expect_refused(edited([](auto& p) { p.max_tokens = 0; }), "max_tokens", {"max_tokens", "at least 1", "got 0"});
}

BOOST_AUTO_TEST_CASE(min_tokens_outside_zero_to_max_tokens_is_refused) {
  expect_refused(edited([](auto& p) { p.min_tokens = -1; }), "min_tokens", {"min_tokens", "in [0, max_tokens=16]"});
  expect_refused(edited([](auto& p) {
                   p.max_tokens = 5;
                   p.min_tokens = 6;
                 }),
                 "min_tokens", {"in [0, max_tokens=5]", "got 6"});
}

BOOST_AUTO_TEST_CASE(logprobs_outside_zero_to_the_limit_are_refused) {
  expect_refused(edited([](auto& p) { p.logprobs = -1; }), "logprobs", {"logprobs", "in [0, 20]", "got -1"});
  expect_refused(edited([](auto& p) { p.logprobs = 21; }), "logprobs", {"in [0, 20]", "got 21"});
  // The bound is the engine's max_logprobs.
  const Case tight{.limits = {.max_model_len = 128, .max_logprobs = 5}};
  expect_refused(edited([](auto& p) { p.logprobs = 6; }), "logprobs", {"in [0, 5]", "got 6"}, tight);
  expect_valid(edited([](auto& p) { p.logprobs = 5; }), tight);
}

BOOST_AUTO_TEST_CASE(an_empty_stop_string_is_refused) {
  expect_refused(edited([](auto& p) { p.stop = {"end", ""}; }), "stop", {"stop strings", "empty"});
}

BOOST_AUTO_TEST_CASE(an_empty_prompt_is_refused) {
  expect_refused(sched::SamplingParams{}, "prompt", {"prompt", "at least one token"}, {.num_prompt_tokens = 0});
}

BOOST_AUTO_TEST_CASE(prompt_and_max_tokens_beyond_max_model_len_name_the_context_length_and_both_counts) {
  const Case c{.num_prompt_tokens = 120, .limits = {.max_model_len = 128, .max_logprobs = 20}};
  // The prompt fits on its own: max_tokens is at fault.
  expect_refused(edited([](auto& p) { p.max_tokens = 9; }), "max_tokens",
                 {"maximum context length is 128 tokens", "120 prompt tokens", "9 completion tokens", "129 in all"}, c);
  // Exactly the context length is fine.
  expect_valid(edited([](auto& p) { p.max_tokens = 8; }), c);
  // A prompt beyond the context length on its own: the prompt is at fault.
  const Case long_prompt{.num_prompt_tokens = 130, .limits = c.limits};
  expect_refused(edited([](auto& p) { p.max_tokens = 1; }), "prompt",
                 {"maximum context length is 128 tokens", "130 prompt tokens", "1 completion tokens"}, long_prompt);
}

BOOST_AUTO_TEST_CASE(logit_bias_and_allowed_ids_must_name_tokens_of_the_vocabulary) {
  const Case c{.limits = {.max_model_len = 128, .max_logprobs = 20, .vocab_size = 1000}};
  expect_valid(edited([](auto& p) {
                 p.logit_bias = {{0, -100.0f}, {999, 100.0f}};
                 p.allowed_token_ids = {0, 999};
               }),
               c);
  expect_refused(edited([](auto& p) {
                   p.logit_bias = {{3, 1.0f}, {1000, 1.0f}};
                 }),
                 "logit_bias", {"token id 1000", "outside the vocabulary [0, 1000)"}, c);
  expect_refused(edited([](auto& p) { p.logit_bias = {{-1, 1.0f}}; }), "logit_bias", {"token id -1"}, c);
  expect_refused(edited([](auto& p) { p.logit_bias = {{3, kNan}}; }), "logit_bias", {"finite"}, c);
  expect_refused(edited([](auto& p) {
                   p.allowed_token_ids = {5, 1000};
                 }),
                 "allowed_token_ids", {"token id 1000", "outside the vocabulary"}, c);
  // Without a known vocabulary only negative ids are refused (the sampler checks the rest).
  expect_valid(edited([](auto& p) { p.logit_bias = {{123456, 1.0f}}; }));
  expect_refused(edited([](auto& p) { p.allowed_token_ids = {-4}; }), "allowed_token_ids", {"a negative id"});
}

BOOST_AUTO_TEST_CASE(bad_words_must_be_token_sequences_of_the_vocabulary) {
  const Case c{.limits = {.max_model_len = 128, .max_logprobs = 20, .vocab_size = 1000}};
  expect_valid(edited([](auto& p) { p.bad_words_token_ids = {{5}, {6, 999}}; }), c);
  expect_refused(edited([](auto& p) { p.bad_words_token_ids = {{5}, {}}; }), "bad_words", {"at least one token"}, c);
  expect_refused(edited([](auto& p) { p.bad_words_token_ids = {{5, 1000}}; }), "bad_words", {"token id 1000"}, c);
  expect_refused(edited([](auto& p) {
                   p.beam_width = 2;
                   p.bad_words_token_ids = {{5}};
                 }),
                 "bad_words", {"not supported with beam search"}, c);
}

BOOST_AUTO_TEST_CASE(logit_bias_and_allowed_ids_are_refused_with_beam_search) {
  expect_refused(edited([](auto& p) {
                   p.beam_width = 2;
                   p.logit_bias = {{3, 1.0f}};
                 }),
                 "logit_bias", {"not supported with beam search"});
  expect_refused(edited([](auto& p) {
                   p.beam_width = 2;
                   p.allowed_token_ids = {3};
                 }),
                 "allowed_token_ids", {"not supported with beam search"});
}

BOOST_AUTO_TEST_CASE(the_first_field_out_of_range_is_the_one_named) {
  expect_refused(edited([](auto& p) {
                   p.n = 0;
                   p.top_p = 0.0f;
                   p.max_tokens = 0;
                 }),
                 "n", {"n must be"});
  expect_refused(edited([](auto& p) {
                   p.top_p = 0.0f;
                   p.max_tokens = 0;
                 }),
                 "top_p", {"top_p"});
}

BOOST_AUTO_TEST_SUITE_END()
