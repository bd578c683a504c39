// codec/: may include base/, transport/ and graph/.
//
// Records: a tuple of a schema as the world outside sluice holds it, one
// record of CSV, JSON lines or raw binary. Files and Kafka topics hold
// records; a source decodes them into tuples, a sink encodes tuples into them.
//
//   record bytes ──decode──► tuple (in its slot)  ──encode──► record bytes
//
// Lifecycle:
//   1. RecordDecoder::make / RecordEncoder::make resolve the columns (the
//      schema's fields by name, in the record's order) once: each column's
//      offset, type and width; never per record.
//   2. decode() parses one record (its bytes without the line end) straight
//      into a tuple: numbers with std::from_chars, no copy, no allocation.
//      The tuple's `seq` is the caller's to set. A value that does not parse
//      or does not fit its field comes back as a RecordError (its byte
//      column and kind, no allocation); explain() makes the message once,
//      naming the position the caller gives ("in.csv:17", "in/2/1234").
//   3. encode() writes a tuple as one record (no line end) into a buffer of
//      at least max_bytes(); it cannot fail.
//
// The formats:
//   csv     values separated by ',', RFC 4180 quotes ("a,b", "say ""hi""")
//           around any value; no quoted line ends. A file's first line names
//           the columns (csv_header).
//   jsonl   one flat JSON object per record, fields by name in any order;
//           a number may also come as a string ("17"); keys that name no
//           column are skipped whatever they hold.
//   binary  the columns' values back to back, each at its field's width,
//           little-endian (the tuple's own layout after `seq`): a record is
//           record_bytes() long.
// Numbers: i32/i64/u32/u64/timestamp as decimal integers (a '-' only for the
// signed), f64 as std::from_chars reads it (decimal or exponent, inf, nan).
// A bytes field is text: at most its width bytes, zero-padded; encoded up to
// its trailing zeros.
#pragma once

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "graph/schema.h"

namespace sluice {

enum class RecordFormat : uint8_t { kCsv, kJsonl, kBinary };
const char* record_format_name(RecordFormat f);  // "csv", "jsonl", "binary"
bool parse_record_format(std::string_view s, RecordFormat* out);

// What went wrong in one record, without the text (made by explain()).
struct RecordError {
  enum class Kind : uint8_t {
    kNone,
    kNotANumber,      // a numeric field's text is no number of its type
    kOutOfRange,      // a number that does not fit its field (i32, u32, a '-' for unsigned)
    kEmpty,           // an empty value
    kTooLong,         // a bytes field's text longer than its width
    kTooFewColumns,   // csv: the record ended before the last column
    kTooManyColumns,  // csv: more values than columns
    kBadQuote,        // csv: an unterminated quote, or text after the closing one
    kMissingField,    // jsonl: a column's field absent from the object
    kDuplicateField,  // jsonl: a field given twice
    kNotAValue,       // jsonl: true/false/null/object/array where a field's value goes
    kSyntax,          // jsonl: not a flat JSON object (expected says what was wanted)
    kRecordSize,      // binary: a record that is not record_bytes() long
  };
  Kind kind = Kind::kNone;
  uint32_t offset = 0;   // where in the record (bytes from its start)
  uint32_t length = 0;   // the offending text's bytes from offset
  int column = -1;       // the column (index into columns()) it belongs to; -1: none
  const char* expected = "";  // kSyntax: what the parser wanted there
};

// One column: a field of the schema, resolved.
struct RecordColumn {
  std::string name;
  FieldRef ref;
  bool skip = false;  // a decoder's column that names no field (or `seq`): read over
};

class RecordDecoder {
 public:
  // `columns`: the record's columns by name, in its order (csv: the header;
  // binary: the layout; jsonl: the fields it must find). Empty: every
  // declared field after `seq`, in the schema's order. A csv or jsonl
  // column that names no field is skipped, as is `seq` (the source numbers
  // its tuples); a binary one is an error (its width is unknown). Every
  // declared field but `seq` must have a column.
  static Status make(const Schema& schema, RecordFormat format, std::vector<std::string> columns,
                     RecordDecoder* out);

  // Decodes one record into `tuple` (the schema's tuple_bytes; `seq` and
  // the bytes no column fills are left as they are). False: *err says why,
  // and the tuple holds whatever was written before the error.
  bool decode(std::string_view record, std::byte* tuple, RecordError* err) const;

  // "WHERE:COL: field p1 (i64): 'x1' is not an integer": the position the
  // caller names (file:line, topic/partition/offset), the 1-based byte
  // column, and what was wrong, quoting at most 40 bytes of the record.
  std::string explain(const RecordError& e, std::string_view record, std::string_view where) const;

  RecordFormat format() const { return format_; }
  const std::vector<RecordColumn>& columns() const { return columns_; }
  // binary: the bytes of one record.
  uint32_t record_bytes() const { return record_bytes_; }

 private:
  bool decode_csv(std::string_view rec, std::byte* tuple, RecordError* err) const;
  bool decode_json(std::string_view rec, std::byte* tuple, RecordError* err) const;
  bool decode_binary(std::string_view rec, std::byte* tuple, RecordError* err) const;
  int json_column(std::string_view key, int hint) const;

  RecordFormat format_ = RecordFormat::kCsv;
  std::vector<RecordColumn> columns_;
  uint32_t record_bytes_ = 0;
  uint32_t fields_ = 0;         // columns that fill a field
  bool one_copy_ = false;       // binary: the columns are the tuple's layout after seq
  uint32_t copy_bytes_ = 0;
  std::string schema_name_;
};

class RecordEncoder {
 public:
  // `columns`: the fields to write, by name, in order (`seq` may be one).
  // Empty: every declared field after `seq`. Each must name a field.
  static Status make(const Schema& schema, RecordFormat format, std::vector<std::string> columns,
                     RecordEncoder* out);

  // Writes one record of `tuple` into `out` (room for max_bytes()), without
  // a line end; returns its bytes.
  size_t encode(const std::byte* tuple, char* out) const;
  // The most bytes one record can take.
  size_t max_bytes() const { return max_bytes_; }
  // csv: the header line (the column names, no line end).
  std::string csv_header() const;

  RecordFormat format() const { return format_; }
  const std::vector<RecordColumn>& columns() const { return columns_; }

 private:
  RecordFormat format_ = RecordFormat::kCsv;
  std::vector<RecordColumn> columns_;
  std::vector<std::string> json_keys_;  // "\"name\":" per column
  size_t max_bytes_ = 0;
};

// A csv header line's column names (quotes undone). False: a bad quote, at
// *err.
bool csv_header(std::string_view line, std::vector<std::string>* names, RecordError* err);

}  // namespace sluice
