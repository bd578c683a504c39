// The fabric carrier: a link end is a libfabric endpoint under the message
// carriers' common half (transport/msg/msg.h).
//
//   - The provider is the link's fabric_provider. Connection-oriented
//     providers (tcp, net, verbs) get an FI_EP_MSG endpoint: the receiver
//     listens on a passive endpoint whose port goes to the sender over the
//     control connection; the sender connects (fi_connect), the receiver
//     accepts the request. Providers with only reliable datagrams (shm) get
//     an FI_EP_RDM endpoint: both sides insert the other's name in an
//     address vector of their own.
//   - The fabric and one domain per provider are opened once per process
//     (TransportContext) and the pools are registered there once, where the
//     provider's mr_mode asks for it (FI_MR_LOCAL).
//   - Each endpoint has its own completion queue, opened with FI_WAIT_FD
//     where the provider can (fi_trywait before sleeping); shm cannot, and
//     gets the doorbell of msg.h.
//   - Sends are fi_sendmsg with the frame header as FI_REMOTE_CQ_DATA, up to
//     the provider's iov_limit pieces; -FI_EAGAIN means reap and retry.
//   - rma: on (msg.h item 6): links get a domain of their own opened with
//     FI_RMA. The receiver registers its link's slots for FI_REMOTE_WRITE and
//     sends the address and key; the sender writes a frame with fi_writemsg
//     and sends the note after it: at once where the provider orders a send
//     after a write (FI_ORDER_SAW: tcp, net), else once the write completed
//     (FI_DELIVERY_COMPLETE; shm, whose peer copies it over CMA).
//   - Loading providers installs signal handlers (libinfinipath: SIGINT
//     exits 1); every call that may load one runs under a guard that puts
//     the process's handlers back.
//   - shm keeps each endpoint's queues in a segment guarded by a spin lock
//     in the segment; a peer killed while it held one would leave this end
//     spinning in libfabric for ever. Each shm endpoint's calls into the
//     library are counted, and a watch frees such a lock once a call has
//     waited a second on it and the peer process is gone (shm_locks.h).
#include "transport/fabric/fabric.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <signal.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <type_traits>
#include <array>
#include <utility>
#include <vector>

#include "transport/fabric/shm_locks.h"
#include "transport/msg/msg.h"

namespace sluice::fabric {
namespace {

constexpr uint32_t kVersion = FI_VERSION(1, 17);

// libfabric, opened the first time a fabric link needs it, not linked: the
// library loads libpsm_infinipath and libpsm2, whose constructors sleep to
// time the CPU, and every process that linked it (each test, each tcp or
// ucx node, each restart) spent about 200 ms in them before main. The five
// functions sluice calls by name come from the library by symbol version;
// the rest of libfabric's API is inline, through each object's ops.
namespace lf {
struct Lib {
  std::string error;  // why it could not be opened; "" once it was
  int (*getinfo)(uint32_t, const char*, const char*, uint64_t, const fi_info*, fi_info**) = nullptr;
  void (*freeinfo)(fi_info*) = nullptr;
  fi_info* (*dupinfo)(const fi_info*) = nullptr;
  int (*fabric)(fi_fabric_attr*, fid_fabric**, void*) = nullptr;
  const char* (*strerror)(int) = nullptr;
};

const Lib& lib() {
  static const Lib l = [] {
    Lib l;
    void* h = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      l.error = fmt::format("libfabric could not be loaded: {}", e ? e : "dlopen failed");
      return l;
    }
    auto sym = [&](auto** fp, const char* name, const char* version) {
      *fp = reinterpret_cast<std::remove_pointer_t<decltype(fp)>>(dlvsym(h, name, version));
      if (!*fp && l.error.empty())
        l.error = fmt::format("libfabric.so.1 has no {}@{}", name, version);
    };
    sym(&l.getinfo, "fi_getinfo", "FABRIC_1.3");
    sym(&l.freeinfo, "fi_freeinfo", "FABRIC_1.3");
    sym(&l.dupinfo, "fi_dupinfo", "FABRIC_1.3");
    sym(&l.fabric, "fi_fabric", "FABRIC_1.1");
    sym(&l.strerror, "fi_strerror", "FABRIC_1.0");
    return l;
  }();
  return l;
}

bool loaded() { return lib().error.empty(); }
int getinfo(uint32_t v, const char* node, const char* service, uint64_t flags, const fi_info* hints,
            fi_info** info) {
  return loaded() ? lib().getinfo(v, node, service, flags, hints, info) : -FI_ENOSYS;
}
void freeinfo(fi_info* i) {
  if (loaded() && i) lib().freeinfo(i);
}
fi_info* allocinfo() { return loaded() ? lib().dupinfo(nullptr) : nullptr; }
int fabric(fi_fabric_attr* a, fid_fabric** f, void* ctx) {
  return loaded() ? lib().fabric(a, f, ctx) : -FI_ENOSYS;
}
const char* strerror(int e) { return loaded() ? lib().strerror(e) : "libfabric is not loaded"; }
}  // namespace lf

std::string fi_text(int ret) { return fmt::format("{} ({})", lf::strerror(-ret), ret); }

// Puts back every signal disposition a provider's loading may have changed.
class SignalGuard {
 public:
  SignalGuard() {
    for (size_t i = 0; i < kSigs.size(); ++i) sigaction(kSigs[i], nullptr, &saved_[i]);
  }
  ~SignalGuard() {
    for (size_t i = 0; i < kSigs.size(); ++i) sigaction(kSigs[i], &saved_[i], nullptr);
  }

