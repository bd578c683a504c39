// The operators that wrap the query kernels (graph/kernels/): groupby,
// correlate, join and moving_avg. Each is thin: it hands the kernel the
// tuples of each event of a run, copies the rows the kernel emits into events
// of its derived stream (EventWriter, slots of the pool's reserve), and
// consumes its input, whose tuples it counts in END's accounts (filtered for
// what a filter upstream already took, then aggregated or joined), so the sink
// still reconciles every tuple of the input stream.
//
// A derived stream's rows are laid out by the kernel's output_schema(), but
// their `seq` is the derived stream's own (0, 1, 2, ...: the sink checks it),
// not the kernel's: a correlate match or a joined row loses the input seq
// (join: name `seq` nowhere; copy the fields you need with `fields`).
//
// Rows go downstream at the end of every descriptor that produced any (the
// writer's slot is committed), at each on_time() that closed a window, and
// at END.
#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "graph/kernels/aggregate.h"
#include "graph/kernels/correlate.h"
#include "graph/kernels/join.h"
#include "graph/kernels/moving.h"
#include "graph/operator.h"

namespace sluice {
namespace {

using kernels::RowEmit;

// Copies a kernel's rows (seq first) into the writer's events, seq renumbered.
struct RowSink {
  EventWriter* w = nullptr;
  Emitter* out = nullptr;
  uint64_t ts = 0;
  uint32_t row_bytes = 0;
  void operator()(const std::byte* rows, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      std::byte* t = w->append(*out, ts);
      if (!t) return;  // the instance is stopping
      std::memcpy(t + 8, rows + i * row_bytes + 8, row_bytes - 8);
    }
  }
};

enum class Account { kAggregated, kJoined };

// The shared body: K provides consume(tuples, n, stride, RowSink&),
// flush(RowSink&), on_time(wm, RowSink&), bytes(), status().
template <class K>
class KernelOp final : public Operator {
 public:
  KernelOp(const char* name, const OperatorConfig& cfg, K k, uint32_t row_bytes, Account acc)
      : name_(name), k_(std::move(k)), acc_(acc),
        w_(cfg.derived_stream, row_bytes, cfg.max_event_tuples) {
    sink_.w = &w_;
    sink_.row_bytes = row_bytes;
  }
  const char* name() const override { return name_; }
  size_t state_bytes() const override { return k_.bytes(); }

  Result process(std::byte* run, Descriptor& d, Emitter& out) override {
    sink_.out = &out;
    size_t off = 0;
    for (uint32_t e = 0; e < d.events; ++e) {
      EventHeader h;
      std::memcpy(&h, run + off, sizeof h);
      const std::byte* t = run + off + kEventHeaderBytes;
      off += h.wire_bytes();
      accounts_.filtered(h.stream, filtered_inside(h));
      if (acc_ == Account::kJoined)
        accounts_.joined(h.stream, h.tuple_count);
      else
        accounts_.aggregated(h.stream, h.tuple_count);
      if (h.send_ts_ns > sink_.ts) sink_.ts = h.send_ts_ns;
      if constexpr (requires(K& k) { k.stream(0u); }) k_.stream(h.stream);
      if (h.tuple_count) k_.consume(t, h.tuple_count, h.tuple_bytes, sink_);
    }
    w_.flush(out);
    return kConsumed;
  }
  void on_time(uint64_t watermark_ns, Emitter& out) override {
    sink_.out = &out;
    k_.on_time(watermark_ns, sink_);
    w_.flush(out);
  }
  void flush(Emitter& out) override {
    sink_.out = &out;
    k_.flush(sink_);
    w_.flush(out);
  }
  void end(EndOfStream* eos) override {
    accounts_.add_to(eos);  // the input streams' entries first
    w_.end(eos);
  }
  Status status() const override { return k_.status(); }
  State state() const override { return K::kSaves ? State::kSaved : State::kUnsaved; }
  void save(SnapshotOut& out) const override {
    out.put<uint64_t>(sink_.ts);
    w_.save(out);
    accounts_.save(out);
    k_.save(out);
  }
  Status load(SnapshotIn& in) override {
    const uint64_t ts = in.get<uint64_t>();
    w_.load(in);
    accounts_.load(in);
    if (!in.ok()) return Status::Error(in.what());
    sink_.ts = ts;
    return k_.load(in);
  }
  K& kernel() { return k_; }

