// sluice's client library: what every call speaks. Results are values, a
// stream's tuples are fixed-size rows of a schema, and an application names
// the end of a deployment it connects as (docs/API.md).
//
//   Code, Result   what a call did: back pressure and the stream's end are
//                  codes, never exceptions; an error says what, on which
//                  link, with which peer
//   Type, Field    one field of a tuple, resolved once: its offset and width
//   Layout         a tuple's fields in order, `seq` (u64) first
//   TupleRef       one tuple in place, typed access by Field (TupleView:
//                  read-only)
//   Connect        where the application's end is: a run directory, a
//                  deployment file, or a standalone node's address
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace sluice {

enum class Code : int {
  kOk = 0,
  kBackPressured = 1,  // no room within the timeout: the receivers gave no credit, the pool is full
  kClosed = 2,         // closed by the application, or the stream ended (a subscriber got END)
  kError = 3,          // the end failed; error() says what, on which link, with which peer
};
const char* code_name(Code c);  // "ok", "back pressured", "closed", "error"

// A call that can fail in words.
struct Result {
  Code code = Code::kOk;
  std::string message;  // "" when ok
  bool ok() const { return code == Code::kOk; }
  explicit operator bool() const { return ok(); }
};

// A field's type: integers and floats little-endian, bytes of a fixed width.
enum class Type : uint8_t { kI32, kI64, kU32, kU64, kF64, kTimestamp, kBytes };
const char* type_name(Type t);  // as a deployment's schemas: spell it ("i32", "f64", ...)

struct Field {
  std::string name;
  Type type = Type::kU64;
  uint32_t offset = 0;  // bytes from the tuple's first; set by Layout
  uint32_t width = 8;   // bytes (a kBytes field's own; the others' from the type)
};

// A numeric field resolved once with its own C++ type (Layout::typed):
// reading or writing it is one load or store at a fixed offset, no
// conversion. T: int32_t (i32), int64_t (i64), uint32_t (u32), uint64_t
// (u64, timestamp), double (f64).
template <class T>
struct TypedField {
  uint32_t offset = 0;
};

// The tuples of a stream: `seq` (u64, the stream's sequence number, written
// by the publisher's library) at offset 0, then the schema's fields packed
// in order; tuple_bytes may exceed them (the rest is opaque payload).
class Layout {
 public:
  Layout() = default;
  Layout(std::string name, std::vector<Field> fields, uint32_t tuple_bytes)
      : name_(std::move(name)), fields_(std::move(fields)), tuple_bytes_(tuple_bytes) {}
  const std::string& name() const { return name_; }
  const std::vector<Field>& fields() const { return fields_; }
  uint32_t tuple_bytes() const { return tuple_bytes_; }
  // The field named so, or nullptr.
  const Field* field(std::string_view name) const {
    for (const Field& f : fields_)
      if (f.name == name) return &f;
    return nullptr;
  }
  // The field named so as a TypedField<T>; false when there is none or T
  // is not its type.
  template <class T>
  bool typed(std::string_view name, TypedField<T>* out) const {
    const Field* f = field(name);
    if (!f || !is_type<T>(f->type)) return false;
    out->offset = f->offset;
    return true;
  }
  // "name{seq:u64,price:f64,...;tuple_bytes=N}", as the handshake compares it.
  std::string describe() const;
  template <class T>
  static bool is_type(Type t) {
    if constexpr (std::is_same_v<T, int32_t>) return t == Type::kI32;
    else if constexpr (std::is_same_v<T, int64_t>) return t == Type::kI64;
    else if constexpr (std::is_same_v<T, uint32_t>) return t == Type::kU32;
    else if constexpr (std::is_same_v<T, uint64_t>) return t == Type::kU64 || t == Type::kTimestamp;
    else if constexpr (std::is_same_v<T, double>) return t == Type::kF64;
    else return false;
  }

 private:
  std::string name_;
  std::vector<Field> fields_;
  uint32_t tuple_bytes_ = 0;
};

// One tuple's bytes. Numbers convert to the field's type as static_cast
// does; a bytes field takes (and gives) the value's bytes, up to its width.
template <class Byte>
class BasicTuple {
 public:
  explicit BasicTuple(Byte* p) : p_(p) {}
  Byte* data() const { return p_; }
  uint64_t seq() const { return get<uint64_t>(Field{"seq", Type::kU64, 0, 8}); }
  template <class T>
  T get(const Field& f) const {
    static_assert(std::is_arithmetic_v<T>);
    switch (f.type) {
      case Type::kI32: return static_cast<T>(load<int32_t>(f.offset));
      case Type::kU32: return static_cast<T>(load<uint32_t>(f.offset));
      case Type::kI64: return static_cast<T>(load<int64_t>(f.offset));
      case Type::kF64: return static_cast<T>(load<double>(f.offset));
      case Type::kU64:
      case Type::kTimestamp: return static_cast<T>(load<uint64_t>(f.offset));
      case Type::kBytes: break;
    }
    T v{};
    std::memcpy(&v, p_ + f.offset, f.width < sizeof v ? f.width : sizeof v);
    return v;
  }
  template <class T>
  void set(const Field& f, T v) const {
    static_assert(std::is_arithmetic_v<T> && !std::is_const_v<Byte>, "a read-only tuple");
    switch (f.type) {
      case Type::kI32: return store(f.offset, static_cast<int32_t>(v));
      case Type::kU32: return store(f.offset, static_cast<uint32_t>(v));
      case Type::kI64: return store(f.offset, static_cast<int64_t>(v));
      case Type::kF64: return store(f.offset, static_cast<double>(v));
      case Type::kU64:
      case Type::kTimestamp: return store(f.offset, static_cast<uint64_t>(v));
      case Type::kBytes: std::memcpy(p_ + f.offset, &v, f.width < sizeof v ? f.width : sizeof v);
    }
  }
  std::span<Byte> bytes(const Field& f) const { return {p_ + f.offset, f.width}; }
  template <class T>
  T get(TypedField<T> f) const {
    return load<T>(f.offset);
  }
  template <class T>
  void set(TypedField<T> f, std::type_identity_t<T> v) const {
    static_assert(!std::is_const_v<Byte>, "a read-only tuple");
    store(f.offset, v);
  }

 private:
  template <class T>
  T load(uint32_t off) const {
    T v;
    std::memcpy(&v, p_ + off, sizeof v);
    return v;
  }
  template <class T>
  void store(uint32_t off, T v) const {
    std::memcpy(p_ + off, &v, sizeof v);
  }
  Byte* p_;
};
using TupleRef = BasicTuple<std::byte>;
using TupleView = BasicTuple<const std::byte>;

// Where the application's end of a graph is: one of run_dir, deployment or
// address.
struct Connect {
  // A run directory that `sluice-deploy up` or `run` made: its
  // apps/PROCESS.json names the deployment, the links and the summary.
  std::string run_dir;
  // A deployment file (YAML) whose processes include `process`.
  std::string deployment;
  std::string process;  // the publisher's or subscriber's name in either
  // No file: a standalone sluice-node's listener (a publisher connects to
  // it) or the address a subscriber listens on (a node connects to it),
  // "host:port"; `set` gives the stream's keys (tuple_bytes, acks, ...).
  std::string address;
  std::string token;               // with address: the link's shared secret
  std::vector<std::string> set;    // KEY=VALUE overrides, as sluice-deploy --set
  uint32_t instance = 0;           // which copy of the graph (instances: N)
  // The tuples the application means to write or read (a binding's dtype),
  // `seq` left out; empty: the graph's. A layout that differs from the
  // graph's is refused: a publisher's at the handshake, by its receiver,
  // naming both schemas; a subscriber's when it opens.
  std::vector<Field> fields;
  uint32_t tuple_bytes = 0;        // with fields: 0, exactly the fields
  // Where the summary goes at close; "": the run directory's PROCESS.json
  // with run_dir, none otherwise.
  std::string summary;
};

}  // namespace sluice
