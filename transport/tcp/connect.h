// TEMPORARY stand-in; replaced by the Asio version.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <atomic>
#include "base/status.h"
namespace sluice::tcp {
struct SocketOptions {
  std::string congestion;
  uint32_t handshake_timeout_ms = 10000;
};
Status connect_with_retry(const std::string& host, uint16_t port, uint32_t timeout_ms,
                          const SocketOptions& so, const std::string& who, int* fd);
enum class Verdict { kAccept, kRefuse };
using Handshake = std::function<Verdict(int fd, const std::string& peer_addr, std::string* why)>;
class Acceptor {
 public:
  static std::unique_ptr<Acceptor> bind(const std::string& address, uint16_t port,
                                        const SocketOptions& so, const std::string& who,
                                        Status* st);
  uint16_t port() const { return port_; }
  int accept(const Handshake& hs, Status* st);
  void shutdown();
  ~Acceptor();
 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  SocketOptions so_;
  std::string who_, addr_;
  std::atomic<bool> shut_{false};
};
}