 private:
  const char* name_;
  K k_;
  Account acc_;
  EventWriter w_;
  RowSink sink_;
  StreamAccounts accounts_;
};

Status need_field(const Schema& in, const std::string& name, const char* key) {
  FieldRef f;
  if (!in.find(name, &f))
    return Status::Error(fmt::format("{}: no field '{}' in schema {}", key, name, in.describe()));
  return {};
}

// ---- groupby

// "sum(p1), count, avg(p2)" -> aggregates. count(*) and count() are count.
Status parse_aggs(const std::string& text, std::vector<kernels::AggSpec>* out) {
  out->clear();
  size_t b = 0;
  while (b <= text.size()) {
    size_t c = text.find(',', b);
    if (c == std::string::npos) c = text.size();
    std::string item = text.substr(b, c - b);
    b = c + 1;
    while (!item.empty() && (item.front() == ' ' || item.front() == '[')) item.erase(0, 1);
    while (!item.empty() && (item.back() == ' ' || item.back() == ']')) item.pop_back();
    if (item.empty()) continue;
    kernels::AggSpec a;
    std::string fn = item, field;
    if (size_t p = item.find('('); p != std::string::npos) {
      if (item.back() != ')')
        return Status::Error(fmt::format("aggregates: '{}' lacks its ')'", item));
      fn = item.substr(0, p);
      field = item.substr(p + 1, item.size() - p - 2);
      while (!field.empty() && field.front() == ' ') field.erase(0, 1);
      while (!field.empty() && field.back() == ' ') field.pop_back();
    }
    if (fn == "count") {
      a.fn = kernels::AggFn::kCount;
      if (field == "*") field.clear();
    } else if (fn == "sum") a.fn = kernels::AggFn::kSum;
    else if (fn == "avg") a.fn = kernels::AggFn::kAvg;
    else if (fn == "min") a.fn = kernels::AggFn::kMin;
    else if (fn == "max") a.fn = kernels::AggFn::kMax;
    else
      return Status::Error(fmt::format("aggregates: '{}' is not count, sum(F), avg(F), min(F) or max(F)", item));
    if (a.fn != kernels::AggFn::kCount && field.empty())
      return Status::Error(fmt::format("aggregates: '{}' names no field", item));
    a.field = a.fn == kernels::AggFn::kCount ? "" : field;
    out->push_back(a);
  }
  if (out->empty()) return Status::Error("aggregates: none given (e.g. \"sum(p1), count\")");
  return {};
}

// per_stream: one aggregate per input stream, each with its own windows,
// made from the same spec when the stream's first event comes (once per
// stream, at most kMaxStreams): what such a group-by emits depends only on
// each stream's tuples, not on how the streams interleave, so the key's
// replicas (parallelism) together emit the rows one process would.
struct GroupByK {
  kernels::GroupAggregate k;
  bool advance = false;  // time windows over a timestamp field follow the watermark
  bool per_stream = false;
  kernels::GroupAggSpec spec;  // per_stream: what each stream's aggregate is made from
  Schema in;
  std::vector<std::unique_ptr<kernels::GroupAggregate>> streams;  // per_stream: by stream id
  kernels::GroupAggregate* cur = nullptr;  // per_stream: the current event's stream's (not k: moved)
  Status st;
  void stream(uint32_t s) {
    if (!per_stream) return;
    if (s >= streams.size()) {
      st = Status::Error(fmt::format("stream {} beyond {}", s, streams.size()));
      return;
    }
    if (!streams[s]) made(s);
    cur = streams[s].get();
  }
  kernels::GroupAggregate* made(uint32_t s) {
    auto g = std::make_unique<kernels::GroupAggregate>();
    if (Status e = kernels::GroupAggregate::make(in, spec, g.get()); !e) st = e;
    streams[s] = std::move(g);
    return streams[s].get();
  }
  template <class F>
  void each(F f) {
    if (!per_stream) return f(k);
    for (auto& g : streams)
      if (g) f(*g);
  }
  void consume(const std::byte* t, size_t n, uint32_t stride, RowSink& s) {
    if (!st) return;  // failed: the stage stops the instance
    st = (cur ? *cur : k).consume(t, n, stride, RowEmit(s));
  }
  void on_time(uint64_t wm, RowSink& s) {
    if (advance && st && wm != UINT64_MAX) each([&](kernels::GroupAggregate& g) { g.advance_to(wm, RowEmit(s)); });
  }
  void flush(RowSink& s) {
    if (st) each([&](kernels::GroupAggregate& g) { g.flush(RowEmit(s)); });
  }
  size_t bytes() const {
    size_t b = per_stream ? 0 : k.bytes_held();
    for (const auto& g : streams)
      if (g) b += g->bytes_held();
    return b;
  }
  Status status() const { return st; }
  static constexpr bool kSaves = true;
  void save(SnapshotOut& out) const {
    if (!per_stream) return k.save(out);
    uint32_t n = 0;
    for (const auto& g : streams) n += g ? 1 : 0;
    out.put<uint32_t>(n);
    for (uint32_t s = 0; s < streams.size(); ++s)
      if (streams[s]) {
        out.put<uint32_t>(s);
        streams[s]->save(out);
      }
  }
  Status load(SnapshotIn& in_) {
    if (!per_stream) return k.load(in_);
    const uint32_t n = in_.get<uint32_t>();
    for (uint32_t i = 0; i < n && in_.ok(); ++i) {
      const uint32_t s = in_.get<uint32_t>();
      if (!in_.ok() || s >= streams.size()) return Status::Error("a per-stream group-by's stream beyond its table");
      if (Status e = made(s)->load(in_); !e) return e;
    }
    if (!in_.ok()) return Status::Error(in_.what());
    return st;
  }
};

Status groupby_kernel(const OperatorConfig& cfg, const Schema& in, GroupByK* out) {
  kernels::GroupAggSpec spec;
  spec.group_by = cfg.get("group_by");
  if (Status st = parse_aggs(cfg.get("aggregates"), &spec.aggs); !st) return st;
  const std::string& by = cfg.get("window");
  spec.window.by = by == "count" ? kernels::WindowSpec::By::kCount
                   : by == "time" ? kernels::WindowSpec::By::kTime
                                  : kernels::WindowSpec::By::kNone;
  spec.window.size = cfg.u64("size");
  spec.window.slide = cfg.u64("slide");
  spec.window.time_field = cfg.get("time_field");
  if (spec.window.by != kernels::WindowSpec::By::kNone && spec.window.size == 0)
    return Status::Error(fmt::format("window {} needs a `size`", by));
  if (spec.window.by == kernels::WindowSpec::By::kTime && spec.window.time_field.empty())
    return Status::Error("window time needs a `time_field`");
  spec.having = cfg.get("having");
  const uint64_t mg = cfg.u64("max_groups");
  if (mg == 0 || mg > (1u << 28)) return Status::Error("max_groups: 1 to 268435456");
  spec.max_groups = static_cast<uint32_t>(mg);
  if (Status st = kernels::GroupAggregate::make(in, spec, &out->k); !st) return st;
  out->per_stream = cfg.get("per_stream") == "on";
  if (out->per_stream) {
    out->spec = spec;
    out->in = in;
    out->streams.resize(kMaxStreams);
  }
  FieldRef tf;
  // The runtime's watermark is the events' send time (ns). It may close
  // windows only when the file says the time field holds that same time:
  // a field in other units (the generator's sequence, say) would be closed
  // at the first event and every later tuple dropped as late.
  const bool event_time = cfg.get("watermark") == "event";
  if (event_time && spec.window.by != kernels::WindowSpec::By::kTime)
    return Status::Error("watermark: event needs window: time");
  if (event_time && !(in.find(spec.window.time_field, &tf) && tf.type == FieldType::kTimestamp))
    return Status::Error(fmt::format("watermark: event needs a time_field of type timestamp; '{}' is not",
                                     spec.window.time_field));
  out->advance = event_time;
  return {};
}

Status groupby_output(const OperatorConfig& cfg, const Schema& in, Schema* out) {
  GroupByK k;
  if (Status st = groupby_kernel(cfg, in, &k); !st) return st;
  *out = k.k.output_schema();
  return {};
}

std::unique_ptr<Operator> make_groupby(const OperatorConfig& cfg, const Schema& in, Status* st) {
  GroupByK k;
  if (*st = groupby_kernel(cfg, in, &k); !*st) return nullptr;
  const uint32_t rb = k.k.row_bytes();
  return std::make_unique<KernelOp<GroupByK>>("groupby", cfg, std::move(k), rb, Account::kAggregated);
}

// ---- correlate

struct CorrelateK {
  kernels::Correlate k;
  static constexpr bool kSaves = true;
  void save(SnapshotOut& out) const { k.save(out); }
  Status load(SnapshotIn& in) { return k.load(in); }
  void consume(const std::byte* t, size_t n, uint32_t stride, RowSink& s) { k.consume(t, n, stride, RowEmit(s)); }
  void on_time(uint64_t, RowSink&) {}
  void flush(RowSink& s) { k.flush(RowEmit(s)); }
  size_t bytes() const { return k.bytes_held(); }
  Status status() const { return {}; }
};

Status correlate_kernel(const OperatorConfig& cfg, const Schema& in, CorrelateK* out) {
  kernels::CorrelateSpec spec;
  spec.txn_field = cfg.get("txn");
  spec.event_field = cfg.get("event");
  spec.time_field = cfg.get("time");
  spec.steps = static_cast<uint32_t>(cfg.u64("steps"));
  spec.within = cfg.u64("within");
  const uint64_t mo = cfg.u64("max_open");
  if (mo == 0 || mo > (1u << 28)) return Status::Error(fmt::format("max_open {} not in 1..2^28", mo));
  spec.max_open = static_cast<uint32_t>(mo);
  return kernels::Correlate::make(in, spec, &out->k);
}

Status correlate_output(const OperatorConfig& cfg, const Schema& in, Schema* out) {
  CorrelateK k;
  if (Status st = correlate_kernel(cfg, in, &k); !st) return st;
  *out = k.k.output_schema();
  return {};
}

std::unique_ptr<Operator> make_correlate(const OperatorConfig& cfg, const Schema& in, Status* st) {
  CorrelateK k;
  if (*st = correlate_kernel(cfg, in, &k); !*st) return nullptr;
  const uint32_t rb = k.k.row_bytes();
  return std::make_unique<KernelOp<CorrelateK>>("correlate", cfg, std::move(k), rb, Account::kAggregated);
}

// ---- join

// table_columns: "id:u64, t1:i32, name:bytes16" -> columns.
Status parse_columns(const OperatorConfig& cfg, std::vector<FieldSpec>* out) {
  out->clear();
  for (const auto& c : cfg.list("table_columns")) {
    const size_t colon = c.find(':');
    if (colon == std::string::npos)
      return Status::Error(fmt::format("table_columns: '{}' is not name:type", c));
    FieldSpec f;
    f.name = c.substr(0, colon);
    std::string type = c.substr(colon + 1);
    if (type.rfind("bytes", 0) == 0 && type.size() > 5) {
      f.type = FieldType::kBytes;
      f.width = static_cast<uint32_t>(std::strtoul(type.c_str() + 5, nullptr, 10));
    } else if (!parse_field_type(type, &f.type)) {
      return Status::Error(fmt::format("table_columns: '{}': unknown type '{}'", c, type));
    }
    out->push_back(f);
  }
  if (out->empty()) return Status::Error("table_columns: none given");
  return {};
}

template <class J>
struct JoinK {
  J k;
  // The table is made again from the file when the node starts; the
  // snapshot holds the counters and, for the grace join, its open batch.
  static constexpr bool kSaves = true;
  void save(SnapshotOut& out) const { k.save(out); }
  Status load(SnapshotIn& in) { return k.load(in); }
  void consume(const std::byte* t, size_t n, uint32_t stride, RowSink& s) { k.consume(t, n, stride, RowEmit(s)); }
  void on_time(uint64_t, RowSink&) {}
  void flush(RowSink& s) { k.flush(RowEmit(s)); }
  size_t bytes() const { return k.bytes_held(); }
  Status status() const { return {}; }
};

// The table (loaded or generated when `load`, else only its columns) and the spec.
Status join_table(const OperatorConfig& cfg, bool load, kernels::JoinTable* t, kernels::JoinSpec* js) {
  std::vector<FieldSpec> cols;
  if (Status st = parse_columns(cfg, &cols); !st) return st;
  std::vector<std::string> payload = cfg.list("payload");
  if (Status st = kernels::JoinTable::make(cols, cfg.get("table_key"), payload, t); !st) return st;
  js->stream_key = cfg.get("key");
  js->stream_fields = cfg.list("fields");
  const bool csv = !cfg.get("table_csv").empty();
  if (csv == (cfg.u64("table_rows") != 0))
    return Status::Error("give the table as `table_csv` (a file) or `table_rows` (generated), one of them");
  if (!load) return {};
  if (csv) return t->load_csv(cfg.get("table_csv"));
  t->generate(cfg.u64("table_rows"), cfg.u64("seed"));
  return {};
}

kernels::GraceOptions grace_options(const OperatorConfig& cfg) {
  kernels::GraceOptions o;
  o.batch_tuples = static_cast<uint32_t>(cfg.u64("batch_tuples"));
  o.partition_bytes = static_cast<uint32_t>(cfg.u64("partition_bytes"));
  return o;
}

Status join_output(const OperatorConfig& cfg, const Schema& in, Schema* out) {
  kernels::JoinTable t;
  kernels::JoinSpec js;
  if (Status st = join_table(cfg, false, &t, &js); !st) return st;
  if (cfg.u64("batch_tuples") == 0 || cfg.u64("partition_bytes") < 4096 ||
      cfg.u64("partition_bytes") > (1u << 30))
    return Status::Error("batch_tuples must be at least 1 and partition_bytes 4096 to 2^30");
  kernels::HashJoin j;  // the schema only: an empty table
  if (Status st = kernels::HashJoin::make(in, js, t, &j); !st) return st;
  *out = j.output_schema();
  return {};
}

std::unique_ptr<Operator> make_join(const OperatorConfig& cfg, const Schema& in, Status* st) {
  kernels::JoinTable t;
  kernels::JoinSpec js;
  if (*st = join_table(cfg, true, &t, &js); !*st) return nullptr;
  if (cfg.get("method") == "grace") {
    JoinK<kernels::GraceHashJoin> k;
    if (*st = kernels::GraceHashJoin::make(in, js, t, grace_options(cfg), &k.k); !*st) return nullptr;
    const uint32_t rb = k.k.row_bytes();
    return std::make_unique<KernelOp<JoinK<kernels::GraceHashJoin>>>("join", cfg, std::move(k), rb,
                                                                     Account::kJoined);
  }
  JoinK<kernels::HashJoin> k;
  if (*st = kernels::HashJoin::make(in, js, t, &k.k); !*st) return nullptr;
  const uint32_t rb = k.k.row_bytes();
  return std::make_unique<KernelOp<JoinK<kernels::HashJoin>>>("join", cfg, std::move(k), rb, Account::kJoined);
}

// ---- moving_avg: one row per input tuple, {seq, in_seq, value, avg}.

struct MovingK {
  kernels::MovingAverage k;
  FieldRef f;
  bool is_f64 = false;
  double avg[kernels::kChunk];
  std::byte row[32];
  static constexpr bool kSaves = true;
  void save(SnapshotOut& out) const { k.save(out); }
  Status load(SnapshotIn& in) { return k.load(in); }
  void consume(const std::byte* t, size_t n, uint32_t stride, RowSink& s) {
    for (size_t i = 0; i < n; i += kernels::kChunk) {
      const size_t c = std::min(n - i, kernels::kChunk);
      const std::byte* base = t + i * stride;
      k.consume(base, c, stride, avg);
      for (size_t j = 0; j < c; ++j) {
        const std::byte* tp = base + j * stride;
        std::memcpy(row + 8, tp, 8);  // the input tuple's seq
        if (is_f64) {
          const double v = load_f64(tp, f);
          std::memcpy(row + 16, &v, 8);
        } else {
          const int64_t v = load_i64(tp, f);
          std::memcpy(row + 16, &v, 8);
        }
        std::memcpy(row + 24, &avg[j], 8);
        s(row, 1);
      }
    }
  }
  void on_time(uint64_t, RowSink&) {}
  void flush(RowSink&) {}
  size_t bytes() const { return k.bytes_held(); }
  Status status() const { return {}; }
};

Status moving_output(const OperatorConfig& cfg, const Schema& in, Schema* out) {
  FieldRef f;
  if (Status st = need_field(in, cfg.get("field"), "field"); !st) return st;
  in.find(cfg.get("field"), &f);
  if (f.type == FieldType::kBytes) return Status::Error("field: a bytes field has no average");
  const uint64_t w = cfg.u64("window");
  if (w == 0 || w > (uint64_t{1} << 32)) return Status::Error("window: 1 to 2^32 tuples");
  return Schema::make("moving_avg",
                      {{"in_seq", FieldType::kU64, 0},
                       {"value", f.type == FieldType::kF64 ? FieldType::kF64 : FieldType::kI64, 0},
                       {"avg", FieldType::kF64, 0}},
                      0, out);
}

std::unique_ptr<Operator> make_moving(const OperatorConfig& cfg, const Schema& in, Status* st) {
  Schema out;
  if (*st = moving_output(cfg, in, &out); !*st) return nullptr;
  MovingK k;
  in.find(cfg.get("field"), &k.f);
  k.is_f64 = k.f.type == FieldType::kF64;
  const uint32_t staging = cfg.get("cache_aware") == "on" ? static_cast<uint32_t>(cfg.u64("staging")) : 0;
  if (cfg.get("cache_aware") == "on" && staging == 0) {
    *st = Status::Error("staging: at least 1 value");
    return nullptr;
  }
  if (*st = kernels::MovingAverage::make(in, cfg.get("field"), cfg.u64("window"), &k.k, staging); !*st)
    return nullptr;
  return std::make_unique<KernelOp<MovingK>>("moving_avg", cfg, std::move(k), out.tuple_bytes(),
                                             Account::kAggregated);
}

}  // namespace