 private:
  static constexpr std::array<int, 12> kSigs = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGSEGV, SIGBUS,
                                                SIGILL,  SIGFPE,  SIGABRT, SIGUSR1, SIGUSR2, SIGPIPE};
  std::array<struct sigaction, 12> saved_{};
};

fi_info* base_hints(const std::string& prov, fi_ep_type type, bool rma = false) {
  fi_info* h = lf::allocinfo();
  h->caps = FI_MSG | (rma ? FI_RMA : 0);
  h->mode = 0;
  h->ep_attr->type = type;
  h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  h->domain_attr->threading = FI_THREAD_COMPLETION;
  h->fabric_attr->prov_name = strdup(prov.c_str());
  return h;
}

// Providers present here (for an error that says what there is).
std::string present_providers() {
  if (!lf::loaded()) return "none (" + lf::lib().error + ")";
  SignalGuard g;
  fi_info* h = lf::allocinfo();
  h->caps = FI_MSG;
  fi_info* list = nullptr;
  std::set<std::string> names;
  if (lf::getinfo(kVersion, nullptr, nullptr, 0, h, &list) == 0)
    for (fi_info* i = list; i; i = i->next)
      if (i->fabric_attr && i->fabric_attr->prov_name) names.insert(i->fabric_attr->prov_name);
  lf::freeinfo(list);
  lf::freeinfo(h);
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

// One provider's fabric and domain in this process, and what is registered
// in the domain.
struct Domain final : TransportContext::State {
  fi_info* info = nullptr;  // the first match: provider, endpoint type, limits
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  bool mr_local = false;
  bool msg = false;  // FI_EP_MSG (else RDM)
  bool shm = false;  // the shm provider: segments in /dev/shm, named by sluice
  bool rma = false;  // opened with FI_RMA (rma links)
  bool saw = false;  // rma: a send is ordered after an earlier write (FI_ORDER_SAW)
  bool virt_addr = false;  // rma: a remote write names the virtual address (else the offset)
  std::mutex mu;
  std::map<const void*, std::pair<size_t, fid_mr*>> mrs;

  ~Domain() override {
    for (auto& [p, m] : mrs) fi_close(&m.second->fid);
    if (domain) fi_close(&domain->fid);
    if (fabric) fi_close(&fabric->fid);
    if (info) lf::freeinfo(info);
  }

  // Registers [p, p+len) once; later calls find it.
  Status reg(void* p, size_t len) {
    if (!mr_local) return {};
    std::lock_guard lk(mu);
    auto it = mrs.find(p);
    if (it != mrs.end() && it->second.first >= len) return {};
    fid_mr* mr = nullptr;
    int ret = fi_mr_reg(domain, p, len, FI_SEND | FI_RECV, 0, mrs.size() + 1, 0, &mr, nullptr);
    if (ret) return Status::Error(fmt::format("fi_mr_reg of {} bytes: {}", len, fi_text(ret)));
    mrs[p] = {len, mr};
    return {};
  }
  void* desc(const void* p) {
    if (!mr_local) return nullptr;
    std::lock_guard lk(mu);
    auto it = mrs.upper_bound(p);
    if (it == mrs.begin()) return nullptr;
    --it;
    if (static_cast<const std::byte*>(p) >= static_cast<const std::byte*>(it->first) + it->second.first)
      return nullptr;
    return fi_mr_desc(it->second.second);
  }
};

// The shm provider's segments this process makes: /dev/shm/sluice-PID-
// INCARNATION-N. The incarnation (the clock when the process first asked)
// tells apart processes that were given the same id.
std::string shm_name(uint32_t n) {
  static const uint64_t incarnation =
      std::chrono::steady_clock::now().time_since_epoch().count() ^
      std::chrono::system_clock::now().time_since_epoch().count();
  return fmt::format("sluice-{}-{:x}-{}", getpid(), incarnation, n);
}

// Segments left by sluice processes that died without closing them (a
// SIGKILL): each holds its queues (16 MiB) in memory until removed. Those
// whose process is gone are removed when a process opens the shm provider.
void remove_dead_shm_segments() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const int pid = shm::pid_of_segment(e.path().filename().string());
    if (pid == 0) continue;
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    std::filesystem::remove(e.path(), ec);
  }
}

