// filter: keeps the tuples whose field (key or seq) compares true with a
// constant. When every tuple of a run passes, it writes nothing at all.
#include <fmt/format.h>

#include <cstring>

#include "graph/operator.h"
#include "transport/event.h"

namespace sluice {
namespace {

enum class Cmp { kLt, kLe, kGt, kGe, kEq, kNe };

template <Cmp C>
inline bool compare(uint64_t a, uint64_t b) {
  if constexpr (C == Cmp::kLt) return a < b;
  if constexpr (C == Cmp::kLe) return a <= b;
  if constexpr (C == Cmp::kGt) return a > b;
  if constexpr (C == Cmp::kGe) return a >= b;
  if constexpr (C == Cmp::kEq) return a == b;
  return a != b;
}

template <Cmp C, bool kOnSeq>
class Filter final : public Operator {
 public:
  explicit Filter(uint64_t value) : value_(value) {}
  const char* name() const override { return "filter"; }

  void process(std::byte* run, Descriptor& d) override {
    if (d.flags & kDescEnd) return;
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
  }

 private:
  bool keep(const std::byte* t) const {
    uint64_t v = kOnSeq ? tuple_seq(t) : tuple_key(t);
    return compare<C>(v, value_);
  }
  uint64_t value_;
};

template <bool kOnSeq>
std::unique_ptr<Operator> make_filter(const std::string& op, uint64_t v) {
  if (op == "lt") return std::make_unique<Filter<Cmp::kLt, kOnSeq>>(v);
  if (op == "le") return std::make_unique<Filter<Cmp::kLe, kOnSeq>>(v);
  if (op == "gt") return std::make_unique<Filter<Cmp::kGt, kOnSeq>>(v);
  if (op == "ge") return std::make_unique<Filter<Cmp::kGe, kOnSeq>>(v);
  if (op == "eq") return std::make_unique<Filter<Cmp::kEq, kOnSeq>>(v);
  if (op == "ne") return std::make_unique<Filter<Cmp::kNe, kOnSeq>>(v);
  return nullptr;
}

}  // namespace

std::unique_ptr<Operator> make_operator(const OperatorConfig& cfg, Status* st) {
  if (cfg.kind != "filter") {
    *st = Status::Error(fmt::format("unknown operator '{}' (known: filter)", cfg.kind));
    return nullptr;
  }
  std::unique_ptr<Operator> op;
  if (cfg.field == "key") op = make_filter<false>(cfg.op, cfg.value);
  else if (cfg.field == "seq") op = make_filter<true>(cfg.op, cfg.value);
  else {
    *st = Status::Error(fmt::format("filter field '{}' unknown (known: key, seq)", cfg.field));
    return nullptr;
  }
  if (!op) *st = Status::Error(fmt::format("filter op '{}' unknown (known: lt le gt ge eq ne)", cfg.op));
  return op;
}

Status OperatorChain::make(const std::vector<OperatorConfig>& cfgs, OperatorChain* out) {
  out->ops_.clear();
  for (const auto& c : cfgs) {
    Status st;
    auto op = make_operator(c, &st);
    if (!op) return st;
    out->ops_.push_back(std::move(op));
  }
  return {};
}

}  // namespace sluice
