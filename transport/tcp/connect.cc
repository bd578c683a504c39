// TEMPORARY stand-in; replaced by the Asio version.
#include "transport/tcp/connect.h"
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <chrono>
#include <cstring>
#include <thread>
namespace sluice::tcp {
namespace {
void opts(int fd, const SocketOptions& so) {
  if (!so.congestion.empty()) setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, so.congestion.data(), so.congestion.size());
}
}
Status connect_with_retry(const std::string& host, uint16_t port, uint32_t timeout_ms,
                          const SocketOptions& so, const std::string& who, int* out) {
  addrinfo hints{}, *ai = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &ai) != 0 || !ai)
    return Status::Error(fmt::format("{}: cannot resolve {}", who, host));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int last = 0;
  for (;;) {
    int fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    opts(fd, so);
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      freeaddrinfo(ai);
      *out = fd;
      return {};
    }
    last = errno;
    ::close(fd);
    if (std::chrono::steady_clock::now() >= deadline) {
      freeaddrinfo(ai);
      return Status::Error(fmt::format("connect to {}:{} failed on {} after {} ms: {}", host, port, who, timeout_ms, strerror(last)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}
std::unique_ptr<Acceptor> Acceptor::bind(const std::string& address, uint16_t port,
                                         const SocketOptions& so, const std::string& who, Status* st) {
  auto a = std::make_unique<Acceptor>();
  a->so_ = so; a->who_ = who; a->addr_ = address;
  addrinfo hints{}, *ai = nullptr;
  hints.ai_family = AF_UNSPEC; hints.ai_socktype = SOCK_STREAM; hints.ai_flags = AI_PASSIVE;
  if (getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &ai) != 0 || !ai) {
    *st = Status::Error(fmt::format("{}: cannot listen on {}:{}: cannot resolve", who, address, port));
    return nullptr;
  }
  int fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  opts(fd, so);
  if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 16) != 0) {
    *st = Status::Error(fmt::format("{}: cannot listen on {}:{}: {}", who, address, port, strerror(errno)));
    ::close(fd); freeaddrinfo(ai);
    return nullptr;
  }
  freeaddrinfo(ai);
  sockaddr_storage ss{}; socklen_t len = sizeof ss;
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  a->port_ = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port) : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  a->fd_ = fd;
  return a;
}
int Acceptor::accept(const Handshake& hs, Status* st) {
  for (;;) {
    sockaddr_storage ss{}; socklen_t len = sizeof ss;
    int c = ::accept4(fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_CLOEXEC);
    if (shut_) { if (c >= 0) ::close(c); *st = Status::Error(fmt::format("{}: listener on {}:{} shut down", who_, addr_, port_)); return -1; }
    if (c < 0) { if (errno == EINTR) continue; *st = Status::Error(fmt::format("{}: accept failed: {}", who_, strerror(errno))); return -1; }
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    timeval tv{}; tv.tv_sec = so_.handshake_timeout_ms / 1000; tv.tv_usec = (so_.handshake_timeout_ms % 1000) * 1000;
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string why;
    if (hs(c, "peer", &why) == Verdict::kAccept) {
      timeval z{}; setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &z, sizeof z);
      *st = Status(); return c;
    }
    spdlog::warn("{}: refused a connection: {}", who_, why);
    ::close(c);
  }
}
void Acceptor::shutdown() { shut_ = true; ::shutdown(fd_, SHUT_RDWR); }
Acceptor::~Acceptor() { if (fd_ >= 0) ::close(fd_); }
}
