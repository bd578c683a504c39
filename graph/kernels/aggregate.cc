#include "graph/kernels/aggregate.h"

#include "base/snapshot.h"

#include <fmt/format.h>

#include <cctype>
#include <cstring>
#include <limits>
#include <type_traits>

namespace sluice::kernels {

namespace {

enum class Dom : uint8_t { kI, kU, kD };  // accumulate as int64, uint64 or double

Dom dom_of(FieldType t) {
  switch (t) {
    case FieldType::kI32:
    case FieldType::kI64: return Dom::kI;
    case FieldType::kF64: return Dom::kD;
    default: return Dom::kU;
  }
}

template <class T>
inline T ld(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
inline void st(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

enum Op { kOpSum, kOpMin, kOpMax };

// One aggregate over a chunk: acc[idx[i]] op= field(tuple i). Runs of equal
// idx (one group, or keys that come in runs) accumulate in a register.
using AggLoop = void (*)(const std::byte* t, size_t m, uint32_t stride, uint32_t off,
                         const uint32_t* idx, std::byte* acc_base, size_t entry_bytes);

template <class Load, class Acc, Op O>
void agg_loop(const std::byte* t, size_t m, uint32_t stride, uint32_t off, const uint32_t* idx,
              std::byte* acc_base, size_t entry_bytes) {
  t += off;
  uint32_t cur = idx[0];
  Acc acc = ld<Acc>(acc_base + cur * entry_bytes);
  for (size_t i = 0; i < m; ++i) {
    const Acc v = static_cast<Acc>(ld<Load>(t + i * stride));
    if (idx[i] != cur) [[unlikely]] {
      st<Acc>(acc_base + cur * entry_bytes, acc);
      cur = idx[i];
      acc = ld<Acc>(acc_base + cur * entry_bytes);
    }
    if constexpr (O == kOpSum) {
      // Integers wrap (in u64): the same sum whenever it fits, and defined
      // when it does not (extreme values, or a restored snapshot's sum).
      if constexpr (std::is_integral_v<Acc>)
        acc = static_cast<Acc>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v));
      else
        acc += v;
    } else if constexpr (O == kOpMin) {
      acc = v < acc ? v : acc;
    } else {
      acc = v > acc ? v : acc;
    }
  }
  st<Acc>(acc_base + cur * entry_bytes, acc);
}

template <class Acc, Op O>
AggLoop pick_loop(FieldType t) {
  switch (t) {
    case FieldType::kI32: return &agg_loop<int32_t, Acc, O>;
    case FieldType::kU32: return &agg_loop<uint32_t, Acc, O>;
    case FieldType::kI64: return &agg_loop<int64_t, Acc, O>;
    case FieldType::kF64: return &agg_loop<double, Acc, O>;
    default: return &agg_loop<uint64_t, Acc, O>;
  }
}

// "sum(p1) >= 5 and count(*) > 2" -> "sum_p1 >= 5 and count > 2"
std::string rewrite_having(const std::string& s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (std::isalpha(static_cast<unsigned char>(s[i])) || s[i] == '_') {
      size_t b = i;
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
      std::string ident = s.substr(b, i - b);
      size_t j = i;
      while (j < s.size() && s[j] == ' ') ++j;
      size_t close = j < s.size() && s[j] == '(' ? s.find(')', j) : std::string::npos;
      if (close != std::string::npos) {
        std::string arg = s.substr(j + 1, close - j - 1);
        while (!arg.empty() && arg.front() == ' ') arg.erase(arg.begin());
        while (!arg.empty() && arg.back() == ' ') arg.pop_back();
        out += (arg.empty() || arg == "*") ? ident : ident + "_" + arg;
        i = close + 1;
      } else {
        out += ident;
      }
    } else {
      out += s[i++];
    }
  }
  return out;
}

}  // namespace

