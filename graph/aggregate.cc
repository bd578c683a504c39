// aggregate: count and sum per group over tumbling windows, plainly (the
// fast windowed kernels live in graph/kernels/). It consumes its input and
// emits one row per group when a window closes:
//
//   aggregate{seq:u64, window:u64, group:u64, count:u64, sum:i64}
//
// A window is `window` tuples that reach it (a count window), or, with
// `window_ns`, the events whose timestamp falls in one window_ns interval (a
// time window, closed by the watermark or by a later event). A late event
// (its window already closed) is folded into the open window. The group
// table holds `groups` groups, sized when it is made; a window with more
// distinct groups fails the node with an error that says so.
#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "graph/operator.h"

namespace sluice {
namespace {

class Aggregate final : public Operator {
 public:
  Aggregate(const OperatorConfig& cfg, FieldRef group, FieldRef sum, bool has_sum)
      : group_(group), sum_(sum), has_sum_(has_sum), window_(cfg.u64("window")),
        window_ns_(cfg.u64("window_ns")), max_groups_(cfg.u64("groups")),
        out_(cfg.derived_stream, kRowBytes, cfg.max_event_tuples) {
    size_t cap = 16;
    while (cap < 2 * max_groups_) cap <<= 1;
    mask_ = cap - 1;
    table_.assign(cap, Cell{});
    used_.reserve(max_groups_);
  }
  const char* name() const override { return "aggregate"; }
  size_t state_bytes() const override {
    return table_.size() * sizeof(Cell) + used_.capacity() * sizeof(uint32_t);
  }

  Result process(std::byte* run, Descriptor& d, Emitter& out) override {
    size_t off = 0;
    for (uint32_t e = 0; e < d.events; ++e) {
      EventHeader h;
      std::memcpy(&h, run + off, sizeof h);
      const std::byte* t = run + off + kEventHeaderBytes;
      off += h.wire_bytes();
      accounts_.filtered(h.stream, filtered_inside(h));
      accounts_.aggregated(h.stream, h.tuple_count);
      if (h.send_ts_ns > last_ts_) last_ts_ = h.send_ts_ns;
      if (window_ns_) {
        const uint64_t w = h.send_ts_ns / window_ns_;
        if (!open_) {
          window_id_ = w;
          open_ = true;
        } else if (w > window_id_) {
          close(out);
          window_id_ = w;
          open_ = true;
        }
      }
      for (uint32_t i = 0; i < h.tuple_count; ++i, t += h.tuple_bytes) {
        add(static_cast<uint64_t>(load_i64(t, group_)), has_sum_ ? load_i64(t, sum_) : 0);
        if (!window_ns_ && ++in_window_ == window_) {
          close(out);
          ++window_id_;
        }
      }
    }
    return kConsumed;
  }

  void on_time(uint64_t watermark_ns, Emitter& out) override {
    if (window_ns_ && open_ && watermark_ns / window_ns_ > window_id_) {
      close(out);
      open_ = false;
    }
  }

  void flush(Emitter& out) override {
    if (!used_.empty()) close(out);
    out_.flush(out);
  }

  void end(EndOfStream* eos) override {
    accounts_.add_to(eos);  // the input streams' entries first
    out_.end(eos);
  }

  Status status() const override {
    return overflow_ ? Status::Error(fmt::format("aggregate: more than {} groups in one window; "
                                                 "raise `groups`", max_groups_))
                     : Status();
  }

 private:
  static constexpr uint32_t kRowBytes = 40;
  struct Cell {
    uint64_t group = 0, count = 0;
    int64_t sum = 0;
    bool used = false;
  };

  void add(uint64_t g, int64_t v) {
    size_t i = (g * 0x9E3779B97F4A7C15ull >> 20) & mask_;
    while (table_[i].used && table_[i].group != g) i = (i + 1) & mask_;
    Cell& c = table_[i];
    if (!c.used) {
      if (used_.size() == max_groups_) {
        overflow_ = true;
        return;
      }
      c.used = true;
      c.group = g;
      used_.push_back(static_cast<uint32_t>(i));
    }
    ++c.count;
    c.sum += v;
  }

  // Emits the window's rows and empties the table (only the cells it used).
  void close(Emitter& out) {
    for (uint32_t i : used_) {
      Cell& c = table_[i];
      std::byte* row = out_.append(out, last_ts_);
      if (row) {
        std::memcpy(row + 8, &window_id_, 8);
        std::memcpy(row + 16, &c.group, 8);
        std::memcpy(row + 24, &c.count, 8);
        std::memcpy(row + 32, &c.sum, 8);
      }
      c = Cell{};
    }
    used_.clear();
    in_window_ = 0;
    out_.flush(out);  // a closed window goes downstream now, not with the next one
  }

