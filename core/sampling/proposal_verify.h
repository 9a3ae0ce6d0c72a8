// Speculative decoding's acceptance rule for proposals of single tokens (n-gram lookup), shared by
// every executor that has logits (cpu_ref, and cuda through its host sampler).
//
// At each position of the verify pass the sampler draws exactly as it would without speculation:
// the same processed distribution p (penalties over the output so far, accepted proposals
// included), the same draw u = uniform_draw(seed, stream, position). The proposal d is accepted
// when the draw is d, and the walk stops at the first draw that is not, which becomes the
// sequence's next token; after k accepted proposals the (k + 1)-th row gives one more token.
//
// This is speculative sampling's rejection rule for a proposal distribution q that puts all its
// mass on d (Leviathan et al. 2023, Chen et al. 2023): d is accepted with probability
// min(1, p(d) / q(d)) = p(d), and a rejection draws from the residual max(0, p - q), which is p
// without d, renormalized; a draw from p conditioned on not being d is exactly that. So the
// output distribution is the target model's; more, since each position keeps its own draw, a
// seeded request's tokens are the same, bit for bit, with speculation on or off (greedy or not).
#pragma once

#include <span>

#include "core/sampling/sampler.h"
#include "core/sched/step_plan.h"

namespace pagedllm::sampling {

// `logits`: num_proposed_tokens + 1 rows of `vocab` floats, the row of the last confirmed token
// first, then one row per proposal. Returns the accepted proposals then the next drawn token
// (SequenceOutput::samples), with each one's top logprobs when asked. A constrained sequence's
// positions each take their own mask row (ScheduledSequence::allowed_row). Throws
// std::invalid_argument for logits or masks of the wrong size.
sched::SequenceOutput verify_proposals(Sampler& sampler, const sched::ScheduledSequence& scheduled,
                                       std::span<const float> logits, size_t vocab);

}  // namespace pagedllm::sampling