struct GroupAggregate::Impl {
  struct Col {
    AggFn fn;
    FieldRef f;
    Dom dom;
    AggLoop loop;
  };
  struct Slot {
    uint64_t key;
    uint32_t id;  // kEmpty: free
    uint32_t pad;
  };
  static constexpr uint32_t kEmpty = UINT32_MAX;
  static constexpr size_t kEmitRows = 256;

  // parameters
  WindowSpec win;
  bool grouped = false;
  FieldRef key;
  FieldRef time;
  std::vector<Col> cols;
  uint32_t panes = 1;  // P
  uint32_t max_groups = 0;
  Schema out;
  Predicate having;
  bool has_having = false;

  // layout
  size_t pane_bytes = 0;   // count + 8 per aggregate
  size_t entry_bytes = 0;  // key, slot, P panes
  std::vector<std::byte> pane_init;

  // state, sized at make()
  std::unique_ptr<std::byte[]> entries;
  std::unique_ptr<Slot[]> index;
  size_t mask = 0;
  uint32_t live = 0;
  std::unique_ptr<uint32_t[]> idx;  // kChunk
  std::unique_ptr<std::byte[]> rows;  // kEmitRows output rows
  uint32_t cur = 0;  // current pane
  bool started = false;
  uint64_t pane_end = 0;  // count or time at which the current pane closes
  uint64_t in_pane = 0;   // count windows: tuples in the current pane
  uint64_t total = 0;     // tuples aggregated
  uint64_t late = 0;
  uint64_t emitted = 0;
  bool last_valid = false;
  uint64_t last_key = 0;
  uint32_t last_id = 0;

  std::byte* entry(uint32_t id) { return entries.get() + id * entry_bytes; }
  size_t pane_off(uint32_t p) const { return 16 + p * pane_bytes; }

  uint64_t key_at(const std::byte* t) const {
    if (!grouped) return 0;
    switch (key.type) {
      case FieldType::kI32: return static_cast<uint64_t>(static_cast<int64_t>(ld<int32_t>(t + key.offset)));
      case FieldType::kU32: return ld<uint32_t>(t + key.offset);
      default: return ld<uint64_t>(t + key.offset);
    }
  }

  void init_entry_panes(std::byte* e) {
    for (uint32_t p = 0; p < panes; ++p) std::memcpy(e + pane_off(p), pane_init.data(), pane_bytes);
  }

  // The group's entry id, made if new; kEmpty when max_groups are taken.
  uint32_t find_or_insert(uint64_t k) {
    size_t h = hash_key(k) & mask;
    for (;;) {
      Slot& s = index[h];
      if (s.id == kEmpty) {
        if (live == max_groups) return kEmpty;
        uint32_t id = live++;
        std::byte* e = entry(id);
        st<uint64_t>(e, k);
        st<uint32_t>(e + 8, static_cast<uint32_t>(h));
        init_entry_panes(e);
        s.key = k;
        s.id = id;
        return id;
      }
      if (s.key == k) return s.id;
      h = (h + 1) & mask;
    }
  }

  template <class K>
  size_t key_loop(const std::byte* t, size_t m, uint32_t stride, uint64_t* bad_key) {
    const uint32_t off = key.offset;
    const size_t cnt_off = pane_off(cur);
    size_t i = 0;
    if (!last_valid) {
      uint64_t k = grouped ? static_cast<uint64_t>(ld<K>(t + off)) : 0;
      uint32_t id = find_or_insert(k);
      if (id == kEmpty) {
        *bad_key = k;
        return 0;
      }
      last_key = k;
      last_id = id;
      last_valid = true;
    }
    uint64_t run = 0;
    uint32_t cur_id = last_id;
    uint64_t cur_key = last_key;
    if (!grouped) {
      for (; i < m; ++i) idx[i] = cur_id;
      run = m;
    } else {
      for (; i < m; ++i) {
        const uint64_t k = static_cast<uint64_t>(ld<K>(t + i * stride + off));
        if (k != cur_key) [[unlikely]] {
          std::byte* c = entry(cur_id) + cnt_off;
          st<uint64_t>(c, ld<uint64_t>(c) + run);
          run = 0;
          uint32_t id = find_or_insert(k);
          if (id == kEmpty) {
            *bad_key = k;
            break;
          }
          cur_id = id;
          cur_key = k;
        }
        idx[i] = cur_id;
        ++run;
      }
    }
    std::byte* c = entry(cur_id) + cnt_off;
    st<uint64_t>(c, ld<uint64_t>(c) + run);
    last_id = cur_id;
    last_key = cur_key;
    return i;
  }

