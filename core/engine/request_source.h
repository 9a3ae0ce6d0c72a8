// Requests in arrival order, pulled one at a time by a driver (sim::ClusterSimulation): from a
// vector held whole, or from a trace read as it is consumed (trace::TraceRequestStream), so that
// a run holds the requests in flight and not the whole trace.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/sched/request.h"

namespace pagedllm::engine {

class RequestSource {
 public:
  virtual ~RequestSource() = default;
  // The next request, or nullopt when there are no more. Arrival times never decrease.
  virtual std::optional<sched::Request> next() = 0;
  // How many requests next() will return in all, for progress; 0 when unknown.
  virtual int64_t expected_count() const { return 0; }
};

// The requests of a vector (sorted by arrival_time), moved out one by one.
class VectorRequestSource final : public RequestSource {
 public:
  explicit VectorRequestSource(std::vector<sched::Request> requests) : requests_(std::move(requests)) {}
  std::optional<sched::Request> next() override {
    if (next_ == requests_.size()) return std::nullopt;
    return std::move(requests_[next_++]);
  }
  int64_t expected_count() const override { return static_cast<int64_t>(requests_.size()); }

 private:
  std::vector<sched::Request> requests_;
  size_t next_ = 0;
};

}  // namespace pagedllm::engine