  FieldRef group_, sum_;
  bool has_sum_;
  uint64_t window_, window_ns_, max_groups_;
  EventWriter out_;
  std::vector<Cell> table_;
  std::vector<uint32_t> used_;
  size_t mask_ = 0;
  uint64_t in_window_ = 0, window_id_ = 0, last_ts_ = 0;
  bool open_ = false, overflow_ = false;
  StreamAccounts accounts_;
};

Status aggregate_output(const OperatorConfig& cfg, const Schema& in, Schema* out) {
  FieldRef f;
  if (in.find(cfg.get("group_by"), &f) && f.type == FieldType::kBytes)
    return Status::Error("group_by: a bytes field cannot be a group (yet)");
  if (!cfg.get("sum").empty() && in.find(cfg.get("sum"), &f) && f.type == FieldType::kBytes)
    return Status::Error("sum: a bytes field has no sum");
  if (cfg.u64("window") == 0 && cfg.u64("window_ns") == 0)
    return Status::Error("give a window: `window` (tuples) or `window_ns`");
  if (cfg.u64("groups") == 0 || cfg.u64("groups") > (1u << 26))
    return Status::Error("groups: 1 to 67108864");
  return Schema::make("aggregate",
                      {{"window", FieldType::kU64, 0},
                       {"group", FieldType::kU64, 0},
                       {"count", FieldType::kU64, 0},
                       {"sum", FieldType::kI64, 0}},
                      0, out);
}

std::unique_ptr<Operator> make_aggregate(const OperatorConfig& cfg, const Schema& in, Status* st) {
  FieldRef g, s;
  if (!in.find(cfg.get("group_by"), &g)) {
    *st = Status::Error(fmt::format("no field '{}'", cfg.get("group_by")));
    return nullptr;
  }
  const bool has_sum = !cfg.get("sum").empty();
  if (has_sum && !in.find(cfg.get("sum"), &s)) {
    *st = Status::Error(fmt::format("no field '{}'", cfg.get("sum")));
    return nullptr;
  }
  return std::make_unique<Aggregate>(cfg, g, s, has_sum);
}

// A deliberately wrong operator, for the tests of the sink's accounting: it
// consumes everything and reports `by` tuples fewer aggregated than it took.
class Miscount final : public Operator {
 public:
  explicit Miscount(uint64_t by) : by_(by) {}
  const char* name() const override { return "miscount"; }
  Result process(std::byte* run, Descriptor& d, Emitter&) override {
    size_t off = 0;
    for (uint32_t e = 0; e < d.events; ++e) {
      EventHeader h;
      std::memcpy(&h, run + off, sizeof h);
      off += h.wire_bytes();
      accounts_.filtered(h.stream, filtered_inside(h));
      uint64_t n = h.tuple_count;
      const uint64_t less = std::min(n, by_ - taken_);
      taken_ += less;
      accounts_.aggregated(h.stream, n - less);
    }
    return kConsumed;
  }
  void end(EndOfStream* eos) override { accounts_.add_to(eos); }

 private:
  uint64_t by_, taken_ = 0;
  StreamAccounts accounts_;
};

}  // namespace

const OperatorSpec& aggregate_spec() {
  static const OperatorSpec s{
      "aggregate",
      "count and sum per group over tumbling windows; emits (window, group, count, sum) rows",
      {
          {"group_by", ParamType::kField, "key", "the field whose value is the group", nullptr},
          {"sum", ParamType::kField, "key", "the field summed", nullptr},
          {"window", ParamType::kU64, "1000", "tuples per window (0: a time window)", nullptr},
          {"window_ns", ParamType::kU64, "0", "a time window of this many ns of event time instead", nullptr},
          {"groups", ParamType::kU64, "1024", "distinct groups per window at most (the table's size)", nullptr},
      },
      true, 4, 0, aggregate_output, make_aggregate};
  return s;
}

const OperatorSpec& miscount_spec() {
  static const OperatorSpec s{
      "miscount",
      "test only: consumes every tuple and reports `by` fewer as aggregated; the sink must catch it",
      {{"by", ParamType::kU64, "1", "tuples left out of its count", nullptr}},
      false, 0, 0,
      [](const OperatorConfig&, const Schema& in, Schema* out) {
        *out = in;
        return Status();
      },
      [](const OperatorConfig& cfg, const Schema&, Status*) -> std::unique_ptr<Operator> {
        return std::make_unique<Miscount>(cfg.u64("by"));
      }};
  return s;
}

}  // namespace sluice