  // Aggregates m tuples that all fall into the current pane.
  Status accumulate(const std::byte* t, size_t m, uint32_t stride) {
    for (size_t b = 0; b < m; b += kChunk) {
      const size_t c = m - b < kChunk ? m - b : kChunk;
      const std::byte* tc = t + b * stride;
      uint64_t bad = 0;
      size_t done;
      switch (key.type) {
        case FieldType::kI32: done = key_loop<int32_t>(tc, c, stride, &bad); break;
        case FieldType::kU32: done = key_loop<uint32_t>(tc, c, stride, &bad); break;
        default: done = key_loop<uint64_t>(tc, c, stride, &bad); break;
      }
      if (done > 0) {
        std::byte* base = entries.get() + pane_off(cur) + 8;
        for (size_t a = 0; a < cols.size(); ++a) {
          if (cols[a].loop) cols[a].loop(tc, done, stride, cols[a].f.offset, idx.get(), base + 8 * a, entry_bytes);
        }
      }
      total += done;
      if (done < c) {
        return Status::Error(fmt::format(
            "aggregate: more than max_groups={} groups in one window (group key {} at tuple {} "
            "of the stream); declare a larger max_groups",
            max_groups, bad, total));
      }
    }
    return {};
  }

  void fill_row(std::byte* e, uint64_t window_end, std::byte* row) {
    uint64_t count = 0;
    for (uint32_t p = 0; p < panes; ++p) count += ld<uint64_t>(e + pane_off(p));
    st<uint64_t>(row, emitted);
    st<uint64_t>(row + 8, window_end);
    st<uint64_t>(row + 16, ld<uint64_t>(e));
    for (size_t a = 0; a < cols.size(); ++a) {
      std::byte* dst = row + 24 + 8 * a;
      const Col& col = cols[a];
      if (col.fn == AggFn::kCount) {
        st<uint64_t>(dst, count);
        continue;
      }
      const size_t vo = 8 + 8 * a;
      std::byte* p0 = e + pane_off(0) + vo;
      if (col.dom == Dom::kD) {
        double v = ld<double>(p0);
        for (uint32_t p = 1; p < panes; ++p) {
          double w = ld<double>(e + pane_off(p) + vo);
          if (col.fn == AggFn::kMin) v = w < v ? w : v;
          else if (col.fn == AggFn::kMax) v = w > v ? w : v;
          else v += w;
        }
        st<double>(dst, col.fn == AggFn::kAvg ? v / static_cast<double>(count) : v);
      } else if (col.dom == Dom::kI || col.fn == AggFn::kSum || col.fn == AggFn::kAvg) {
        int64_t v = ld<int64_t>(p0);
        for (uint32_t p = 1; p < panes; ++p) {
          int64_t w = ld<int64_t>(e + pane_off(p) + vo);
          if (col.fn == AggFn::kMin) v = w < v ? w : v;
          else if (col.fn == AggFn::kMax) v = w > v ? w : v;
          else v = static_cast<int64_t>(static_cast<uint64_t>(v) + static_cast<uint64_t>(w));
        }
        if (col.fn == AggFn::kAvg) {
          double d = col.dom == Dom::kU ? static_cast<double>(static_cast<uint64_t>(v))
                                        : static_cast<double>(v);
          st<double>(dst, d / static_cast<double>(count));
        } else {
          st<int64_t>(dst, v);
        }
      } else {  // unsigned min/max
        uint64_t v = ld<uint64_t>(p0);
        for (uint32_t p = 1; p < panes; ++p) {
          uint64_t w = ld<uint64_t>(e + pane_off(p) + vo);
          v = col.fn == AggFn::kMin ? (w < v ? w : v) : (w > v ? w : v);
        }
        st<uint64_t>(dst, v);
      }
    }
  }

