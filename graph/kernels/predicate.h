// Filter and project kernels.
//
// Predicate: comparisons (lt le gt ge eq ne) of numeric fields with constants,
// combined with and/or, compiled once into a flat program. select() evaluates
// it a chunk at a time, one comparison over the whole chunk into a byte mask,
// then and/or over masks, and writes the indices of the tuples that pass; the
// caller compacts (compact()) or projects (Projector::project_sel()) them.
// Comparisons are done in the field's own domain: i32/i64 as signed, u32/u64/
// timestamp as unsigned, f64 as double (NaN compares false except ne).
//
// Projector: copies chosen fields (and seq, always first) into a new, packed
// layout, its output_schema(); the copies are resolved and merged once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "graph/kernels/kernel.h"
#include "graph/schema.h"

namespace sluice::kernels {

// One node of a predicate tree, as the caller (or parse_predicate) builds it.
struct PredicateSpec {
  enum class Kind : uint8_t { kCmp, kAnd, kOr };
  Kind kind = Kind::kCmp;
  std::string field;  // kCmp: a numeric field of the schema
  Cmp op = Cmp::kEq;
  std::string value;  // kCmp: parsed in the field's type when compiled
  std::vector<PredicateSpec> children;  // kAnd / kOr: two or more

  static PredicateSpec cmp(std::string field, Cmp op, std::string value);
  static PredicateSpec all(std::vector<PredicateSpec> c);  // and
  static PredicateSpec any(std::vector<PredicateSpec> c);  // or
  std::string describe() const;  // "(p0 >= 5 and (p1 < 3 or p2 != 0))"
};

// "p0 >= 5 and (p1 < 3 or p2 != 0)": and binds tighter than or; operators
// < <= > >= == = != or lt le gt ge eq ne. Errors name the column.
Status parse_predicate(std::string_view text, PredicateSpec* out);

class Predicate {
 public:
  // Checks every field exists and is numeric and every constant parses as
  // its field's type; errors name the comparison.
  static Status make(const Schema& schema, const PredicateSpec& spec, Predicate* out);

  // Writes the indices (ascending) of the tuples of the run for which the
  // predicate holds into sel (room for n) and returns their count.
  size_t select(const std::byte* tuples, size_t n, uint32_t stride, uint32_t* sel);
  // The same for one tuple, without the chunk machinery (tests, having).
  bool eval(const std::byte* tuple) const;

  size_t bytes_held() const;
  const std::string& text() const { return text_; }

 private:
  // c: the constant's bits, read as the field's comparison domain.
  using LeafFn = void (*)(const std::byte* t, size_t n, uint32_t stride, uint32_t off, uint64_t c,
                          uint8_t* mask);
  struct Node {
    PredicateSpec::Kind kind;
    // leaf
    LeafFn fn = nullptr;
    FieldRef field;
    Cmp op = Cmp::kEq;
    uint64_t c = 0;
    // and/or: the nodes it combines (indices into nodes_, all before it)
    std::vector<uint32_t> kids;
  };
  Status compile(const Schema& schema, const PredicateSpec& s, uint32_t* idx);
  bool eval_node(uint32_t i, const std::byte* t) const;

  std::vector<Node> nodes_;     // postfix: children before parents, root last
  std::vector<uint8_t> masks_;  // nodes_.size() * kChunk
  std::string text_;
};

class Projector {
 public:
  // fields: "name" or "name as new_name"; seq is always copied first and must
  // not be named. The output is packed, tuple_bytes = its fields' width.
  static Status make(const Schema& in, const std::vector<std::string>& fields,
                     std::string out_name, Projector* out);
  const Schema& output_schema() const { return out_; }
  uint32_t row_bytes() const { return out_.tuple_bytes(); }
  // n rows into out (room for n * row_bytes()).
  void project(const std::byte* tuples, size_t n, uint32_t stride, std::byte* out) const;
  // The tuples named by sel[0..k).
  void project_sel(const std::byte* tuples, const uint32_t* sel, size_t k, uint32_t stride,
                   std::byte* out) const;

 private:
  struct Copy {
    uint32_t src, dst, width;
  };
  void one(const std::byte* t, std::byte* o) const;
  std::vector<Copy> copies_;
  Schema out_;
};

// Moves the tuples named by sel[0..k) (ascending) to the front of the run,
// in place; returns k.
size_t compact(std::byte* tuples, const uint32_t* sel, size_t k, uint32_t stride);

}  // namespace sluice::kernels
