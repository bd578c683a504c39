// The operator registry, parameter checks, the event writer and the chain.
#include "graph/operator.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace sluice {

// Each kind's declaration lives beside its code (filter.cc, project.cc,
// kernel_ops.cc); this list is the one place that names the shipped ones.
// Test binaries add their own with register_operator.
const OperatorSpec& filter_spec();
const OperatorSpec& project_spec();
const OperatorSpec& groupby_spec();
const OperatorSpec& correlate_spec();
const OperatorSpec& join_spec();
const OperatorSpec& moving_avg_spec();

namespace {

constexpr size_t kMaxOperatorKinds = 64;  // reserved: a spec's address never changes

std::vector<OperatorSpec>& registry() {
  static std::vector<OperatorSpec>* all = [] {
    auto* v = new std::vector<OperatorSpec>;
    v->reserve(kMaxOperatorKinds);
    for (const OperatorSpec* s : {&filter_spec(), &project_spec(), &groupby_spec(),
                                  &correlate_spec(), &join_spec(), &moving_avg_spec()})
      v->push_back(*s);
    return v;
  }();
  return *all;
}

std::vector<std::string>& kind_list() {
  static std::vector<std::string>* kinds = new std::vector<std::string>(operator_kinds());
  return *kinds;
}

}  // namespace

const std::vector<OperatorSpec>& operator_specs() { return registry(); }

const OperatorSpec* find_operator_spec(std::string_view kind) {
  for (const auto& s : operator_specs())
    if (kind == s.kind) return &s;
  return nullptr;
}

std::vector<std::string> operator_kinds() {
  std::vector<std::string> v;
  for (const auto& s : operator_specs()) v.push_back(s.kind);
  return v;
}

const std::vector<std::string>& operator_kind_list() { return kind_list(); }

bool register_operator(const OperatorSpec& spec) {
  std::vector<OperatorSpec>& all = registry();
  if (find_operator_spec(spec.kind) || all.size() == all.capacity()) return false;
  all.push_back(spec);
  kind_list().push_back(spec.kind);
  return true;
}

const char* param_type_name(ParamType t) {
  switch (t) {
    case ParamType::kU64: return "an unsigned integer";
    case ParamType::kI64: return "an integer";
    case ParamType::kF64: return "a number";
    case ParamType::kString: return "a string";
    case ParamType::kEnum: return "one of its choices";
    case ParamType::kField: return "a field of the schema";
    case ParamType::kFieldList: return "a list of fields of the schema";
  }
  return "?";
}

namespace {
std::string field_names(const Schema& s) {
  std::string out;
  for (const auto& f : s.fields()) out += (out.empty() ? "" : ", ") + f.name;
  return out;
}
std::string check_field(const std::string& name, const Schema* in) {
  if (name.empty()) return "names no field";
  if (!in) return {};
  FieldRef f;
  if (!in->find(name, &f))
    return fmt::format("no field '{}' in schema {} (fields: {})", name, in->name(), field_names(*in));
  return {};
}
}  // namespace

