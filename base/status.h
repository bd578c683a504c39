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
//
// An error may be a protocol error: a peer sent what the protocol forbids
// (a malformed or unexpected frame or credit message). Unlike a connection
// that went away, it is the peer's bytes that are wrong, so connecting again
// and sending them again cannot heal it (transport/PROTOCOL.md, rule E3).
class Status {
 public:
  Status() = default;
  Status(const Status& o) : err_(o.err_ ? std::make_unique<Err>(*o.err_) : nullptr) {}
  Status& operator=(const Status& o) {
    if (this != &o) err_ = o.err_ ? std::make_unique<Err>(*o.err_) : nullptr;
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status Error(std::string msg) { return Status(std::move(msg), false); }
  static Status Protocol(std::string msg) { return Status(std::move(msg), true); }
  // The same kind of error as `like` (ok: a plain error), with other words.
  static Status Like(const Status& like, std::string msg) {
    return Status(std::move(msg), like.protocol_error());
  }
  bool ok() const { return !err_; }
  explicit operator bool() const { return ok(); }
  bool protocol_error() const { return err_ && err_->protocol; }
  // "" when ok.
  const std::string& message() const { return err_ ? err_->msg : empty(); }

 private:
  struct Err {
    std::string msg;
    bool protocol;
  };
  Status(std::string m, bool protocol)
      : err_(std::make_unique<Err>(Err{m.empty() ? "unknown error" : std::move(m), protocol})) {}
  static const std::string& empty() {
    static const std::string e;
    return e;
  }
  std::unique_ptr<Err> err_;
};

}  // namespace sluice