Status open_domain(const std::string& prov, bool rma, std::shared_ptr<Domain>* out) {
  SignalGuard g;  // before the library loads: its providers' set-up may change them too
  if (!lf::loaded())
    return Status::Error(fmt::format("fabric provider '{}': {}", prov, lf::lib().error));
  auto d = std::make_shared<Domain>();
  // Connection-oriented where the provider has it, else reliable datagrams.
  int ret = -FI_ENODATA;
  for (fi_ep_type type : {FI_EP_MSG, FI_EP_RDM}) {
    fi_info* h = base_hints(prov, type, rma);
    ret = lf::getinfo(kVersion, nullptr, nullptr, 0, h, &d->info);
    lf::freeinfo(h);
    if (ret == 0) {
      d->msg = type == FI_EP_MSG;
      break;
    }
  }
  if ((ret == -FI_ENODATA || !d->info) && rma) {
    fi_info* h = base_hints(prov, FI_EP_RDM);
    fi_info* plain = nullptr;
    const bool present = lf::getinfo(kVersion, nullptr, nullptr, 0, h, &plain) == 0;
    lf::freeinfo(h);
    lf::freeinfo(plain);
    if (present) return Status::Error(fmt::format("fabric provider '{}' has no RMA (FI_RMA) here: set rma: off", prov));
  }
  if (ret == -FI_ENODATA || !d->info)
    return Status::Error(fmt::format("fabric provider '{}' is not available here; present: {}", prov,
                                     present_providers()));
  if (ret) return Status::Error(fmt::format("fi_getinfo for provider '{}': {}", prov, fi_text(ret)));
  ret = lf::fabric(d->info->fabric_attr, &d->fabric, nullptr);
  if (ret) return Status::Error(fmt::format("fi_fabric ({}): {}", prov, fi_text(ret)));
  ret = fi_domain(d->fabric, d->info, &d->domain, nullptr);
  if (ret) return Status::Error(fmt::format("fi_domain ({}): {}", prov, fi_text(ret)));
  d->mr_local = d->info->domain_attr->mr_mode & FI_MR_LOCAL;
  d->rma = rma;
  d->saw = d->info->tx_attr->msg_order & FI_ORDER_SAW;
  d->virt_addr = d->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR;
  d->shm = !d->msg && std::strcmp(d->info->fabric_attr->prov_name, "shm") == 0;
  if (d->shm) remove_dead_shm_segments();
  *out = std::move(d);
  return {};
}

// ------------------------------------------------------------ endpoint

class FabricEndpoint final : public msg::Endpoint {
 public:
  FabricEndpoint(std::shared_ptr<Domain> d, const LinkOptions& opts) : d_(std::move(d)), opts_(opts) {}
  ~FabricEndpoint() override {
    watch_.reset();  // before the endpoint's segment goes
    if (ep_) fi_close(&ep_->fid);
    if (rma_mr_) fi_close(&rma_mr_->fid);
    if (pep_) fi_close(&pep_->fid);
    if (av_) fi_close(&av_->fid);
    if (cq_) fi_close(&cq_->fid);
    if (eq_) fi_close(&eq_->fid);
    if (info_) lf::freeinfo(info_);
  }

