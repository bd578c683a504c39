// filter: keeps the tuples whose field compares true with a constant
// (field/op/value), or for which a `where:` expression holds ("p0 >= 5 and
// (p1 < 3 or p2 != 0)", compiled once by graph/kernels/predicate.h). When
// every tuple of a run passes, it writes nothing at all.
#include <fmt/format.h>

#include <cstring>

#include "graph/kernels/predicate.h"
#include "graph/operator.h"
#include "transport/event.h"

namespace sluice {
namespace {

using kernels::Cmp;

// T: the field's type as stored (uint32_t, uint64_t, int32_t, int64_t, double).
template <Cmp C, class T>
class Filter final : public Operator {
 public:
  Filter(uint32_t offset, T value) : offset_(offset), value_(value) {}
  const char* name() const override { return "filter"; }

  Result process(std::byte* run, Descriptor& d, Emitter&) override {
    size_t in = 0, out = 0;  // read and write offsets within the run
    uint32_t tuples = 0;
    for (uint32_t e = 0; e < d.events; ++e) {
      EventHeader h;
      std::memcpy(&h, run + in, sizeof h);
      const size_t ev_bytes = h.wire_bytes();
      const std::byte* src_tuples = run + in + kEventHeaderBytes;
      // First pass: does anything fail? The common pass-all case stops here.
      uint32_t first_drop = h.tuple_count;
      for (uint32_t t = 0; t < h.tuple_count; ++t) {
        if (!keep(src_tuples + size_t{t} * h.tuple_bytes)) {
          first_drop = t;
          break;
        }
      }
      if (first_drop == h.tuple_count) {
        if (out != in) std::memmove(run + out, run + in, ev_bytes);
        out += ev_bytes;
        in += ev_bytes;
        tuples += h.tuple_count;
        continue;
      }
      // Compact: header, then surviving tuples, then the data block.
      std::byte* dst = run + out;
      if (out != in) std::memmove(dst, run + in, kEventHeaderBytes + size_t{first_drop} * h.tuple_bytes);
      uint32_t kept = first_drop;
      for (uint32_t t = first_drop + 1; t < h.tuple_count; ++t) {
        const std::byte* tp = src_tuples + size_t{t} * h.tuple_bytes;
        if (keep(tp)) {
          std::memmove(dst + kEventHeaderBytes + size_t{kept} * h.tuple_bytes, tp, h.tuple_bytes);
          ++kept;
        }
      }
      if (h.data_bytes)
        std::memmove(dst + kEventHeaderBytes + size_t{kept} * h.tuple_bytes,
                     src_tuples + h.tuple_block_bytes(), h.data_bytes);
      h.tuple_count = kept;
      std::memcpy(dst, &h, sizeof h);
      seal_event(dst);
      out += h.wire_bytes();
      in += ev_bytes;
      tuples += kept;
    }
    d.bytes = static_cast<uint32_t>(out);
    d.tuples = tuples;
    return kKeep;
  }

 private:
  bool keep(const std::byte* t) const {
    T v;
    std::memcpy(&v, t + offset_, sizeof v);
    return kernels::compare<C>(v, value_);
  }
  uint32_t offset_;
  T value_;
};

template <class T>
std::unique_ptr<Operator> make_typed(const std::string& op, uint32_t offset, T v) {
  // `op` takes the words (lt ... ne), not the symbols `where` also takes.
  Cmp c;
  if (op.size() != 2 || op[0] < 'a' || op[0] > 'z' || !kernels::parse_cmp(op.data(), op.size(), &c))
    return nullptr;
  switch (c) {
    case Cmp::kLt: return std::make_unique<Filter<Cmp::kLt, T>>(offset, v);
    case Cmp::kLe: return std::make_unique<Filter<Cmp::kLe, T>>(offset, v);
    case Cmp::kGt: return std::make_unique<Filter<Cmp::kGt, T>>(offset, v);
    case Cmp::kGe: return std::make_unique<Filter<Cmp::kGe, T>>(offset, v);
    case Cmp::kEq: return std::make_unique<Filter<Cmp::kEq, T>>(offset, v);
    case Cmp::kNe: return std::make_unique<Filter<Cmp::kNe, T>>(offset, v);
  }
  return nullptr;
}

// The `where:` filter: the predicate kernel selects a chunk at a time; the
// survivors move towards the front of the run, as above.
class WhereFilter final : public Operator {
 public:
  explicit WhereFilter(kernels::Predicate p) : p_(std::move(p)) {}
  const char* name() const override { return "filter"; }
  size_t state_bytes() const override { return p_.bytes_held() + sizeof sel_; }