  // Emits the window ending at window_end, then starts the next pane.
  void close_pane(uint64_t window_end, RowEmit emit) {
    const uint32_t rb = out.tuple_bytes();
    size_t staged = 0;
    for (uint32_t id = 0; id < live; ++id) {
      std::byte* row = rows.get() + staged * rb;
      fill_row(entry(id), window_end, row);
      if (has_having && !having.eval(row)) continue;
      ++emitted;
      if (++staged == kEmitRows) {
        emit(rows.get(), staged);
        staged = 0;
      }
    }
    if (staged) emit(rows.get(), staged);
    // Rotate: the oldest pane becomes the new current one, emptied.
    cur = (cur + 1) % panes;
    for (uint32_t id = 0; id < live; ++id) index[ld<uint32_t>(entry(id) + 8)].id = kEmpty;
    uint32_t kept = 0;
    if (panes > 1) {
      for (uint32_t id = 0; id < live; ++id) {
        std::byte* e = entry(id);
        std::memcpy(e + pane_off(cur), pane_init.data(), pane_bytes);
        uint64_t count = 0;
        for (uint32_t p = 0; p < panes; ++p) count += ld<uint64_t>(e + pane_off(p));
        if (count == 0) continue;
        if (kept != id) std::memcpy(entry(kept), e, entry_bytes);
        std::byte* k = entry(kept);
        const uint64_t key = ld<uint64_t>(k);
        size_t h = hash_key(key) & mask;
        while (index[h].id != kEmpty) h = (h + 1) & mask;
        index[h] = {key, kept, 0};
        st<uint32_t>(k + 8, static_cast<uint32_t>(h));
        ++kept;
      }
    }
    live = kept;
    last_valid = false;
    pane_end += win.slide;
  }

  // Time windows: close every pane that ends at or before t.
  void advance(uint64_t t, RowEmit emit) {
    while (pane_end <= t) {
      if (live == 0) {  // nothing to emit: jump straight to t's pane
        pane_end = t / win.slide * win.slide + win.slide;
        return;
      }
      close_pane(pane_end, emit);
    }
  }
};

GroupAggregate::GroupAggregate() = default;
GroupAggregate::~GroupAggregate() = default;
GroupAggregate::GroupAggregate(GroupAggregate&&) noexcept = default;
GroupAggregate& GroupAggregate::operator=(GroupAggregate&&) noexcept = default;

