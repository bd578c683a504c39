#include "graph/schema.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <climits>
#include <cerrno>
#include <unordered_set>

namespace sluice {

namespace {
struct TypeName {
  FieldType type;
  const char* name;
  uint32_t width;
};
constexpr TypeName kTypes[] = {
    {FieldType::kI32, "i32", 4},       {FieldType::kI64, "i64", 8},
    {FieldType::kU32, "u32", 4},       {FieldType::kU64, "u64", 8},
    {FieldType::kF64, "f64", 8},       {FieldType::kTimestamp, "timestamp", 8},
    {FieldType::kBytes, "bytes", 0},
};

bool valid_name(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return !std::isdigit(static_cast<unsigned char>(s[0]));
}
}  // namespace

const char* field_type_name(FieldType t) {
  for (const auto& e : kTypes) {
    if (e.type == t) return e.name;
  }
  return "?";
}

bool parse_field_type(std::string_view s, FieldType* out) {
  for (const auto& e : kTypes) {
    if (s == e.name) {
      *out = e.type;
      return true;
    }
  }
  return false;
}

uint32_t field_type_width(FieldType t) {
  for (const auto& e : kTypes) {
    if (e.type == t) return e.width;
  }
  return 0;
}

bool parse_field_value(std::string_view text, FieldType t, uint64_t* bits) {
  if (text.empty()) return false;
  const std::string s(text);
  errno = 0;
  char* end = nullptr;
  switch (t) {
    case FieldType::kI32:
    case FieldType::kI64: {
      const long long v = std::strtoll(s.c_str(), &end, 0);
      if (errno || *end) return false;
      if (t == FieldType::kI32 && (v < INT32_MIN || v > INT32_MAX)) return false;
      const int64_t i = v;
      std::memcpy(bits, &i, 8);
      return true;
    }
    case FieldType::kU32:
    case FieldType::kU64:
    case FieldType::kTimestamp: {
      if (s[0] == '-') return false;
      const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
      if (errno || *end) return false;
      if (t == FieldType::kU32 && v > UINT32_MAX) return false;
      const uint64_t u = v;
      std::memcpy(bits, &u, 8);
      return true;
    }
    case FieldType::kF64: {
      const double d = std::strtod(s.c_str(), &end);
      if (errno || *end) return false;
      std::memcpy(bits, &d, 8);
      return true;
    }
    case FieldType::kBytes:
      return false;
  }
  return false;
}

Status Schema::make(std::string name, std::vector<FieldSpec> fields, uint32_t tuple_bytes,
                    Schema* out) {
  Schema s;
  s.name_ = std::move(name);
  s.fields_.push_back({"seq", FieldType::kU64, 8});
  s.offsets_.push_back(0);
  uint32_t at = kSeqBytes;
  std::unordered_set<std::string> seen{"seq"};
  for (auto& f : fields) {
    if (!valid_name(f.name)) {
      return Status::Error(fmt::format("schema '{}': field name '{}' is not [A-Za-z_][A-Za-z0-9_]*",
                                       s.name_, f.name));
    }
    if (!seen.insert(f.name).second) {
      return Status::Error(f.name == "seq"
                               ? fmt::format("schema '{}': 'seq' is every tuple's first field "
                                             "(u64, the stream sequence); do not declare it",
                                             s.name_)
                               : fmt::format("schema '{}': field '{}' is declared twice",
                                             s.name_, f.name));
    }
    uint32_t w = field_type_width(f.type);
    if (f.type == FieldType::kBytes) {
      if (f.width == 0 || f.width > (1u << 20)) {
        return Status::Error(fmt::format(
            "schema '{}': field '{}' of type bytes needs a width of 1 to 1048576 bytes",
            s.name_, f.name));
      }
      w = f.width;
    } else if (f.width != 0 && f.width != w) {
      return Status::Error(fmt::format("schema '{}': field '{}' is {} ({} bytes), not {} bytes",
                                       s.name_, f.name, field_type_name(f.type), w, f.width));
    }
    f.width = w;
    s.offsets_.push_back(at);
    at += w;
    s.fields_.push_back(std::move(f));
  }
  if (tuple_bytes != 0 && tuple_bytes < at) {
    return Status::Error(fmt::format("schema '{}': its fields take {} bytes, more than tuple_bytes {}",
                                     s.name_, at, tuple_bytes));
  }
  s.tuple_bytes_ = tuple_bytes != 0 ? tuple_bytes : at;
  if (s.tuple_bytes_ < 12) {
    return Status::Error(fmt::format(
        "schema '{}': a tuple is at least 12 bytes (seq and a 4-byte field); this one is {}",
        s.name_, s.tuple_bytes_));
  }
  *out = std::move(s);
  return {};
}

Schema Schema::default_for(uint32_t tuple_bytes) {
  Schema s;
  Status st = make("default", {{"key", FieldType::kU32, 4}}, tuple_bytes < 12 ? 12 : tuple_bytes, &s);
  (void)st;  // cannot fail: 12 bytes or more, two valid fields
  return s;
}

bool Schema::find(std::string_view field, FieldRef* out) const {
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].name == field) {
      *out = {offsets_[i], fields_[i].type, fields_[i].width};
      return true;
    }
  }
  return false;
}

std::string Schema::describe() const {
  std::string s = name_ + "{";
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (i) s += ',';
    s += fields_[i].name;
    s += ':';
    s += field_type_name(fields_[i].type);
    if (fields_[i].type == FieldType::kBytes) s += fmt::format("[{}]", fields_[i].width);
  }
  s += fmt::format(";tuple_bytes={}}}", tuple_bytes_);
  return s;
}

bool Schema::same_layout(const Schema& o) const {
  if (tuple_bytes_ != o.tuple_bytes_ || fields_.size() != o.fields_.size()) return false;
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].name != o.fields_[i].name || fields_[i].type != o.fields_[i].type ||
        fields_[i].width != o.fields_[i].width) {
      return false;
    }
  }
  return true;
}

}  // namespace sluice
