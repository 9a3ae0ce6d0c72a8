// A flat open-addressing map from a key to a non-negative int32 (a block id or a slot index).
//
// The KV manager looks keys up on every append, allocation and eviction; node-based maps cost a
// dependent cache miss or two per lookup (docs/BENCHMARKS.md). Linear probing over a power-of-two
// array kept at most half full, with backward-shift deletion (no tombstones), keeps an operation
// to about one cache line. KeyBits must return a well-mixed 64-bit value: its low bits pick the slot.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace pagedllm::kv {

template <typename Key, typename KeyBits>
class FlatIndex {
 public:
  static constexpr int32_t kAbsent = -1;

  explicit FlatIndex(size_t expected_entries = 0) { rebuild(std::bit_ceil(expected_entries * 2 + 2)); }

  int32_t find(const Key& key) const {
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.value == kAbsent) return kAbsent;
      if (slot.key == key) return slot.value;
    }
  }

  // Returns false, changing nothing, when the key is present.
  bool insert(const Key& key, int32_t value) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    size_t i = home(key);
    for (; slots_[i].value != kAbsent; i = (i + 1) & mask_) {
      if (slots_[i].key == key) return false;
    }
    slots_[i] = Slot{key, value};
    ++size_;
    return true;
  }

  // Returns false when the key is absent.
  bool erase(const Key& key) {
    size_t hole = home(key);
    while (true) {
      if (slots_[hole].value == kAbsent) return false;
      if (slots_[hole].key == key) break;
      hole = (hole + 1) & mask_;
    }
    // Backward shift: an entry later in the probe run moves into the hole unless its home lies
    // (cyclically) after the hole, where a lookup would never pass the hole to reach it.
    for (size_t next = (hole + 1) & mask_; slots_[next].value != kAbsent; next = (next + 1) & mask_) {
      const size_t next_home = home(slots_[next].key);
      if (((next - next_home) & mask_) < ((next - hole) & mask_)) continue;
      slots_[hole] = slots_[next];
      hole = next;
    }
    slots_[hole].value = kAbsent;
    --size_;
    return true;
  }

  void clear() {
    for (Slot& slot : slots_) slot.value = kAbsent;
    size_ = 0;
  }

  size_t size() const { return size_; }

  // Calls fn(key, value) for every entry, in table order.
  template <typename Fn>
  void for_each(Fn&& fn) const {
    for (const Slot& slot : slots_) {
      if (slot.value != kAbsent) fn(slot.key, slot.value);
    }
  }

 private:
  struct Slot {
    Key key{};
    int32_t value = kAbsent;
  };

  size_t home(const Key& key) const { return static_cast<size_t>(KeyBits{}(key)) & mask_; }

  void rebuild(size_t capacity) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    size_ = 0;
    for (const Slot& slot : old) {
      if (slot.value != kAbsent) insert(slot.key, slot.value);
    }
  }

  void grow() { rebuild(slots_.size() * 2); }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace pagedllm::kv
