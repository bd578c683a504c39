// The ucx carrier: a link end is a UCX worker and endpoint under the message
// carriers' common half (transport/msg/msg.h).
//
//   - Each link end has its own context and worker (UCX_TLS is per context,
//     and a link's ucx_tls is its own), with UCP_FEATURE_WAKEUP: the worker's
//     event fd is armed (ucp_worker_arm) before sleeping, on tcp and sm alike.
//   - Endpoints connect by worker address, exchanged over the control
//     connection, with error handling mode NONE: with PEER, shared-memory
//     lanes are not chosen. UCX will then not say that a peer died; the
//     control connection does.
//   - Messages are tagged: the tag is the message's immediate (msg.h), so a
//     data frame lands whole in a slot's pre-posted tagged receive and a
//     credit message in one of the sender's. UCX has no flow control for a
//     receiver that falls behind: the protocol core's credits keep every
//     message expected.
//   - A frame of one piece goes from the slot as it is; several pieces are
//     copied into a staging buffer (msg.h): with an IOV datatype UCX moved
//     shared memory at less than half the speed here.
//   - Lanes are logged once connected, and a link asked for `sm` that got a
//     tcp lane is refused: a run over "sm" cannot silently be one over tcp.
//   - UCX's own handlers are for faults (SIGSEGV, SIGBUS, ...), not SIGINT
//     or SIGTERM: sluice's drain on Ctrl-C is untouched.
//   - rma: on (msg.h item 6): the receiving process maps its whole pool
//     with ucp_mem_map once, when its first rma link is made (PoolMap); over
//     shared memory UCX allocates it (UCP_MEM_MAP_ALLOCATE | FIXED, at the
//     pool's own address: posix/sysv memory a peer can attach, which the
//     pool keeps until it goes, and then unmaps through UCX), elsewhere it
//     registers it. Its rma links' workers come from that mapping's context,
//     so the packed rkey names their memory domains. The sender unpacks the
//     rkey; where ucp_rkey_ptr maps the slots (shared memory), a frame is one
//     memcpy into the receiver's slot, else a ucp_put_nbx; then the note,
//     after ucp_worker_fence.
//   - Frames go eager (UCX_RNDV_THRESH=inf): on tcp 2-3x the rendezvous
//     speed at 32 KiB here; on shared memory with segments as large as a
//     slot, no system call per frame (see open()).
#include "transport/ucx/ucx.h"

#include <stdio.h>
#include <ucp/api/ucp.h>

#include <fmt/format.h>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <vector>

#include "transport/msg/msg.h"

