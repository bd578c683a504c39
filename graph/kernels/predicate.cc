#include "graph/kernels/predicate.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace sluice::kernels {

bool parse_cmp(const char* s, size_t len, Cmp* out) {
  std::string_view v(s, len);
  if (v == "lt" || v == "<") *out = Cmp::kLt;
  else if (v == "le" || v == "<=") *out = Cmp::kLe;
  else if (v == "gt" || v == ">") *out = Cmp::kGt;
  else if (v == "ge" || v == ">=") *out = Cmp::kGe;
  else if (v == "eq" || v == "==" || v == "=") *out = Cmp::kEq;
  else if (v == "ne" || v == "!=") *out = Cmp::kNe;
  else return false;
  return true;
}

const char* cmp_name(Cmp c) {
  switch (c) {
    case Cmp::kLt: return "<";
    case Cmp::kLe: return "<=";
    case Cmp::kGt: return ">";
    case Cmp::kGe: return ">=";
    case Cmp::kEq: return "==";
    default: return "!=";
  }
}

PredicateSpec PredicateSpec::cmp(std::string field, Cmp op, std::string value) {
  PredicateSpec s;
  s.kind = Kind::kCmp;
  s.field = std::move(field);
  s.op = op;
  s.value = std::move(value);
  return s;
}
PredicateSpec PredicateSpec::all(std::vector<PredicateSpec> c) {
  PredicateSpec s;
  s.kind = Kind::kAnd;
  s.children = std::move(c);
  return s;
}
PredicateSpec PredicateSpec::any(std::vector<PredicateSpec> c) {
  PredicateSpec s;
  s.kind = Kind::kOr;
  s.children = std::move(c);
  return s;
}

std::string PredicateSpec::describe() const {
  if (kind == Kind::kCmp) return fmt::format("{} {} {}", field, cmp_name(op), value);
  std::string s = "(";
  for (size_t i = 0; i < children.size(); ++i) {
    if (i) s += kind == Kind::kAnd ? " and " : " or ";
    s += children[i].describe();
  }
  return s + ")";
}

// ---- parse_predicate: recursive descent over a token stream ----
namespace {
struct Parser {
  std::string_view s;
  size_t at = 0;
  Status err;

  void skip() {
    while (at < s.size() && std::isspace(static_cast<unsigned char>(s[at]))) ++at;
  }
  std::string_view word() {  // identifier, number, or operator symbol run
    skip();
    size_t b = at;
    if (at < s.size() && std::strchr("<>=!", s[at])) {
      while (at < s.size() && std::strchr("<>=!", s[at])) ++at;
    } else {
      while (at < s.size() && !std::isspace(static_cast<unsigned char>(s[at])) &&
             !std::strchr("()<>=!", s[at]))
        ++at;
    }
    return s.substr(b, at - b);
  }
  bool fail(std::string what) {
    if (err.ok()) err = Status::Error(fmt::format("predicate '{}': column {}: {}", s, at + 1, what));
    return false;
  }
  bool peek_keyword(std::string_view kw) {
    skip();
    if (s.substr(at, kw.size()) != kw) return false;
    size_t e = at + kw.size();
    return e == s.size() || std::isspace(static_cast<unsigned char>(s[e])) || s[e] == '(';
  }
  bool expr(PredicateSpec* out, PredicateSpec::Kind kind) {
    // kind kOr: terms joined by "or"; kAnd: factors joined by "and".
    std::vector<PredicateSpec> parts(1);
    bool ok = kind == PredicateSpec::Kind::kOr ? expr(&parts[0], PredicateSpec::Kind::kAnd)
                                               : factor(&parts[0]);
    if (!ok) return false;
    const char* kw = kind == PredicateSpec::Kind::kOr ? "or" : "and";
    while (peek_keyword(kw)) {
      at += std::strlen(kw);
      parts.emplace_back();
      ok = kind == PredicateSpec::Kind::kOr ? expr(&parts.back(), PredicateSpec::Kind::kAnd)
                                            : factor(&parts.back());
      if (!ok) return false;
    }
    if (parts.size() == 1) {
      *out = std::move(parts[0]);
    } else {
      out->kind = kind;
      out->children = std::move(parts);
    }
    return true;
  }
  bool factor(PredicateSpec* out) {
    skip();
    if (at < s.size() && s[at] == '(') {
      ++at;
      if (!expr(out, PredicateSpec::Kind::kOr)) return false;
      skip();
      if (at >= s.size() || s[at] != ')') return fail("expected ')'");
      ++at;
      return true;
    }
    std::string_view f = word();
    if (f.empty()) return fail("expected a field name or '('");
    size_t op_at = at;
    std::string_view o = word();
    Cmp c;
    if (!parse_cmp(o.data(), o.size(), &c)) {
      at = op_at;
      return fail(fmt::format("expected a comparison (< <= > >= == != or lt le gt ge eq ne) "
                              "after '{}', got '{}'", f, o));
    }
    std::string_view v = word();
    if (v.empty()) return fail(fmt::format("expected a value after '{} {}'", f, o));
    *out = PredicateSpec::cmp(std::string(f), c, std::string(v));
    return true;
  }
};
}  // namespace

