#include "graph/kernels/correlate.h"

#include <fmt/format.h>

#include <cstring>

namespace sluice::kernels {

namespace {
int64_t load_int(const std::byte* t, const FieldRef& f) { return load_i64(t, f); }
bool integer_type(FieldType t) {
  return t != FieldType::kBytes && t != FieldType::kF64;
}
}  // namespace

struct Correlate::Impl {
  static constexpr uint32_t kNil = UINT32_MAX;
  static constexpr size_t kEmitRows = 256;
  struct Txn {
    uint64_t key;
    uint64_t first_ts;
    int64_t last_event;
    uint32_t count;
    uint32_t prev, next;  // the list by first tuple; next doubles as the free list
  };
  struct Slot {
    uint64_t key;
    uint32_t id;
    uint32_t pad;
  };

  FieldRef txn, event, time;
  uint32_t steps = 4;
  uint64_t within = 0;
  uint32_t max_open = 0;
  Schema out;

  std::unique_ptr<Txn[]> pool;
  std::unique_ptr<Slot[]> index;
  size_t mask = 0;
  uint32_t free_head = kNil;
  uint32_t head = kNil, tail = kNil;  // oldest first
  uint32_t live = 0;
  std::unique_ptr<std::byte[]> rows;
  size_t staged = 0;
  uint64_t matched = 0, timed_out = 0, out_of_order = 0, evicted = 0, abandoned = 0;

  void unlink(uint32_t id) {
    Txn& t = pool[id];
    if (t.prev != kNil) pool[t.prev].next = t.next; else head = t.next;
    if (t.next != kNil) pool[t.next].prev = t.prev; else tail = t.prev;
  }
  void push_back(uint32_t id) {
    Txn& t = pool[id];
    t.prev = tail;
    t.next = kNil;
    if (tail != kNil) pool[tail].next = id; else head = id;
    tail = id;
  }

  size_t find_slot(uint64_t k) const {  // the slot of k, or the empty slot where it would go
    size_t h = hash_key(k) & mask;
    while (index[h].id != kNil && index[h].key != k) h = (h + 1) & mask;
    return h;
  }

  void erase_slot(size_t i) {  // backward-shift deletion
    size_t j = i;
    for (;;) {
      j = (j + 1) & mask;
      if (index[j].id == kNil) break;
      const size_t k = hash_key(index[j].key) & mask;
      // move j back to i unless its home k lies cyclically in (i, j]
      const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
      if (!stays) {
        index[i] = index[j];
        i = j;
      }
    }
    index[i].id = kNil;
  }

  void close(uint32_t id) {  // remove an open transaction
    erase_slot(find_slot(pool[id].key));
    unlink(id);
    pool[id].next = free_head;
    free_head = id;
    --live;
  }

  void emit_row(const std::byte* t, uint64_t key, uint64_t first, uint64_t last, RowEmit emit) {
    std::byte* r = rows.get() + staged * 32;
    std::memcpy(r, t, 8);  // seq
    std::memcpy(r + 8, &key, 8);
    std::memcpy(r + 16, &first, 8);
    std::memcpy(r + 24, &last, 8);
    if (++staged == kEmitRows) {
      emit(rows.get(), staged);
      staged = 0;
    }
  }