namespace sluice::ucx {
namespace {

std::string status_text(ucs_status_t s) { return ucs_status_string(s); }

// A UCX context for UCX_TLS=tls, as every link end of this carrier makes
// one (see UcxEndpoint::open for the settings); `peer_host`: the receiver's
// address, whose route picks the one interface a tcp link uses.
Status make_context(const std::string& tls, bool rma, bool shared, ucp_context_h* out,
                    const std::string& peer_host = "") {
  ucp_config_t* cfg = nullptr;
  ucs_status_t s = ucp_config_read(nullptr, nullptr, &cfg);
  if (s != UCS_OK) return Status::Error("ucp_config_read: " + status_text(s));
  s = ucp_config_modify(cfg, "TLS", tls.c_str());
  if (s != UCS_OK) {
    ucp_config_release(cfg);
    return Status::Error(fmt::format("UCX_TLS={}: {}", tls, status_text(s)));
  }
  // One eager message per frame (default slots of 64 KiB). tcp:
  // rendezvous at 32 KiB ran at a third of the eager speed here. Shared
  // memory: segments as large as a frame (MM_SEG_SIZE: the sysv and posix
  // transports' key; UCX takes their own names, SYSV_SEG_SIZE, only from
  // the environment), so a frame is one copy into the peer's FIFO and one
  // out with no system call. With the default 8 KiB segments a 32 KiB
  // frame went by rendezvous over cma (process_vm_readv): the same Gb/s
  // with about three times the system cycles per event in the nodes.
  // At most 65535: the FIFO element's length is 16 bits, and with 64 KiB
  // segments a 65.5 KiB frame arrived truncated (UCS_ERR_MESSAGE_TRUNCATED).
  // The same size on both ends whatever their slots; a larger frame goes
  // by rendezvous (eager in 8 KiB pieces was 2.5x slower here). Memory
  // stays bounded: credits keep at most `slots` frames in flight.
  if (tls == "tcp")
    ucp_config_modify(cfg, "RNDV_THRESH", "inf");
  // tcp: one lane, over the interface that routes to the receiver. Left to
  // itself UCX opens a lane on every interface up at the start; a link to
  // 127.0.0.1 then also ran over a veth another test had made, and hung
  // when that interface went away mid-run (UCX's error mode NONE does not
  // say). UCX_NET_DEVICES in the environment still wins.
  if (tls.find("tcp") != std::string::npos && tls != "all" && !peer_host.empty() &&
      !getenv("UCX_NET_DEVICES")) {
    const std::string dev = net_device_toward(peer_host);
    if (!dev.empty()) ucp_config_modify(cfg, "NET_DEVICES", dev.c_str());
  }
  else
    ucp_config_modify(cfg, "MM_SEG_SIZE", "65535");
  ucp_params_t p{};
  p.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  p.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP | (rma ? UCP_FEATURE_RMA : 0);
  p.mt_workers_shared = shared ? 1 : 0;
  s = ucp_init(&p, cfg, out);
  ucp_config_release(cfg);
  if (s != UCS_OK)
    return Status::Error(fmt::format("ucp_init with UCX_TLS={}: {} (transports here: see `ucx_info -d`)",
                                     tls, status_text(s)));
  return {};
}

}  // namespace

std::string net_device_toward(const std::string& host) {
  // The route's source address: a UDP socket's connect() picks it and sends
  // nothing.
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), "9", &hints, &res) != 0 || !res) return "";
  sockaddr_in src{};
  socklen_t len = sizeof src;
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  const bool ok = fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&src), &len) == 0;
  if (fd >= 0) close(fd);
  freeaddrinfo(res);
  if (!ok) return "";
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return "";
  std::string name;
  for (ifaddrs* i = ifs; i && name.empty(); i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
        reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr == src.sin_addr.s_addr)
      name = i->ifa_name;
  freeifaddrs(ifs);
  return name;
}

namespace {

bool shared_memory(const std::string& tls) {
  for (const char* t : {"sm", "posix", "sysv", "shm"})
    if (tls.find(t) != std::string::npos) return true;
  return false;
}

// rma: a receiving process's pool, mapped once for every rma link into it,
// and the context whose workers those links use (kept in the process's
// TransportContext under the pool's address).
struct PoolMap final : TransportContext::State {
  ucp_context_h ctx = nullptr;
  ucp_mem_h memh = nullptr;
  std::string tls;
  std::byte* base = nullptr;
  size_t len = 0;
  bool allocated = false;
  std::mutex mu;