  // The completion queue (and for MSG the event queue) every endpoint has.
  Status open_queues(size_t depth) {
    fi_cq_attr ca{};
    ca.size = depth;
    ca.format = FI_CQ_FORMAT_DATA;
    ca.wait_obj = FI_WAIT_FD;
    int ret = fi_cq_open(d_->domain, &ca, &cq_, nullptr);
    if (ret == -FI_ENOSYS || ret == -FI_EINVAL) {
      // shm: no wait object; the link sleeps on its doorbell instead.
      ca.wait_obj = FI_WAIT_NONE;
      ret = fi_cq_open(d_->domain, &ca, &cq_, nullptr);
    } else if (ret == 0) {
      ret = fi_control(&cq_->fid, FI_GETWAIT, &fd_);
      if (ret) return Status::Error(fmt::format("fi_control(FI_GETWAIT): {}", fi_text(ret)));
    }
    if (ret) return Status::Error(fmt::format("fi_cq_open: {}", fi_text(ret)));
    if (d_->msg) {
      fi_eq_attr ea{};
      ea.size = 16;
      ea.wait_obj = FI_WAIT_UNSPEC;
      ret = fi_eq_open(d_->fabric, &ea, &eq_, nullptr);
      if (ret) return Status::Error(fmt::format("fi_eq_open: {}", fi_text(ret)));
    } else {
      fi_av_attr aa{};
      aa.type = FI_AV_UNSPEC;
      aa.count = 4;
      ret = fi_av_open(d_->domain, &aa, &av_, nullptr);
      if (ret) return Status::Error(fmt::format("fi_av_open: {}", fi_text(ret)));
    }
    return {};
  }