const OperatorSpec& groupby_spec() {
  static const OperatorSpec s{
      "groupby",
      "grouped aggregates over windows with having (graph/kernels/aggregate.h); emits "
      "(window_end, key, aggregates...) rows",
      {
          {"group_by", ParamType::kField, "", "the group's field; empty: one group", nullptr},
          {"aggregates", ParamType::kString, "count", "e.g. \"sum(p1), count, avg(p2), min(p3), max(p3)\"", nullptr},
          {"window", ParamType::kEnum, "none", "none (one window to END), count or time", "none|count|time"},
          {"size", ParamType::kU64, "0", "window size: tuples (count) or units of time_field (time)", nullptr},
          {"slide", ParamType::kU64, "0", "0 or size: tumbling; else divides size", nullptr},
          {"time_field", ParamType::kField, "", "time windows: the field (non-decreasing); its own "
           "values close the windows", nullptr},
          {"watermark", ParamType::kEnum, "field", "time windows: field (only the time field's values "
           "close windows), or event (also the events' send times: for a timestamp field that holds "
           "event time in ns, so an idle stream's windows close)", "field|event"},
          {"having", ParamType::kString, "", "over the row, e.g. \"sum(p1) >= 100000000\"", nullptr},
          {"max_groups", ParamType::kU64, "1024", "groups per window at most (the table's size)", nullptr},
          {"per_stream", ParamType::kEnum, "off", "on: each input stream has windows and groups of its "
           "own (its table made when its first event comes), so the rows depend on each stream's "
           "tuples alone, not on how the streams interleave: what replicas of it split by key "
           "(parallelism) emit together equals what one emits", "off|on"},
      },
      true, 4, 0, groupby_output, make_groupby};
  return s;
}