  static std::shared_ptr<PoolMap> make(const std::string& tls, SlotPool& pool, Status* st) {
    auto m = std::make_shared<PoolMap>();
    m->tls = tls;
    *st = make_context(tls, true, true, &m->ctx);
    if (!st->ok()) return nullptr;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    m->base = pool.base();
    m->len = (pool.bytes() + page - 1) / page * page;  // the pool's own mapping is whole pages
    ucp_mem_map_params_t mp{};
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                    UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    mp.address = m->base;
    mp.length = m->len;
    // Over shared memory UCX can give the peer a pointer only to memory it
    // allocated itself: it replaces the pool's pages (nothing is in them
    // yet: links are made before any frame arrives).
    m->allocated = shared_memory(tls);
    mp.flags = m->allocated ? UCP_MEM_MAP_ALLOCATE | UCP_MEM_MAP_FIXED : 0;
    ucs_status_t s = ucp_mem_map(m->ctx, &mp, &m->memh);
    if (s != UCS_OK) {
      *st = Status::Error(fmt::format("ucp_mem_map of the pool ({} bytes, UCX_TLS={}): {}", m->len, tls,
                                      status_text(s)));
      m->memh = nullptr;
      return nullptr;
    }
    if (m->allocated) {
      ucp_mem_attr_t a{};
      a.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
      ucp_mem_query(m->memh, &a);
      if (a.address != m->base) {
        m->unmap();
        *st = Status::Error("ucp_mem_map placed the pool elsewhere than asked");
        return nullptr;
      }
      std::memset(m->base, 0, m->len);  // fault the new pages in now, not on the data path
    }
    if (m->allocated) {
      // The range is UCX's memory now, until the pool goes: the pool holds
      // the mapping (and its context) and unmaps the range through UCX.
      pool.hand_over([m] { m->unmap(); });
    } else {
      std::weak_ptr<PoolMap> w = m;
      pool.on_destroy([w] {
        if (auto p = w.lock()) p->unmap();
      });
    }
    return m;
  }
  // Deregisters the pool's pages, or gives the ones UCX allocated back to
  // it (which unmaps the range: only when the pool goes).
  void unmap() {
    std::lock_guard lk(mu);
    if (!memh) return;
    ucp_mem_unmap(ctx, memh);
    memh = nullptr;
  }
  ~PoolMap() override {
    unmap();
    // Its workers are gone: every endpoint that used it held it, and the
    // pool holds a mapping UCX allocated until the pool goes.
    if (ctx) ucp_cleanup(ctx);
  }
};

class UcxEndpoint final : public msg::Endpoint {
 public:
  UcxEndpoint(const LinkOptions& opts, bool receiver, std::shared_ptr<PoolMap> map = nullptr)
      : opts_(opts), receiver_(receiver), map_(std::move(map)) {}
  ~UcxEndpoint() override {
    if (rkey_) ucp_rkey_destroy(rkey_);
    if (ep_) {
      ucp_request_param_t p{};
      p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      p.flags = UCP_EP_CLOSE_FLAG_FORCE;
      void* r = ucp_ep_close_nbx(ep_, &p);
      if (UCS_PTR_IS_PTR(r)) {
        while (ucp_request_check_status(r) == UCS_INPROGRESS) ucp_worker_progress(worker_);
        ucp_request_free(r);
      }
    }
    // Receives still posted are cancelled (their callbacks free them)
    // before the worker goes.
    for (Op& o : ops_)
      if (o.req) ucp_request_cancel(worker_, o.req);
    if (worker_) {
      while (ucp_worker_progress(worker_)) {
      }
      drain_unexpected();
      ucp_worker_destroy(worker_);
    }
    if (ctx_ && !map_) ucp_cleanup(ctx_);
  }

  // Messages that arrived once the receives were cancelled (a credit the
  // receiver sent as the link closed) would stay unmatched, and
  // ucp_worker_destroy warns of each ("unexpected tag-receive descriptor
  // ... was not matched"): take them, into a scratch buffer.
  void drain_unexpected() {
    std::vector<char> scratch;
    ucp_tag_recv_info_t info;
    while (ucp_tag_message_h m = ucp_tag_probe_nb(worker_, 0, 0, 1, &info)) {
      scratch.resize(info.length);
      ucp_request_param_t p{};
      void* r = ucp_tag_msg_recv_nbx(worker_, scratch.data(), info.length, m, &p);
      if (UCS_PTR_IS_PTR(r)) {
        while (ucp_request_check_status(r) == UCS_INPROGRESS) ucp_worker_progress(worker_);
        ucp_request_free(r);
      }
    }
  }

