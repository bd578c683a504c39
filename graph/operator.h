// Operators: the query work of the process stage.
//
// An operator works on the events named by one descriptor, in place in their
// slot. It may drop tuples; it then compacts the surviving tuples (and the
// events after them) towards the front of the run, reseals each changed
// event's checksum, and shrinks the descriptor. It never copies an event to
// another slot and never allocates: whatever state it keeps is sized when it
// is made. An event whose tuples are all dropped stays, with no tuples, so its
// tuple span still tells the sink which sequence numbers were filtered.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "graph/config.h"
#include "base/status.h"
#include "transport/transport.h"

namespace sluice {

class Operator {
 public:
  virtual ~Operator() = default;
  virtual const char* name() const = 0;
  // `run` points at the descriptor's first event (slot + offset).
  virtual void process(std::byte* run, Descriptor& d) = 0;
};

std::unique_ptr<Operator> make_operator(const OperatorConfig& cfg, Status* st);

// The operators of one process stage, applied in order.
class OperatorChain {
 public:
  static Status make(const std::vector<OperatorConfig>& cfgs, OperatorChain* out);
  void process(std::byte* run, Descriptor& d) {
    for (auto& op : ops_) op->process(run, d);
  }
  bool empty() const { return ops_.empty(); }

 private:
  std::vector<std::unique_ptr<Operator>> ops_;
};

}  // namespace sluice