  // An active endpoint on `info`, bound to the queues and enabled.
  Status open_ep(fi_info* info) {
    // One at a time in a process: libfabric's shm provider names each
    // endpoint from a process-wide counter it increments without a lock, so
    // two made at once (a node's receive thread accepting while its send
    // thread connects) could take the same name, and the second fi_enable
    // failed with EBUSY (seen about once in a full test run).
    static std::mutex mu;
    std::lock_guard lk(mu);
    int ret = fi_endpoint(d_->domain, info, &ep_, nullptr);
    if (ret) return Status::Error(fmt::format("fi_endpoint: {}", fi_text(ret)));
    if (d_->shm) {
      // shm names an endpoint's segment in /dev/shm by the process id
      // ("PID:0:0"), and a killed process leaves its segments behind: a
      // later process given the same id (pids wrap at 32768 here) then
      // failed fi_enable with EBUSY. A name of this process's own makes
      // that impossible (shm_name).
      static uint32_t next = 0;
      name_ = shm_name(next++);
      ret = fi_setname(&ep_->fid, const_cast<char*>(name_.c_str()), name_.size() + 1);
      if (ret) return Status::Error(fmt::format("fi_setname {}: {}", name_, fi_text(ret)));
    }
    ret = fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV);
    if (!ret && eq_) ret = fi_ep_bind(ep_, &eq_->fid, 0);
    if (!ret && av_) ret = fi_ep_bind(ep_, &av_->fid, 0);
    if (ret) return Status::Error(fmt::format("fi_ep_bind: {}", fi_text(ret)));
    ret = fi_enable(ep_);
    if (ret) return Status::Error(fmt::format("fi_enable: {}", fi_text(ret)));
    iov_limit_ = std::max<size_t>(1, info->tx_attr->iov_limit);
    rma_iov_limit_ = std::max<size_t>(1, std::min(info->tx_attr->iov_limit, size_t{16}));
    tx_depth_ = std::max<size_t>(1, info->tx_attr->size);
    if (d_->rma) {
      // A write and its note: records of writes whose note is not sent.
      wr_.resize(tx_depth_);
      for (size_t i = 0; i < wr_.size(); ++i) wfree_.push_back(static_cast<uint32_t>(wr_.size() - 1 - i));
      wq_.resize(tx_depth_);
    }
    return {};
  }

  // Receiver, MSG: a passive endpoint on the link's address, any port.
  Status listen(std::string* addr) {
    SignalGuard g;
    fi_info* h = base_hints(d_->info->fabric_attr->prov_name, FI_EP_MSG, d_->rma);
    int ret = lf::getinfo(kVersion, opts_.bind_address().c_str(), "0", FI_SOURCE, h, &info_);
    lf::freeinfo(h);
    if (ret) return Status::Error(fmt::format("fi_getinfo for {}:0: {}", opts_.bind_address(), fi_text(ret)));
    ret = fi_passive_ep(d_->fabric, info_, &pep_, nullptr);
    if (!ret) ret = fi_pep_bind(pep_, &eq_->fid, 0);
    if (!ret) ret = fi_listen(pep_);
    if (ret) return Status::Error(fmt::format("fi_listen on {}: {}", opts_.bind_address(), fi_text(ret)));
    sockaddr_storage sa{};
    size_t len = sizeof sa;
    ret = fi_getname(&pep_->fid, &sa, &len);
    if (ret) return Status::Error(fmt::format("fi_getname: {}", fi_text(ret)));
    uint16_t port = sa.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&sa)->sin6_port)
                                             : ntohs(reinterpret_cast<sockaddr_in*>(&sa)->sin_port);
    *addr = std::to_string(port);
    return {};
  }

  // Sender, MSG: an endpoint toward the receiver's host and its port.
  Status dial(const std::string& port) {
    SignalGuard g;
    fi_info* h = base_hints(d_->info->fabric_attr->prov_name, FI_EP_MSG, d_->rma);
    int ret = lf::getinfo(kVersion, opts_.host.c_str(), port.c_str(), 0, h, &info_);
    lf::freeinfo(h);
    if (ret) return Status::Error(fmt::format("fi_getinfo for {}:{}: {}", opts_.host, port, fi_text(ret)));
    return open_ep(info_);
  }

  // RDM: an endpoint of its own; *addr is its name.
  Status open_rdm(std::string* addr) {
    Status st = open_ep(d_->info);
    if (!st) return st;
    char name[256];
    size_t len = sizeof name;
    int ret = fi_getname(&ep_->fid, name, &len);
    if (ret) return Status::Error(fmt::format("fi_getname: {}", fi_text(ret)));
    addr->assign(name, len);
    return {};
  }

  Status connect(const std::string& peer, uint32_t timeout_ms) override {
    if (!d_->msg) {
      int ret = fi_av_insert(av_, peer.data(), 1, &peer_, 0, nullptr);
      if (ret != 1) return Status::Error(fmt::format("fi_av_insert of the peer's name: {}", fi_text(ret < 0 ? ret : -FI_EINVAL)));
      if (d_->shm) watch_locks(peer);
      return {};
    }
    if (pep_) {
      // Receiver: the sender's connection request, accepted on a new endpoint.
      fi_eq_cm_entry e{};
      uint32_t ev = 0;
      Status st = eq_wait(&ev, &e, timeout_ms, "connection request");
      if (!st) return st;
      if (ev != FI_CONNREQ) return Status::Error(fmt::format("expected a connection request, got event {}", ev));
      st = open_ep(e.info);
      lf::freeinfo(e.info);
      if (!st) return st;
      int ret = fi_accept(ep_, nullptr, 0);
      if (ret) return Status::Error(fmt::format("fi_accept: {}", fi_text(ret)));
    } else {
      int ret = fi_connect(ep_, info_->dest_addr, nullptr, 0);
      if (ret) return Status::Error(fmt::format("fi_connect to {}: {}", opts_.host, fi_text(ret)));
    }
    fi_eq_cm_entry e{};
    uint32_t ev = 0;
    Status st = eq_wait(&ev, &e, timeout_ms, "connection");
    if (!st) return st;
    if (ev != FI_CONNECTED) return Status::Error(fmt::format("expected CONNECTED, got event {}", ev));
    if (pep_) {
      fi_close(&pep_->fid);
      pep_ = nullptr;
    }
    return {};
  }

  Status add_region(void* p, size_t len) override { return d_->reg(p, len); }

  Status post_recv(void* buf, size_t len, uint64_t ctx) override {
    shm::InCall g(watch_.get());
    for (;;) {
      ssize_t ret = fi_recv(ep_, buf, len, d_->desc(buf), FI_ADDR_UNSPEC, ctx_ptr(ctx));
      if (ret == 0) return {};
      if (ret != -FI_EAGAIN) return Status::Error(fmt::format("fi_recv: {}", fi_text(ret)));
      // Only with progress can a receive queue make room.
      fi_cq_read(cq_, nullptr, 0);
    }
  }

  Status send(const iovec* iov, size_t n, uint64_t imm, uint64_t ctx, bool* again) override {
    void* desc[16];
    for (size_t i = 0; i < n && i < 16; ++i) desc[i] = d_->desc(iov[i].iov_base);
    fi_msg m{};
    m.msg_iov = iov;
    m.desc = desc;
    m.iov_count = n;
    m.addr = peer_;
    m.context = ctx_ptr(ctx);
    m.data = imm;
    ssize_t ret;
    {
      shm::InCall g(watch_.get());
      ret = fi_sendmsg(ep_, &m, FI_REMOTE_CQ_DATA | FI_COMPLETION);
    }
    *again = ret == -FI_EAGAIN;
    if (ret == 0 || *again) return {};
    return Status::Error(fmt::format("fi_sendmsg: {}", fi_text(ret)));
  }

  Status poll(msg::Completion* out, size_t max, size_t* n) override {
    *n = 0;
    fi_cq_data_entry e[64];
    ssize_t ret;
    {
      shm::InCall g(watch_.get());
      ret = fi_cq_read(cq_, e, std::min<size_t>(max, 64));
    }
    if (ret == -FI_EAGAIN) return {};
    if (ret == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      fi_cq_readerr(cq_, &err, 0);
      if (err.err == FI_ECANCELED)
        return Status::Error("the peer closed the endpoint (operation canceled)");
      return Status::Error(fmt::format("{}: {}", lf::strerror(err.err),
                                       fi_cq_strerror(cq_, err.prov_errno, err.err_data, nullptr, 0)));
    }
    if (ret < 0) return Status::Error(fmt::format("fi_cq_read: {}", fi_text(ret)));
    size_t k = 0;
    for (ssize_t i = 0; i < ret; ++i) {
      const uint64_t ctx = reinterpret_cast<uintptr_t>(e[i].op_context) - 1;
      if (d_->rma && (ctx & kWriteCtx)) {  // a write of ours completed: its note may go
        Status st = written(static_cast<uint32_t>(ctx & ~kWriteCtx));
        if (!st) return st;
        continue;
      }
      msg::Completion& c = out[k++];
      c.ctx = ctx;
      c.err = 0;
      if (e[i].flags & FI_RECV) {
        c.type = msg::Completion::kRecv;
        c.len = static_cast<uint32_t>(e[i].len);
        c.imm = (e[i].flags & FI_REMOTE_CQ_DATA) ? e[i].data : 0;
      } else {
        c.type = msg::Completion::kSend;
        c.len = 0;
        c.imm = 0;
      }
    }
    *n = k;
    return d_->rma ? post_notes() : Status();
  }

  // rma (msg.h item 6). The receiver: its link's slots, registered for the
  // sender's writes; the key is their address (or 0: offsets) and the MR key.
  Status expose(void* p, size_t len, std::string* key) override {
    if (!d_->rma) return Status::Error("the fabric domain was opened without FI_RMA");
    static std::atomic<uint64_t> next_key{0x534C0000};
    int ret = fi_mr_reg(d_->domain, p, len, FI_REMOTE_WRITE, 0, next_key++, 0, &rma_mr_, nullptr);
    if (ret) return Status::Error(fmt::format("fi_mr_reg of the slots for FI_REMOTE_WRITE: {}", fi_text(ret)));
    const uint64_t at[2] = {d_->virt_addr ? reinterpret_cast<uint64_t>(p) : 0, fi_mr_key(rma_mr_)};
    key->assign(reinterpret_cast<const char*>(at), sizeof at);
    return {};
  }
  Status attach(const std::string& key, std::string* how) override {
    if (key.size() != 2 * sizeof(uint64_t))
      return Status::Error(fmt::format("an rma key of {} bytes (a fabric one is 16)", key.size()));
    std::memcpy(&remote_, key.data(), 8);
    std::memcpy(&rkey_, key.data() + 8, 8);
    *how = d_->saw ? "fi_writemsg, its note sent after it (FI_ORDER_SAW)"
                   : "fi_writemsg, its note sent once it completed (FI_DELIVERY_COMPLETE)";
    return {};
  }
  size_t max_write_iov() const override { return rma_iov_limit_; }
  bool sent_on_its_own() override { return std::exchange(noted_, false); }

  Status write(const iovec* iov, size_t n, uint64_t offset, const iovec& note, uint64_t imm,
               uint64_t ctx, bool* again) override {
    *again = false;
    if (wfree_.empty()) {
      *again = true;
      return post_notes();
    }
    if (n > rma_iov_limit_) return Status::Error(fmt::format("a write of {} pieces (at most {})", n, rma_iov_limit_));
    const uint32_t w = wfree_.back();
    void* desc[16];
    size_t len = 0;
    for (size_t i = 0; i < n; ++i) {
      desc[i] = d_->desc(iov[i].iov_base);
      len += iov[i].iov_len;
    }
    fi_rma_iov rio{remote_ + offset, len, rkey_};
    fi_msg_rma m{};
    m.msg_iov = iov;
    m.desc = desc;
    m.iov_count = n;
    m.addr = peer_;
    m.rma_iov = &rio;
    m.rma_iov_count = 1;
    m.context = ctx_ptr(kWriteCtx | w);
    ssize_t ret;
    {
      shm::InCall g(watch_.get());
      ret = fi_writemsg(ep_, &m, FI_COMPLETION | (d_->saw ? 0 : FI_DELIVERY_COMPLETE));
    }
    if (ret == -FI_EAGAIN) {
      *again = true;
      return post_notes();
    }
    if (ret) return Status::Error(fmt::format("fi_writemsg of {} bytes: {}", len, fi_text(ret)));
    wfree_.pop_back();
    wr_[w] = Wr{note, imm, ctx, false, false};
    wq_[wtail_++ % wq_.size()] = w;
    return post_notes();
  }

  bool arm() override {
    shm::InCall g(watch_.get());
    fid* f = &cq_->fid;
    return fi_trywait(d_->fabric, &f, 1) == FI_SUCCESS;
  }
  int fd() const override { return fd_; }
  size_t max_iov() const override { return std::min<size_t>(iov_limit_, 16); }
  size_t tx_depth() const override { return tx_depth_; }
  std::string describe() const override {
    return fmt::format("fabric/{} ({}, {} wait, iov_limit {}, tx depth {}{})",
                       d_->info->fabric_attr->prov_name, d_->msg ? "FI_EP_MSG" : "FI_EP_RDM",
                       fd_ >= 0 ? "fd" : "doorbell", iov_limit_, tx_depth_,
                       d_->mr_local ? ", registered memory" : "");
  }

 private:
  static void* ctx_ptr(uint64_t ctx) { return reinterpret_cast<void*>(static_cast<uintptr_t>(ctx + 1)); }
  // rma: the context of a write (| its record); transport/msg's own
  // contexts (end.h) use bits 61 and 62 and slot numbers.
  static constexpr uint64_t kWriteCtx = uint64_t{1} << 59;
  struct Wr {
    iovec note;
    uint64_t imm, ctx;
    bool written, noted;  // the write completed; its note was posted
  };
  // Posts the notes whose writes the peer will see first, in write order.
  Status post_notes() {
    while (whead_ != wtail_) {
      const uint32_t w = wq_[whead_ % wq_.size()];
      Wr& r = wr_[w];
      if (!d_->saw && !r.written) break;
      bool again = false;
      Status st = send(&r.note, 1, r.imm, r.ctx, &again);
      if (!st) return st;
      if (again) break;
      r.noted = true;
      noted_ = true;
      ++whead_;
      if (r.written) wfree_.push_back(w);
    }
    return {};
  }
  Status written(uint32_t w) {
    if (w >= wr_.size() || wr_[w].written)
      return Status::Error(fmt::format("completion of unknown write {}", w));
    wr_[w].written = true;
    if (wr_[w].noted) wfree_.push_back(w);
    return {};
  }

  // shm: the watch of the two segments' locks (shm_locks.h); a link whose
  // segments are not the layout it knows runs without, and the process says
  // so once.
  void watch_locks(const std::string& peer) {
    std::string why;
    const std::string link = fmt::format("link {} -> {} (fabric/shm, {}:{})", opts_.from.empty() ? "?" : opts_.from,
                                         opts_.to.empty() ? "?" : opts_.to, opts_.host, opts_.port);
    watch_ = shm::LockWatch::make(name_, peer, link, &why);
    static std::once_flag said;
    if (!watch_)
      std::call_once(said, [&] {
        spdlog::warn("{}: libfabric shm: no watch of its segments' locks ({}): a peer killed while it "
                     "holds one would leave this process spinning in libfabric (shm_locks.h)",
                     link, why);
      });
  }

  Status eq_wait(uint32_t* ev, fi_eq_cm_entry* e, uint32_t timeout_ms, const char* what) {
    ssize_t ret = fi_eq_sread(eq_, ev, e, sizeof *e, static_cast<int>(timeout_ms), 0);
    if (ret == -FI_EAVAIL) {
      fi_eq_err_entry err{};
      fi_eq_readerr(eq_, &err, 0);
      return Status::Error(fmt::format("waiting for the {}: {}", what, lf::strerror(err.err)));
    }
    if (ret == -FI_EAGAIN || ret == -FI_ETIMEDOUT)
      return Status::Error(fmt::format("no {} within {} ms", what, timeout_ms));
    if (ret < 0) return Status::Error(fmt::format("waiting for the {}: {}", what, fi_text(ret)));
    return {};
  }

  std::shared_ptr<Domain> d_;
  LinkOptions opts_;
  fi_info* info_ = nullptr;
  fid_pep* pep_ = nullptr;
  fid_ep* ep_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_eq* eq_ = nullptr;
  fid_av* av_ = nullptr;
  fi_addr_t peer_ = FI_ADDR_UNSPEC;
  int fd_ = -1;
  size_t iov_limit_ = 1, rma_iov_limit_ = 1, tx_depth_ = 1;
  std::string name_;  // shm: this endpoint's segment (shm_name)
  std::unique_ptr<shm::LockWatch> watch_;  // shm: its segments' locks
  fid_mr* rma_mr_ = nullptr;  // rma receiver: the link's slots
  uint64_t remote_ = 0, rkey_ = 0;  // rma sender
  std::vector<Wr> wr_;
  std::vector<uint32_t> wfree_;
  std::vector<uint32_t> wq_;  // writes in order, from whead_: their notes to post
  size_t whead_ = 0, wtail_ = 0;
  bool noted_ = false;  // post_notes() sent one since sent_on_its_own() was asked
};

