// The network stages of a node: NetSource (the upstream links: union,
// credits, acknowledgements, a broken link's rejoin) and NetDestination (the
// downstream links: split by stream, copy or key). Instance (node.cc) runs
// them as its receive and send stages.
#include "node/node.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <thread>

namespace sluice {
namespace {
// A link's name as metrics label it: FROM->TO (bounded: the deployment's links).
std::string link_label(const LinkOptions& o) {
  return fmt::format("{}->{}", o.from.empty() ? "?" : o.from, o.to.empty() ? "?" : o.to);
}
}  // namespace

// ---- NetSource --------------------------------------------------------------

NetSource::NetSource(const std::vector<LinkOptions>& links) : opts_(links) {}

NetSource::~NetSource() {
  for (auto& l : listeners_) l->shutdown();
  for (auto& r : rejoin_)
    if (r && r->accepting.joinable()) r->accepting.join();
  if (epfd_ >= 0) ::close(epfd_);
}

std::unique_ptr<NetSource> NetSource::make(const std::vector<LinkOptions>& links,
                                           TransportContext& ctx, Status* st, size_t reserve) {
  if (links.empty() || links.size() > UINT16_MAX) {
    *st = Status::Error(fmt::format("a receive stage needs 1..{} upstream links, got {}",
                                    UINT16_MAX, links.size()));
    return nullptr;
  }
  std::unique_ptr<NetSource> s(new NetSource(links));
  size_t slots = 0, slot_bytes = 0;
  for (const auto& l : links) {
    slots += l.slots;
    slot_bytes = std::max<size_t>(slot_bytes, l.slot_bytes);
  }
  s->pool_ = std::make_unique<SlotPool>(slots, slot_bytes, reserve);
  *st = ctx.register_pool(*s->pool_);
  if (!st->ok()) return nullptr;
  // Every slot starts with its link: posted, and granted by the handshake.
  std::vector<uint32_t> all(slots);  // the links' slots; the reserve is the process stage's
  if (s->pool_->try_acquire_n(all.data(), slots) != slots) {
    *st = Status::Error("a fresh pool did not hand out every slot");
    return nullptr;
  }
  s->owner_.resize(slots);
  uint32_t first = 0;
  for (size_t i = 0; i < links.size(); ++i) {
    for (uint32_t k = 0; k < links[i].slots; ++k) s->owner_[first + k] = static_cast<uint16_t>(i);
    s->first_.push_back(first);
    auto l = make_listener(links[i], *s->pool_, first, ctx, st);
    if (!l) return nullptr;
    s->listeners_.push_back(std::move(l));
    first += links[i].slots;
  }
  s->merged_ = std::make_unique<EndOfStream>();
  s->epfd_ = epoll_create1(EPOLL_CLOEXEC);
  if (s->epfd_ < 0 || !s->pool_->freed().enable_fd()) {
    *st = Status::Error(fmt::format("epoll/eventfd for the receive stage: {}", strerror(errno)));
    return nullptr;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = UINT64_MAX;  // the pool
  epoll_ctl(s->epfd_, EPOLL_CTL_ADD, s->pool_->freed().fd(), &ev);
  return s;
}

// Every upstream connects on its own schedule: accept them side by side.
Status NetSource::start() {
  std::vector<std::unique_ptr<Receiver>> got(listeners_.size());
  std::vector<Status> sts(listeners_.size());
  std::vector<std::thread> ts;
  for (size_t i = 0; i < listeners_.size(); ++i)
    ts.emplace_back([&, i] {
      got[i] = listeners_[i]->accept(&sts[i]);
      // One failed accept ends the stage: the others must not wait forever.
      if (!got[i])
        for (auto& l : listeners_) l->shutdown();
    });
  for (auto& t : ts) t.join();
  std::lock_guard lk(mu_);
  for (size_t i = 0; i < got.size(); ++i)
    if (!got[i]) return sts[i];
  links_ = std::move(got);
  if (claims_) {
    slot_epoch_ = std::make_unique<std::atomic<uint8_t>[]>(owner_.size());
    for (size_t i = 0; i < owner_.size(); ++i) slot_epoch_[i].store(0, std::memory_order_relaxed);
    gen_ = std::make_unique<std::atomic<uint32_t>[]>(links_.size());
    for (size_t i = 0; i < links_.size(); ++i) {
      gen_[i].store(0, std::memory_order_relaxed);
      links_[i]->use_claims();
    }
  }
  if (shut_) {
    for (auto& r : links_) r->shutdown();
    return Status::Error("shut down while accepting");
  }
  // Strangers (a second sender, a port scanner) are answered and closed
  // from now on, not left in the backlog until their own timeout.
  for (auto& l : listeners_) l->turn_away(true);
  watching_.assign(links_.size(), true);
  ready_.assign(links_.size(), true);
  helped_ = true;
  // Not with acks. Once sleep() handled a link that breaks there (below),
  // the slurm restart test passed 20 of 20 with acks on this path too, the
  // releasing thread acknowledging what it gave back at once; but at 2,000
  // one-tuple events/s with acks the sink's p50 was 1.13x this way's (5
  // alternated rounds), and acks' throughput cost did not move beyond the
  // rounds' spread (on/off 0.84-0.95 either way).
  for (size_t i = 0; i < links_.size(); ++i)
    helped_ = helped_ && links_[i]->any_thread_gives_back() && !opts_[i].acks;
  if (helped_) pool_->set_freed_hook(this);
  rejoin_.clear();
  for (size_t i = 0; i < links_.size(); ++i) rejoin_.push_back(std::make_unique<Rejoin>());
  for (size_t i = 0; i < links_.size(); ++i) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    epoll_ctl(epfd_, EPOLL_CTL_ADD, links_[i]->wait_fd(), &ev);
  }
  return {};
}

// Slots released anywhere come back to their link: posted and credited.
Status NetSource::give_back_freed() {
  uint32_t freed[64];
  size_t n;
  while ((n = pool_->try_acquire_n(freed, 64)) > 0)
    for (size_t i = 0; i < n; ++i) {
      const uint16_t l = owner_[freed[i]];
      Status st = links_[l]->give_back(freed[i]);
      if (!st) st = link_broke(l, st);  // a credit message to an upstream that is gone
      if (!st) return st;
    }
  return {};
}

bool NetSource::on_freed() {
  if (!asleep_.load(std::memory_order_seq_cst)) return false;
  std::unique_lock lk(give_mu_, std::try_to_lock);
  if (!lk.owns_lock() || !asleep_.load(std::memory_order_relaxed)) return false;
  // A link that fails here keeps its error: this stage, woken, polls it
  // and handles it as give_back_freed() would have.
  bool ok = true;
  uint32_t freed[64];
  size_t n;
  while ((n = pool_->try_acquire_n(freed, 64)) > 0)
    for (size_t i = 0; i < n; ++i) ok = links_[owner_[freed[i]]]->give_back(freed[i]).ok() && ok;
  return ok;
}

// A link with acks broke (its upstream died, or the network between): what
// it had handed out goes on through the node; once every slot of it came
// back, the listener waits for the upstream to connect again, and its sender
// replays what was not acknowledged. Without acks the error ends the stage,
// and so does a protocol error with them: the upstream's bytes were wrong,
// and its next connection would send them again (PROTOCOL.md, E3). The
// carriers' and receivers' errors name the link and its peer.
Status NetSource::link_broke(size_t i, const Status& why) {
  if (!opts_[i].acks || why.protocol_error() || shut_ || pool_->closed()) return why;
  if (rejoin_[i]->down) return {};
  spdlog::warn("{}; waiting for its upstream to connect again", why.message());
  if (watching_[i]) {
    epoll_ctl(epfd_, EPOLL_CTL_DEL, links_[i]->wait_fd(), nullptr);
    watching_[i] = false;
  }
  rejoin_[i]->down = true;
  ++down_;
  rejoin_[i]->down_ns = rejoin_[i]->said_ns = mono_ns();
  return {};
}

Status NetSource::tend_broken() {
  if (down_ == 0) return {};
  for (size_t i = 0; i < links_.size(); ++i) {
    Rejoin& r = *rejoin_[i];
    if (!r.down) continue;
    if (!r.accepting.joinable()) {
      // Its slots must all be back before a new connection posts them.
      if (const uint64_t out = links_[i]->outstanding(); out > 0) {
        // Held downstream (with acks: until the sinks acknowledge what they
        // became). Said every 5 s, so a wait that never ends shows why.
        const uint64_t now = mono_ns();
        if (now - r.said_ns >= 5'000'000'000ull) {
          r.said_ns = now;
          spdlog::warn("{}: {} of its slots still held downstream after {:.0f} s; its upstream is "
                       "accepted again once they are back",
                       links_[i]->name(), out, (now - r.down_ns) / 1e9);
        }
        continue;
      }
      r.done = false;
      listeners_[i]->turn_away(false);  // the upstream's reconnect is accepted
      r.accepting = std::thread([this, i, &r] {
        r.next = listeners_[i]->accept(&r.error);
        r.done.store(true, std::memory_order_release);
      });
      continue;
    }
    if (!r.done.load(std::memory_order_acquire)) continue;
    r.accepting.join();
    if (!r.next) return r.error.ok() ? Status::Error("shut down while accepting") : r.error;
    {
      std::lock_guard lk(mu_);
      links_[i] = std::move(r.next);
      if (claims_) {
        // Claims of the connection before are acknowledged to nobody: its
        // upstream sends those frames again on this one.
        links_[i]->use_claims();
        gen_[i].fetch_add(1, std::memory_order_relaxed);
      }
    }
    listeners_[i]->turn_away(true);
    r.down = false;
    --down_;
    ready_[i] = true;
    ++reconnects_;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    epoll_ctl(epfd_, EPOLL_CTL_ADD, links_[i]->wait_fd(), &ev);
    watching_[i] = true;
    spdlog::info("{}: connected again", links_[i]->name());
  }
  return {};
}

AckLedger::Take NetSource::claim(uint32_t slot, Claim* c) {
  if (!claims_ || slot >= owner_.size()) return Take::kNotMine;
  if (stale(slot)) return Take::kStale;
  // The link's receiver is not replaced while this slot is out (tend_broken
  // waits for every one), so links_[l] is the one that handed it out.
  const uint16_t l = owner_[slot];
  c->link = l;
  c->gen = gen_[l].load(std::memory_order_relaxed);
  c->frame = links_[l]->claim(slot);
  return Take::kClaimed;
}

void NetSource::ack(const Claim& c) {
  std::lock_guard lk(mu_);  // against tend_broken's replacing the receiver
  if (c.link < links_.size() && gen_[c.link].load(std::memory_order_relaxed) == c.gen)
    links_[c.link]->ack_claimed(c.frame);
}

void NetSource::acked() {
  acks_due_.store(true, std::memory_order_seq_cst);
  pool_->freed().notify();
}

void NetSource::replay_upstream() {
  replay_req_.fetch_add(1, std::memory_order_seq_cst);
  pool_->freed().notify();
}

bool NetSource::stale(uint32_t slot) const {
  return claims_ && slot < owner_.size() &&
         slot_epoch_[slot].load(std::memory_order_relaxed) !=
             static_cast<uint8_t>(replay_req_.load(std::memory_order_acquire));
}

Status NetSource::tend_claims() {
  if (!claims_) return {};
  const uint32_t req = replay_req_.load(std::memory_order_acquire);
  if (req != epoch_) {
    // Every link still open is broken: its sender connects again and sends
    // every frame this node had not acknowledged. What was handed out before
    // is stale (the sender drops it), and what the links hand out from now
    // on comes after the replay began.
    epoch_ = req;
    for (size_t i = 0; i < links_.size(); ++i) {
      if (rejoin_[i]->down || links_[i]->finished()) continue;
      links_[i]->shutdown();
      Status st = link_broke(i, Status::Error(fmt::format(
                                    "{}: broken on purpose: this node's downstream link broke, "
                                    "and this node keeps no copies (node_backup: upstream)",
                                    links_[i]->name())));
      if (!st) return st;
    }
    end_out_ = false;  // END comes again, after what is sent again
  }
  if (acks_due_.exchange(false, std::memory_order_acq_rel))
    for (size_t i = 0; i < links_.size(); ++i) {
      if (rejoin_[i]->down) continue;
      if (Status st = links_[i]->collect_acks(); !st) {
        st = link_broke(i, st);
        if (!st) return st;
      }
    }
  return {};
}

// A link's END: merged into one END for the instance. Every END but the last
// frees its slot at once; the last carries the merged totals. False: drop it.
//
// One stream on several links: the parts of a key split met again (replicas
// of a process split by key, and a process after them that unions them). Each
// part's accounts explain every tuple of the stream that did not come its way
// (what the split sent elsewhere, what was dropped before it, what operators
// after it consumed), so k parts together explain k - 1 streams' worth too
// many: the merged entry takes them back, from what the split sent elsewhere
// first (that was the other parts), then from what was dropped before it
// (every part counts it).
bool NetSource::merge_end(const Descriptor& d) {
  auto eos = std::make_unique<EndOfStream>();  // once per link, at its end
  read_end(pool_->slot(d.slot), d.bytes, eos.get());  // checked
  merged_->flags |= eos->flags & (kEndAccounts | kEndPartitioned);
  for (uint32_t i = 0; i < eos->n_streams; ++i) {
    const EndOfStreamEntry& e = eos->streams[i];
    uint32_t j = 0;
    while (j < merged_->n_streams && merged_->streams[j].stream != e.stream) ++j;
    if (j == merged_->n_streams) {
      if (merged_->n_streams == kMaxStreams) break;
      merged_->accounts[merged_->n_streams] = eos->accounts[i];
      merged_->streams[merged_->n_streams++] = e;
      continue;
    }
    EndOfStreamEntry& m = merged_->streams[j];
    EndOfStreamAccount& a = merged_->accounts[j];
    const EndOfStreamAccount& b = eos->accounts[i];
    m.next_seq = std::max(m.next_seq, e.next_seq);  // the stream's own totals, the same on every part
    m.events = std::max(m.events, e.events);
    a.filtered += b.filtered;
    a.aggregated += b.aggregated;
    a.joined += b.joined;
    a.partitioned += b.partitioned;
    uint64_t over = e.next_seq;
    for (uint64_t* f : {&a.partitioned, &a.filtered, &a.aggregated, &a.joined}) {
      const uint64_t take = std::min(over, *f);
      *f -= take;
      over -= take;
    }
  }
  ++ended_;
  if (ended_ < links_.size()) {
    (void)pool_->release(d.slot);
    return false;
  }
  return true;
}

// Sleeps until a link has something, or enough slots came back to matter: a
// credit batch, when some upstream is short of credits. An upstream that
// still holds a batch of credits sends, and its frames wake this stage,
// which then returns whatever came back: so freed slots cost no wake-up of
// their own unless an upstream would otherwise wait.
Status NetSource::sleep() {
  // One upstream, none of its slots out of this stage's hands, no timer:
  // nothing but a frame (or its EOF, or shutdown()) can give this stage
  // work, so the link's read is the wait, as a plain relay's blocking read
  // is: one system call per wake-up where epoll_wait and the read are two,
  // and the kernel wakes this thread from the socket itself. Where the
  // carrier offers it (tcp); not with acks, whose credits carry
  // acknowledgements that slots coming back make due.
  if (links_.size() == 1 && !end_out_ && watching_[0] && !opts_[0].acks && !rejoin_[0]->down) {
    if (Status st = links_[0]->send_due(); !st) return link_broke(0, st);
    if (links_[0]->poll_period_ms() < 0 && links_[0]->outstanding() == 0 &&
        (!idle_ || !idle_->busy()) && links_[0]->wait_in_next_poll()) {
      waited_ = true;
      ready_[0] = true;
      read_next_ = true;
      return {};
    }
  }
  int timeout = -1;
  size_t threshold = end_out_ ? 1 : pool_->reserve_first();
  // The releasing threads give slots back while this stage sleeps (not
  // with threads: shared, where this thread's idle work releases them, nor
  // while a link is down or the stream is ending).
  bool help = helped_ && !idle_ && !end_out_;
  for (size_t i = 0; i < links_.size(); ++i) {
    if (rejoin_[i]->down) {
      timeout = 20;  // look at the accept now and then
      help = false;
    }
    if (!watching_[i]) continue;
    // A link found broken here, by the credit message that could not go
    // out, is down from now on: back to next(), which tends it and sleeps
    // again with the down link's 20 ms and no help. Sleeping on with what
    // this loop decided before the break can leave the stage in an endless
    // epoll_wait: the link's fd is out of the set, and its slots coming
    // back from downstream ring nobody when fewer than the threshold (or,
    // with help, are given back by the releasing thread without a
    // wake-up: the slurm restart test hung 1 run in 5 that way with acks
    // on the helped path).
    // Credits the last frames made room for, held until they were handed on.
    if (Status st = links_[i]->send_due(); !st) return link_broke(i, st);
    // With acks, nothing owed waits long for a batch while this stage
    // sleeps: a sender may be waiting for acknowledgements (its replay log
    // full, its snapshot, its close). With ack_delay_ms 0 it goes before
    // every sleep; a stage that sleeps between frames (a fast machine, a
    // moderate rate) then sends a credit message per 1.6-4 frames (against
    // 16 with acks off), each a system call at both ends. Otherwise an owed
    // acknowledgement waits up to ack_delay_ms for the frames that complete
    // its batch, this sleep's timeout.
    if (opts_[i].acks) {
      const int due = links_[i]->ack_due_ms();
      if (due == 0) {
        if (Status st = links_[i]->flush_credits(); !st) return link_broke(i, st);
      } else if (due > 0 && (timeout < 0 || due < timeout)) {
        timeout = due;
      }
    }
    const int p = links_[i]->poll_period_ms();
    if (p >= 0 && (timeout < 0 || p < timeout)) timeout = p;
    const Receiver& l = *links_[i];
    // A credit batch of freed slots wakes this stage when the sender is
    // short of one; where the releasing thread returns them (help), it
    // does so for every batch, as the credits of a sender that is not
    // short yet (no wake-up of this stage either way).
    if (help || l.sender_credits() < l.credit_batch())
      threshold = std::min<size_t>(threshold, l.credit_batch());
    // With acks, a slot that comes back is an acknowledgement an upstream
    // may be waiting for (its log, its pool, its close): wake for a credit
    // batch of them, or for all it has out if fewer, so none is left unsent.
    if (opts_[i].acks && l.outstanding() > 0)
      threshold = std::min<size_t>(threshold, std::min<uint64_t>(l.credit_batch(), l.outstanding()));
  }
  if (threshold != wake_threshold_) pool_->set_wake_threshold(wake_threshold_ = threshold);
  EventCount& freed = pool_->freed();
  // asleep_ holds for this wait only, whichever way it ends; clearing it
  // waits for a give-back under way.
  struct Asleep {
    NetSource* s;
    explicit Asleep(NetSource* src) : s(src) {
      if (!s) return;
      std::lock_guard lk(s->give_mu_);
      s->asleep_.store(true, std::memory_order_seq_cst);
    }
    ~Asleep() {
      if (!s) return;
      std::lock_guard lk(s->give_mu_);
      s->asleep_.store(false, std::memory_order_relaxed);
    }
  } asleep(help ? this : nullptr);
  freed.prepare_fd_wait();
  bool rang = false;
  // (The ledger's news, re-checked after prepare_fd_wait: acked() and
  // replay_upstream() notify after they set it.)
  if (pool_->free_slots() < wake_threshold_ && !pool_->closed() &&
      !(claims_ && (acks_due_.load(std::memory_order_seq_cst) ||
                    replay_req_.load(std::memory_order_seq_cst) != epoch_))) {
    waited_ = true;
    // threads: shared: the send stage's carrier work is this thread's too.
    Status idle_st;
    const int ep[1] = {epfd_};
    if (idle_wait(ep, timeout, &idle_st)) {
      freed.finish_fd_wait(true);  // the pool's eventfd may have rung: drained next time
      ready_.assign(ready_.size(), true);  // which link woke it is not known
      return idle_st;
    }
    epoll_event evs[16];
    int r = epoll_wait(epfd_, evs, 16, timeout);
    if (r < 0 && errno != EINTR) {
      freed.finish_fd_wait(true);
      return Status::Error(fmt::format("epoll_wait failed: {}", strerror(errno)));
    }
    for (int i = 0; i < r; ++i) {
      if (evs[i].data.u64 == UINT64_MAX)
        rang = true;
      else if (evs[i].data.u64 < ready_.size())
        ready_[evs[i].data.u64] = true;
    }
  }
  freed.finish_fd_wait(rang);
  return {};
}

Status NetSource::next(std::span<Descriptor> out, size_t* n) {
  *n = 0;
  waited_ = false;
  for (;;) {
    if (pool_->closed()) return Status::Error("receive stage shut down");
    Status st;
    // After sleep() chose to wait in the read, no slot is out of this
    // stage's hands (none to give back) and the link has no acks (none
    // goes down): straight to the read.
    if (!std::exchange(read_next_, false)) {
      if (st = give_back_freed(); !st) return st;
      if (st = tend_claims(); !st) return st;
      if (st = tend_broken(); !st) return st;
    }
    if (end_out_) {
      // The stream has ended; stay until every END slot came back, so each
      // link returns its last credits and finishes cleanly.
      bool all = true;
      for (auto& l : links_) all = all && l->finished();
      if (all) return {};
      st = sleep();
      if (!st) return st;
      continue;
    }
    size_t k = 0;
    for (size_t j = 0; j < links_.size() && k < out.size(); ++j) {
      size_t i = rr_ + j;  // (rr_ + j) % links, without a division per frame
      if (i >= links_.size()) i -= links_.size();
      Receiver& l = *links_[i];
      if (l.ended() || rejoin_[i]->down) continue;
      if (!ready_[i] && l.drained()) continue;  // its fd wakes the sleep below
      ready_[i] = false;
      size_t got = 0;
      st = l.poll(out.subspan(k), &got);
      if (!st) {
        st = link_broke(i, st);
        if (!st) return st;
        continue;
      }
      if (claims_)
        for (size_t e = k; e < k + got; ++e)
          slot_epoch_[out[e].slot].store(static_cast<uint8_t>(epoch_), std::memory_order_relaxed);
      for (size_t e = k; e < k + got; ++e) {
        if (!(out[e].flags & kDescEnd)) continue;
        if (watching_[i]) {
          epoll_ctl(epfd_, EPOLL_CTL_DEL, l.wait_fd(), nullptr);  // EOF stays readable
          watching_[i] = false;
        }
        if (links_.size() == 1) {
          end_out_ = true;
          continue;
        }
        if (merge_end(out[e])) {
          write_end(*merged_, pool_->slot(out[e].slot));
          out[e].bytes = static_cast<uint32_t>(merged_->wire_bytes());
          end_out_ = true;
        } else {
          std::memmove(&out[e], &out[e + 1], (k + got - e - 1) * sizeof(Descriptor));
          --got;
          --e;
        }
      }
      k += got;
    }
    if (++rr_ >= links_.size()) rr_ = 0;
    if (k > 0) {
      *n = k;
      return {};
    }
    st = sleep();
    if (!st) return st;
  }
}

void NetSource::shutdown() {
  std::lock_guard lk(mu_);
  shut_ = true;  // read unlocked by the stage: a broken link then just ends it
  for (auto& l : listeners_) l->shutdown();
  for (auto& r : links_) r->shutdown();
  pool_->close();
}

void NetSource::report(ProcessSummary& s) const { s.reconnects += reconnects_; }

void NetSource::live_links(std::vector<LiveLink>* out) const {
  std::lock_guard lk(mu_);
  for (size_t i = 0; i < links_.size(); ++i)
    out->push_back({link_label(opts_[i]), false, links_[i]->stats()});
}

// ---- NetDestination ---------------------------------------------------------

namespace {
constexpr size_t kLinkBatch = 1024;
}

NetDestination::NetDestination(std::vector<LinkOptions> links, Split split, SlotPool& pool,
                               TransportContext& ctx, std::shared_ptr<const PartitionTally> tally)
    : opts_(std::move(links)), split_(split), pool_(pool), ctx_(ctx), tally_(std::move(tally)) {}

Status NetDestination::start() {
  if (split_ == Split::kKey && opts_.size() > 1 && (!tally_ || tally_->links() != opts_.size()))
    return Status::Error(fmt::format("split: key over {} links needs the process stage's partition "
                                     "tally for as many", opts_.size()));
  Status st = ctx_.register_pool(pool_);
  if (!st) return st;
  for (const auto& o : opts_) {
    // With acks, a receiver that still tends the link of this process's
    // previous run (it was killed and restarted: the receiver drains that
    // link's slots first) refuses it as busy for a while: try again, within
    // reconnect_timeout_ms, as a reconnecting sender would.
    const uint64_t deadline = mono_ns() + uint64_t{o.reconnect_timeout_ms} * 1000000;
    std::unique_ptr<Sender> s;
    for (bool said = false;;) {
      s = make_sender(o, pool_, ctx_, &st);
      if (s || !o.acks || st.message().find(kLinkBusy) == std::string::npos || mono_ns() >= deadline) break;
      if (!said) {
        spdlog::warn("{}; trying again (up to {} ms)", st.message(), o.reconnect_timeout_ms);
        said = true;
      }
      // (A stop meanwhile ends the next try at once: LinkOptions::stop.)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (!s) return st;
    if (remaker_) s->set_remaker(remaker_);
    if (ledger_) s->set_ledger(ledger_);
    std::lock_guard lk(mu_);
    links_.push_back(std::move(s));
  }
  batch_.assign(links_.size(), std::vector<Descriptor>(kLinkBatch));
  nbatch_.assign(links_.size(), 0);
  runs_.resize(pool_.slot_bytes() / kEventHeaderBytes + 1);
  end_ = std::make_unique<EndOfStream>();
  end_all_ = std::make_unique<EndOfStream>();
  end_wire_ = std::make_unique<std::byte[]>(kMaxEndBytes);
  last_stats_.resize(links_.size());
  return {};
}

Status NetDestination::flush(size_t i) {
  if (nbatch_[i] == 0) return {};
  Status st = links_[i]->send(std::span<const Descriptor>(batch_[i].data(), nbatch_[i]));
  nbatch_[i] = 0;
  return st;
}

// Cuts one descriptor's events into runs of consecutive events bound for the
// same link; the runs share the slot, which gets one holder per run.
Status NetDestination::split_by_stream(const Descriptor& d) {
  const std::byte* base = pool_.slot(d.slot) + d.offset;
  const size_t L = links_.size();
  size_t nruns = 0;
  size_t cur_link = SIZE_MAX;
  uint32_t off = 0;
  for (uint32_t e = 0; e < d.events; ++e) {
    EventHeader h;
    std::memcpy(&h, base + off, sizeof h);  // checked when it arrived
    const size_t link = h.stream % L;
    const uint32_t len = static_cast<uint32_t>(h.wire_bytes());
    if (link != cur_link || nruns == 0) {
      runs_[nruns++] = Descriptor{d.slot, d.offset + off, 0, 0, 0, static_cast<uint32_t>(link)};
      cur_link = link;
    }
    Descriptor& r = runs_[nruns - 1];
    r.bytes += len;
    r.events += 1;
    r.tuples += h.tuple_count;
    off += len;
  }
  if (nruns > 1) {
    Status st = pool_.retain(d.slot, static_cast<uint32_t>(nruns - 1));
    if (!st) return st;
  }
  for (size_t r = 0; r < nruns; ++r) {
    const size_t i = runs_[r].flags;
    runs_[r].flags = 0;
    if (nbatch_[i] == kLinkBatch) {
      Status st = flush(i);
      if (!st) return st;
    }
    batch_[i][nbatch_[i]++] = runs_[r];
  }
  return {};
}

// A key split's parts: each descriptor already names its link.
Status NetDestination::route(const Descriptor& d) {
  const size_t i = d.flags >> kDescLinkShift;
  if (!(d.flags & kDescRouted) || i >= links_.size())
    return Status::Error(fmt::format("split: key: a descriptor with no downstream link of {} "
                                     "(flags {:#x})", links_.size(), d.flags));
  if (nbatch_[i] == kLinkBatch) {
    Status st = flush(i);
    if (!st) return st;
  }
  Descriptor r = d;
  r.flags = 0;
  batch_[i][nbatch_[i]++] = r;
  return {};
}

// END: each link's own, after everything before it; then the slot is free.
// A key split's links each get every stream, each stream's account with the
// tuples the split sent to the other links added as `partitioned`, and those
// dropped before the split inside the events it cut as `filtered`.
Status NetDestination::end(const Descriptor& d) {
  const std::byte* p = pool_.slot(d.slot) + d.offset;
  Status st;
  if (ledger_) {
    // END goes once no frame is left that only the upstreams could send
    // again. A break meanwhile makes them send everything not acknowledged,
    // END too: this one is stale, and the stream goes on.
    if (!ledger_->stale(d.slot)) st = links_[0]->settle_claims();
    if (st && ledger_->stale(d.slot)) {
      spdlog::info("{}: the end of the stream goes again after what its upstream sends again",
                   link_label(opts_[0]));
      end_taken_back_ = true;
      return pool_.release(d.slot);
    }
  }
  if (links_.size() == 1 || split_ == Split::kCopy) {
    for (auto& l : links_)
      if (st) st = l->end(p, d.bytes);
  } else if (split_ == Split::kKey) {
    EndOfStream& all = *end_all_;
    read_end(p, d.bytes, &all);  // checked when it arrived
    for (size_t i = 0; i < links_.size() && st; ++i) {
      *end_ = all;
      end_->flags |= kEndAccounts | kEndPartitioned;
      for (uint32_t e = 0; e < all.n_streams; ++e) {
        end_->accounts[e].partitioned +=
            tally_->not_sent(all.streams[e].stream, static_cast<uint32_t>(i));
        end_->accounts[e].filtered += tally_->filtered_ahead(all.streams[e].stream);
      }
      write_end(*end_, end_wire_.get());
      st = links_[i]->end(end_wire_.get(), static_cast<uint32_t>(end_->wire_bytes()));
    }
  } else {
    EndOfStream& all = *end_all_;
    read_end(p, d.bytes, &all);  // checked when it arrived
    for (size_t i = 0; i < links_.size() && st; ++i) {
      end_->n_streams = 0;
      end_->flags = all.flags;
      for (uint32_t e = 0; e < all.n_streams; ++e)
        if (all.streams[e].stream % links_.size() == i) {
          end_->accounts[end_->n_streams] = all.accounts[e];
          end_->streams[end_->n_streams++] = all.streams[e];
        }
      write_end(*end_, end_wire_.get());
      st = links_[i]->end(end_wire_.get(), static_cast<uint32_t>(end_->wire_bytes()));
    }
  }
  if (d.slot != kNoSlot) {
    Status r = pool_.release(d.slot);
    if (st) st = r;
  }
  return st;
}

Status NetDestination::consume(std::span<const Descriptor> descs) {
  size_t n = descs.size();
  const bool has_end = n > 0 && (descs[n - 1].flags & kDescEnd);
  if (has_end) --n;
  Status st;
  if (links_.size() == 1) {
    if (n) st = links_[0]->send(descs.first(n));
  } else if (split_ == Split::kKey) {
    for (size_t i = 0; i < n && st; ++i) st = route(descs[i]);
    for (size_t l = 0; l < links_.size() && st; ++l) st = flush(l);
  } else if (split_ == Split::kCopy) {
    const uint32_t extra = static_cast<uint32_t>(links_.size() - 1);
    for (size_t i = 0; i < n && st; ++i) st = pool_.retain(descs[i].slot, extra);
    for (size_t l = 0; l < links_.size() && st && n; ++l) st = links_[l]->send(descs.first(n));
  } else {
    for (size_t i = 0; i < n && st; ++i) st = split_by_stream(descs[i]);
    for (size_t l = 0; l < links_.size() && st; ++l) st = flush(l);
  }
  if (st && has_end) st = end(descs[n]);
  return st;
}

Status NetDestination::finish() {
  Status first;
  for (auto& l : links_) {
    Status st = l->close();
    if (first && !st) first = st;
  }
  return first;
}

void NetDestination::abort() {
  for (size_t i = 0; i < links_.size(); ++i) {
    last_stats_[i] = links_[i]->stats();
    links_[i]->abort();
  }
}

void NetDestination::interrupt() {
  std::lock_guard lk(mu_);  // links_ as start() fills it
  for (auto& l : links_) l->interrupt();
}

bool NetDestination::busy() const {
  for (const auto& l : links_)
    if (l->busy()) return true;
  return false;
}

bool NetDestination::carrier_busy() const {
  for (const auto& l : links_)
    if (l->carrier_busy()) return true;
  return false;
}

bool NetDestination::acknowledged() const {
  for (const LinkOptions& o : opts_)
    if (o.acks) return true;
  return false;
}

Status NetDestination::progress() {
  for (auto& l : links_)
    if (Status st = l->progress(); !st) return st;
  return {};
}

void NetDestination::wait_fds(std::vector<int>* fds) const {
  for (const auto& l : links_) fds->push_back(l->wait_fd());
}

void NetDestination::report(ProcessSummary& s) const {
  for (const auto& l : links_) {
    s.credit_waits += l->stats().credit_waits;
    const ReplayStats r = l->replay_stats();
    s.replayed += r.replayed_events;
    s.reconnects += r.reconnects;
  }
}

std::byte* NetDestination::room(uint32_t* capacity) {
  return links_.size() == 1 ? links_[0]->room(capacity) : nullptr;
}

bool NetDestination::settled() const {
  std::lock_guard lk(mu_);
  return settled_locked();
}

bool NetDestination::settled_locked() const {
  for (const auto& l : links_)
    if (l->replay_stats().held_frames) return false;
  return true;
}

void NetDestination::log_marks(std::vector<uint64_t>* marks) const {
  std::lock_guard lk(mu_);
  marks->clear();
  for (const auto& l : links_) marks->push_back(l->replay_stats().logged_frames);
}

bool NetDestination::settled_through(const std::vector<uint64_t>& marks) const {
  std::lock_guard lk(mu_);
  if (marks.size() != links_.size()) return settled_locked();
  for (size_t i = 0; i < links_.size(); ++i)
    if (links_[i]->replay_stats().done_frames < marks[i]) return false;
  return true;
}

bool NetDestination::acked_events(std::vector<uint64_t>* per_link) const {
  std::lock_guard lk(mu_);
  if (opts_.empty() || links_.size() != opts_.size()) return false;
  per_link->clear();
  for (size_t i = 0; i < links_.size(); ++i) {
    if (!opts_[i].acks) return false;
    per_link->push_back(links_[i]->replay_stats().acked_events);
  }
  return true;
}

void NetDestination::live_links(std::vector<LiveLink>* out) const {
  std::lock_guard lk(mu_);
  for (size_t i = 0; i < links_.size(); ++i)
    out->push_back({link_label(opts_[i]), true, links_[i]->stats()});
}

}  // namespace sluice