  Status open(size_t queue, std::string* addr) {
    ucs_status_t s;
    if (map_) {
      ctx_ = map_->ctx;  // rma receiver: the pool's mapping's context
    } else {
      Status st = make_context(opts_.msg.ucx_tls, opts_.msg.rma, false, &ctx_, opts_.host);
      if (!st) return st;
    }
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE | UCP_WORKER_PARAM_FIELD_EVENTS;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    wp.events = UCP_WAKEUP_TAG_SEND | UCP_WAKEUP_TAG_RECV;
    s = ucp_worker_create(ctx_, &wp, &worker_);
    if (s != UCS_OK) return Status::Error("ucp_worker_create: " + status_text(s));
    s = ucp_worker_get_efd(worker_, &fd_);
    if (s != UCS_OK) return Status::Error("ucp_worker_get_efd: " + status_text(s));
    ucp_address_t* a = nullptr;
    size_t len = 0;
    s = ucp_worker_get_address(worker_, &a, &len);
    if (s != UCS_OK) return Status::Error("ucp_worker_get_address: " + status_text(s));
    addr->assign(reinterpret_cast<const char*>(a), len);
    ucp_worker_release_address(worker_, a);
    done_.resize(queue);
    ops_.resize(queue);
    for (size_t i = 0; i < queue; ++i) {
      ops_[i].self = this;
      free_.push_back(static_cast<uint32_t>(queue - 1 - i));
    }
    return {};
  }

  Status connect(const std::string& peer, uint32_t timeout_ms) override {
    ucp_ep_params_t p{};
    p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    p.address = reinterpret_cast<const ucp_address_t*>(peer.data());
    p.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    ucs_status_t s = ucp_ep_create(worker_, &p, &ep_);
    if (s != UCS_OK) return Status::Error(fmt::format("ucp_ep_create (UCX_TLS={}): {}", opts_.msg.ucx_tls, status_text(s)));
    lanes_ = lanes();
    if (opts_.msg.ucx_tls.find("tcp") == std::string::npos && lanes_.find("tcp") != std::string::npos)
      return Status::Error(fmt::format("asked for UCX_TLS={}, but UCX chose a tcp lane: {}",
                                       opts_.msg.ucx_tls, lanes_));
    return {};
  }

  Status post_recv(void* buf, size_t len, uint64_t ctx) override {
    const msg::Dir d = receiver_ ? msg::Dir::kData : msg::Dir::kCredit;
    Op* o = take(ctx);
    if (!o) return Status::Error("more receives posted than the endpoint was made for");
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    p.cb.recv = &UcxEndpoint::on_recv;
    p.user_data = o;
    void* r = ucp_tag_recv_nbx(worker_, buf, len, msg::channel_of(d), msg::kImmChannelMask, &p);
    if (UCS_PTR_IS_ERR(r)) {
      give(o);
      return Status::Error("ucp_tag_recv_nbx: " + status_text(UCS_PTR_STATUS(r)));
    }
    if (o->ctx != kDone) o->req = r;  // else its callback ran already
    return {};
  }

  Status send(const iovec* iov, size_t n, uint64_t imm, uint64_t ctx, bool* again) override {
    *again = false;
    if (n != 1) return Status::Error(fmt::format("ucx endpoint sends one piece, given {}", n));
    Op* o = take(ctx);
    if (!o) {
      *again = true;
      return {};
    }
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    p.cb.send = &UcxEndpoint::on_send;
    p.user_data = o;
    void* r = ucp_tag_send_nbx(ep_, iov[0].iov_base, iov[0].iov_len, imm, &p);
    if (UCS_PTR_IS_ERR(r)) {
      give(o);
      return Status::Error("ucp_tag_send_nbx: " + status_text(UCS_PTR_STATUS(r)));
    }
    if (o->ctx != kDone) o->req = r;
    return {};
  }

  Status poll(msg::Completion* out, size_t max, size_t* n) override {
    if (head_ == tail_) {
      for (int i = 0; i < 16 && ucp_worker_progress(worker_); ++i) {
      }
    }
    size_t k = 0;
    while (k < max && head_ != tail_) out[k++] = done_[head_++ % done_.size()];
    *n = k;
    return {};
  }

  bool arm() override {
    if (head_ != tail_) return false;
    ucs_status_t s = ucp_worker_arm(worker_);
    return s == UCS_OK;
  }
  int fd() const override { return fd_; }
  size_t max_iov() const override { return 1; }