Status GroupAggregate::make(const Schema& in, const GroupAggSpec& spec, GroupAggregate* out) {
  auto s = std::make_unique<Impl>();
  s->win = spec.window;
  if (spec.max_groups == 0 || spec.max_groups > (1u << 30)) {
    return Status::Error(fmt::format("aggregate: max_groups {} is not in 1..2^30", spec.max_groups));
  }
  s->max_groups = spec.max_groups;
  FieldType key_type = FieldType::kU64;
  if (!spec.group_by.empty()) {
    if (!in.find(spec.group_by, &s->key)) {
      return Status::Error(fmt::format("aggregate: group_by '{}': schema '{}' has no such field",
                                       spec.group_by, in.name()));
    }
    if (s->key.type == FieldType::kBytes || s->key.type == FieldType::kF64) {
      return Status::Error(fmt::format("aggregate: group_by '{}' is {}; group by an integer field",
                                       spec.group_by, field_type_name(s->key.type)));
    }
    s->grouped = true;
    key_type = dom_of(s->key.type) == Dom::kI ? FieldType::kI64 : FieldType::kU64;
  } else {
    s->key = {0, FieldType::kU64, 8};
  }
  auto& w = s->win;
  if (w.by != WindowSpec::By::kNone) {
    if (w.size == 0) return Status::Error("aggregate: window size must be > 0");
    if (w.slide == 0) w.slide = w.size;
    if (w.slide > w.size || w.size % w.slide != 0) {
      return Status::Error(fmt::format(
          "aggregate: window slide {} must divide its size {} (slide == size: tumbling)", w.slide, w.size));
    }
    if (w.size / w.slide > 1024) {
      return Status::Error(fmt::format("aggregate: window size/slide = {} panes; at most 1024",
                                       w.size / w.slide));
    }
    s->panes = static_cast<uint32_t>(w.size / w.slide);
  } else {
    w.slide = UINT64_MAX;
  }
  if (w.by == WindowSpec::By::kTime) {
    if (!in.find(w.time_field, &s->time)) {
      return Status::Error(fmt::format("aggregate: time field '{}': schema '{}' has no such field",
                                       w.time_field, in.name()));
    }
    if (s->time.type != FieldType::kTimestamp && s->time.type != FieldType::kU64 &&
        s->time.type != FieldType::kI64) {
      return Status::Error(fmt::format("aggregate: time field '{}' is {}; it must be timestamp, u64 or i64",
                                       w.time_field, field_type_name(s->time.type)));
    }
  }
  if (spec.aggs.empty()) return Status::Error("aggregate: no aggregates given");
  std::vector<FieldSpec> fields{{"window_end", FieldType::kU64, 8}, {"key", key_type, 8}};
  s->pane_bytes = 8 + 8 * spec.aggs.size();
  s->pane_init.assign(s->pane_bytes, std::byte{0});
  for (size_t a = 0; a < spec.aggs.size(); ++a) {
    const AggSpec& as = spec.aggs[a];
    Impl::Col col{as.fn, {}, Dom::kI, nullptr};
    if (as.fn == AggFn::kCount) {
      fields.push_back({"count", FieldType::kU64, 8});
      s->cols.push_back(col);
      continue;
    }
    static const char* kNames[] = {"count", "sum", "avg", "min", "max"};
    const char* fname = kNames[static_cast<int>(as.fn)];
    if (!in.find(as.field, &col.f)) {
      return Status::Error(fmt::format("aggregate: {}({}): schema '{}' has no such field", fname,
                                       as.field, in.name()));
    }
    if (col.f.type == FieldType::kBytes) {
      return Status::Error(fmt::format("aggregate: {}({}): field is bytes, not a number", fname, as.field));
    }
    col.dom = dom_of(col.f.type);
    FieldType out_t;
    std::byte* init = s->pane_init.data() + 8 + 8 * a;
    if (col.dom == Dom::kD) {
      out_t = FieldType::kF64;
      double v = as.fn == AggFn::kMin ? std::numeric_limits<double>::infinity()
               : as.fn == AggFn::kMax ? -std::numeric_limits<double>::infinity() : 0.0;
      st<double>(init, v);
      col.loop = as.fn == AggFn::kMin ? pick_loop<double, kOpMin>(col.f.type)
               : as.fn == AggFn::kMax ? pick_loop<double, kOpMax>(col.f.type)
                                      : pick_loop<double, kOpSum>(col.f.type);
    } else if (col.dom == Dom::kU && (as.fn == AggFn::kMin || as.fn == AggFn::kMax)) {
      out_t = FieldType::kU64;
      st<uint64_t>(init, as.fn == AggFn::kMin ? UINT64_MAX : 0);
      col.loop = as.fn == AggFn::kMin ? pick_loop<uint64_t, kOpMin>(col.f.type)
                                      : pick_loop<uint64_t, kOpMax>(col.f.type);
    } else {
      out_t = col.dom == Dom::kU ? FieldType::kU64 : FieldType::kI64;
      st<int64_t>(init, as.fn == AggFn::kMin ? INT64_MAX : as.fn == AggFn::kMax ? INT64_MIN : 0);
      // Sums of unsigned fields add in two's complement: the same bits as u64.
      col.loop = as.fn == AggFn::kMin ? pick_loop<int64_t, kOpMin>(col.f.type)
               : as.fn == AggFn::kMax ? pick_loop<int64_t, kOpMax>(col.f.type)
                                      : (col.dom == Dom::kU ? pick_loop<uint64_t, kOpSum>(col.f.type)
                                                            : pick_loop<int64_t, kOpSum>(col.f.type));
    }
    if (as.fn == AggFn::kAvg) out_t = FieldType::kF64;
    fields.push_back({fmt::format("{}_{}", fname, as.field), out_t, 8});
    s->cols.push_back(col);
  }
  Status st_ = Schema::make("aggregate", std::move(fields), 0, &s->out);
  if (!st_.ok()) return Status::Error("aggregate: output: " + st_.message());
  if (!spec.having.empty()) {
    PredicateSpec ps;
    Status p = parse_predicate(rewrite_having(spec.having), &ps);
    if (p.ok()) p = Predicate::make(s->out, ps, &s->having);
    if (!p.ok()) return Status::Error(fmt::format("aggregate: having '{}': {} (output fields: {})",
                                                  spec.having, p.message(), s->out.describe()));
    s->has_having = true;
  }
  s->entry_bytes = 16 + s->panes * s->pane_bytes;
  s->entries.reset(new std::byte[size_t{s->max_groups} * s->entry_bytes]);
  size_t cap = 16;
  while (cap < size_t{s->max_groups} * 2) cap <<= 1;
  s->mask = cap - 1;
  s->index.reset(new Impl::Slot[cap]);
  for (size_t i = 0; i < cap; ++i) s->index[i] = {0, Impl::kEmpty, 0};
  s->idx.reset(new uint32_t[kChunk]);
  s->rows.reset(new std::byte[Impl::kEmitRows * s->out.tuple_bytes()]);
  if (w.by == WindowSpec::By::kCount) s->pane_end = w.slide;
  out->impl_ = std::move(s);
  return {};
}

