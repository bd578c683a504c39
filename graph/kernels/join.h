// Stream-to-table equality join (SELECT S.id, S.a1, T.t1 FROM S, T WHERE
// S.id = T.id), the table held in memory, each stream tuple matching at most
// one row (table keys are unique; a duplicate is an error naming its row).
//
// Lifecycle:
//   1. JoinTable::make() declares the table's columns, which one is the key
//      and which are carried into the output (the payload; the rest are
//      dropped when loaded, the "column-store projected" layout);
//   2. load_csv() or generate() fills it (rows are staged in the JoinTable);
//   3. HashJoin::make() or GraceHashJoin::make() builds its index from the
//      table (the JoinTable may then be dropped);
//   4. consume() runs of stream tuples; matched rows are emitted as output
//      rows (output_schema(): seq of the stream tuple, the chosen stream
//      fields, the payload columns), in the stream's order; unmatched tuples
//      are counted and dropped (inner join).
//
// The index: open addressing with linear probing over slots of (key u64,
// payload) laid out one after the other, sized exactly (slot
// = (32 bits of hash * capacity) >> 32, no power-of-two rounding) to a load of
// 0.6, so a row costs (8 + payload bytes) / 0.6 bytes: 20 for one i32 column.
//   - HashJoin: one index over the whole table; each stream tuple probes it
//     at once (a cache miss per tuple once the table outgrows the cache).
//   - GraceHashJoin (batched grace hash, Mendes et al. section 3.5): the index
//     is split into partitions of about partition_bytes each (by the high
//     hash bits); stream tuples are buffered in batches of batch_tuples, and a
//     full batch is partitioned the same way, so that each partition of the
//     table is probed by all of the batch's tuples of that partition while it
//     is in cache; the probes of a partition are known before they run, so
//     each asks for the slot `prefetch` probes ahead. A batch is emitted
//     when it is full and at flush().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/snapshot.h"
#include "base/status.h"
#include "graph/kernels/kernel.h"
#include "graph/schema.h"

namespace sluice::kernels {

class JoinTable {
 public:
  // columns: every column of the table (a CSV file's header names them, in
  // any order, extra CSV columns are ignored); key: an integer column;
  // payload: the columns the join outputs, in this order.
  static Status make(std::vector<FieldSpec> columns, std::string key,
                     std::vector<std::string> payload, JoinTable* out);

  // A CSV file: a header line naming the columns, then one row per line,
  // comma separated; integers in decimal (or 0x hex), f64 as strtod reads
  // them, bytes as text (zero padded to the width). Errors name file:line and
  // the column. At most max_rows rows (0: no limit).
  Status load_csv(const std::string& path, size_t max_rows = 0);
  // rows rows with keys 1..rows in a shuffled order and random payload.
  void generate(size_t rows, uint64_t seed);
  // One row: the key and the payload columns packed (payload_bytes()).
  void add_row(uint64_t key, const std::byte* payload);

  size_t rows() const { return keys_.size(); }
  uint32_t payload_bytes() const { return payload_bytes_; }
  const std::vector<FieldSpec>& payload_fields() const { return payload_fields_; }
  const std::string& source() const { return source_; }
  uint64_t key(size_t row) const { return keys_[row]; }
  const std::byte* payload(size_t row) const { return payload_.data() + row * payload_bytes_; }
  // Where row r came from, for errors: "file.csv:12" or "generated row 11".
  std::string where(size_t row) const;

 private:
  std::vector<FieldSpec> columns_;
  size_t key_col_ = 0;
  FieldType key_type_ = FieldType::kU64;
  std::vector<size_t> payload_cols_;
  std::vector<FieldSpec> payload_fields_;
  uint32_t payload_bytes_ = 0;
  std::vector<uint64_t> keys_;
  std::vector<std::byte> payload_;
  std::string source_ = "table";
  bool from_csv_ = false;
};

struct JoinSpec {
  std::string stream_key;                  // an integer field of the stream
  std::vector<std::string> stream_fields;  // copied into the output after seq
};

class HashJoin {
 public:
  HashJoin();
  ~HashJoin();
  HashJoin(HashJoin&&) noexcept;
  HashJoin& operator=(HashJoin&&) noexcept;

  static Status make(const Schema& stream, const JoinSpec& spec, const JoinTable& table,
                     HashJoin* out);
  const Schema& output_schema() const;
  uint32_t row_bytes() const;
  // Emits the matched rows of the run, in order, in blocks.
  void consume(const std::byte* tuples, size_t n, uint32_t stride, RowEmit emit);
  void flush(RowEmit) {}
  // Its state is the table, made again from the file when a node restarts:
  // a snapshot holds only the counters.
  void save(SnapshotOut& out) const;
  Status load(SnapshotIn& in);

  size_t bytes_held() const;   // everything
  size_t index_bytes() const;  // the table's index alone
  uint64_t matched() const;
  uint64_t unmatched() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct GraceOptions {
  uint32_t batch_tuples = 4096;
  // Target size of one index partition. 8 MiB (half the L3 of the machine it
  // was tuned on) beat L2-sized ones (build/graph/sluice-bench-graph sweeps it).
  uint32_t partition_bytes = 8u << 20;
  // Probe phase: software prefetch of the slot this many items ahead (0: off).
  uint32_t prefetch = 16;
};

class GraceHashJoin {
 public:
  GraceHashJoin();
  ~GraceHashJoin();
  GraceHashJoin(GraceHashJoin&&) noexcept;
  GraceHashJoin& operator=(GraceHashJoin&&) noexcept;

  static Status make(const Schema& stream, const JoinSpec& spec, const JoinTable& table,
                     const GraceOptions& opt, GraceHashJoin* out);
  const Schema& output_schema() const;
  uint32_t row_bytes() const;
  // Buffers the run; emits each batch that fills (in stream order).
  void consume(const std::byte* tuples, size_t n, uint32_t stride, RowEmit emit);
  // End of stream (or a time hook): joins and emits the partial batch.
  void flush(RowEmit emit);
  // The open batch (its tuples' output rows as built so far, and their
  // keys) and the counters; the table is made again from the file. load()
  // into a join made alike continues exactly where the saved one was. Error:
  // another batch size or row layout, or more tuples than a batch.
  void save(SnapshotOut& out) const;
  Status load(SnapshotIn& in);

  size_t bytes_held() const;
  size_t index_bytes() const;
  uint32_t partitions() const;
  uint64_t matched() const;
  uint64_t unmatched() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::kernels