  Status expose(void* p, size_t len, std::string* key) override {
    if (!map_) return Status::Error("the pool is not mapped for rma");
    if (static_cast<std::byte*>(p) < map_->base ||
        static_cast<std::byte*>(p) + len > map_->base + map_->len)
      return Status::Error("the link's slots are outside the pool's mapping");
    void* rk = nullptr;
    size_t n = 0;
    ucs_status_t s = ucp_rkey_pack(ctx_, map_->memh, &rk, &n);
    if (s != UCS_OK) return Status::Error("ucp_rkey_pack: " + status_text(s));
    const uint64_t addr = reinterpret_cast<uint64_t>(p);
    key->assign(reinterpret_cast<const char*>(&addr), sizeof addr);
    key->append(static_cast<const char*>(rk), n);
    ucp_rkey_buffer_release(rk);
    return {};
  }

  Status attach(const std::string& key, std::string* how) override {
    if (key.size() <= sizeof(uint64_t)) return Status::Error(fmt::format("an rma key of {} bytes", key.size()));
    std::memcpy(&remote_, key.data(), sizeof remote_);
    ucs_status_t s = ucp_ep_rkey_unpack(ep_, key.data() + sizeof remote_, &rkey_);
    if (s != UCS_OK) {
      rkey_ = nullptr;
      return Status::Error("ucp_ep_rkey_unpack: " + status_text(s));
    }
    void* local = nullptr;
    s = ucp_rkey_ptr(rkey_, remote_, &local);
    in_place_ = static_cast<std::byte*>(s == UCS_OK ? local : nullptr);
    *how = in_place_ ? "in place: ucp_rkey_ptr mapped them here, one memcpy per frame"
                     : fmt::format("ucp_put_nbx (ucp_rkey_ptr: {})", status_text(s));
    return {};
  }

  size_t max_write_iov() const override { return SIZE_MAX; }
  std::byte* mapped() const override { return in_place_; }
  // Eager (UCX_RNDV_THRESH=inf) tagged messages of one endpoint are
  // matched and completed in the order sent.
  bool notes_in_order() const override { return true; }

  Status write(const iovec* iov, size_t n, uint64_t offset, const iovec& note, uint64_t imm,
               uint64_t ctx, bool* again) override {
    *again = false;
    if (free_.empty()) {  // the note would find no room: nothing is written yet
      *again = true;
      return {};
    }
    if (in_place_) {
      std::byte* d = in_place_ + offset;
      for (size_t i = 0; i < n; ++i) {
        std::memcpy(d, iov[i].iov_base, iov[i].iov_len);
        d += iov[i].iov_len;
      }
      // The note goes through UCX's shared FIFO, whose own barriers order
      // it after these stores; this keeps the compiler from moving them.
      std::atomic_thread_fence(std::memory_order_release);
    } else {
      ucp_request_param_t p{};
      uint64_t at = remote_ + offset;
      for (size_t i = 0; i < n; ++i) {
        void* r = ucp_put_nbx(ep_, iov[i].iov_base, iov[i].iov_len, at, rkey_, &p);
        if (UCS_PTR_IS_ERR(r)) return Status::Error("ucp_put_nbx: " + status_text(UCS_PTR_STATUS(r)));
        if (r) ucp_request_free(r);  // completes on its own; the fence orders the note after it
        at += iov[i].iov_len;
      }
      ucs_status_t s = ucp_worker_fence(worker_);
      if (s != UCS_OK) return Status::Error("ucp_worker_fence: " + status_text(s));
    }
    return send(&note, 1, imm, ctx, again);
  }
  // Sends in flight: the op table less the receives (credit buffers).
  size_t tx_depth() const override { return ops_.size() / 3; }
  std::string describe() const override {
    return fmt::format("ucx (UCX_TLS={}; lanes {})", opts_.msg.ucx_tls, lanes_);
  }

