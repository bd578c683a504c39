// filter: keeps the tuples whose field compares true with a constant. When
// every tuple of a run passes, it writes nothing at all.
#include <fmt/format.h>

#include <cstring>

#include "graph/operator.h"
#include "transport/event.h"

namespace sluice {
namespace {

enum class Cmp { kLt, kLe, kGt, kGe, kEq, kNe };

template <Cmp C, class T>
inline bool compare(T a, T b) {
  if constexpr (C == Cmp::kLt) return a < b;
  if constexpr (C == Cmp::kLe) return a <= b;
  if constexpr (C == Cmp::kGt) return a > b;
  if constexpr (C == Cmp::kGe) return a >= b;
  if constexpr (C == Cmp::kEq) return a == b;
  return a != b;
}

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
    return compare<C>(v, value_);
  }
  uint32_t offset_;
  T value_;
};

template <class T>
std::unique_ptr<Operator> make_typed(const std::string& op, uint32_t offset, T v) {
  if (op == "lt") return std::make_unique<Filter<Cmp::kLt, T>>(offset, v);
  if (op == "le") return std::make_unique<Filter<Cmp::kLe, T>>(offset, v);
  if (op == "gt") return std::make_unique<Filter<Cmp::kGt, T>>(offset, v);
  if (op == "ge") return std::make_unique<Filter<Cmp::kGe, T>>(offset, v);
  if (op == "eq") return std::make_unique<Filter<Cmp::kEq, T>>(offset, v);
  if (op == "ne") return std::make_unique<Filter<Cmp::kNe, T>>(offset, v);
  return nullptr;
}

std::unique_ptr<Operator> make_filter(const OperatorConfig& cfg, const Schema& in, Status* st) {
  FieldRef f;
  if (!in.find(cfg.get("field"), &f)) {
    *st = Status::Error(fmt::format("filter field '{}' is not in schema {}", cfg.get("field"), in.describe()));
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
      *st = Status::Error(fmt::format("filter field '{}' is bytes; a filter compares numbers", cfg.get("field")));
      return nullptr;
  }
  if (!r) *st = Status::Error(fmt::format("filter op '{}' unknown (known: lt le gt ge eq ne)", op));
  return r;
}

Status filter_output(const OperatorConfig& cfg, const Schema& in, Schema* out) {
  FieldRef f;
  if (in.find(cfg.get("field"), &f) && f.type == FieldType::kBytes)
    return Status::Error(fmt::format("field '{}' is bytes; a filter compares numbers", cfg.get("field")));
  *out = in;
  return {};
}

}  // namespace

const OperatorSpec& filter_spec() {
  static const OperatorSpec s{
      "filter",
      "keeps the tuples whose `field` compares true (`op`) with `value`; drops the rest in place",
      {
          {"field", ParamType::kField, "key", "the numeric field compared", nullptr},
          {"op", ParamType::kEnum, "ge", "the comparison", "lt|le|gt|ge|eq|ne"},
          {"value", ParamType::kI64, "0", "the constant compared with", nullptr},
      },
      false, 0, 0, filter_output, make_filter};
  return s;
}

}  // namespace sluice
