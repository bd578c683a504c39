// Operator snapshots: what a node that checkpoints writes to its state_dir
// and reads back when it is restarted (docs/DESIGN.md, "Operator
// snapshots"). This file is the format and its codec; node.cc decides when.
//
// A snapshot is taken between two descriptors, once every event the
// operators emitted before it was acknowledged downstream. It holds each
// operator's own state (Operator::save: the kernels' tables, compact) and,
// per input stream, the next event_seq the node expects, so a restored node
// drops what its upstream replays that the snapshot already holds.
//
// The file, little-endian:
//
//   offset  size  field
//   0       8     magic "SLUICESN"
//   8       4     format version (1)
//   12      4     reserved, 0
//   16      8     payload bytes P
//   24      8     XXH3-64 of the payload
//   32      P     payload:
//                   u64 run token length, the token (which run wrote it)
//                   u64 checkpoint number (1, 2, ...)
//                   u32 operators; per operator: u64 name length, the name,
//                       u64 state length, the state (Operator::save)
//                   u64 newest event time seen; per operator its watermark
//                   u32 streams n (those with one); n x (u32 stream, u64 the
//                       next event_seq expected)
//                   u64 length, the process's own state (a sink's verifier)
//
// Snapshots go to two files in turn, NAME.0 and NAME.1 (SnapshotFiles),
// each overwritten in place: a write costs one pwrite, not a create and a
// rename (0.7 ms each on this VM, which at a snapshot per megabyte was a
// third of a sink's time), and the older snapshot stays whole while the
// newer is written. A restart loads the newer of this run's two. A file
// whose header or checksum does not hold is an error naming it, even beside
// a whole one: it may be the newer snapshot, whose input was already
// acknowledged, and the older would silently lose that. By default snapshots
// survive the death of the process, not of the machine (no fsync); a pwrite
// cut short needs the machine to die. With `snapshot_sync: on` each write is
// on disk (fdatasync; the directory too, when the file is created) before
// write() returns, so before the input it holds is acknowledged: then a
// damaged file beside a whole one can only be a write the machine's death
// cut short, whose input nobody acknowledged, and a restart loads the whole
// one (passed_over() says so). Any other mismatch (operator names, layouts)
// is an error naming the file too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/snapshot.h"
#include "base/status.h"
#include "graph/operator.h"
#include "transport/event.h"

namespace sluice {

// What a snapshot holds beside the operators' own state.
struct CheckpointState {
  uint64_t number = 0;                       // checkpoints written so far, this one included
  uint64_t max_ts = 0;                       // the newest event time seen
  std::vector<uint64_t> watermarks;          // per operator
  uint64_t next_seq[kMaxStreams] = {};       // per input stream: the next event_seq expected
  // The process's own part (a sink: its verifier and its counters), opaque here.
  std::string process;
};

inline constexpr uint32_t kSnapshotVersion = 3;  // 2: a sink's latency histogram sparse; 3: its bytes and interval
inline constexpr size_t kSnapshotHeaderBytes = 32;

// The whole file's bytes into *out (reused).
void encode_snapshot(const std::string& token, const OperatorChain& chain, const CheckpointState& st,
                     SnapshotOut* scratch, std::string* out);
// Checks the bytes and loads them into the chain's operators and *st.
// `where` names the file in errors. A snapshot of another run (token) is
// *stale: true, nothing loaded, no error.
Status decode_snapshot(const void* bytes, size_t n, const std::string& where, const std::string& token,
                       OperatorChain& chain, CheckpointState* st, bool* stale);

// The header and checksum alone, and what the payload says first: its run
// token and its checkpoint number.
Status peek_snapshot(const void* bytes, size_t n, const std::string& where, std::string* token,
                     uint64_t* number);

// The two files of one instance's snapshots (see above).
class SnapshotFiles {
 public:
  // sync: each write reaches the disk before it returns (see above).
  explicit SnapshotFiles(std::string path, bool sync = false) : path_(std::move(path)), sync_(sync) {}
  ~SnapshotFiles();
  std::string name(int i) const { return path_ + "." + std::to_string(i); }
  // What the names are made of (NAME of NAME.0 and NAME.1).
  const std::string& path() const { return path_; }
  // The directory the files are in.
  std::string directory() const;
  // Snapshot number `number` into file number & 1.
  Status write(uint64_t number, const std::string& bytes);
  // The newer of the two whose header and checksum hold and whose token is
  // `token`, in *out (*where: its file); *found false when neither exists
  // or both are another run's. A damaged file is an error naming it, even
  // beside a whole one, unless sync (then passed_over() names it).
  Status read_newest(const std::string& token, std::string* out, std::string* where, bool* found);
  // Before the first snapshot, at start: makes the directory the files go
  // in if it is missing, and creates and removes a file there, so that a
  // state_dir that cannot be written fails the process before its stream
  // starts (not at its first snapshot, with tuples already in flight).
  Status prepare();
  // Both files, after END.
  void remove();
  // What read_newest passed over ("" if nothing), for the log.
  const std::string& passed_over() const { return passed_over_; }
  // How many files read_newest found whole but another run's.
  int others() const { return others_; }

 private:
  std::string path_;
  bool sync_ = false;
  std::string passed_over_;
  int others_ = 0;
  int fd_[2] = {-1, -1};
  size_t size_[2] = {0, 0};
};

// Reads a whole file into *out; *found false (and ok) when there is none.
Status read_snapshot_file(const std::string& path, std::string* out, bool* found);

}  // namespace sluice
