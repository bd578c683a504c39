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
// It is written to NAME.tmp and renamed over NAME: a reader sees the old
// snapshot or the new one, never a part. The rename survives the death of
// the process, not of the machine (no fsync). Any mismatch (magic, version,
// length, checksum, operator names or layouts) is an error naming the file.
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

inline constexpr uint32_t kSnapshotVersion = 1;
inline constexpr size_t kSnapshotHeaderBytes = 32;

// The whole file's bytes into *out (reused).
void encode_snapshot(const std::string& token, const OperatorChain& chain, const CheckpointState& st,
                     SnapshotOut* scratch, std::string* out);
// Checks the bytes and loads them into the chain's operators and *st.
// `where` names the file in errors. A snapshot of another run (token) is
// *stale: true, nothing loaded, no error.
Status decode_snapshot(const void* bytes, size_t n, const std::string& where, const std::string& token,
                       OperatorChain& chain, CheckpointState* st, bool* stale);

// Writes the file atomically (path.tmp, then rename).
Status write_snapshot_file(const std::string& path, const std::string& bytes);
// Reads the file into *out; *found false (and ok) when there is none.
Status read_snapshot_file(const std::string& path, std::string* out, bool* found);

}  // namespace sluice