Status parse_predicate(std::string_view text, PredicateSpec* out) {
  Parser p{text, 0, {}};
  PredicateSpec s;
  if (!p.expr(&s, PredicateSpec::Kind::kOr)) return p.err;
  p.skip();
  if (p.at != text.size()) {
    p.fail(fmt::format("unexpected '{}'", text.substr(p.at)));
    return p.err;
  }
  *out = std::move(s);
  return {};
}

// ---- leaves: one comparison over a chunk, specialized per type and op ----
namespace {

template <FieldType T>
struct Domain;
template <> struct Domain<FieldType::kI32> { using Load = int32_t; using Cmp = int64_t; };
template <> struct Domain<FieldType::kI64> { using Load = int64_t; using Cmp = int64_t; };
template <> struct Domain<FieldType::kU32> { using Load = uint32_t; using Cmp = uint64_t; };
template <> struct Domain<FieldType::kU64> { using Load = uint64_t; using Cmp = uint64_t; };
template <> struct Domain<FieldType::kTimestamp> { using Load = uint64_t; using Cmp = uint64_t; };
template <> struct Domain<FieldType::kF64> { using Load = double; using Cmp = double; };

template <class V>
V value_as(const void* c) {
  V v;
  std::memcpy(&v, c, sizeof v);
  return v;
}

template <Cmp C, FieldType T>
void leaf(const std::byte* t, size_t n, uint32_t stride, uint32_t off, uint64_t cbits,
          uint8_t* mask) {
  using L = typename Domain<T>::Load;
  using D = typename Domain<T>::Cmp;
  const D c = value_as<D>(&cbits);
  t += off;
  for (size_t i = 0; i < n; ++i) {
    L v;
    std::memcpy(&v, t + i * stride, sizeof v);
    mask[i] = compare<C, D>(static_cast<D>(v), c);
  }
}

template <FieldType T>
void* pick_leaf(Cmp c) {
  switch (c) {
    case Cmp::kLt: return reinterpret_cast<void*>(&leaf<Cmp::kLt, T>);
    case Cmp::kLe: return reinterpret_cast<void*>(&leaf<Cmp::kLe, T>);
    case Cmp::kGt: return reinterpret_cast<void*>(&leaf<Cmp::kGt, T>);
    case Cmp::kGe: return reinterpret_cast<void*>(&leaf<Cmp::kGe, T>);
    case Cmp::kEq: return reinterpret_cast<void*>(&leaf<Cmp::kEq, T>);
    default: return reinterpret_cast<void*>(&leaf<Cmp::kNe, T>);
  }
}

}  // namespace

