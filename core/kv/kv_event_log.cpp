#include "core/kv/kv_event_log.h"

#include <charconv>

namespace pagedllm::kv {
namespace {

template <typename Int>
void append_int(std::string& line, Int value) {
  char digits[24];
  const auto result = std::to_chars(digits, digits + sizeof(digits), value);
  line.append(digits, result.ptr);
}

template <typename Int>
void append_field(std::string& line, const char* key, Int value) {
  line += ",\"";
  line += key;
  line += "\":";
  append_int(line, value);
}

template <typename Int>
void append_list(std::string& line, const char* key, std::span<const Int> values) {
  line += ",\"";
  line += key;
  line += "\":[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) line += ',';
    append_int(line, values[i]);
  }
  line += ']';
}

}  // namespace

void KvEventLog::begin(const char* op) {
  line_.clear();
  line_ += "{\"step\":";
  append_int(line_, step_);
  line_ += ",\"op\":\"";
  line_ += op;
  line_ += '"';
}

void KvEventLog::end() {
  line_ += "}\n";
  out_.write(line_.data(), static_cast<std::streamsize>(line_.size()));
}

void KvEventLog::allocate(SeqId seq, std::span<const BlockId> hit, std::span<const BlockId> fresh,
                          std::span<const BlockId> cached) {
  begin("allocate");
  append_field(line_, "seq", seq);
  append_list(line_, "hit", hit);
  append_list(line_, "new", fresh);
  append_list(line_, "cached", cached);
  end();
}

void KvEventLog::append(SeqId seq, std::span<const BlockId> fresh, std::span<const BlockId> cached) {
  begin("append");
  append_field(line_, "seq", seq);
  append_list(line_, "new", fresh);
  append_list(line_, "cached", cached);
  end();
}

void KvEventLog::copy_on_write(SeqId seq, BlockCopy copy) {
  begin("cow");
  append_field(line_, "seq", seq);
  append_field(line_, "src", copy.src);
  append_field(line_, "dst", copy.dst);
  end();
}

void KvEventLog::fork(SeqId parent, SeqId child) {
  begin("fork");
  append_field(line_, "seq", child);
  append_field(line_, "parent", parent);
  end();
}

void KvEventLog::free(SeqId seq, Tier tier, std::span<const BlockId> blocks) {
  begin("free");
  append_field(line_, "seq", seq);
  line_ += tier == Tier::device ? ",\"tier\":\"device\"" : ",\"tier\":\"host\"";
  append_list(line_, "blocks", blocks);
  end();
}

void KvEventLog::release_outside_window(SeqId seq, std::span<const BlockId> blocks) {
  begin("release_window");
  append_field(line_, "seq", seq);
  append_list(line_, "blocks", blocks);
  end();
}

void KvEventLog::settle(SeqId seq, int32_t accepted, std::span<const BlockId> released,
                        std::span<const BlockId> cached) {
  begin("settle");
  append_field(line_, "seq", seq);
  append_field(line_, "accepted", accepted);
  append_list(line_, "released", released);
  append_list(line_, "cached", cached);
  end();
}

void KvEventLog::evict(BlockId block) {
  begin("evict");
  append_field(line_, "block", block);
  end();
}

void KvEventLog::append_moves(const char* key, std::span<const BlockMove> moves) {
  line_ += ",\"";
  line_ += key;
  line_ += "\":[";
  for (size_t i = 0; i < moves.size(); ++i) {
    if (i > 0) line_ += ',';
    line_ += '[';
    append_int(line_, moves[i].src);
    line_ += ',';
    append_int(line_, moves[i].dst);
    line_ += ']';
  }
  line_ += ']';
}

void KvEventLog::swap_out(std::span<const SeqId> seqs, std::span<const BlockMove> moves) {
  begin("swap_out");
  append_list(line_, "seqs", seqs);
  append_moves("moves", moves);
  end();
}

void KvEventLog::swap_in(std::span<const SeqId> seqs, std::span<const BlockMove> moves,
                         std::span<const BlockMove> reused) {
  begin("swap_in");
  append_list(line_, "seqs", seqs);
  append_moves("moves", moves);
  append_moves("reused", reused);
  end();
}

void KvEventLog::reset_prefix_cache(int32_t num_blocks_uncached) {
  begin("reset_prefix_cache");
  append_field(line_, "blocks", num_blocks_uncached);
  end();
}

}  // namespace pagedllm::kv