class FabricFactory final : public msg::Factory {
 public:
  FabricFactory(std::shared_ptr<Domain> d, std::string prov) : d_(std::move(d)), prov_(std::move(prov)) {}
  std::string carrier() const override { return "fabric/" + prov_; }

  std::unique_ptr<msg::Endpoint> open_rx(const LinkOptions& opts, SlotPool& pool, std::string* addr,
                                         Status* st) override {
    auto ep = std::make_unique<FabricEndpoint>(d_, opts);
    *st = d_->reg(pool.base(), pool.bytes());
    if (st->ok()) *st = ep->open_queues(2 * size_t{opts.slots} + 64);
    if (st->ok()) *st = d_->msg ? ep->listen(addr) : ep->open_rdm(addr);
    return st->ok() ? std::move(ep) : nullptr;
  }

  std::unique_ptr<msg::Endpoint> open_tx(const LinkOptions& opts, SlotPool& pool,
                                         const std::string& peer, std::string* addr,
                                         Status* st) override {
    auto ep = std::make_unique<FabricEndpoint>(d_, opts);
    *st = d_->reg(pool.base(), pool.bytes());
    if (st->ok()) *st = ep->open_queues(2 * size_t{opts.slots} + 64);
    if (st->ok()) {
      if (d_->msg) {
        addr->clear();
        *st = ep->dial(peer);
      } else {
        *st = ep->open_rdm(addr);
      }
    }
    return st->ok() ? std::move(ep) : nullptr;
  }