Status Predicate::make(const Schema& schema, const PredicateSpec& spec, Predicate* out) {
  Predicate p;
  p.text_ = spec.describe();
  uint32_t root;
  Status st = p.compile(schema, spec, &root);
  if (!st.ok()) return st;
  p.masks_.assign(p.nodes_.size() * kChunk, 0);
  *out = std::move(p);
  return {};
}

Status Predicate::compile(const Schema& schema, const PredicateSpec& s, uint32_t* idx) {
  Node n;
  n.kind = s.kind;
  if (s.kind == PredicateSpec::Kind::kCmp) {
    if (!schema.find(s.field, &n.field)) {
      return Status::Error(fmt::format("predicate '{}': schema '{}' has no field '{}'",
                                       s.describe(), schema.name(), s.field));
    }
    if (n.field.type == FieldType::kBytes) {
      return Status::Error(fmt::format("predicate '{}': field '{}' is bytes, not a number",
                                       s.describe(), s.field));
    }
    uint64_t bits;
    if (!parse_field_value(s.value, n.field.type, &bits)) {
      return Status::Error(fmt::format("predicate '{}': '{}' is not a {} (the type of '{}')",
                                       s.describe(), s.value, field_type_name(n.field.type),
                                       s.field));
    }
    n.c = bits;
    n.op = s.op;
    void* fn = nullptr;
    switch (n.field.type) {
      case FieldType::kI32: fn = pick_leaf<FieldType::kI32>(s.op); break;
      case FieldType::kI64: fn = pick_leaf<FieldType::kI64>(s.op); break;
      case FieldType::kU32: fn = pick_leaf<FieldType::kU32>(s.op); break;
      case FieldType::kU64: fn = pick_leaf<FieldType::kU64>(s.op); break;
      case FieldType::kTimestamp: fn = pick_leaf<FieldType::kTimestamp>(s.op); break;
      default: fn = pick_leaf<FieldType::kF64>(s.op); break;
    }
    n.fn = reinterpret_cast<LeafFn>(fn);
  } else {
    if (s.children.empty()) {
      return Status::Error(fmt::format("predicate: an {} with no operands",
                                       s.kind == PredicateSpec::Kind::kAnd ? "and" : "or"));
    }
    for (const auto& c : s.children) {
      uint32_t k;
      Status st = compile(schema, c, &k);
      if (!st.ok()) return st;
      n.kids.push_back(k);
    }
  }
  nodes_.push_back(std::move(n));
  *idx = static_cast<uint32_t>(nodes_.size() - 1);
  return {};
}

size_t Predicate::select(const std::byte* tuples, size_t n, uint32_t stride, uint32_t* sel) {
  size_t k = 0;
  for (size_t base = 0; base < n; base += kChunk) {
    const size_t m = n - base < kChunk ? n - base : kChunk;
    const std::byte* t = tuples + base * stride;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const Node& nd = nodes_[i];
      uint8_t* mask = &masks_[i * kChunk];
      if (nd.kind == PredicateSpec::Kind::kCmp) {
        nd.fn(t, m, stride, nd.field.offset, nd.c, mask);
        continue;
      }
      const uint8_t* a = &masks_[nd.kids[0] * kChunk];
      std::memcpy(mask, a, m);
      for (size_t c = 1; c < nd.kids.size(); ++c) {
        const uint8_t* b = &masks_[nd.kids[c] * kChunk];
        if (nd.kind == PredicateSpec::Kind::kAnd) {
          for (size_t j = 0; j < m; ++j) mask[j] &= b[j];
        } else {
          for (size_t j = 0; j < m; ++j) mask[j] |= b[j];
        }
      }
    }
    const uint8_t* root = &masks_[(nodes_.size() - 1) * kChunk];
    for (size_t j = 0; j < m; ++j) {  // branch-free: write always, advance on pass
      sel[k] = static_cast<uint32_t>(base + j);
      k += root[j];
    }
  }
  return k;
}