std::string check_param(const ParamSpec& p, const std::string& text, const Schema* in) {
  switch (p.type) {
    case ParamType::kU64: {
      uint64_t v;
      auto [e, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (text.empty() || ec != std::errc() || e != text.data() + text.size())
        return fmt::format("expected an unsigned integer, got '{}'", text);
      return {};
    }
    case ParamType::kI64: {
      int64_t v;
      auto [e, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (text.empty() || ec != std::errc() || e != text.data() + text.size()) {
        uint64_t u;  // a u64 field's constant may exceed i64
        auto [e2, ec2] = std::from_chars(text.data(), text.data() + text.size(), u);
        if (text.empty() || ec2 != std::errc() || e2 != text.data() + text.size())
          return fmt::format("expected an integer, got '{}'", text);
      }
      return {};
    }
    case ParamType::kF64: {
      char* end = nullptr;
      double v = std::strtod(text.c_str(), &end);
      if (text.empty() || *end || !std::isfinite(v)) return fmt::format("expected a number, got '{}'", text);
      return {};
    }
    case ParamType::kString: return {};
    case ParamType::kEnum: {
      std::string_view c = p.choices;
      for (size_t b = 0; b <= c.size();) {
        size_t bar = c.find('|', b);
        if (bar == std::string_view::npos) bar = c.size();
        if (c.substr(b, bar - b) == text) return {};
        b = bar + 1;
      }
      return fmt::format("invalid value '{}' (allowed: {})", text, p.choices);
    }
    case ParamType::kField:
      // A field whose default is "" is optional: left out, it names none.
      if (text.empty() && p.def && !*p.def) return {};
      return check_field(text, in);
    case ParamType::kFieldList: {
      OperatorConfig tmp;
      tmp.params = {{"x", text}};
      auto names = tmp.list("x");
      if (names.empty()) return "names no field";
      for (const auto& n : names)
        if (std::string e = check_field(n, in); !e.empty()) return e;
      return {};
    }
  }
  return {};
}

// ---- EventWriter

std::byte* EventWriter::append(Emitter& out, uint64_t ts_ns) {
  const uint32_t ev_min = kEventHeaderBytes + tuple_bytes_;
  if (event_ && (open_tuples_ == max_tuples_ || used_ + tuple_bytes_ > capacity_)) seal_open();
  if (!event_) {
    if (slot_ && used_ + ev_min > capacity_) flush(out);
    if (!slot_) {
      slot_ = out.acquire(&capacity_);
      if (!slot_) return nullptr;
      used_ = events_in_slot_ = tuples_in_slot_ = 0;
    }
    event_ = slot_ + used_;
    EventHeader h{};
    h.magic = kEventMagic;
    h.version = kWireVersion;
    h.header_bytes = kEventHeaderBytes;
    h.stream = stream_;
    h.tuple_bytes = tuple_bytes_;
    h.first_seq = next_seq_;
    h.send_ts_ns = ts_ns;
    h.event_seq = events_;
    std::memcpy(event_, &h, sizeof h);
    used_ += kEventHeaderBytes;
    open_tuples_ = 0;
  }
  std::byte* t = slot_ + used_;
  std::memset(t, 0, tuple_bytes_);
  std::memcpy(t, &next_seq_, 8);
  ++next_seq_;
  ++open_tuples_;
  used_ += tuple_bytes_;
  return t;
}

void EventWriter::save(SnapshotOut& out) const {
  out.put<uint8_t>(slot_ != nullptr);
  out.put<uint64_t>(next_seq_);
  out.put<uint64_t>(events_);
}

void EventWriter::load(SnapshotIn& in) {
  if (in.get<uint8_t>() != 0) in.fail("was taken while an operator's event was open");
  const uint64_t seq = in.get<uint64_t>(), events = in.get<uint64_t>();
  if (!in.ok()) return;
  next_seq_ = seq;
  events_ = events;
}

// Only the streams with an account: most of the kMaxStreams are empty.
void StreamAccounts::save(SnapshotOut& out) const {
  static const EndOfStreamAccount kNone{};
  uint32_t n = 0;
  for (const auto& a : of) n += std::memcmp(&a, &kNone, sizeof a) != 0;
  out.put<uint8_t>(any);
  out.put<uint32_t>(n);
  for (uint32_t i = 0; i < kMaxStreams; ++i) {
    if (std::memcmp(&of[i], &kNone, sizeof of[i]) == 0) continue;
    out.put<uint32_t>(i);
    out.put(of[i]);
  }
}

void StreamAccounts::load(SnapshotIn& in) {
  const bool a = in.get<uint8_t>() != 0;
  const uint32_t n = in.get<uint32_t>();
  if (in.ok() && n > kMaxStreams) in.fail(fmt::format("holds accounts of {} streams", n));
  EndOfStreamAccount got[kMaxStreams] = {};
  for (uint32_t k = 0; in.ok() && k < n; ++k) {
    const uint32_t i = in.get<uint32_t>();
    if (in.ok() && i >= kMaxStreams) in.fail(fmt::format("holds an account of stream {}", i));
    if (in.ok()) got[i] = in.get<EndOfStreamAccount>();
  }
  if (!in.ok()) return;
  std::memcpy(of, got, sizeof of);
  any = a;
}

void EventWriter::seal_open() {
  if (!event_) return;
  EventHeader h;
  std::memcpy(&h, event_, sizeof h);
  h.tuple_count = h.tuple_span = open_tuples_;
  std::memcpy(event_, &h, sizeof h);
  seal_event(event_);
  ++events_;
  ++events_in_slot_;
  tuples_in_slot_ += open_tuples_;
  event_ = nullptr;
  open_tuples_ = 0;
}

void EventWriter::flush(Emitter& out) {
  seal_open();
  if (!slot_) return;
  out.commit(used_, events_in_slot_, tuples_in_slot_);
  slot_ = nullptr;
  used_ = capacity_ = 0;
}

void EventWriter::end(EndOfStream* eos) const {
  if (eos->n_streams >= kMaxStreams) return;
  eos->accounts[eos->n_streams] = {};
  eos->streams[eos->n_streams++] = {stream_, 0, next_seq_, events_};
}

void StreamAccounts::add_to(EndOfStream* eos) const {
  if (!any) return;
  eos->flags |= kEndAccounts;
  for (uint32_t i = 0; i < eos->n_streams; ++i) {
    const uint32_t s = eos->streams[i].stream;
    if (s >= kMaxStreams) continue;
    eos->accounts[i].filtered += of[s].filtered;
    eos->accounts[i].aggregated += of[s].aggregated;
    eos->accounts[i].joined += of[s].joined;
    eos->accounts[i].partitioned += of[s].partitioned;
    if (of[s].partitioned) eos->flags |= kEndPartitioned;
  }
}

std::unique_ptr<Operator> make_operator(const OperatorConfig& cfg, const Schema& in, Status* st) {
  const OperatorSpec* spec = find_operator_spec(cfg.kind);
  if (!spec) {
    *st = Status::Error(fmt::format("unknown operator '{}'", cfg.kind));
    return nullptr;
  }
  for (const auto& p : spec->params)
    if (std::string e = check_param(p, cfg.get(p.key), &in); !e.empty()) {
      *st = Status::Error(fmt::format("{} key '{}': {}", cfg.kind, p.key, e));
      return nullptr;
    }
  return spec->make(cfg, in, st);
}

// ---- the chain

Status OperatorChain::make(const std::vector<OperatorConfig>& cfgs, const Schema& in,
                           OperatorChain* out) {
  out->ops_.clear();
  out->specs_.clear();
  Schema cur = in;
  for (size_t i = 0; i < cfgs.size(); ++i) {
    const auto& c = cfgs[i];
    const OperatorSpec* spec = find_operator_spec(c.kind);
    if (!spec)
      return Status::Error(fmt::format("operator {}: unknown kind '{}'", i, c.kind));
    Status st;
    auto op = make_operator(c, cur, &st);
    if (!op) return Status::Error(fmt::format("operator {} ({}): {}", i, c.kind, st.message()));
    Schema next;
    if (st = spec->output(c, cur, &next); !st)
      return Status::Error(fmt::format("operator {} ({}): {}", i, c.kind, st.message()));
    cur = std::move(next);
    out->ops_.push_back(std::move(op));
    out->specs_.push_back(spec);
  }
  out->costs_.assign(out->ops_.size(), Cost{});
  return {};
}

uint32_t OperatorChain::emit_slots() const {
  uint32_t n = 0;
  for (const auto* s : specs_) n += s->emit_slots;
  return n;
}

Status restart_loses_state(const Deployment& d, size_t index) {
  const ProcessConfig& pc = d.processes[index];
  if (d.checkpoint_interval_ms || pc.role == Role::kLoadgen || is_app(pc.role)) return {};
  if (pc.role == Role::kSink)
    return Status::Error(
        "without checkpoint_interval_ms a sink's counts and positions die with its process, so a "
        "restarted one would count every tuple before the restart as lost; set "
        "checkpoint_interval_ms (with acks: on) to restart a sink");
  OperatorChain chain;
  // A chain that cannot be made is the runtime's error to report, not this one.
  if (Status st = OperatorChain::make(pc.operators, pc.in_schema, &chain); !st) return {};
  for (size_t i = 0; i < chain.size(); ++i)
    if (chain.op(i).state() != Operator::State::kNone)
      return Status::Error(fmt::format(
          "without checkpoint_interval_ms operator {} ({}) loses its state with its process, so a "
          "restarted one's results would start over; set checkpoint_interval_ms (with acks: on) to "
          "restart it",
          i, chain.op(i).name()));
  return {};
}

bool links_let_forward_without_copies(const Deployment& d, size_t p) {
  const std::vector<size_t> ins = d.inputs_of(p), outs = d.outputs_of(p);
  return d.processes[p].role == Role::kNode && !d.node_backup_copies && !d.handover_copy &&
         ins.size() == 1 && outs.size() == 1 && d.links[ins[0]].options.acks &&
         d.links[outs[0]].options.acks;
}

bool forwards_without_copies(const Deployment& d, size_t p, const OperatorChain& chain) {
  if (!links_let_forward_without_copies(d, p)) return false;
  for (size_t i = 0; i < chain.size(); ++i)
    if (chain.op(i).state() != Operator::State::kNone) return false;
  return true;
}

bool upstream_waits_for_snapshots(const Deployment& d, size_t index) {
  std::vector<bool> seen(d.processes.size(), false);
  std::vector<size_t> todo{index};
  while (!todo.empty()) {
    const size_t at = todo.back();
    todo.pop_back();
    for (size_t l : d.inputs_of(at)) {
      const size_t p = d.links[l].from;
      if (seen[p]) continue;
      seen[p] = true;
      const ProcessConfig& pc = d.processes[p];
      // A load generator that keeps each event's header (loadgen_backup:
      // headers, no operators) frees the slot once sent; one that keeps
      // slots holds them until acknowledged.
      if (pc.role == Role::kLoadgen) {
        if (d.loadgen_backup_slots || !pc.operators.empty()) return true;
        continue;
      }
      if (pc.role == Role::kPublisher) return true;  // it keeps its events' slots
      OperatorChain chain;
      if (Status st = OperatorChain::make(pc.operators, pc.in_schema, &chain); !st) return true;
      if (!forwards_without_copies(d, p, chain)) return true;
      todo.push_back(p);
    }
  }
  return false;
}

}  // namespace sluice
