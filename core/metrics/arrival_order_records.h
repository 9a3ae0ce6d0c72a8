// Request records of a long run, handed on in arrival order as soon as every earlier arrival has
// ended: what a streaming report needs to sum up (ServingMetricsAccumulator) and write out
// records in the order a whole-run report gives them (by request id, which for a trace's
// requests is their arrival order) while holding only the records that wait on an earlier
// request still in flight.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>

#include "core/metrics/request_record.h"

namespace pagedllm::metrics {

class ArrivalOrderRecords {
 public:
  explicit ArrivalOrderRecords(std::function<void(RequestRecord&&)> emit) : emit_(std::move(emit)) {}

  // Request `id` arrived (each id once, in arrival order).
  void arrived(int64_t id) { order_.push_back(id); }
  // The record of a request that arrived; any order. Throws std::invalid_argument for an id that
  // did not arrive or ended twice.
  void ended(RequestRecord record);
  // The end of the run: what is held goes out in arrival order; arrivals without a record (still
  // in flight when the run was stopped) are passed over.
  void flush();

  size_t num_held() const { return held_.size(); }
  int64_t num_emitted() const { return num_emitted_; }

 private:
  void drain();

  std::function<void(RequestRecord&&)> emit_;
  std::deque<int64_t> order_;                        // arrived and not yet emitted, in arrival order
  std::unordered_map<int64_t, RequestRecord> held_;  // ended behind an earlier arrival still in flight
  int64_t num_emitted_ = 0;
};

}  // namespace pagedllm::metrics