bool Predicate::eval_node(uint32_t i, const std::byte* t) const {
  const Node& nd = nodes_[i];
  if (nd.kind == PredicateSpec::Kind::kCmp) {
    uint8_t m;
    nd.fn(t, 1, 0, nd.field.offset, nd.c, &m);
    return m != 0;
  }
  for (uint32_t k : nd.kids) {
    bool v = eval_node(k, t);
    if (nd.kind == PredicateSpec::Kind::kAnd && !v) return false;
    if (nd.kind == PredicateSpec::Kind::kOr && v) return true;
  }
  return nd.kind == PredicateSpec::Kind::kAnd;
}

bool Predicate::eval(const std::byte* tuple) const {
  return eval_node(static_cast<uint32_t>(nodes_.size() - 1), tuple);
}

size_t Predicate::bytes_held() const {
  return nodes_.size() * sizeof(Node) + masks_.size();
}

// ---- Projector ----

Status Projector::make(const Schema& in, const std::vector<std::string>& fields,
                       std::string out_name, Projector* out) {
  Projector p;
  std::vector<FieldSpec> specs;
  std::vector<Copy> copies{{0, 0, Schema::kSeqBytes}};
  uint32_t at = Schema::kSeqBytes;
  for (const auto& f : fields) {
    std::string src = f, dst = f;
    size_t as = f.find(" as ");
    if (as != std::string::npos) {
      src = f.substr(0, as);
      dst = f.substr(as + 4);
    }
    FieldRef r;
    if (src == "seq") {
      return Status::Error(fmt::format("project '{}': seq is always copied first; do not name it", f));
    }
    if (!in.find(src, &r)) {
      return Status::Error(fmt::format("project '{}': schema '{}' has no field '{}'", f, in.name(), src));
    }
    specs.push_back({dst, r.type, r.width});
    Copy& last = copies.back();
    if (last.src + last.width == r.offset && last.dst + last.width == at) {
      last.width += r.width;
    } else {
      copies.push_back({r.offset, at, r.width});
    }
    at += r.width;
  }
  uint32_t bytes = at < 12 ? 12 : at;
  Status st = Schema::make(std::move(out_name), std::move(specs), bytes, &p.out_);
  if (!st.ok()) return st;
  p.copies_ = std::move(copies);
  *out = std::move(p);
  return {};
}

inline void Projector::one(const std::byte* t, std::byte* o) const {
  for (const Copy& c : copies_) {
    switch (c.width) {
      case 4: std::memcpy(o + c.dst, t + c.src, 4); break;
      case 8: std::memcpy(o + c.dst, t + c.src, 8); break;
      case 12: std::memcpy(o + c.dst, t + c.src, 12); break;
      case 16: std::memcpy(o + c.dst, t + c.src, 16); break;
      default: std::memcpy(o + c.dst, t + c.src, c.width);
    }
  }
}

void Projector::project(const std::byte* tuples, size_t n, uint32_t stride, std::byte* out) const {
  const uint32_t rb = row_bytes();
  if (rb > copies_.back().dst + copies_.back().width) std::memset(out, 0, n * size_t{rb});
  for (size_t i = 0; i < n; ++i) one(tuples + i * stride, out + i * rb);
}

void Projector::project_sel(const std::byte* tuples, const uint32_t* sel, size_t k,
                            uint32_t stride, std::byte* out) const {
  const uint32_t rb = row_bytes();
  if (rb > copies_.back().dst + copies_.back().width) std::memset(out, 0, k * size_t{rb});
  for (size_t i = 0; i < k; ++i) one(tuples + size_t{sel[i]} * stride, out + i * rb);
}

size_t compact(std::byte* tuples, const uint32_t* sel, size_t k, uint32_t stride) {
  for (size_t i = 0; i < k; ++i) {
    if (sel[i] != i) std::memmove(tuples + i * stride, tuples + size_t{sel[i]} * stride, stride);
  }
  return k;
}

}  // namespace sluice::kernels
