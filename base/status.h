// base/: what every part of sluice uses (Status, descriptors, rings and
// waits, fds). It includes nothing of sluice's own.
//
// Errors are values: Status says ok or what went wrong, in words that name the
// call, the link and the peer.
#pragma once

#include <string>
#include <utility>

namespace sluice {

class Status {
 public:
  Status() = default;
  static Status Error(std::string msg) { return Status(std::move(msg)); }
  bool ok() const { return msg_.empty(); }
  explicit operator bool() const { return ok(); }
  const std::string& message() const { return msg_; }

 private:
  explicit Status(std::string m) : msg_(m.empty() ? "unknown error" : std::move(m)) {}
  std::string msg_;
};

}  // namespace sluice