 private:
  // An operation in flight: what its callback needs. A fixed table, taken
  // and given back: nothing is allocated per message.
  static constexpr uint64_t kDone = ~uint64_t{0};
  struct Op {
    UcxEndpoint* self = nullptr;
    uint64_t ctx = kDone;
    void* req = nullptr;
  };
  Op* take(uint64_t ctx) {
    if (free_.empty()) return nullptr;
    Op* o = &ops_[free_.back()];
    free_.pop_back();
    o->ctx = ctx;
    o->req = nullptr;
    return o;
  }
  void give(Op* o) {
    o->ctx = kDone;
    o->req = nullptr;
    free_.push_back(static_cast<uint32_t>(o - ops_.data()));
  }
  void push(const msg::Completion& c) { done_[tail_++ % done_.size()] = c; }

  static void on_recv(void* req, ucs_status_t s, const ucp_tag_recv_info_t* info, void* user) {
    Op* o = static_cast<Op*>(user);
    UcxEndpoint* self = o->self;
    if (s == UCS_OK)
      self->push({msg::Completion::kRecv, o->ctx, static_cast<uint32_t>(info->length), info->sender_tag, 0});
    else if (s != UCS_ERR_CANCELED)
      self->push({msg::Completion::kError, o->ctx, 0, 0, static_cast<int>(s)});
    self->give(o);
    ucp_request_free(req);
  }
  static void on_send(void* req, ucs_status_t s, void* user) {
    Op* o = static_cast<Op*>(user);
    UcxEndpoint* self = o->self;
    if (s == UCS_OK)
      self->push({msg::Completion::kSend, o->ctx, 0, 0, 0});
    else if (s != UCS_ERR_CANCELED)
      self->push({msg::Completion::kError, o->ctx, 0, 0, static_cast<int>(s)});
    self->give(o);
    ucp_request_free(req);
  }

  // The lanes UCX chose, from ucp_ep_print_info: the transport/device names.
  std::string lanes() {
    char* buf = nullptr;
    size_t len = 0;
    FILE* f = open_memstream(&buf, &len);
    if (!f) return "?";
    ucp_ep_print_info(ep_, f);
    fclose(f);
    std::string text(buf, len);
    free(buf);
    std::string out;
    size_t pos = 0;
    while ((pos = text.find("lane[", pos)) != std::string::npos) {
      size_t colon = text.find(':', pos);
      size_t eol = text.find('\n', pos);
      if (colon == std::string::npos || colon > eol) break;
      // "lane[0]:  1:posix/memory.0 md[1] ..." -> "posix/memory.0"
      size_t start = text.find_first_not_of(" ", colon + 1);
      size_t c2 = text.find(':', start);
      if (c2 != std::string::npos && c2 < eol) start = c2 + 1;
      size_t end = text.find_first_of(" \n", start);
      std::string tl = text.substr(start, end - start);
      if (out.find(tl) == std::string::npos) out += (out.empty() ? "" : ", ") + tl;
      pos = eol;
    }
    return out.empty() ? text : out;
  }

  LinkOptions opts_;
  bool receiver_;
  std::shared_ptr<PoolMap> map_;  // rma receiver
  ucp_rkey_h rkey_ = nullptr;     // rma sender
  uint64_t remote_ = 0;
  std::byte* in_place_ = nullptr;
  ucp_context_h ctx_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_ep_h ep_ = nullptr;
  int fd_ = -1;
  std::string lanes_;
  std::vector<msg::Completion> done_;
  size_t head_ = 0, tail_ = 0;
  std::vector<Op> ops_;
  std::vector<uint32_t> free_;
};

class UcxFactory final : public msg::Factory {
 public:
  explicit UcxFactory(std::string tls, std::shared_ptr<PoolMap> map = nullptr)
      : tls_(std::move(tls)), map_(std::move(map)) {}
  std::string carrier() const override { return "ucx/" + tls_; }
  std::unique_ptr<msg::Endpoint> open_rx(const LinkOptions& opts, SlotPool& pool, std::string* addr,
                                         Status* st) override {
    auto ep = std::make_unique<UcxEndpoint>(opts, true, map_);
    *st = ep->open(3 * size_t{opts.slots} + 16, addr);
    return st->ok() ? std::move(ep) : nullptr;
  }
  std::unique_ptr<msg::Endpoint> open_tx(const LinkOptions& opts, SlotPool& pool,
                                         const std::string& peer, std::string* addr,
                                         Status* st) override {
    auto ep = std::make_unique<UcxEndpoint>(opts, false);
    *st = ep->open(3 * size_t{opts.slots} + 16, addr);
    return st->ok() ? std::move(ep) : nullptr;
  }

