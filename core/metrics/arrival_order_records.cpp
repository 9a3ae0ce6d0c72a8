#include "core/metrics/arrival_order_records.h"

#include <stdexcept>
#include <string>

namespace pagedllm::metrics {

void ArrivalOrderRecords::ended(RequestRecord record) {
  if (order_.empty()) throw std::invalid_argument("records: request " + std::to_string(record.id) + " never arrived");
  if (record.id == order_.front()) {
    order_.pop_front();
    ++num_emitted_;
    emit_(std::move(record));
    drain();
    return;
  }
  const int64_t id = record.id;
  if (!held_.emplace(id, std::move(record)).second) {
    throw std::invalid_argument("records: request " + std::to_string(id) + " ended twice");
  }
}

void ArrivalOrderRecords::drain() {
  while (!order_.empty()) {
    const auto found = held_.find(order_.front());
    if (found == held_.end()) return;
    RequestRecord record = std::move(found->second);
    held_.erase(found);
    order_.pop_front();
    ++num_emitted_;
    emit_(std::move(record));
  }
}

void ArrivalOrderRecords::flush() {
  while (!order_.empty()) {
    order_.pop_front();  // in flight: no record
    drain();
  }
  if (!held_.empty()) {
    throw std::invalid_argument("records: request " + std::to_string(held_.begin()->first) + " never arrived");
  }
}

}  // namespace pagedllm::metrics
