// The instance's operator snapshots ("Operator snapshots" in
// docs/DESIGN.md): restore and replay on start, the synchronous snapshot of
// a node with operators, and a sink's cuts, copied by its send stage
// (send_loop, in node.cc) and written by its process stage.
#include "node/node.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <bitset>
#include <chrono>
#include <cstring>
#include <thread>

namespace sluice {

// On the process thread before its first descriptor: the snapshot this
// instance wrote before it died, if any, into its operators.
Status Instance::restore() {
  ck_files_ = std::make_unique<SnapshotFiles>(cfg_.checkpoint_path, cfg_.checkpoint_sync);
  std::string bytes, where;
  bool found = false;
  if (Status st = ck_files_->prepare(); !st) return st;
  Status read = ck_files_->read_newest(cfg_.checkpoint_token, &bytes, &where, &found);
  if (read && !found && ck_files_->others())
    spdlog::info("instance {}: {}.0/.1: another run's snapshot, passed over (this run starts afresh and "
                 "overwrites it)",
                 cfg_.index, cfg_.checkpoint_path);
  if (!read || !found) return read;
  if (!ck_files_->passed_over().empty())
    spdlog::warn("instance {}: {}", cfg_.index, ck_files_->passed_over());
  bool stale = false;
  CheckpointState got;
  if (Status st = decode_snapshot(bytes.data(), bytes.size(), where, cfg_.checkpoint_token, chain_, &got, &stale);
      !st)
    return st;
  if (stale) return {};  // another run's (read_newest passes over those): start fresh
  if (dest_->saves_state()) {
    SnapshotIn in(got.process.data(), got.process.size());
    const uint64_t before = in.get<uint64_t>();
    if (Status st = dest_->load(in); !st || !in.ok() || in.left() != 0)
      return Status::Error(fmt::format("snapshot {}: {}", where,
                                       !st ? st.message() : !in.ok() ? in.what() : "bytes left after the sink's state"));
    restored_tuples_ = before;
  } else if (!got.process.empty()) {
    return Status::Error(fmt::format("snapshot {}: holds a sink's state, and this is not a sink", where));
  }
  ck_ = std::move(got);
  ck_.watermarks.resize(chain_.size());
  max_ts_ = ck_.max_ts;
  for (size_t i = 0; i < chain_.size(); ++i) watermark_[i] = ck_.watermarks[i];
  ck_restored_ = ck_.number;
  spdlog::info("instance {}: restored checkpoint {} from {} ({} bytes)", cfg_.index, ck_.number, where,
               bytes.size());
  return {};
}

// Drops the events of d that the operators already saw: those an upstream
// sends again after a break (replay) whose effect a snapshot, or this run,
// already holds. Per stream, events come in event_seq order on one path, so
// each stream's seen events come before its new ones; but a descriptor
// carries several streams, and one stream's replayed events may follow
// another's new ones (a restarted Kafka source, one stream per partition,
// replays some partitions further back than others). A prefix of seen
// events is skipped in place; seen events after a new one leave a gap that
// the new events after them close (moved down in the slot, on a replay
// only). False: all of d was seen (its slot is released).
bool Instance::trim_replayed(Descriptor& d) {
  std::byte* base = work_pool_->slot(d.slot) + d.offset;
  uint32_t off = 0, start = 0, to = 0, seen = 0, seen_tuples = 0;
  bool kept_any = false;
  std::bitset<kMaxStreams> fresh;  // streams with a new event in d so far
  for (uint32_t e = 0; e < d.events; ++e) {
    EventHeader h;
    std::memcpy(&h, base + off, sizeof h);
    const uint32_t stream = h.stream < kMaxStreams ? h.stream : kMaxStreams - 1;
    const uint32_t bytes = static_cast<uint32_t>(h.wire_bytes());
    uint64_t& next = ck_.next_seq[stream];
    if (h.event_seq < next) {
      if (fresh[stream]) {  // an old event after a new one of its stream: not a replay
        fail(Status::Error(fmt::format(
            "instance {}: event {} of stream {} came after event {} of the same stream: a node "
            "that checkpoints needs each stream in order on one path",
            cfg_.index, h.event_seq, h.stream, next - 1)));
        return false;
      }
      ++seen;
      seen_tuples += h.tuple_count;
      off += bytes;
      if (!kept_any) start = to = off;  // still the prefix
      continue;
    }
    fresh[stream] = true;
    kept_any = true;
    next = h.event_seq + 1;
    if (to != off) std::memmove(base + to, base + off, bytes);
    to += bytes;
    off += bytes;
  }
  if (seen == 0) return true;
  ck_dropped_ += seen_tuples;
  if (seen == d.events) {
    if (Status st = work_pool_->release(d.slot); !st) fail(st);
    return false;
  }
  d.offset += start;
  d.bytes -= off - (to - start);
  d.events -= seen;
  d.tuples -= seen_tuples;
  return true;
}

bool Instance::checkpoint_due() const {
  return !held_.empty() && mono_ns() >= last_ck_ns_ + uint64_t{cfg_.checkpoint_ms} * 1000000;
}

// Between two descriptors: waits until everything the operators emitted or
// kept so far was acknowledged downstream (so the snapshot never counts an
// output a crash could still lose), writes the snapshot (at END a node's
// files are removed instead; a sink writes its last), and releases the input slots
// it holds, whose acknowledgements then go upstream.
bool Instance::checkpoint(bool final) {
  if (!final && ck_node_async_) return ck_node_begin();
  const uint64_t t0 = mono_ns();
  while (ck_sent_.load(std::memory_order_acquire) != ck_queued_.load(std::memory_order_acquire) ||
         !dest_->settled()) {
    if (!status().ok() || to_send_.closed()) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  const uint64_t t1 = mono_ns();
  ck_wait_s_ += (t1 - t0) / 1e9;
  // At END a node is done and its files go. A sink writes one more, its
  // state after END, and keeps it: killed at any moment after that (before
  // or while it writes its summary, or before it exits), it is restarted
  // from it and reports at once, where its upstreams, END acknowledged,
  // have gone. Removed once the summary was written, a kill between the
  // two would leave a restart with nothing. Two small files per sink
  // instance; the next run's overwrite them (another run's token is
  // passed over).
  if (!final || dest_->saves_state()) {
    ++ck_.number;
    ck_.max_ts = max_ts_;
    for (size_t i = 0; i < chain_.size(); ++i) ck_.watermarks[i] = watermark_[i];
    if (dest_->saves_state()) {  // the send stage consumed everything: it is idle
      // (after END it may be finishing: send_loop holds send_mu_ for that)
      std::unique_lock lk(send_mu_, std::defer_lock);
      if (final && ck_async_) lk.lock();
      ck_dest_.clear();
      ck_dest_.put<uint64_t>(restored_tuples_ + ck_in_tuples_);
      dest_->save(ck_dest_);
      ck_.process = ck_dest_.data();
    }
    if (!write_snapshot(ck_)) return false;
  } else {
    ck_files_->remove();
    ck_node_pending_ = false;  // everything was acknowledged: no restart needs it
  }
  last_ck_ns_ = mono_ns();
  ck_write_s_ += (last_ck_ns_ - t1) / 1e9;
  if (ck_async_ && final) {  // cuts on their way, not written: END's drain covers them
    cuts_first_ = cuts_posted_.load(std::memory_order_relaxed);
    ck_captured_.store(0, std::memory_order_relaxed);
  }
  return release_held();
}

// A node's snapshot, without stopping its process stage for the round trip
// of its outputs' acknowledgements (2026-11-30: node-b of the esper example
// waited 9% of a full-rate run that way). Taken now, between two batches;
// written, and the input it covers acknowledged upstream, once every frame
// the operators had emitted by then is acknowledged downstream
// (ck_node_commit), so a snapshot on disk never counts an output a crash
// could still lose, as when the stage waited. Until then the previous one
// is the one a restart reads, and the input since it is not acknowledged:
// a crash replays it, as it would have. Flink's asynchronous snapshots
// likewise go on processing while the state is persisted; here persisting
// waits on the acknowledgements, not on the write.
bool Instance::ck_node_begin() {
  if (ck_node_pending_) return ck_node_commit();  // one at a time
  const uint64_t t0 = mono_ns();
  ck_node_target_ = ck_queued_.load(std::memory_order_acquire);
  ck_node_marked_ = false;
  ++ck_.number;
  ck_.max_ts = max_ts_;
  for (size_t i = 0; i < chain_.size(); ++i) ck_.watermarks[i] = watermark_[i];
  encode_snapshot(cfg_.checkpoint_token, chain_, ck_, &ck_scratch_, &ck_node_bytes_);
  ck_node_held_ = held_base_ + held_.size();
  ck_node_pending_ = true;
  last_ck_ns_ = mono_ns();
  ck_write_s_ += (last_ck_ns_ - t0) / 1e9;
  return ck_node_commit();
}

bool Instance::ck_node_commit() {
  if (!ck_node_pending_) return true;
  if (!ck_node_marked_) {
    // Where the frames it must wait for end in the links' logs: once the
    // send stage has consumed everything queued by the snapshot, the logs'
    // tails (those and perhaps a few after them: waiting for those too
    // costs a little time, never a loss).
    if (ck_sent_.load(std::memory_order_acquire) < ck_node_target_) return true;
    dest_->log_marks(&ck_node_marks_);
    ck_node_marked_ = true;
  }
  if (!dest_->settled_through(ck_node_marks_)) return true;
  const uint64_t t0 = mono_ns();
  if (Status s = ck_files_->write(ck_.number, ck_node_bytes_); !s) {  // one on its way: still its number
    fail(Status::Error(fmt::format("instance {}: {}", cfg_.index, s.message())));
    return false;
  }
  ck_bytes_last_ = ck_node_bytes_.size();
  ck_node_pending_ = false;
  ck_write_s_ += (mono_ns() - t0) / 1e9;
  return release_held_to(ck_node_held_);
}

// The snapshot st into the older of the two files. False: the instance failed.
bool Instance::write_snapshot(const CheckpointState& st) {
  encode_snapshot(cfg_.checkpoint_token, chain_, st, &ck_scratch_, &ck_bytes_);
  if (Status s = ck_files_->write(st.number, ck_bytes_); !s) {
    fail(Status::Error(fmt::format("instance {}: {}", cfg_.index, s.message())));
    return false;
  }
  ck_bytes_last_ = ck_bytes_.size();
  return true;
}

// Input slots a snapshot now holds: back to the pool, and their
// acknowledgements upstream. False: the instance failed.
bool Instance::release_held() { return release_held_to(held_base_ + held_.size()); }

// The input frame in d waits for a snapshot: claimed, so that its slot goes
// on as without snapshots and only its acknowledgement waits, or its slot
// held. A claim the ledger refuses (a slot that is not a link's) holds the
// slot. False: the instance failed.
bool Instance::hold(const Descriptor& d) {
  Held h;
  h.slot = d.slot;
  if (cfg_.input_ledger) h.claimed = cfg_.input_ledger->claim(d.slot, &h.claim) == AckLedger::Take::kClaimed;
  if (!h.claimed) {
    if (Status st = work_pool_->retain(d.slot, 1); !st) {
      fail(st);
      return false;
    }
  }
  held_.push_back(h);
  return true;
}

// The oldest held slots, up to the count `held` of all ever held: a cut
// covers a prefix of them (they are held in the order they are forwarded).
bool Instance::release_held_to(uint64_t held) {
  const size_t m = static_cast<size_t>(held - held_base_);
  bool acked = false;
  for (size_t i = 0; i < m; ++i) {
    if (held_[i].claimed) {
      cfg_.input_ledger->ack(held_[i].claim);
      acked = true;
    } else if (Status st = work_pool_->release(held_[i].slot); !st) {
      fail(st);
      return false;
    }
  }
  if (acked) cfg_.input_ledger->acked();  // the receive stage sends them upstream
  // At most the links' acknowledgement windows, once a snapshot.
  held_.erase(held_.begin(), held_.begin() + static_cast<ptrdiff_t>(m));
  held_base_ = held;
  return true;
}

uint64_t Instance::ck_uncut() const {
  const uint64_t posted = cuts_posted_.load(std::memory_order_relaxed);
  const uint64_t covered = posted > cuts_first_ ? cuts_[(posted - 1) % kCuts].held : held_base_;
  return held_base_ + held_.size() - covered;
}

// A sink's cut: everything forwarded to the send stage so far (ck_queued_),
// whose slots are the ones held up to now, with the streams' positions as of
// then. The send stage copies its destination's state out at the latest cut
// it reaches while the copy is free (send_loop), splitting a batch there;
// if it is idle exactly at this one, this thread does (ck_try_capture). Not
// posted while kCuts are on their way: one of those is copied first.
bool Instance::ck_post() {
  const uint64_t i = cuts_posted_.load(std::memory_order_relaxed);
  if (i - cuts_first_ == kCuts) return true;
  const uint64_t target = ck_queued_.load(std::memory_order_relaxed);
  if (i > cuts_first_ && cuts_[(i - 1) % kCuts].target == target) return true;
  Cut& c = cuts_[i % kCuts];  // cut i - kCuts was written or passed: nobody reads this one
  c.target = target;
  c.tuples = restored_tuples_ + ck_in_tuples_;
  c.held = held_base_ + held_.size();
  c.max_ts = max_ts_;
  std::memcpy(c.next_seq, ck_.next_seq, sizeof c.next_seq);
  cuts_posted_.store(i + 1, std::memory_order_release);
  ck_try_capture();
  return true;
}

// Under send_mu_, everything up to the cut's target consumed and nothing
// after it, the copy free: the destination's state as of then, into ck_dest_.
void Instance::ck_capture(uint64_t cut) {
  ck_dest_.clear();
  ck_dest_.put<uint64_t>(cuts_[cut % kCuts].tuples);
  dest_->save(ck_dest_);
  cut_next_ = cut + 1;
  ck_captured_.store(cut + 1, std::memory_order_release);
  to_process_.not_empty().notify();  // a process stage waiting for it writes it now
}

// The process thread's copy, when the send stage stopped exactly at the
// latest cut before it saw it. Only tried: a send stage that holds the lock
// is consuming, so it will get past the cut and copy the state itself.
void Instance::ck_try_capture() {
  std::unique_lock lk(send_mu_, std::try_to_lock);
  if (!lk.owns_lock()) return;
  const uint64_t posted = cuts_posted_.load(std::memory_order_relaxed);
  if (posted == cuts_first_ || ck_captured_.load(std::memory_order_acquire) != 0) return;
  const uint64_t last = posted - 1;
  if (last >= cut_next_ && ck_sent_.load(std::memory_order_acquire) == cuts_[last % kCuts].target)
    ck_capture(last);
}

// If the state at a cut was copied out: writes the snapshot, and releases
// the input slots the cut covers (their acknowledgements go upstream).
// False: the instance failed.
bool Instance::ck_complete() {
  if (ck_on_way() == 0) return true;
  uint64_t captured = ck_captured_.load(std::memory_order_acquire);
  if (captured == 0) {
    ck_try_capture();
    captured = ck_captured_.load(std::memory_order_acquire);
    if (captured == 0) return true;
  }
  const uint64_t t0 = mono_ns();
  const Cut& c = cuts_[(captured - 1) % kCuts];
  ck_pending_state_.process.assign(ck_dest_.data());
  ck_captured_.store(0, std::memory_order_release);  // the send stage may copy the next one
  ck_pending_state_.number = ck_.number + 1;
  ck_pending_state_.max_ts = c.max_ts;
  std::memcpy(ck_pending_state_.next_seq, c.next_seq, sizeof c.next_seq);
  if (!write_snapshot(ck_pending_state_)) return false;
  ck_.number = ck_pending_state_.number;
  cuts_first_ = captured;  // the cuts before it were passed without a copy
  last_ck_ns_ = mono_ns();
  ck_write_s_ += (last_ck_ns_ - t0) / 1e9;
  return release_held_to(c.held);
}

}  // namespace sluice
