#include "transport/tcp/connect.h"

#define ASIO_STANDALONE 1
#define ASIO_NO_DEPRECATED 1
#include <asio.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace sluice::tcp {
namespace {

using asio::ip::tcp;

// Asio has no option for the congestion control: set it on the native handle.
asio::error_code set_congestion(int fd, const SocketOptions& so) {
  if (so.congestion.empty()) return {};
  if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, so.congestion.data(), so.congestion.size()) != 0)
    return asio::error_code(errno, asio::system_category());
  return {};
}

void set_recv_timeout(int fd, uint32_t ms) {
  timeval tv{};
  tv.tv_sec = ms / 1000;
  tv.tv_usec = (ms % 1000) * 1000;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

std::string endpoint_text(const tcp::endpoint& e) {
  return fmt::format("{}:{}", e.address().to_string(), e.port());
}

}  // namespace

Status connect_with_retry(const std::string& host, uint16_t port, uint32_t timeout_ms,
                          const SocketOptions& so, const std::string& who, int* fd) {
  asio::io_context io;
  tcp::resolver resolver(io);
  asio::error_code ec;
  const auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec || endpoints.empty())
    return Status::Error(fmt::format("{}: cannot resolve {}: {}", who, host,
                                     ec ? ec.message() : "no address"));
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::milliseconds(timeout_ms);
  asio::error_code last;
  for (;;) {
    for (const auto& e : endpoints) {
      tcp::socket s(io);
      s.open(e.endpoint().protocol(), last);
      if (last) continue;
      if ((last = set_congestion(s.native_handle(), so)))
        return Status::Error(fmt::format("{}: setsockopt(TCP_CONGESTION, '{}') failed: {}", who,
                                         so.congestion, last.message()));
      s.connect(e.endpoint(), last);
      if (last) continue;
      s.set_option(tcp::no_delay(true), last);
      if (last)
        return Status::Error(fmt::format("{}: setsockopt(TCP_NODELAY) failed: {}", who, last.message()));
      *fd = s.release();
      return {};
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now() - start)
                          .count();
  return Status::Error(fmt::format("connect to {}:{} failed on {} after {} ms: {}", host, port, who,
                                   waited, last.message()));
}

// ---------------------------------------------------------------- Acceptor

struct Acceptor::Impl {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  SocketOptions so;
  std::string who, address;
  uint16_t port = 0;

  std::mutex mu;                     // guards what follows
  bool shut = false;
  int accepted = -1;
  std::vector<int> in_handshake;     // fds whose handshake is running
  std::vector<std::thread> threads;  // one per handshake; joined before accept() returns

  // Ends every handshake still running (their reads fail at once) and waits
  // for their threads: none may call the caller's handshake once accept returns.
  void end_handshakes() {
    std::vector<std::thread> ts;
    {
      std::lock_guard lk(mu);
      for (int fd : in_handshake) ::shutdown(fd, SHUT_RDWR);
      ts.swap(threads);
    }
    for (auto& t : ts) t.join();
  }

  void arm(const Handshake& hs) {
    acceptor.async_accept([this, &hs](asio::error_code ec, tcp::socket s) {
      if (ec) return;  // cancelled: accept() is returning
      asio::error_code ignore;
      s.set_option(tcp::no_delay(true), ignore);
      const auto peer = s.remote_endpoint(ignore);
      const std::string peer_addr = ignore ? std::string("?") : endpoint_text(peer);
      const int fd = s.release();
      set_recv_timeout(fd, so.handshake_timeout_ms);
      {
        std::lock_guard lk(mu);
        in_handshake.push_back(fd);
        threads.emplace_back([this, &hs, fd, peer_addr] {
          std::string why;
          const Verdict v = hs(fd, peer_addr, &why);
          bool keep = false;
          {
            std::lock_guard lk2(mu);
            in_handshake.erase(std::find(in_handshake.begin(), in_handshake.end(), fd));
            keep = v == Verdict::kAccept && accepted < 0 && !shut;
            if (keep) accepted = fd;
          }
          if (keep) {
            set_recv_timeout(fd, 0);
          } else {
            if (v == Verdict::kRefuse)
              spdlog::warn("{}: refused a connection from {} on {}:{}: {}; still waiting for the "
                           "upstream",
                           who, peer_addr, address, port, why);
            ::close(fd);
          }
          asio::post(io, [] {});  // wake accept()
        });
      }
      arm(hs);
    });
  }
};

Acceptor::Acceptor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Acceptor::~Acceptor() {
  shutdown();
  impl_->end_handshakes();
}

std::unique_ptr<Acceptor> Acceptor::bind(const std::string& address, uint16_t port,
                                         const SocketOptions& so, const std::string& who,
                                         Status* st) {
  auto impl = std::make_unique<Impl>();
  impl->so = so;
  impl->who = who;
  impl->address = address;
  asio::error_code ec;
  tcp::resolver resolver(impl->io);
  const auto eps = resolver.resolve(address, std::to_string(port), tcp::resolver::passive, ec);
  if (ec || eps.empty()) {
    *st = Status::Error(fmt::format("{}: cannot listen on {}:{}: {}", who, address, port,
                                    ec ? ec.message() : "no address"));
    return nullptr;
  }
  const tcp::endpoint ep = eps.begin()->endpoint();
  auto& a = impl->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) ec = set_congestion(a.native_handle(), so);  // before listen: accepted sockets inherit it
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(16, ec);
  if (ec) {
    *st = Status::Error(fmt::format("{}: cannot listen on {}:{}: {}", who, address, port, ec.message()));
    return nullptr;
  }
  impl->port = a.local_endpoint(ec).port();
  return std::unique_ptr<Acceptor>(new Acceptor(std::move(impl)));
}

uint16_t Acceptor::port() const { return impl_->port; }

int Acceptor::accept(const Handshake& hs, Status* st) {
  Impl& im = *impl_;
  {
    std::lock_guard lk(im.mu);
    im.accepted = -1;
  }
  im.io.restart();
  im.arm(hs);
  int fd = -1;
  for (;;) {
    im.io.run_one();
    std::lock_guard lk(im.mu);
    if (im.accepted >= 0 || im.shut) {
      fd = std::exchange(im.accepted, -1);
      break;
    }
  }
  asio::error_code ignore;
  im.acceptor.cancel(ignore);
  im.io.poll();  // the cancelled accept's handler
  im.end_handshakes();
  std::lock_guard lk(im.mu);
  if (im.accepted >= 0) {  // a second one won the race while we were leaving
    ::close(im.accepted);
    im.accepted = -1;
  }
  if (fd < 0) {
    *st = Status::Error(fmt::format("{}: listener on {}:{} shut down", im.who, im.address, im.port));
    return -1;
  }
  *st = Status();
  return fd;
}

void Acceptor::shutdown() {
  Impl& im = *impl_;
  {
    std::lock_guard lk(im.mu);
    im.shut = true;
  }
  asio::post(im.io, [&im] {
    asio::error_code ignore;
    im.acceptor.cancel(ignore);
  });
}

}  // namespace sluice::tcp
