#include "codec/record.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace sluice {
namespace {

using Kind = RecordError::Kind;

// Columns a jsonl decoder tracks per record (a bitset on the stack).
constexpr size_t kMaxColumns = 1024;
// Nesting a jsonl decoder reads over in a value it skips.
constexpr int kMaxDepth = 64;
// The most bytes a number takes as text: "-9223372036854775808" (20), or a
// double's shortest form, "-2.2250738585072014e-308" (24).
constexpr size_t kNumberChars = 32;

bool is_int(FieldType t) { return t != FieldType::kF64 && t != FieldType::kBytes; }

template <class T>
Kind from_chars_into(const char* p, const char* e, std::byte* dst, const char** stop) {
  T v;
  const auto r = std::from_chars(p, e, v);
  *stop = r.ptr;
  if (r.ec == std::errc()) {
    std::memcpy(dst, &v, sizeof v);
    return Kind::kNone;
  }
  return r.ec == std::errc::result_out_of_range ? Kind::kOutOfRange : Kind::kNotANumber;
}

// A number of f's type at p into its place in the tuple. *stop: where the
// parse stopped (the first byte not part of the number).
Kind parse_number(const char* p, const char* e, const FieldRef& f, std::byte* tuple, const char** stop) {
  std::byte* dst = tuple + f.offset;
  switch (f.type) {
    case FieldType::kI32: return from_chars_into<int32_t>(p, e, dst, stop);
    case FieldType::kI64: return from_chars_into<int64_t>(p, e, dst, stop);
    case FieldType::kU32:
    case FieldType::kU64:
    case FieldType::kTimestamp: {
      if (p < e && *p == '-') {  // a negative number, or no number at all
        int64_t v;
        const auto r = std::from_chars(p, e, v);
        *stop = r.ptr;
        return r.ptr == p ? Kind::kNotANumber : Kind::kOutOfRange;
      }
      return f.type == FieldType::kU32 ? from_chars_into<uint32_t>(p, e, dst, stop)
                                       : from_chars_into<uint64_t>(p, e, dst, stop);
    }
    case FieldType::kF64: return from_chars_into<double>(p, e, dst, stop);
    case FieldType::kBytes: break;
  }
  *stop = p;
  return Kind::kNotAValue;
}

// Text into a bytes field: at most its width, zero-padded.
bool put_text(const char* p, size_t n, const FieldRef& f, std::byte* tuple) {
  if (n > f.width) return false;
  std::memcpy(tuple + f.offset, p, n);
  std::memset(tuple + f.offset + n, 0, f.width - n);
  return true;
}

const char* find_char(const char* p, const char* e, char c) {
  const void* q = std::memchr(p, c, static_cast<size_t>(e - p));
  return q ? static_cast<const char*>(q) : e;
}

bool json_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
const char* skip_ws(const char* p, const char* e) {
  while (p < e && json_ws(*p)) ++p;
  return p;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// p at a JSON string's opening quote: its closing quote, or nullptr. *plain:
// no escapes in it.
const char* json_string_end(const char* p, const char* e, bool* plain) {
  *plain = true;
  for (++p; p < e; ++p) {
    if (*p == '"') return p;
    if (*p == '\\') {
      *plain = false;
      if (++p == e) return nullptr;
    }
  }
  return nullptr;
}

// The text of a JSON string [p, q) (without its quotes) unescaped into out
// (at most cap bytes). Returns the bytes written; -1 a bad escape (*bad at
// it), -2 more than cap.
long json_unescape(const char* p, const char* q, char* out, size_t cap, const char** bad) {
  size_t n = 0;
  auto put = [&](unsigned char c) {
    if (n == cap) return false;
    out[n++] = static_cast<char>(c);
    return true;
  };
  while (p < q) {
    if (*p != '\\') {
      if (!put(static_cast<unsigned char>(*p++))) return -2;
      continue;
    }
    *bad = p;
    if (p + 1 >= q) return -1;
    const char c = p[1];
    p += 2;
    unsigned char simple = 0;
    switch (c) {
      case '"': simple = '"'; break;
      case '\\': simple = '\\'; break;
      case '/': simple = '/'; break;
      case 'b': simple = '\b'; break;
      case 'f': simple = '\f'; break;
      case 'n': simple = '\n'; break;
      case 'r': simple = '\r'; break;
      case 't': simple = '\t'; break;
      case 'u': break;
      default: return -1;
    }
    if (c != 'u') {
      if (!put(simple)) return -2;
      continue;
    }
    auto hex4 = [&](const char* h, uint32_t* v) {
      if (q - h < 4) return false;
      *v = 0;
      for (int i = 0; i < 4; ++i) {
        const int d = hex_digit(h[i]);
        if (d < 0) return false;
        *v = *v << 4 | static_cast<uint32_t>(d);
      }
      return true;
    };
    uint32_t cp;
    if (!hex4(p, &cp)) return -1;
    p += 4;
    if (cp >= 0xD800 && cp < 0xDC00) {  // a high surrogate: its low half follows
      uint32_t lo;
      if (q - p < 6 || p[0] != '\\' || p[1] != 'u' || !hex4(p + 2, &lo) || lo < 0xDC00 || lo >= 0xE000)
        return -1;
      p += 6;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    } else if (cp >= 0xDC00 && cp < 0xE000) {
      return -1;
    }
    // As UTF-8.
    bool ok;
    if (cp < 0x80) {
      ok = put(static_cast<unsigned char>(cp));
    } else if (cp < 0x800) {
      ok = put(0xC0 | cp >> 6) && put(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      ok = put(0xE0 | cp >> 12) && put(0x80 | (cp >> 6 & 0x3F)) && put(0x80 | (cp & 0x3F));
    } else {
      ok = put(0xF0 | cp >> 18) && put(0x80 | (cp >> 12 & 0x3F)) && put(0x80 | (cp >> 6 & 0x3F)) &&
           put(0x80 | (cp & 0x3F));
    }
    if (!ok) return -2;
  }
  return static_cast<long>(n);
}

// Over one JSON value at p (skip_ws done): its end, or nullptr if it is
// none. Depth-limited: nesting deeper than kMaxDepth is an error.
const char* skip_json_value(const char* p, const char* e, int depth) {
  if (p >= e) return nullptr;
  if (*p == '"') {
    bool plain;
    const char* q = json_string_end(p, e, &plain);
    return q ? q + 1 : nullptr;
  }
  if (*p == '{' || *p == '[') {
    if (depth >= kMaxDepth) return nullptr;
    const char close = *p == '{' ? '}' : ']';
    p = skip_ws(p + 1, e);
    if (p < e && *p == close) return p + 1;
    for (;;) {
      if (close == '}') {
        if (p >= e || *p != '"') return nullptr;
        p = skip_json_value(p, e, depth + 1);
        if (!p) return nullptr;
        p = skip_ws(p, e);
        if (p >= e || *p != ':') return nullptr;
        p = skip_ws(p + 1, e);
      }
      p = skip_json_value(p, e, depth + 1);
      if (!p) return nullptr;
      p = skip_ws(p, e);
      if (p >= e) return nullptr;
      if (*p == close) return p + 1;
      if (*p != ',') return nullptr;
      p = skip_ws(p + 1, e);
    }
  }
  // A number or a literal: up to the next structural character.
  const char* q = p;
  while (q < e && !json_ws(*q) && *q != ',' && *q != '}' && *q != ']' && *q != ':') ++q;
  return q == p ? nullptr : q;
}

// The end of a csv value that starts at p (a quoted one's closing quote + 1),
// or nullptr for an unterminated quote.
const char* csv_value_end(const char* p, const char* e) {
  if (p < e && *p == '"') {
    for (++p; p < e; ++p)
      if (*p == '"') {
        if (p + 1 < e && p[1] == '"') ++p;
        else return p + 1;
      }
    return nullptr;
  }
  return find_char(p, e, ',');
}

// A quoted csv value [p, q) (q at the closing quote) without its quotes and
// with "" made ", into out (at most cap bytes). -1: more than cap.
long csv_unquote(const char* p, const char* q, char* out, size_t cap) {
  size_t n = 0;
  for (++p; p < q; ++p) {
    if (n == cap) return -1;
    out[n++] = *p;
    if (*p == '"') ++p;  // the second of ""
  }
  return static_cast<long>(n);
}

std::string quote_text(std::string_view s) {
  std::string out;
  for (const unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F && c != '\'') out += static_cast<char>(c);
    else if (c == '\'') out += "\\'";
    else out += fmt::format("\\x{:02x}", c);
  }
  return out;
}

std::string type_text(const FieldRef& f) {
  return f.type == FieldType::kBytes ? fmt::format("bytes, width {}", f.width) : field_type_name(f.type);
}

std::string range_text(FieldType t) {
  switch (t) {
    case FieldType::kI32: return "-2147483648..2147483647";
    case FieldType::kI64: return "-9223372036854775808..9223372036854775807";
    case FieldType::kU32: return "0..4294967295";
    case FieldType::kU64:
    case FieldType::kTimestamp: return "0..18446744073709551615";
    default: return "a double's range";
  }
}

}  // namespace

const char* record_format_name(RecordFormat f) {
  switch (f) {
    case RecordFormat::kCsv: return "csv";
    case RecordFormat::kJsonl: return "jsonl";
    case RecordFormat::kBinary: return "binary";
  }
  return "?";
}

bool parse_record_format(std::string_view s, RecordFormat* out) {
  for (RecordFormat f : {RecordFormat::kCsv, RecordFormat::kJsonl, RecordFormat::kBinary})
    if (s == record_format_name(f)) {
      *out = f;
      return true;
    }
  return false;
}

// --- the decoder ---------------------------------------------------------------

Status RecordDecoder::make(const Schema& schema, RecordFormat format, std::vector<std::string> columns,
                           RecordDecoder* out) {
  RecordDecoder d;
  d.format_ = format;
  d.schema_name_ = schema.name();
  const auto& fields = schema.fields();
  if (columns.empty())
    for (size_t i = 1; i < fields.size(); ++i) columns.push_back(fields[i].name);
  if (columns.size() > kMaxColumns)
    return Status::Error(fmt::format("{} columns, more than the {} a record may have", columns.size(), kMaxColumns));
  std::vector<bool> filled(fields.size(), false);
  for (std::string& name : columns) {
    RecordColumn c;
    c.name = std::move(name);
    size_t fi = 0;
    while (fi < fields.size() && fields[fi].name != c.name) ++fi;
    if (fi == fields.size() || fi == 0) {
      if (format == RecordFormat::kBinary)
        return Status::Error(
            fi == 0 ? std::string("binary column 'seq': the source numbers its tuples, a record holds no seq")
                    : fmt::format("binary column '{}' names no field of schema '{}' (its width is unknown)",
                                  c.name, schema.name()));
      c.skip = true;
    } else {
      if (filled[fi])
        return Status::Error(fmt::format("column '{}' appears twice", c.name));
      filled[fi] = true;
      schema.find(c.name, &c.ref);
      ++d.fields_;
      d.record_bytes_ += c.ref.width;
    }
    d.columns_.push_back(std::move(c));
  }
  for (size_t fi = 1; fi < fields.size(); ++fi)
    if (!filled[fi]) {
      std::string have;
      for (const auto& c : d.columns_) have += (have.empty() ? "" : ", ") + c.name;
      return Status::Error(fmt::format("field '{}' of schema '{}' has no column (the columns: {})",
                                       fields[fi].name, schema.name(), have.empty() ? "none" : have));
    }
  // binary: the declared fields in order are the tuple's bytes after seq.
  if (format == RecordFormat::kBinary) {
    d.one_copy_ = true;
    uint32_t at = Schema::kSeqBytes;
    for (const auto& c : d.columns_) {
      d.one_copy_ = d.one_copy_ && c.ref.offset == at;
      at += c.ref.width;
    }
    d.copy_bytes_ = at - Schema::kSeqBytes;
  }
  *out = std::move(d);
  return {};
}

bool RecordDecoder::decode(std::string_view record, std::byte* tuple, RecordError* err) const {
  switch (format_) {
    case RecordFormat::kCsv: return decode_csv(record, tuple, err);
    case RecordFormat::kJsonl: return decode_json(record, tuple, err);
    case RecordFormat::kBinary: return decode_binary(record, tuple, err);
  }
  return false;
}

bool RecordDecoder::decode_csv(std::string_view rec, std::byte* tuple, RecordError* err) const {
  const char* const b = rec.data();
  const char* const e = b + rec.size();
  const char* p = b;
  const size_t n = columns_.size();
  auto fail = [&](Kind k, const char* at, const char* to, size_t col) {
    err->kind = k;
    err->offset = static_cast<uint32_t>(at - b);
    err->length = static_cast<uint32_t>(to - at);
    err->column = static_cast<int>(col);
    return false;
  };
  for (size_t i = 0; i < n; ++i) {
    const RecordColumn& c = columns_[i];
    const char* q;  // the end of this value
    if (p < e && *p == '"') {
      q = csv_value_end(p, e);
      if (!q) {
        err->expected = "a closing quote before the record's end";
        return fail(Kind::kBadQuote, p, e, i);
      }
      if (q < e && *q != ',') {
        err->expected = "',' after the closing quote";
        return fail(Kind::kBadQuote, p, find_char(q, e, ','), i);
      }
      if (!c.skip) {
        const char* in = p + 1;
        const char* close = q - 1;
        if (c.ref.type == FieldType::kBytes) {
          char* dst = reinterpret_cast<char*>(tuple + c.ref.offset);
          const long got = csv_unquote(p, close, dst, c.ref.width);
          if (got < 0) return fail(Kind::kTooLong, p, q, i);
          std::memset(dst + got, 0, c.ref.width - static_cast<size_t>(got));
        } else {
          const char* stop;
          if (in == close) return fail(Kind::kEmpty, p, q, i);
          const Kind k = parse_number(in, close, c.ref, tuple, &stop);
          if (k != Kind::kNone || stop != close)
            return fail(k == Kind::kNone ? Kind::kNotANumber : k, in, close, i);
        }
      }
    } else if (c.skip) {
      q = find_char(p, e, ',');
    } else if (c.ref.type == FieldType::kBytes) {
      q = find_char(p, e, ',');
      if (!put_text(p, static_cast<size_t>(q - p), c.ref, tuple)) return fail(Kind::kTooLong, p, q, i);
    } else {
      // The number ends at a ',' or the record's end; no search for the ','
      // first: the parse finds it.
      const Kind k = parse_number(p, e, c.ref, tuple, &q);
      if (k != Kind::kNone || (q != e && *q != ',')) {
        const char* to = find_char(p, e, ',');
        if (to == p) return fail(Kind::kEmpty, p, p, i);
        return fail(k == Kind::kNone ? Kind::kNotANumber : k, p, to, i);
      }
      if (q == p) return fail(Kind::kEmpty, p, p, i);
    }
    // q is at the ',' after the value, or the record's end.
    if (i + 1 < n) {
      if (q == e) return fail(Kind::kTooFewColumns, e, e, i + 1);
      p = q + 1;
    } else if (q != e) {
      return fail(Kind::kTooManyColumns, q, e, i);
    }
  }
  return true;
}

int RecordDecoder::json_column(std::string_view key, int hint) const {
  const int n = static_cast<int>(columns_.size());
  if (hint < n && columns_[hint].name == key) return hint;  // the fields in the expected order
  for (int i = 0; i < n; ++i)
    if (columns_[i].name == key) return i;
  return -1;
}

bool RecordDecoder::decode_json(std::string_view rec, std::byte* tuple, RecordError* err) const {
  const char* const b = rec.data();
  const char* const e = b + rec.size();
  auto fail = [&](Kind k, const char* at, const char* to, int col, const char* expected = "") {
    err->kind = k;
    err->offset = static_cast<uint32_t>(at - b);
    err->length = static_cast<uint32_t>(std::max(at, to) - at);
    err->column = col;
    err->expected = expected;
    return false;
  };
  auto token_end = [&](const char* p) {
    const char* q = skip_json_value(p, e, 0);
    return q ? q : std::min(e, p + 1);
  };
  const char* p = skip_ws(b, e);
  if (p == e || *p != '{') return fail(Kind::kSyntax, p, token_end(p), -1, "'{' to open the record");
  p = skip_ws(p + 1, e);
  std::bitset<kMaxColumns> seen;
  uint32_t found = 0;
  int hint = 0;
  if (p < e && *p == '}') {
    ++p;
  } else {
    for (;;) {
      if (p == e || *p != '"') return fail(Kind::kSyntax, p, token_end(p), -1, "a '\"' to open a key");
      bool plain;
      const char* kq = json_string_end(p, e, &plain);
      if (!kq) return fail(Kind::kSyntax, p, e, -1, "a '\"' to close the key");
      const char* key_at = p;
      std::string_view key(p + 1, static_cast<size_t>(kq - p - 1));
      char scratch[256];
      if (!plain) {
        const char* bad = nullptr;
        const long got = json_unescape(p + 1, kq, scratch, sizeof scratch, &bad);
        if (got == -1) return fail(Kind::kSyntax, bad, std::min(e, bad + 6), -1, "a valid escape");
        key = got < 0 ? std::string_view() : std::string_view(scratch, static_cast<size_t>(got));
      }
      p = skip_ws(kq + 1, e);
      if (p == e || *p != ':') return fail(Kind::kSyntax, p, token_end(p), -1, "':' after the key");
      p = skip_ws(p + 1, e);
      const int col = key.empty() ? -1 : json_column(key, hint);
      if (col < 0 || columns_[col].skip) {
        const char* q = skip_json_value(p, e, 0);
        if (!q) return fail(Kind::kSyntax, p, token_end(p), -1, "a JSON value");
        p = q;
      } else {
        const RecordColumn& c = columns_[col];
        if (seen[col]) return fail(Kind::kDuplicateField, key_at, kq + 1, col);
        if (p == e) return fail(Kind::kSyntax, p, p, col, "a value");
        if (*p == '"') {
          bool splain;
          const char* sq = json_string_end(p, e, &splain);
          if (!sq) return fail(Kind::kSyntax, p, e, col, "a '\"' to close the string");
          if (c.ref.type == FieldType::kBytes) {
            char* dst = reinterpret_cast<char*>(tuple + c.ref.offset);
            const char* bad = nullptr;
            const long got = json_unescape(p + 1, sq, dst, c.ref.width, &bad);
            if (got == -1) return fail(Kind::kSyntax, bad, std::min(e, bad + 6), col, "a valid escape");
            if (got == -2) return fail(Kind::kTooLong, p, sq + 1, col);
            std::memset(dst + got, 0, c.ref.width - static_cast<size_t>(got));
          } else {
            // A number as a string ("17"): its text alone, no escapes.
            const char* stop;
            if (sq == p + 1) return fail(Kind::kEmpty, p, sq + 1, col);
            const Kind k = splain ? parse_number(p + 1, sq, c.ref, tuple, &stop) : Kind::kNotANumber;
            if (k != Kind::kNone || stop != sq)
              return fail(k == Kind::kNone ? Kind::kNotANumber : k, p, sq + 1, col);
          }
          p = sq + 1;
        } else if (*p == '{' || *p == '[' || *p == 't' || *p == 'f' || *p == 'n') {
          return fail(Kind::kNotAValue, p, token_end(p), col);
        } else if (c.ref.type == FieldType::kBytes) {
          return fail(Kind::kNotAValue, p, token_end(p), col);
        } else {
          const char* stop;
          const Kind k = parse_number(p, e, c.ref, tuple, &stop);
          const bool ends = stop == e || json_ws(*stop) || *stop == ',' || *stop == '}';
          if (k != Kind::kNone || !ends || stop == p)
            return fail(k == Kind::kNone ? Kind::kNotANumber : k, p, token_end(p), col);
          p = stop;
        }
        seen[col] = true;
        ++found;
        hint = col + 1;
      }
      p = skip_ws(p, e);
      if (p < e && *p == ',') {
        p = skip_ws(p + 1, e);
        continue;
      }
      if (p < e && *p == '}') {
        ++p;
        break;
      }
      return fail(Kind::kSyntax, p, token_end(p), -1, "',' or '}' after a value");
    }
  }
  const char* close = p - 1;
  p = skip_ws(p, e);
  if (p != e) return fail(Kind::kSyntax, p, e, -1, "the record's end after its '}'");
  if (found < fields_)
    for (size_t i = 0; i < columns_.size(); ++i)
      if (!columns_[i].skip && !seen[i]) return fail(Kind::kMissingField, close, close + 1, static_cast<int>(i));
  return true;
}

bool RecordDecoder::decode_binary(std::string_view rec, std::byte* tuple, RecordError* err) const {
  if (rec.size() != record_bytes_) {
    err->kind = Kind::kRecordSize;
    err->offset = 0;
    err->length = static_cast<uint32_t>(std::min<size_t>(rec.size(), UINT32_MAX));
    err->column = -1;
    return false;
  }
  if (one_copy_) {
    std::memcpy(tuple + Schema::kSeqBytes, rec.data(), copy_bytes_);
    return true;
  }
  const char* p = rec.data();
  for (const RecordColumn& c : columns_) {
    std::memcpy(tuple + c.ref.offset, p, c.ref.width);
    p += c.ref.width;
  }
  return true;
}

std::string RecordDecoder::explain(const RecordError& e, std::string_view record, std::string_view where) const {
  const size_t at = std::min<size_t>(e.offset, record.size());
  std::string_view text = record.substr(at, std::min<size_t>(e.length, record.size() - at));
  const bool cut = text.size() > 40;
  const std::string shown = "'" + quote_text(text.substr(0, 40)) + (cut ? "'..." : "'");
  std::string field;
  if (e.column >= 0 && static_cast<size_t>(e.column) < columns_.size()) {
    const RecordColumn& c = columns_[e.column];
    field = c.skip ? fmt::format("column {} ({})", e.column + 1, c.name)
                   : fmt::format("field {} ({})", c.name, type_text(c.ref));
  }
  std::string what;
  switch (e.kind) {
    case Kind::kNone: what = "no error"; break;
    case Kind::kNotANumber:
      what = fmt::format("{}: {} is not {}", field, shown,
                         is_int(columns_[e.column].ref.type) ? "an integer" : "a number");
      break;
    case Kind::kOutOfRange:
      what = fmt::format("{}: {} does not fit {} ({})", field, shown,
                         field_type_name(columns_[e.column].ref.type), range_text(columns_[e.column].ref.type));
      break;
    case Kind::kEmpty: what = fmt::format("{}: empty value", field); break;
    case Kind::kTooLong:
      what = fmt::format("{}: {} is longer than the field's {} bytes", field, shown, columns_[e.column].ref.width);
      break;
    case Kind::kTooFewColumns:
      what = fmt::format("{} of {} values: nothing for column {} ({})", e.column, columns_.size(), e.column + 1,
                         columns_[e.column].name);
      break;
    case Kind::kTooManyColumns:
      what = fmt::format("more than the {} values expected: {} after the last", columns_.size(), shown);
      break;
    case Kind::kBadQuote:
      what = fmt::format("{}{}expected {}: {}", field, field.empty() ? "" : ": ", e.expected, shown);
      break;
    case Kind::kMissingField:
      what = fmt::format("no field '{}' in the object", columns_[e.column].name);
      break;
    case Kind::kDuplicateField: what = fmt::format("field '{}' given twice", columns_[e.column].name); break;
    case Kind::kNotAValue:
      what = fmt::format("{}: {} is not {}", field, shown,
                         columns_[e.column].ref.type == FieldType::kBytes ? "a string" : "a number");
      break;
    case Kind::kSyntax:
      what = fmt::format("not a flat JSON object: expected {}, found {}", e.expected,
                         text.empty() ? std::string("the record's end") : shown);
      break;
    case Kind::kRecordSize: {
      std::string layout;
      for (const auto& c : columns_) layout += fmt::format("{}{}:{}", layout.empty() ? "" : ", ", c.name, c.ref.width);
      return fmt::format("{}: a record of {} bytes, not {} (the columns' bytes: {})", where, e.length,
                         record_bytes_, layout);
    }
  }
  return fmt::format("{}:{}: {}", where, at + 1, what);
}

// --- the encoder ---------------------------------------------------------------

Status RecordEncoder::make(const Schema& schema, RecordFormat format, std::vector<std::string> columns,
                           RecordEncoder* out) {
  RecordEncoder enc;
  enc.format_ = format;
  const auto& fields = schema.fields();
  if (columns.empty())
    for (size_t i = 1; i < fields.size(); ++i) columns.push_back(fields[i].name);
  size_t max = format == RecordFormat::kJsonl ? 2 : 0;
  for (std::string& name : columns) {
    RecordColumn c;
    c.name = std::move(name);
    if (!schema.find(c.name, &c.ref)) {
      std::string have;
      for (const auto& f : fields) have += (have.empty() ? "" : ", ") + f.name;
      return Status::Error(fmt::format("column '{}' names no field of schema '{}' (its fields: {})", c.name,
                                       schema.name(), have));
    }
    const bool bytes = c.ref.type == FieldType::kBytes;
    switch (format) {
      case RecordFormat::kCsv: max += 1 + (bytes ? 2 + 2 * size_t{c.ref.width} : kNumberChars); break;
      case RecordFormat::kJsonl:
        // A bytes field's worst case: every byte as \u00XX.
        max += 1 + c.name.size() + 3 + (bytes ? 2 + 6 * size_t{c.ref.width} : kNumberChars);
        enc.json_keys_.push_back("\"" + c.name + "\":");  // field names need no escapes
        break;
      case RecordFormat::kBinary: max += c.ref.width; break;
    }
    enc.columns_.push_back(std::move(c));
  }
  enc.max_bytes_ = max;
  *out = std::move(enc);
  return {};
}

std::string RecordEncoder::csv_header() const {
  std::string h;
  for (const auto& c : columns_) h += (h.empty() ? "" : ",") + c.name;
  return h;
}

namespace {

char* put_number(const std::byte* tuple, const FieldRef& f, char* o, bool json) {
  const std::byte* src = tuple + f.offset;
  char* const end = o + kNumberChars;
  switch (f.type) {
    case FieldType::kI32: { int32_t v; std::memcpy(&v, src, 4); return std::to_chars(o, end, v).ptr; }
    case FieldType::kI64: { int64_t v; std::memcpy(&v, src, 8); return std::to_chars(o, end, v).ptr; }
    case FieldType::kU32: { uint32_t v; std::memcpy(&v, src, 4); return std::to_chars(o, end, v).ptr; }
    case FieldType::kF64: {
      double v;
      std::memcpy(&v, src, 8);
      // JSON has no inf or nan: they go as strings, which its decoder reads back.
      const bool quote = json && (v != v || v - v != 0);
      if (quote) *o++ = '"';
      o = std::to_chars(o, end - 1, v).ptr;
      if (quote) *o++ = '"';
      return o;
    }
    default: { uint64_t v; std::memcpy(&v, src, 8); return std::to_chars(o, end, v).ptr; }
  }
}

size_t text_bytes(const std::byte* p, uint32_t width) {
  size_t n = width;
  while (n > 0 && p[n - 1] == std::byte{0}) --n;
  return n;
}

}  // namespace

size_t RecordEncoder::encode(const std::byte* tuple, char* out) const {
  char* o = out;
  switch (format_) {
    case RecordFormat::kBinary:
      for (const RecordColumn& c : columns_) {
        std::memcpy(o, tuple + c.ref.offset, c.ref.width);
        o += c.ref.width;
      }
      break;
    case RecordFormat::kCsv:
      for (size_t i = 0; i < columns_.size(); ++i) {
        const RecordColumn& c = columns_[i];
        if (i) *o++ = ',';
        if (c.ref.type != FieldType::kBytes) {
          o = put_number(tuple, c.ref, o, false);
          continue;
        }
        const char* s = reinterpret_cast<const char*>(tuple + c.ref.offset);
        const size_t n = text_bytes(tuple + c.ref.offset, c.ref.width);
        bool quote = false;
        for (size_t k = 0; k < n && !quote; ++k) quote = s[k] == ',' || s[k] == '"' || s[k] == '\n' || s[k] == '\r';
        if (!quote) {
          std::memcpy(o, s, n);
          o += n;
          continue;
        }
        *o++ = '"';
        for (size_t k = 0; k < n; ++k) {
          if (s[k] == '"') *o++ = '"';
          *o++ = s[k];
        }
        *o++ = '"';
      }
      break;
    case RecordFormat::kJsonl:
      *o++ = '{';
      for (size_t i = 0; i < columns_.size(); ++i) {
        const RecordColumn& c = columns_[i];
        if (i) *o++ = ',';
        std::memcpy(o, json_keys_[i].data(), json_keys_[i].size());
        o += json_keys_[i].size();
        if (c.ref.type != FieldType::kBytes) {
          o = put_number(tuple, c.ref, o, true);
          continue;
        }
        const unsigned char* s = reinterpret_cast<const unsigned char*>(tuple + c.ref.offset);
        const size_t n = text_bytes(tuple + c.ref.offset, c.ref.width);
        *o++ = '"';
        for (size_t k = 0; k < n; ++k) {
          const unsigned char ch = s[k];
          if (ch == '"' || ch == '\\') {
            *o++ = '\\';
            *o++ = static_cast<char>(ch);
          } else if (ch < 0x20) {
            static const char kHex[] = "0123456789abcdef";
            std::memcpy(o, "\\u00", 4);
            o[4] = kHex[ch >> 4];
            o[5] = kHex[ch & 15];
            o += 6;
          } else {
            *o++ = static_cast<char>(ch);
          }
        }
        *o++ = '"';
      }
      *o++ = '}';
      break;
  }
  return static_cast<size_t>(o - out);
}

bool csv_header(std::string_view line, std::vector<std::string>* names, RecordError* err) {
  names->clear();
  const char* const b = line.data();
  const char* const e = b + line.size();
  const char* p = b;
  if (line.size() >= 3 && std::memcmp(b, "\xEF\xBB\xBF", 3) == 0) p += 3;  // a UTF-8 byte order mark
  for (;;) {
    const char* q = csv_value_end(p, e);
    if (!q || (q < e && *q != ',')) {
      err->kind = RecordError::Kind::kBadQuote;
      err->expected = q ? "',' after the closing quote" : "a closing quote before the line's end";
      err->offset = static_cast<uint32_t>(p - b);
      err->length = static_cast<uint32_t>(e - p);
      err->column = -1;
      return false;
    }
    if (p < e && *p == '"') {
      std::string name(static_cast<size_t>(q - p), '\0');
      name.resize(static_cast<size_t>(csv_unquote(p, q - 1, name.data(), name.size())));
      names->push_back(std::move(name));
    } else {
      names->emplace_back(p, q);
    }
    if (q == e) return true;
    p = q + 1;
  }
}

}  // namespace sluice
