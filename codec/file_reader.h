// codec/: may include base/, transport/ and graph/.
//
// A file of records, read through one fixed buffer: a file of any size in
// the same memory. Text formats (csv, jsonl) are lines ending in '\n' (a
// '\r' before it is dropped; empty lines are passed over; the last line
// needs no '\n'); binary is records of record_bytes back to back, and a
// file whose size is no multiple of it ends in one short record, which the
// decoder refuses with its size.
//
//   file ──read(2)──► buffer ──next()──► one record (a view into the buffer)
//
// A csv file's first line is its header: open() reads it (header()).
// Each record's position (where()) is "PATH:LINE" for text, "PATH: record
// N (byte B)" for binary: what an error names. A line longer than the
// buffer is an error naming it, not a reason to grow.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "codec/record.h"

namespace sluice {

class RecordFile {
 public:
  static constexpr size_t kDefaultBuffer = 1 << 20;

  RecordFile() = default;
  RecordFile(RecordFile&&) noexcept;
  RecordFile& operator=(RecordFile&&) noexcept;
  ~RecordFile();

  // Opens `path` (or, with fd >= 0, reads that descriptor, which it then
  // owns; `path` names it in messages). binary: `record_bytes` per record.
  // csv: reads the header line.
  static Status open(const std::string& path, RecordFormat format, uint32_t record_bytes, RecordFile* out,
                     size_t buffer_bytes = kDefaultBuffer, int fd = -1);

  // The next record in *rec (valid until the next call). False: the end of
  // the file (*st ok), or a read error or a line longer than the buffer
  // (*st says, naming the line).
  bool next(std::string_view* rec, Status* st) {
    if (binary_) {
      if (static_cast<size_t>(end_ - p_) >= record_bytes_) {
        *rec = std::string_view(p_, record_bytes_);
        at_ = p_;
        p_ += record_bytes_;
        ++line_;
        return true;
      }
    } else {
      while (p_ < end_) {
        const char* q = static_cast<const char*>(std::memchr(p_, '\n', static_cast<size_t>(end_ - p_)));
        if (!q) break;
        ++line_;
        const char* r = q > p_ && q[-1] == '\r' ? q - 1 : q;
        at_ = p_;
        p_ = q + 1;
        if (r == at_) continue;  // an empty line
        *rec = std::string_view(at_, static_cast<size_t>(r - at_));
        return true;
      }
    }
    return refill_next(rec, st);
  }

  // Where the last record came from: "PATH:LINE" (text) or "PATH: record N
  // (byte B)" (binary).
  std::string where() const;
  // The csv header's column names (empty for other formats).
  const std::vector<std::string>& header() const { return header_; }
  // The last record's line (text) or number (binary), from 1.
  uint64_t line() const { return line_; }
  // The file offset just after the last record: where a reader that has
  // taken it would go on.
  uint64_t offset() const { return buf_offset_ + static_cast<uint64_t>(p_ - buf_.get()); }
  // Goes on from `offset`, the last record having been line `line` (a
  // position offset() and line() gave). The header, if any, stays read.
  Status seek(uint64_t offset, uint64_t line);
  const std::string& path() const { return path_; }
  size_t buffer_bytes() const { return cap_; }
  // Bytes read from the file so far.
  uint64_t bytes_read() const { return read_total_; }

 private:
  bool refill_next(std::string_view* rec, Status* st);
  // Keeps [p_, end_), reads more after it. False at the end of the file.
  bool fill(Status* st);

  std::string path_;
  int fd_ = -1;
  bool binary_ = false;
  uint32_t record_bytes_ = 0;
  std::unique_ptr<char[]> buf_;
  size_t cap_ = 0;
  const char* p_ = nullptr;    // the next unread byte
  const char* end_ = nullptr;  // the end of what the buffer holds
  const char* at_ = nullptr;   // the last record's start
  uint64_t buf_offset_ = 0;    // the file offset of buf_[0]
  uint64_t line_ = 0;
  uint64_t read_total_ = 0;
  bool eof_ = false;
  std::vector<std::string> header_;
};

}  // namespace sluice
