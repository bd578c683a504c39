// Connection handling of the tcp carrier, on Asio: resolving, connecting with
// retry until a deadline, accepting while refusing strangers. What comes out
// is a plain connected fd: the data path keeps raw gather I/O (sendmsg of up
// to 1024 pieces), which transport/tcp/gather_bench.cc measures against Asio's
// buffer-sequence writes.
//
//   1. Acceptor::bind() binds now, so a port in use fails at start.
//   2. connect_with_retry() retries every 20 ms until the deadline: at start a
//      listener that is not up yet is normal. The deadline bounds each attempt
//      too (an address that drops SYNs would hold a blocking connect minutes),
//      and so does SocketOptions::stop, looked at every 20 ms.
//   3. Acceptor::accept() runs each connection's handshake on a thread of its
//      own, under the handshake deadline, so a silent or slow stranger costs
//      the real upstream nothing; a refused connection is logged and closed,
//      and the wait goes on. The first accepted one is returned; before that,
//      the other handshakes are ended and joined, so accept() may be called
//      again and nothing calls the handshake after it returns.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "transport/handshake.h"
#include "transport/transport.h"

namespace sluice::tcp {

struct SocketOptions {
  std::string congestion;          // "" = the system's default; else TCP_CONGESTION
  uint32_t rto_max_ms = 0;         // 0 = the system's; else TCP_RTO_MAX_MS (TcpOptions)
  uint32_t keepalive_s = 0;        // 0 = no keepalive; else TcpOptions::keepalive_s
  uint32_t handshake_timeout_ms = 10000;
  // When set and true, connect_with_retry gives up within 20 ms (a process
  // asked to stop before it connected has nothing to deliver).
  const std::atomic<bool>* stop = nullptr;
};

// Resolves host:port and connects, retrying every 20 ms until timeout_ms has
// passed. Sets TCP_NODELAY and the congestion control. On success *fd is a
// connected, blocking socket the caller owns. Errors name host:port, the time
// waited and the last OS error, prefixed by `who`.
Status connect_with_retry(const std::string& host, uint16_t port, uint32_t timeout_ms,
                          const SocketOptions& so, const std::string& who, int* fd);

// What a listener does with a new connection's first bytes: called on a
// connected blocking fd whose reads time out after handshake_timeout_ms. It
// reads the peer's hello, decides and writes its reply.
enum class Verdict { kAccept, kRefuse };
using Handshake = std::function<Verdict(int fd, const std::string& peer_addr, std::string* why)>;

class Acceptor {
 public:
  // Binds address:port now, with SO_REUSEADDR; the congestion control is set
  // on the listening socket so accepted ones inherit it.
  static std::unique_ptr<Acceptor> bind(const std::string& address, uint16_t port,
                                        const SocketOptions& so, const std::string& who,
                                        Status* st);
  ~Acceptor();
  uint16_t port() const;
  // Waits for a connection whose handshake accepts it and returns its fd
  // (blocking, TCP_NODELAY, read timeout cleared). -1 with *st set once
  // shut down or on a fatal accept error; transient ones (out of descriptors,
  // a peer that gave up while queued) are logged and retried.
  int accept(const Handshake& hs, Status* st);
  // From another thread: makes a blocked accept() return.
  void shutdown();
  // While the link has its upstream: answers every connection on a thread of
  // its own with `refuse` (a handshake that refuses and says why), so a
  // stranger is told and closed instead of waiting in the backlog until its
  // own timeout. stop_turning_away() ends it (accept() may follow).
  void turn_away(Handshake refuse);
  void stop_turning_away();

  struct Impl;

 private:
  explicit Acceptor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Blocking I/O on a control socket (the handshake; the message carriers'
// control connection). Errors name `who` and `what` was being read.
Status send_all(int fd, const void* p, size_t n, const std::string& who);
Status read_exact(int fd, void* p, size_t n, const std::string& who, const char* what);
// SO_RCVTIMEO; 0 clears it.
void set_recv_timeout(int fd, uint32_t ms);

// Before a socket whose last bytes matter is closed: waits, at most
// `bound_ms`, until the peer's kernel has acknowledged everything written
// (SIOCOUTQ 0), or the socket has an error or was reset (TCP_CLOSE: its
// error may have been taken by a read; what it had out counts still). A
// socket closed with bytes still out is left to the kernel, which
// retransmits them as an orphan, except once its retransmission timeout has
// reached tcp_rto_max_ms: Linux then gives the orphan no retries and drops
// it at its next timer, with no reset (tcp_write_timeout counts an orphan
// alive only while its RTO is below the cap). A receiver's last credits
// (the acknowledgement of every frame) and its finish were lost that way
// across a wire down (transport/PROTOCOL.md, "The clean close").
void wait_acknowledged(int fd, uint32_t bound_ms);
// How long a finished receiver waits so (a sender that is gone answers at once).
inline constexpr uint32_t kSettleMs = 3000;

// The handshake of transport/handshake.h on a connected socket, for every
// carrier that connects over TCP (tcp itself; fabric and ucx's control
// connection).
//   answer_hello: the receiver's side. Reads Hello, checks it against `opts`
//   and writes the reply. kAccept with *sender = the sender's name as it
//   gave it ("" if none); kRefuse with *why.
Verdict answer_hello(int fd, const LinkOptions& opts, const std::string& link,
                     std::string* sender, std::string* why);
//   refuse_hello: reads the Hello (whatever it says) and refuses it with
//   `reason`; *why is what to log.
void refuse_hello(int fd, const std::string& receiver, const std::string& link,
                  const std::string& reason, std::string* why);
//   ask_hello: the sender's side, within opts.connect_timeout_ms. An error
//   names the link and why (refused, or a grant no link can use). When
//   `vanished` is given, it says whether the receiver closed or reset the
//   connection before its reply was read: a process killed as it started,
//   whose restart (or a slow start's second try) listens again.
Status ask_hello(int fd, const LinkOptions& opts, const std::string& link, ReplyInfo* reply,
                 bool* vanished = nullptr);

// Whether the peer of a connected socket closed or reset it: a read that
// failed on such a socket is one a new connection may not fail.
bool closed_by_peer(int fd);

// A sender's connect: `attempt` connects and shakes hands within the time it
// is given; while it fails because the receiver vanished mid-handshake
// (*vanished), it is made again until timeout_ms has passed or `stop` is
// set, as connect_with_retry retries a refused connect. Any other failure
// (a refusal, a grant no link can use, the deadline) is returned at once.
using ConnectAttempt = std::function<Status(uint32_t timeout_ms, bool* vanished)>;
Status connect_again_while_vanished(uint32_t timeout_ms, const std::atomic<bool>* stop,
                                    const std::string& link, const ConnectAttempt& attempt);

}  // namespace sluice::tcp