 private:
  std::shared_ptr<Domain> d_;
  std::string prov_;
};

std::shared_ptr<msg::Factory> factory(const LinkOptions& opts, TransportContext& ctx, Status* st) {
  const std::string& prov = opts.msg.fabric_provider;
  const bool rma = opts.msg.rma;
  auto s = ctx.state("fabric/" + prov + (rma ? "+rma" : ""),
                     [&](Status* e) -> std::shared_ptr<TransportContext::State> {
                       std::shared_ptr<Domain> d;
                       *e = open_domain(prov, rma, &d);
                       return e->ok() ? d : nullptr;
                     },
                     st);
  if (!s) return nullptr;
  return std::make_shared<FabricFactory>(std::static_pointer_cast<Domain>(s), prov);
}

}  // namespace

std::unique_ptr<Listener> make_listener(const LinkOptions& opts, SlotPool& pool, uint32_t first_slot,
                                        TransportContext& ctx, Status* st) {
  auto f = factory(opts, ctx, st);
  if (!f) return nullptr;
  return msg::make_listener(opts, pool, first_slot, std::move(f), st);
}

std::unique_ptr<Sender> make_sender(const LinkOptions& opts, SlotPool& pool, TransportContext& ctx,
                                    Status* st) {
  auto f = factory(opts, ctx, st);
  if (!f) return nullptr;
  return msg::make_sender(opts, pool, std::move(f), st);
}

}  // namespace sluice::fabric
