#include "loadgen/file_source.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

#include "loadgen/generator.h"
#include "transport/event.h"

namespace sluice {
namespace {

// Rejected records logged one by one before they are only counted.
constexpr uint64_t kRejectsLogged = 10;

double ns_per_unit(const std::string& unit) {
  if (unit == "s") return 1e9;
  if (unit == "ms") return 1e6;
  if (unit == "us") return 1e3;
  return 1;
}

}  // namespace

FileSource::FileSource(const Deployment& d, uint32_t instance, uint32_t stream, const Schema& schema,
                       std::string record_format)
    : d_(d),
      record_format_(std::move(record_format)),
      schema_(schema),
      tuple_bytes_(schema.tuple_bytes()),
      tuples_per_event_(tuples_per_event(schema.tuple_bytes(), d.event_bytes)),
      stream_(stream),
      tuple_limit_(d.tuples),
      rate_(d.rate),
      wait_(d.wait),
      pool_(loadgen_pool_slots(d, false), loadgen_slot_bytes(d)),
      pending_(schema.tuple_bytes()) {
  // As many marks as events can be unacknowledged (each holds its slot
  // until then), and the one before them.
  marks_.resize(pool_.slots() + 2);
}

Status FileSource::start() {
  RecordFormat format;
  if (!parse_record_format(record_format_, &format))  // checked by the parser
    return Status::Error(fmt::format("record_format '{}'", record_format_));
  RecordDecoder probe;
  if (format == RecordFormat::kBinary)
    if (Status st = RecordDecoder::make(schema_, format, {}, &probe); !st) return st;
  if (Status st = RecordFile::open(d_.source_file, format, probe.record_bytes(), &file_); !st) return st;
  if (Status st = RecordDecoder::make(schema_, format, file_.header(), &decoder_); !st)
    return Status::Error(fmt::format("{}: {}", d_.source_file, st.message()));
  reject_ = d_.bad_records == "reject";
  if (!d_.source_time_field.empty()) {
    // Checked by the parser: a numeric field of the schema.
    has_time_ = schema_.find(d_.source_time_field, &time_field_);
    time_scale_ = ns_per_unit(d_.source_time_unit) / (d_.source_speedup > 0 ? d_.source_speedup : 1);
  }
  if (resuming_) {
    if (Status st = file_.seek(resume_.offset, resume_.line); !st) return st;
    next_seq_ = resume_.tuples;
    rejected_.store(resume_.rejected, std::memory_order_relaxed);
    if (has_time_) {
      // The pace goes on from the first record after the position: it is
      // due at once, and each after it by its time from that one.
      resumed_s_ = 0;
    }
  }
  std::lock_guard lk(mu_);
  marks_[events_ % marks_.size()] = {events_, file_.offset(), file_.line(), next_seq_, rejected()};
  return {};
}

void FileSource::shutdown() {
  stop();
  pool_.close();
}

double FileSource::time_ns(const std::byte* t) const {
  return (time_field_.type == FieldType::kF64 ? load_f64(t, time_field_)
                                              : static_cast<double>(load_i64(t, time_field_))) *
         time_scale_;
}

bool FileSource::read_tuple(std::byte* t, Status* st) {
  std::string_view rec;
  for (;;) {
    if (!file_.next(&rec, st)) return false;
    RecordError e;
    if (decoder_.decode(rec, t, &e)) return true;
    std::string why = decoder_.explain(e, rec, file_.where());
    if (!reject_) {
      *st = Status::Error(std::move(why));
      return false;
    }
    const uint64_t r = rejected_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (logged_ < kRejectsLogged) {
      ++logged_;
      spdlog::warn("rejected: {}{}", why, logged_ == kRejectsLogged ? " (further rejections are counted only)" : "");
    }
    (void)r;
  }
}

// The rate's schedule, as the generator's: events due by now.
size_t FileSource::allowed_now(double now) {
  if (rate_ <= 0) return SIZE_MAX;
  for (;;) {
    const int64_t allowed = int64_t(std::floor((now - t0_) * rate_)) + 1 - int64_t(events_);
    if (allowed > 0) return static_cast<size_t>(allowed);
    waited_ = true;
    const double sleep_s = std::min(t0_ + double(events_) / rate_ - now, 0.05);
    if (sleep_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(sleep_s));
    now = now_s();
    if (stop_.load(std::memory_order_relaxed)) return 0;
  }
}

uint32_t FileSource::acquire_slot() {
  for (;;) {
    const uint32_t slot = pool_.try_acquire();
    if (slot != kNoSlot || pool_.closed()) return slot;
    Status st;
    if (!idle_wait({}, 1, &st)) return pool_.acquire(wait_);
    if (!st) return kNoSlot;
  }
}

Descriptor FileSource::make_end(uint32_t slot) {
  EndOfStream eos{};
  eos.n_streams = 1;
  eos.streams[0] = {stream_, 0, next_seq_, events_};
  write_end(eos, pool_.slot(slot));
  return {slot, 0, static_cast<uint32_t>(eos.wire_bytes()), 0, 0, kDescEnd};
}

void FileSource::remember(uint64_t events) {
  marks_[events % marks_.size()] = {events, file_.offset(), file_.line(), next_seq_, rejected()};
}

Status FileSource::next(std::span<Descriptor> out, size_t* n) {
  *n = 0;
  waited_ = false;
  if (!error_.ok()) return error_;  // after the records before it went out
  if (ended_) return {};
  double now = now_s();
  if (t0_ < 0) t0_ = now - resumed_s_;
  bool finished = stop_.load(std::memory_order_relaxed) || eof_ ||
                  (tuple_limit_ && next_seq_ >= tuple_limit_);
  const size_t want = finished ? 0 : std::min(out.size(), allowed_now(now));
  if (!finished && want == 0) finished = true;  // stopped while it waited
  size_t k = 0;
  Status st;
  std::unique_lock lk(mu_, std::defer_lock);
  while (k < want && !eof_ && error_.ok()) {
    const uint32_t slot = k ? pool_.try_acquire() : acquire_slot();
    if (slot == kNoSlot) {
      if (k == 0) return Status::Error("file source stopped while waiting for a free slot");
      break;
    }
    std::byte* p = pool_.slot(slot);
    std::byte* t = p + kEventHeaderBytes;
    uint32_t count = 0;
    uint32_t cap = tuples_per_event_;
    if (tuple_limit_) cap = static_cast<uint32_t>(std::min<uint64_t>(cap, tuple_limit_ - next_seq_));
    // A record read ahead and kept (not due then) is this event's first.
    uint64_t mark_offset = 0, mark_line = 0;
    bool cut = false;  // a record is kept for the next event
    while (count < cap) {
      const uint64_t before_offset = file_.offset(), before_line = file_.line();
      if (has_pending_) {
        std::memcpy(t, pending_.data(), tuple_bytes_);
        has_pending_ = false;
      } else if (!read_tuple(t, &st)) {
        if (!st.ok()) {
          if (count == 0 && k == 0) {
            (void)pool_.release(slot);
            return st;
          }
          // The records before it go out first; the next call fails.
          error_ = std::move(st);
        } else {
          eof_ = true;
        }
        break;
      }
      if (has_time_) {
        const double v = time_ns(t);
        if (!time0_set_) {
          time0_ = v;
          time0_set_ = true;
        }
        const double due = t0_ + (v - time0_) * 1e-9;
        if (due > now) {
          if (count > 0) {
            // Not due yet: the event goes with what it has; this record
            // starts the next one.
            std::memcpy(pending_.data(), t, tuple_bytes_);
            has_pending_ = true;
            mark_offset = before_offset;
            mark_line = before_line;
            cut = true;
            break;
          }
          waited_ = true;
          while ((now = now_s()) < due && !stop_.load(std::memory_order_relaxed))
            std::this_thread::sleep_for(std::chrono::duration<double>(std::min(due - now, 0.05)));
          if (stop_.load(std::memory_order_relaxed)) {
            // Stopped while waiting: this record is not sent.
            has_pending_ = false;
            break;
          }
        }
      }
      const uint64_t seq = next_seq_ + count;
      std::memcpy(t + kTupleSeqOffset, &seq, 8);
      t += tuple_bytes_;
      ++count;
    }
    if (count == 0) {
      (void)pool_.release(slot);
      break;
    }
    EventHeader h{};
    h.magic = kEventMagic;
    h.version = kWireVersion;
    h.header_bytes = kEventHeaderBytes;
    h.tuple_bytes = tuple_bytes_;
    h.stream = stream_;
    h.first_seq = next_seq_;
    h.tuple_count = count;
    h.tuple_span = count;
    h.send_ts_ns = wall_clock_ns();
    h.event_seq = events_;
    std::memcpy(p, &h, sizeof h);
    seal_event(p);
    next_seq_ += count;
    ++events_;
    {
      lk.lock();
      remember(events_);
      if (cut) {
        marks_[events_ % marks_.size()].offset = mark_offset;
        marks_[events_ % marks_.size()].line = mark_line;
      }
      lk.unlock();
    }
    out[k++] = {slot, 0, static_cast<uint32_t>(h.wire_bytes()), 1, count, 0};
    if (tuple_limit_ && next_seq_ >= tuple_limit_) break;
    if (stop_.load(std::memory_order_relaxed)) break;
    if (cut || !error_.ok()) break;  // the next record is not due yet, or bad
  }
  if (!error_.ok()) {
    *n = k;
    return {};
  }
  finished = finished || eof_ || (tuple_limit_ && next_seq_ >= tuple_limit_) || stop_.load(std::memory_order_relaxed);
  if (finished && k < out.size()) {
    const uint32_t slot = k ? pool_.try_acquire() : acquire_slot();
    if (slot != kNoSlot) {
      out[k++] = make_end(slot);
      ended_ = true;
    } else if (k == 0) {
      return Status::Error("file source stopped while waiting for a free slot");
    }
  }
  *n = k;
  return {};
}

void FileSource::report(ProcessSummary& s) const {
  s.rejected += rejected();
  s.read_bytes += file_.bytes_read();
}

bool FileSource::position(uint64_t events, SnapshotOut* out) const {
  std::lock_guard lk(mu_);
  const Mark& m = marks_[events % marks_.size()];
  if (m.events != events) return false;
  out->put(m.offset);
  out->put(m.line);
  out->put(m.tuples);
  out->put(m.rejected);
  return true;
}

Status FileSource::resume(uint64_t events, double elapsed_s, SnapshotIn& in) {
  Mark m;
  m.events = events;
  m.offset = in.get<uint64_t>();
  m.line = in.get<uint64_t>();
  m.tuples = in.get<uint64_t>();
  m.rejected = in.get<uint64_t>();
  if (!in.ok() || in.left() != 0)
    return Status::Error(fmt::format("a file position of the wrong size ({})", in.ok() ? "too long" : in.what()));
  resume_ = m;
  resuming_ = true;
  events_ = events;
  resumed_s_ = rate_ > 0 ? double(events) / rate_ : elapsed_s;
  return {};
}

}  // namespace sluice
