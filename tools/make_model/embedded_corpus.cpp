// The text that `pagedllm make-model` trains the tiny model's BPE vocabulary on: English prose,
// code, numbers and a little punctuation-heavy text, written for pagedllm. Changing it changes
// every generated model (tests compare runs against each other, never against stored ids).
#include "tools/make_model/embedded_corpus.h"

namespace pagedllm::make_model {

std::string_view embedded_corpus() {
  return R"corpus(A language model reads a prompt and writes an answer one token at a time.
Each new token looks back at every token before it, so the model keeps a cache of keys and
values for the tokens it has already seen. The cache grows with every step, and on a busy
server it is the largest thing in memory. When the cache is cut into small blocks of sixteen
tokens, a request only holds the blocks it needs, two requests that share a prompt can share
its blocks, and a request that must wait can give its blocks back and take them again later.

The scheduler decides, at every step, which requests run. It first keeps the running requests
going, then admits waiting ones while the token budget and the free blocks allow it. A long
prompt can be split into chunks so that short requests are not stuck behind it. When memory
runs out, the newest request is preempted: its blocks are swapped to host memory, or freed and
recomputed later. Nothing that was already accepted is lost.

The weather was cold in the morning, and the river was quiet. She walked to the station, bought
a coffee and a newspaper, and waited for the train to the city. It was late again. Twenty-three
minutes later it arrived, full of people who had been waiting just as long as she had.
Why do we measure? Because a number that was never measured is only a hope. How fast is fast
enough? That depends on the user: a chat wants the first token quickly, a batch job wants many
tokens per second, and a planner wants to know how many machines a day of traffic will need.

Numbers: 0 1 2 3 4 5 6 7 8 9 10 16 32 64 128 256 512 1024 2048 4096 8192 65536 3.14159 2.71828
1,000,000 requests at 12.5 requests per second take 80,000 seconds, or about 22.2 hours.
Dates like 2026-11-22 and times like 15:06:46 appear in logs; so do ids like req-000042.

def schedule(waiting, running, free_blocks, token_budget):
    plan = []
    for request in running:
        if token_budget <= 0:
            break
        plan.append((request, 1))
        token_budget -= 1
    while waiting and free_blocks >= waiting[0].blocks_needed:
        request = waiting.pop(0)
        free_blocks -= request.blocks_needed
        chunk = min(request.prompt_length, token_budget)
        plan.append((request, chunk))
        token_budget -= chunk
    return plan

int append_slot(BlockTable& table, int num_tokens, int block_size) {
  if (num_tokens % block_size == 0) {
    table.push_back(allocate_block());  // a new block starts here
  }
  return table.back() * block_size + num_tokens % block_size;
}

for (std::size_t i = 0; i < values.size(); ++i) {
  sum += values[i] * weights[i];
}
const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
if (x < 0 && y >= 0 || z != 0) { return {x, y, z}; }

{"role": "user", "content": "What is a key-value cache?"}
{"role": "assistant", "content": "It stores the keys and values of earlier tokens."}

The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX! the quick brown fox?
It's, they're, we've, I'm, you'll, he'd: contractions are split the way GPT-2 splits them.
Tabs	and  double  spaces,   and
blank lines


stay in the text, because code depends on them.
Thank you. You're welcome. Good night.
)corpus";
}

}  // namespace pagedllm::make_model