const OperatorSpec& correlate_spec() {
  static const OperatorSpec s{
      "correlate",
      "the study's aggregate: per txn, `steps` tuples of increasing event within `within` time "
      "units; emits (txn, first_time, last_time) per match",
      {
          {"txn", ParamType::kField, nullptr, "the transaction id field (integer)", nullptr},
          {"event", ParamType::kField, nullptr, "the event id field (integer)", nullptr},
          {"time", ParamType::kField, nullptr, "the time field (integer, non-decreasing)", nullptr},
          {"within", ParamType::kU64, nullptr, "last time - first time at most", nullptr},
          {"steps", ParamType::kU64, "4", "tuples per match", nullptr},
          {"max_open", ParamType::kU64, "65536", "open transactions at most (the oldest is evicted)", nullptr},
      },
      true, 4, 0, correlate_output, make_correlate};
  return s;
}

const OperatorSpec& join_spec() {
  static const OperatorSpec s{
      "join",
      "stream-to-table equality join (graph/kernels/join.h); emits (fields..., payload...) per "
      "matched tuple, drops the unmatched",
      {
          {"method", ParamType::kEnum, "hash", "hash, or grace (batched, partitioned)", "hash|grace"},
          {"key", ParamType::kField, nullptr, "the stream's key field (integer)", nullptr},
          {"fields", ParamType::kString, "", "stream fields copied into the row, e.g. \"a1, a2\"", nullptr},
          {"table_csv", ParamType::kString, "", "the table from this CSV file (a header line names "
           "the columns)", nullptr},
          {"table_rows", ParamType::kU64, "0", "or a generated table of this many rows (keys 1..N)", nullptr},
          {"table_columns", ParamType::kString, "id:u64, t1:i32", "the table's columns, name:type", nullptr},
          {"table_key", ParamType::kString, "id", "the table's key column", nullptr},
          {"payload", ParamType::kString, "t1", "the table columns the row carries", nullptr},
          {"seed", ParamType::kU64, "1", "generated table: its seed", nullptr},
          {"batch_tuples", ParamType::kU64, "4096", "grace: stream tuples per batch", nullptr},
          {"partition_bytes", ParamType::kU64, "8388608", "grace: bytes per index partition", nullptr},
      },
      true, 4, 0, join_output, make_join};
  return s;
}

const OperatorSpec& moving_avg_spec() {
  static const OperatorSpec s{
      "moving_avg",
      "average of `field` over the last `window` tuples (graph/kernels/moving.h); emits "
      "(in_seq, value, avg) per tuple",
      {
          {"field", ParamType::kField, nullptr, "the numeric field averaged", nullptr},
          {"window", ParamType::kU64, "1000", "tuples in the window, 1 to 2^32", nullptr},
          {"cache_aware", ParamType::kEnum, "off", "on: staged block copies (Mendes et al.)", "off|on"},
          {"staging", ParamType::kU64, "1024", "cache_aware: values staged", nullptr},
      },
      true, 4, 0, moving_output, make_moving};
  return s;
}

}  // namespace sluice