  Result process(std::byte* run, Descriptor& d, Emitter&) override {
    size_t in = 0, out = 0;
    uint32_t tuples = 0;
    for (uint32_t e = 0; e < d.events; ++e) {
      EventHeader h;
      std::memcpy(&h, run + in, sizeof h);
      const size_t ev_bytes = h.wire_bytes();
      const uint32_t tb = h.tuple_bytes;
      const std::byte* src = run + in + kEventHeaderBytes;
      std::byte* dst = run + out + kEventHeaderBytes;  // dst <= src: moves go downwards
      uint32_t kept = 0;
      for (uint32_t i = 0; i < h.tuple_count; i += kernels::kChunk) {
        const uint32_t c = std::min<uint32_t>(h.tuple_count - i, kernels::kChunk);
        const size_t k = p_.select(src + size_t{i} * tb, c, tb, sel_);
        if (k == c) {  // the whole chunk passes: one move, or none in place
          if (dst + size_t{kept} * tb != src + size_t{i} * tb)
            std::memmove(dst + size_t{kept} * tb, src + size_t{i} * tb, size_t{c} * tb);
        } else {
          for (size_t j = 0; j < k; ++j)
            std::memmove(dst + size_t{kept + j} * tb, src + size_t{i + sel_[j]} * tb, tb);
        }
        kept += static_cast<uint32_t>(k);
      }
      if (kept == h.tuple_count && out == in) {  // untouched
        out += ev_bytes;
        in += ev_bytes;
        tuples += kept;
        continue;
      }
      if (h.data_bytes)
        std::memmove(dst + size_t{kept} * tb, src + h.tuple_block_bytes(), h.data_bytes);
      const bool changed = kept != h.tuple_count;
      h.tuple_count = kept;
      std::memcpy(run + out, &h, sizeof h);
      if (changed) seal_event(run + out);
      out += h.wire_bytes();
      in += ev_bytes;
      tuples += kept;
    }
    d.bytes = static_cast<uint32_t>(out);
    d.tuples = tuples;
    return kKeep;
  }

 private:
  kernels::Predicate p_;
  uint32_t sel_[kernels::kChunk];
};

Status where_predicate(const OperatorConfig& cfg, const Schema& in, kernels::Predicate* p) {
  if (!cfg.get("field").empty())
    return Status::Error("give `where` or `field`/`op`/`value`, not both");
  kernels::PredicateSpec spec;
  if (Status st = kernels::parse_predicate(cfg.get("where"), &spec); !st)
    return Status::Error(fmt::format("where: {}", st.message()));
  if (Status st = kernels::Predicate::make(in, spec, p); !st)
    return Status::Error(fmt::format("where: {}", st.message()));
  return {};
}

// `field` left out (and no `where`): the default schema's `key`.
std::string filter_field(const OperatorConfig& cfg) {
  return cfg.get("field").empty() ? std::string("key") : cfg.get("field");
}

std::unique_ptr<Operator> make_filter(const OperatorConfig& cfg, const Schema& in, Status* st) {
  if (!cfg.get("where").empty()) {
    kernels::Predicate p;
    if (*st = where_predicate(cfg, in, &p); !*st) return nullptr;
    return std::make_unique<WhereFilter>(std::move(p));
  }
  FieldRef f;
  if (!in.find(filter_field(cfg), &f)) {
    *st = Status::Error(fmt::format("filter field '{}' is not in schema {}", filter_field(cfg), in.describe()));
    return nullptr;
  }
  const std::string& op = cfg.get("op");
  const std::string& v = cfg.get("value");
  std::unique_ptr<Operator> r;
  switch (f.type) {
    case FieldType::kU32: r = make_typed<uint32_t>(op, f.offset, static_cast<uint32_t>(std::strtoull(v.c_str(), nullptr, 0))); break;
    case FieldType::kU64:
    case FieldType::kTimestamp: r = make_typed<uint64_t>(op, f.offset, std::strtoull(v.c_str(), nullptr, 0)); break;
    case FieldType::kI32: r = make_typed<int32_t>(op, f.offset, static_cast<int32_t>(std::strtoll(v.c_str(), nullptr, 0))); break;
    case FieldType::kI64: r = make_typed<int64_t>(op, f.offset, std::strtoll(v.c_str(), nullptr, 0)); break;
    case FieldType::kF64: r = make_typed<double>(op, f.offset, std::strtod(v.c_str(), nullptr)); break;
    case FieldType::kBytes:
      *st = Status::Error(fmt::format("filter field '{}' is bytes; a filter compares numbers", filter_field(cfg)));
      return nullptr;
  }
  if (!r) *st = Status::Error(fmt::format("filter op '{}' unknown (known: lt le gt ge eq ne)", op));
  return r;
}

Status filter_output(const OperatorConfig& cfg, const Schema& in, Schema* out) {
  FieldRef f;
  if (!cfg.get("where").empty()) {
    kernels::Predicate p;
    if (Status st = where_predicate(cfg, in, &p); !st) return st;
  } else if (!in.find(filter_field(cfg), &f)) {
    return Status::Error(fmt::format("no field '{}' in schema {}", filter_field(cfg), in.name()));
  } else if (f.type == FieldType::kBytes) {
    return Status::Error(fmt::format("field '{}' is bytes; a filter compares numbers", filter_field(cfg)));
  }
  *out = in;
  return {};
}

}  // namespace

const OperatorSpec& filter_spec() {
  static const OperatorSpec s{
      "filter",
      "keeps the tuples whose `field` compares true (`op`) with `value`, or for which `where` "
      "holds; drops the rest in place",
      {
          {"field", ParamType::kField, "", "the numeric field compared (left out: key)", nullptr},
          {"op", ParamType::kEnum, "ge", "the comparison", "lt|le|gt|ge|eq|ne"},
          {"value", ParamType::kI64, "0", "the constant compared with", nullptr},
          {"where", ParamType::kString, "", "instead: \"p0 >= 5 and (p1 < 3 or p2 != 0)\"", nullptr},
      },
      false, 0, 0, filter_output, make_filter};
  return s;
}

}  // namespace sluice
