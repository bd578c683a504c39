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
//   - Frames go eager (UCX_RNDV_THRESH=inf): on tcp 2-3x the rendezvous
//     speed at 32 KiB here; on shared memory with segments as large as a
//     slot, no system call per frame (see open()).
#include "transport/ucx/ucx.h"

#include <stdio.h>
#include <ucp/api/ucp.h>

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "transport/msg/msg.h"

namespace sluice::ucx {
namespace {

std::string status_text(ucs_status_t s) { return ucs_status_string(s); }

class UcxEndpoint final : public msg::Endpoint {
 public:
  explicit UcxEndpoint(const LinkOptions& opts, bool receiver)
      : opts_(opts), receiver_(receiver) {}
  ~UcxEndpoint() override {
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
      ucp_worker_destroy(worker_);
    }
    if (ctx_) ucp_cleanup(ctx_);
  }

  Status open(size_t queue, std::string* addr) {
    ucp_config_t* cfg = nullptr;
    ucs_status_t s = ucp_config_read(nullptr, nullptr, &cfg);
    if (s != UCS_OK) return Status::Error("ucp_config_read: " + status_text(s));
    s = ucp_config_modify(cfg, "TLS", opts_.msg.ucx_tls.c_str());
    if (s != UCS_OK) {
      ucp_config_release(cfg);
      return Status::Error(fmt::format("UCX_TLS={}: {}", opts_.msg.ucx_tls, status_text(s)));
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
    if (opts_.msg.ucx_tls == "tcp")
      ucp_config_modify(cfg, "RNDV_THRESH", "inf");
    else
      ucp_config_modify(cfg, "MM_SEG_SIZE", "65535");
    ucp_params_t p{};
    p.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    p.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    p.mt_workers_shared = 0;
    s = ucp_init(&p, cfg, &ctx_);
    ucp_config_release(cfg);
    if (s != UCS_OK)
      return Status::Error(fmt::format("ucp_init with UCX_TLS={}: {} (transports here: {})",
                                       opts_.msg.ucx_tls, status_text(s), transports_present()));
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

  static std::string transports_present() { return "see `ucx_info -d`"; }

  LinkOptions opts_;
  bool receiver_;
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
  explicit UcxFactory(std::string tls) : tls_(std::move(tls)) {}
  std::string carrier() const override { return "ucx/" + tls_; }
  std::unique_ptr<msg::Endpoint> open_rx(const LinkOptions& opts, SlotPool& pool, std::string* addr,
                                         Status* st) override {
    auto ep = std::make_unique<UcxEndpoint>(opts, true);
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
};

}  // namespace

std::unique_ptr<Listener> make_listener(const LinkOptions& opts, SlotPool& pool, uint32_t first_slot,
                                        TransportContext& ctx, Status* st) {
  return msg::make_listener(opts, pool, first_slot, std::make_shared<UcxFactory>(opts.msg.ucx_tls), st);
}

std::unique_ptr<Sender> make_sender(const LinkOptions& opts, SlotPool& pool, TransportContext& ctx,
                                    Status* st) {
  return msg::make_sender(opts, pool, std::make_shared<UcxFactory>(opts.msg.ucx_tls), st);
}

}  // namespace sluice::ucx
