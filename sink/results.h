// sink/: may include base/, transport/, graph/, node/ and codec/.
//
// A sink's results file (`results`): every tuple it receives, one record
// each, in csv (a header line, then a line per tuple), jsonl (a JSON object
// per line) or binary (the fields back to back), codec/record.h's formats.
//
//   tuple ──RecordEncoder──► buffer (1 MiB) ──write(2)──► PATH.part ──rename at END──► PATH
//
// Lifecycle:
//   1. prepare(): the columns resolved, the folder checked (a path that
//      cannot be written fails the sink at start); nothing written yet.
//   2. open(): PATH.part, fresh, or after a restored snapshot cut back to
//      what that snapshot saw written (written()).
//   3. write() per tuple: encoded into the buffer, written out when full;
//      memory stays the buffer whatever the stream's length.
//   4. finish() at END: written out, on disk (fdatasync), renamed to PATH.
//      A sink that dies first leaves PATH.part, never a PATH cut short.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "codec/record.h"
#include "graph/schema.h"

namespace sluice {

class ResultsFile {
 public:
  static constexpr size_t kBufferBytes = 1 << 20;

  ResultsFile() = default;
  ResultsFile(const ResultsFile&) = delete;
  ResultsFile& operator=(const ResultsFile&) = delete;
  ~ResultsFile();

  // `fields`: the columns by name; empty: `seq` and every field of the
  // schema (csv and jsonl leave bytes fields out).
  Status prepare(const std::string& path, const Schema& schema, RecordFormat format,
                 std::vector<std::string> fields);
  bool prepared() const { return !path_.empty(); }
  bool is_open() const { return fd_ >= 0; }
  // keep < 0: a fresh file; else the bytes a restored snapshot saw written.
  Status open(int64_t keep);

  Status write(const std::byte* tuple) {
    if (cap_ - used_ < room_) {
      if (Status st = flush(); !st) return st;
    }
    used_ += encoder_.encode(tuple, buf_.get() + used_);
    if (newline_) buf_[used_++] = '\n';
    return {};
  }
  // Writes out the buffer; *bytes: the file's length then (for a snapshot).
  Status written(int64_t* bytes);
  // At END: the rest written out, synced, PATH.part renamed to PATH.
  Status finish();
  // After a failure: the buffer dropped, PATH.part left as it is.
  void close();

  const std::string& path() const { return path_; }
  std::string part_path() const { return path_ + ".part"; }

 private:
  Status flush();

  std::string path_;
  RecordEncoder encoder_;
  bool newline_ = true;
  std::string header_;  // csv: the header line
  int fd_ = -1;
  std::unique_ptr<char[]> buf_;
  size_t cap_ = 0, used_ = 0, room_ = 0;  // room_: the most one record takes
  int64_t file_bytes_ = 0;                // written to the file so far
};

}  // namespace sluice