const Schema& GroupAggregate::output_schema() const { return impl_->out; }
uint32_t GroupAggregate::row_bytes() const { return impl_->out.tuple_bytes(); }
uint64_t GroupAggregate::late() const { return impl_->late; }
uint32_t GroupAggregate::groups() const { return impl_->live; }

size_t GroupAggregate::bytes_held() const {
  const Impl& s = *impl_;
  return sizeof(Impl) + size_t{s.max_groups} * s.entry_bytes + (s.mask + 1) * sizeof(Impl::Slot) +
         kChunk * 4 + Impl::kEmitRows * s.out.tuple_bytes() + s.having.bytes_held();
}

// The groups of the open window(s), compact: the live entries (their index
// slots are rebuilt from the slot each entry records), then the counters.
// The layout (max_groups, entry size) is written first and checked on load,
// so a snapshot of a differently configured aggregate is refused.
void GroupAggregate::save(SnapshotOut& out) const {
  const Impl& s = *impl_;
  out.put<uint32_t>(s.max_groups);
  out.put<uint64_t>(s.entry_bytes);
  out.put<uint32_t>(s.live);
  out.bytes(s.entries.get(), size_t{s.live} * s.entry_bytes);
  out.put<uint32_t>(s.cur);
  out.put<uint8_t>(s.started);
  out.put<uint64_t>(s.pane_end);
  out.put<uint64_t>(s.in_pane);
  out.put<uint64_t>(s.total);
  out.put<uint64_t>(s.late);
  out.put<uint64_t>(s.emitted);
}