  void one(const std::byte* t, RowEmit emit) {
    const uint64_t key = static_cast<uint64_t>(load_int(t, txn));
    const int64_t ev = load_int(t, event);
    const uint64_t ts = static_cast<uint64_t>(load_int(t, time));
    while (head != kNil && ts > pool[head].first_ts && ts - pool[head].first_ts > within) {
      close(head);
      ++timed_out;
    }
    size_t s = find_slot(key);
    if (index[s].id != kNil) {
      const uint32_t id = index[s].id;
      Txn& x = pool[id];
      if (ev > x.last_event && !(ts > x.first_ts && ts - x.first_ts > within)) {
        x.last_event = ev;
        if (++x.count == steps) {
          ++matched;
          emit_row(t, key, x.first_ts, ts, emit);
          close(id);
        }
        return;
      }
      if (ev > x.last_event) ++timed_out; else ++out_of_order;
      x.first_ts = ts;
      x.last_event = ev;
      x.count = 1;
      unlink(id);
      push_back(id);
      return;
    }
    if (steps == 1) {
      ++matched;
      emit_row(t, key, ts, ts, emit);
      return;
    }
    if (live == max_open) {
      close(head);
      ++evicted;
      s = find_slot(key);  // the deletion may have shifted slots
    }
    const uint32_t id = free_head;
    free_head = pool[id].next;
    pool[id] = {key, ts, ev, 1, kNil, kNil};
    push_back(id);
    index[s] = {key, id, 0};
    ++live;
  }
};

Correlate::Correlate() = default;
Correlate::~Correlate() = default;
Correlate::Correlate(Correlate&&) noexcept = default;
Correlate& Correlate::operator=(Correlate&&) noexcept = default;

Status Correlate::make(const Schema& in, const CorrelateSpec& spec, Correlate* out) {
  auto s = std::make_unique<Impl>();
  struct {
    const std::string& name;
    FieldRef* ref;
    const char* role;
  } fs[] = {{spec.txn_field, &s->txn, "txn"}, {spec.event_field, &s->event, "event"},
            {spec.time_field, &s->time, "time"}};
  for (auto& f : fs) {
    if (!in.find(f.name, f.ref)) {
      return Status::Error(fmt::format("correlate: {} field '{}': schema '{}' has no such field",
                                       f.role, f.name, in.name()));
    }
    if (!integer_type(f.ref->type)) {
      return Status::Error(fmt::format("correlate: {} field '{}' is {}; it must be an integer",
                                       f.role, f.name, field_type_name(f.ref->type)));
    }
  }
  if (spec.steps == 0) return Status::Error("correlate: steps must be at least 1");
  if (spec.max_open == 0 || spec.max_open > (1u << 28)) {
    return Status::Error(fmt::format("correlate: max_open {} not in 1..2^28", spec.max_open));
  }
  s->steps = spec.steps;
  s->within = spec.within;
  s->max_open = spec.max_open;
  Status st = Schema::make("correlate", {{"txn", FieldType::kU64, 8}, {"first_time", FieldType::kU64, 8},
                                         {"last_time", FieldType::kU64, 8}}, 0, &s->out);
  if (!st.ok()) return st;
  s->pool.reset(new Impl::Txn[s->max_open]);
  for (uint32_t i = 0; i < s->max_open; ++i) s->pool[i].next = i + 1 < s->max_open ? i + 1 : Impl::kNil;
  s->free_head = 0;
  size_t cap = 16;
  while (cap < size_t{s->max_open} * 2) cap <<= 1;
  s->mask = cap - 1;
  s->index.reset(new Impl::Slot[cap]);
  for (size_t i = 0; i < cap; ++i) s->index[i] = {0, Impl::kNil, 0};
  s->rows.reset(new std::byte[Impl::kEmitRows * 32]);
  out->impl_ = std::move(s);
  return {};
}

const Schema& Correlate::output_schema() const { return impl_->out; }
uint32_t Correlate::row_bytes() const { return 32; }

void Correlate::consume(const std::byte* tuples, size_t n, uint32_t stride, RowEmit emit) {
  Impl& s = *impl_;
  for (size_t i = 0; i < n; ++i) s.one(tuples + i * stride, emit);
  if (s.staged) {
    emit(s.rows.get(), s.staged);
    s.staged = 0;
  }
}

void Correlate::flush(RowEmit emit) {
  Impl& s = *impl_;
  while (s.head != Impl::kNil) {
    s.close(s.head);
    ++s.abandoned;
  }
}

void Correlate::save(SnapshotOut& out) const {
  const Impl& s = *impl_;
  out.put<uint32_t>(s.max_open);
  out.put<uint32_t>(s.steps);
  out.put<uint64_t>(s.within);
  out.put<uint32_t>(s.live);
  for (uint32_t id = s.head; id != Impl::kNil; id = s.pool[id].next) {
    const Impl::Txn& t = s.pool[id];
    out.put<uint64_t>(t.key);
    out.put<uint64_t>(t.first_ts);
    out.put<int64_t>(t.last_event);
    out.put<uint32_t>(t.count);
  }
  for (uint64_t c : {s.matched, s.timed_out, s.out_of_order, s.evicted, s.abandoned}) out.put<uint64_t>(c);
}

Status Correlate::load(SnapshotIn& in) {
  Impl& s = *impl_;
  const uint32_t max_open = in.get<uint32_t>();
  const uint32_t steps = in.get<uint32_t>();
  const uint64_t within = in.get<uint64_t>();
  const uint32_t live = in.get<uint32_t>();
  if (in.ok() && (max_open != s.max_open || steps != s.steps || within != s.within))
    in.fail(fmt::format("holds a correlate of max_open {}, steps {}, within {}; this one has {}, {}, {}",
                        max_open, steps, within, s.max_open, s.steps, s.within));
  if (in.ok() && live > s.max_open) in.fail(fmt::format("holds {} open transactions, more than max_open", live));
  // Start empty: the free list in order, no index entries, no list.
  auto reset = [&s] {
    for (uint32_t i = 0; i < s.max_open; ++i) s.pool[i].next = i + 1 < s.max_open ? i + 1 : Impl::kNil;
    s.free_head = 0;
    for (size_t i = 0; i <= s.mask; ++i) s.index[i] = {0, Impl::kNil, 0};
    s.head = s.tail = Impl::kNil;
    s.live = 0;
    s.staged = 0;
  };
  if (!in.ok()) return Status::Error(in.what());
  reset();
  for (uint32_t i = 0; i < live && in.ok(); ++i) {
    const uint64_t key = in.get<uint64_t>();
    const uint64_t first = in.get<uint64_t>();
    const int64_t last = in.get<int64_t>();
    const uint32_t count = in.get<uint32_t>();
    if (!in.ok()) break;
    if (count == 0 || count >= s.steps) {
      in.fail(fmt::format("transaction {} holds {} tuples; an open one holds 1 to {}", key, count, s.steps - 1));
      break;
    }
    const size_t slot = s.find_slot(key);
    if (s.index[slot].id != Impl::kNil) {
      in.fail(fmt::format("holds transaction {} twice", key));
      break;
    }
    const uint32_t id = s.free_head;
    s.free_head = s.pool[id].next;
    s.pool[id] = {key, first, last, count, Impl::kNil, Impl::kNil};
    s.push_back(id);
    s.index[slot] = {key, id, 0};
    ++s.live;
  }
  uint64_t c[5];
  for (uint64_t& x : c) x = in.get<uint64_t>();
  if (!in.ok()) {
    reset();
    return Status::Error(in.what());
  }
  s.matched = c[0];
  s.timed_out = c[1];
  s.out_of_order = c[2];
  s.evicted = c[3];
  s.abandoned = c[4];
  return {};
}

size_t Correlate::bytes_held() const {
  const Impl& s = *impl_;
  return sizeof(Impl) + size_t{s.max_open} * sizeof(Impl::Txn) + (s.mask + 1) * sizeof(Impl::Slot) +
         Impl::kEmitRows * 32;
}
uint32_t Correlate::open() const { return impl_->live; }
uint64_t Correlate::matched() const { return impl_->matched; }
uint64_t Correlate::timed_out() const { return impl_->timed_out; }
uint64_t Correlate::out_of_order() const { return impl_->out_of_order; }
uint64_t Correlate::evicted() const { return impl_->evicted; }
uint64_t Correlate::abandoned() const { return impl_->abandoned; }

}  // namespace sluice::kernels