 private:
  std::string tls_;
  std::shared_ptr<PoolMap> map_;
};

// rma: auto (not set by the deployment): on over shared memory, where a
// frame is one memcpy into the receiver's slot (it beat a message per
// frame by 1.2-2.2x in every cell measured; `experiments/sweep.py --presets
// ucx-opt/sm+rma,ucx-opt/sm+msg` compares the two); off elsewhere. Both
// ends resolve it from the same options.
LinkOptions resolve_rma(const LinkOptions& l) {
  LinkOptions o = l;
  resolve_ucx_tls(&o.msg, false);  // not resolved by a deployment: tcp
  const std::string& t = o.msg.ucx_tls;
  if (!o.msg.rma_set) o.msg.rma = shared_memory(t) && t.find("tcp") == std::string::npos && t != "all";
  return o;
}

// rma over UCX's tcp transport is refused: UCX emulates a put over tcp with
// active messages (no fewer copies than a message), and the wireup of the
// lanes RMA adds aborted the process here (an assertion in ucp_request.c,
// "got REQ message") when one of the host's interfaces refused connections.
Status rma_allowed(const LinkOptions& opts) {
  const std::string& t = opts.msg.ucx_tls;
  if (!opts.msg.rma || (t.find("tcp") == std::string::npos && t != "all")) return {};
  return Status::Error(fmt::format(
      "link {} -> {}: rma: on is not offered over ucx_tls {}: UCX emulates remote writes over "
      "tcp (no copy saved) and its wireup of the extra lanes aborted here; use rma over sm, or "
      "a device transport (rc, dc, ud), or rma: off",
      opts.from, opts.to, t));
}

}  // namespace

std::unique_ptr<Listener> make_listener(const LinkOptions& link, SlotPool& pool, uint32_t first_slot,
                                        TransportContext& ctx, Status* st) {
  const LinkOptions opts = resolve_rma(link);
  if (Status r = rma_allowed(opts); !r) {
    *st = r;
    return nullptr;
  }
  std::shared_ptr<PoolMap> map;
  if (opts.msg.rma) {
    auto state = ctx.state(
        fmt::format("ucx rma pool {}", static_cast<const void*>(pool.base())),
        [&](Status* e) -> std::shared_ptr<TransportContext::State> {
          return PoolMap::make(opts.msg.ucx_tls, pool, e);
        },
        st);
    if (!state) {
      *st = Status::Error(fmt::format("link {} -> {}: rma: {}", opts.from, opts.to, st->message()));
      return nullptr;
    }
    map = std::static_pointer_cast<PoolMap>(state);
    if (map->tls != opts.msg.ucx_tls) {
      *st = Status::Error(fmt::format(
          "link {} -> {}: rma links into one process share its pool's mapping, made with "
          "ucx_tls {}; this one has ucx_tls {}",
          opts.from, opts.to, map->tls, opts.msg.ucx_tls));
      return nullptr;
    }
  }
  return msg::make_listener(opts, pool, first_slot,
                            std::make_shared<UcxFactory>(opts.msg.ucx_tls, std::move(map)), st);
}

std::unique_ptr<Sender> make_sender(const LinkOptions& link, SlotPool& pool, TransportContext& ctx,
                                    Status* st) {
  const LinkOptions opts = resolve_rma(link);
  if (Status r = rma_allowed(opts); !r) {
    *st = r;
    return nullptr;
  }
  return msg::make_sender(opts, pool, std::make_shared<UcxFactory>(opts.msg.ucx_tls), st);
}

}  // namespace sluice::ucx
