// base/: what every part of sluice uses (Status, descriptors, rings and
// waits, fds). It includes nothing of sluice's own.
//
// Errors are values: Status says ok or what went wrong, in words that name the
// call, the link and the peer.
#pragma once

#include <memory>
#include <string>
#include <utility>

namespace sluice {

// An ok Status is one null pointer: the data path returns, moves and drops
// one per call, and an empty std::string (32 bytes, its own checks on every
// move and destruction) was 4-5% of a node's user time at 20,000 events/s.
// The message is allocated only for an error.
class Status {
 public:
  Status() = default;
  Status(const Status& o) : msg_(o.msg_ ? std::make_unique<std::string>(*o.msg_) : nullptr) {}
  Status& operator=(const Status& o) {
    if (this != &o) msg_ = o.msg_ ? std::make_unique<std::string>(*o.msg_) : nullptr;
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status Error(std::string msg) { return Status(std::move(msg)); }
  bool ok() const { return !msg_; }
  explicit operator bool() const { return ok(); }
  // "" when ok.
  const std::string& message() const { return msg_ ? *msg_ : empty(); }

 private:
  explicit Status(std::string m)
      : msg_(std::make_unique<std::string>(m.empty() ? "unknown error" : std::move(m))) {}
  static const std::string& empty() {
    static const std::string e;
    return e;
  }
  std::unique_ptr<std::string> msg_;
};

}  // namespace sluice
