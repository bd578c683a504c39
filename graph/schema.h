// graph/: may include base/ and transport/.
//
// A schema: the named, fixed-width fields of a tuple, laid out once.
//
// Every tuple starts with the fields the data path itself reads (transport/
// event.h): `seq` (u64, the stream sequence number the sink checks) at byte 0.
// The fields a schema declares follow, packed in the order given, no padding
// (kernels load them with memcpy, so alignment costs nothing on x86-64); a
// schema's tuple may be declared wider than its fields (`tuple_bytes`), the
// rest being opaque payload. The default schema is today's tuple: seq, then
// `key` (u32), then payload, so a deployment that names no schema is what it
// always was.
//
// Lifecycle:
//   1. Schema::make() checks names and widths and computes every offset once;
//   2. operators resolve a field by name to a FieldRef (offset + type) when they
//      are made, never per tuple;
//   3. describe() is the text both ends of a link compare at the handshake, and
//      the text an error prints when they differ.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace sluice {

enum class FieldType : uint8_t {
  kI32,        // 4 bytes, signed
  kI64,        // 8 bytes, signed
  kU32,        // 4 bytes, unsigned (the default schema's `key`)
  kU64,        // 8 bytes, unsigned
  kF64,        // 8 bytes, IEEE double
  kTimestamp,  // 8 bytes, nanoseconds (u64)
  kBytes,      // fixed-length bytes, width given
};
const char* field_type_name(FieldType t);
// "i32", "i64", "u32", "u64", "f64", "timestamp", "bytes"; false if unknown.
bool parse_field_type(std::string_view s, FieldType* out);
// 4 or 8 for the numeric types, 0 for bytes (its width is declared).
uint32_t field_type_width(FieldType t);

struct FieldSpec {
  std::string name;
  FieldType type = FieldType::kU64;
  uint32_t width = 0;  // bytes only; numeric types have their own
};

// Text (a file's cell, a constant in an expression) as a value of a numeric
// type, widened to 8 bytes: int64 for i32/i64, uint64 for u32/u64/timestamp,
// the double's bits for f64; strtoll/strtoull/strtod rules (0x... allowed),
// the whole text, in range of the type. false: empty, not a number, out of
// range, or bytes. The low width bytes are the field's own (little-endian).
bool parse_field_value(std::string_view text, FieldType t, uint64_t* bits);

// Where a field lives in a tuple, resolved once.
struct FieldRef {
  uint32_t offset = 0;
  FieldType type = FieldType::kU64;
  uint32_t width = 8;
};

// The value of a numeric field as a signed 64-bit integer (u64 above 2^63
// wraps, f64 truncates). Kernels with a fixed type read the field directly.
inline int64_t load_i64(const std::byte* tuple, const FieldRef& f) {
  switch (f.type) {
    case FieldType::kI32: { int32_t v; std::memcpy(&v, tuple + f.offset, 4); return v; }
    case FieldType::kU32: { uint32_t v; std::memcpy(&v, tuple + f.offset, 4); return v; }
    case FieldType::kF64: { double v; std::memcpy(&v, tuple + f.offset, 8); return static_cast<int64_t>(v); }
    default: { int64_t v; std::memcpy(&v, tuple + f.offset, 8); return v; }
  }
}
inline double load_f64(const std::byte* tuple, const FieldRef& f) {
  if (f.type == FieldType::kF64) { double v; std::memcpy(&v, tuple + f.offset, 8); return v; }
  if (f.type == FieldType::kU64 || f.type == FieldType::kTimestamp) {
    uint64_t v; std::memcpy(&v, tuple + f.offset, 8); return static_cast<double>(v);
  }
  return static_cast<double>(load_i64(tuple, f));
}

class Schema {
 public:
  static constexpr uint32_t kSeqBytes = 8;  // the `seq` field every tuple starts with

  // `fields` excludes `seq`, which is always first. tuple_bytes 0: exactly the
  // fields; else at least their width (the rest is payload).
  static Status make(std::string name, std::vector<FieldSpec> fields, uint32_t tuple_bytes,
                     Schema* out);
  // seq, key (u32), payload up to tuple_bytes (>= 12): today's tuple.
  static Schema default_for(uint32_t tuple_bytes);

  const std::string& name() const { return name_; }
  uint32_t tuple_bytes() const { return tuple_bytes_; }
  // Declared fields, `seq` first.
  const std::vector<FieldSpec>& fields() const { return fields_; }
  const std::vector<uint32_t>& offsets() const { return offsets_; }
  // Finds a field by name; false (and *out untouched) if there is none.
  bool find(std::string_view field, FieldRef* out) const;
  // "name{seq:u64,key:u32,p0:i64,...;tuple_bytes=N}": compared at the handshake.
  std::string describe() const;
  // Same fields, types, widths and tuple size (the name may differ).
  bool same_layout(const Schema& o) const;

 private:
  std::string name_;
  std::vector<FieldSpec> fields_;
  std::vector<uint32_t> offsets_;
  uint32_t tuple_bytes_ = 0;
};

}  // namespace sluice