Status GroupAggregate::load(SnapshotIn& in) {
  Impl& s = *impl_;
  const uint32_t max_groups = in.get<uint32_t>();
  const uint64_t entry_bytes = in.get<uint64_t>();
  const uint32_t live = in.get<uint32_t>();
  if (in.ok() && (max_groups != s.max_groups || entry_bytes != s.entry_bytes))
    in.fail(fmt::format("holds an aggregate of max_groups {} and {}-byte groups, this one has {} and {}",
                        max_groups, entry_bytes, s.max_groups, s.entry_bytes));
  if (in.ok() && live > s.max_groups) in.fail(fmt::format("holds {} groups, more than max_groups", live));
  if (!in.ok()) return Status::Error(in.what());
  for (size_t i = 0; i <= s.mask; ++i) s.index[i] = {0, Impl::kEmpty, 0};
  in.bytes(s.entries.get(), size_t{live} * s.entry_bytes);
  s.cur = in.get<uint32_t>();
  s.started = in.get<uint8_t>() != 0;
  s.pane_end = in.get<uint64_t>();
  s.in_pane = in.get<uint64_t>();
  s.total = in.get<uint64_t>();
  s.late = in.get<uint64_t>();
  s.emitted = in.get<uint64_t>();
  if (in.ok() && s.cur >= s.panes) in.fail(fmt::format("names pane {} of {}", s.cur, s.panes));
  for (uint32_t id = 0; in.ok() && id < live; ++id) {
    const std::byte* e = s.entry(id);
    const uint32_t h = ld<uint32_t>(e + 8);
    if (h > s.mask || s.index[h].id != Impl::kEmpty) {
      in.fail(fmt::format("group {} names index slot {}, which is out of range or taken", id, h));
      break;
    }
    s.index[h] = {ld<uint64_t>(e), id, 0};
  }
  if (!in.ok()) {
    for (size_t i = 0; i <= s.mask; ++i) s.index[i] = {0, Impl::kEmpty, 0};
    s.live = 0;
    return Status::Error(in.what());
  }
  s.live = live;
  s.last_valid = false;
  return {};
}

Status GroupAggregate::consume(const std::byte* tuples, size_t n, uint32_t stride, RowEmit emit) {
  Impl& s = *impl_;
  const auto by = s.win.by;
  if (by == WindowSpec::By::kNone) return s.accumulate(tuples, n, stride);
  size_t i = 0;
  if (by == WindowSpec::By::kCount) {
    while (i < n) {
      const size_t left = s.win.slide - s.in_pane;
      const size_t seg = n - i < left ? n - i : left;
      Status st_ = s.accumulate(tuples + i * stride, seg, stride);
      if (!st_.ok()) return st_;
      i += seg;
      s.in_pane += seg;
      if (s.in_pane == s.win.slide) {
        s.close_pane(s.pane_end, emit);
        s.in_pane = 0;
      }
    }
    return {};
  }
  const uint32_t toff = s.time.offset;
  while (i < n) {
    const uint64_t ts = ld<uint64_t>(tuples + i * stride + toff);
    if (!s.started) {
      s.pane_end = ts / s.win.slide * s.win.slide + s.win.slide;
      s.started = true;
    }
    if (ts < s.pane_end - s.win.slide) {
      ++s.late;
      ++i;
      continue;
    }
    if (ts >= s.pane_end) {
      s.advance(ts, emit);
      continue;
    }
    const uint64_t lo = s.pane_end - s.win.slide, hi = s.pane_end;
    size_t j = i + 1;
    while (j < n) {
      const uint64_t t = ld<uint64_t>(tuples + j * stride + toff);
      if (t < lo || t >= hi) break;
      ++j;
    }
    Status st_ = s.accumulate(tuples + i * stride, j - i, stride);
    if (!st_.ok()) return st_;
    i = j;
  }
  return {};
}

void GroupAggregate::advance_to(uint64_t t, RowEmit emit) {
  Impl& s = *impl_;
  if (s.win.by != WindowSpec::By::kTime || !s.started) return;
  s.advance(t, emit);
}

void GroupAggregate::flush(RowEmit emit) {
  Impl& s = *impl_;
  if (s.win.by == WindowSpec::By::kNone) {
    if (s.live) s.close_pane(s.total, emit);
    return;
  }
  while (s.live > 0) s.close_pane(s.pane_end, emit);
  s.in_pane = 0;
}

}  // namespace sluice::kernels
