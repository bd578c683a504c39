// The file source: a file's records become events of numbered tuples that
// pass the sink's checks; a bad record fails the stream with its position,
// or is counted and left out; a restart resumes after the events a
// position names.
#include "loadgen/file_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "node/metrics.h"
#include "transport/event.h"

namespace sluice {
namespace {

std::string temp_file(const std::string& name, const std::string& bytes) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("sluice-fsrc-" + std::to_string(getpid()) + "-" + name)).string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

Schema esper() {
  Schema s;
  EXPECT_TRUE(Schema::make("esper", {{"p0", FieldType::kI64, 0}, {"p1", FieldType::kI64, 0}}, 0, &s).ok());
  return s;
}

Deployment file_deployment(const std::string& path) {
  Deployment d;
  d.tuple_bytes = 24;
  d.event_bytes = 64 + 24 * 4;  // 4 tuples an event
  d.loadgen_slots = 8;
  d.source_file = path;
  return d;
}

struct Tuple {
  uint64_t seq;
  int64_t p0, p1;
  bool operator==(const Tuple&) const = default;
};

// Runs the source to its END, checking each event as the sink would and
// handing its slot back; the tuples it sent, or the error that ended it.
std::vector<Tuple> drain(FileSource& src, Status* error, std::vector<uint32_t>* counts = nullptr,
                         uint64_t stop_after_events = UINT64_MAX) {
  std::vector<Tuple> got;
  Descriptor out[3];
  uint64_t events = 0;
  for (bool end = false; !end;) {
    size_t n = 0;
    if (Status st = src.next(out, &n); !st) {
      *error = st;
      return got;
    }
    if (n == 0) break;
    for (size_t i = 0; i < n; ++i) {
      std::byte* p = src.pool().slot(out[i].slot);
      if (out[i].flags & kDescEnd) {
        end = true;
      } else {
        EventHeader h;
        std::memcpy(&h, p, sizeof h);
        EXPECT_EQ(event_checksum(p), h.checksum);
        EXPECT_EQ(h.tuple_count, out[i].tuples);
        if (counts) counts->push_back(h.tuple_count);
        for (uint32_t k = 0; k < h.tuple_count; ++k) {
          Tuple t;
          std::memcpy(&t, p + kEventHeaderBytes + 24 * k, 24);
          EXPECT_EQ(t.seq, h.first_seq + k);
          got.push_back(t);
        }
        ++events;
      }
      (void)src.pool().release(out[i].slot);
    }
    if (events >= stop_after_events) break;
  }
  return got;
}

TEST(FileSource, CsvRecordsBecomeNumberedTuplesInFullEvents) {
  std::string csv = "p1,p0\n";
  std::vector<Tuple> want;
  for (int i = 0; i < 10; ++i) {
    csv += std::to_string(i * 100) + "," + std::to_string(i % 3) + "\n";
    want.push_back({uint64_t(i), i % 3, i * 100});
  }
  const std::string path = temp_file("ok.csv", csv);
  const Deployment d = file_deployment(path);
  FileSource src(d, 0, 0, esper(), "csv");
  ASSERT_TRUE(src.start().ok());
  Status st;
  std::vector<uint32_t> counts;
  EXPECT_EQ(drain(src, &st, &counts), want);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(counts, (std::vector<uint32_t>{4, 4, 2}));
  ProcessSummary s;
  src.report(s);
  EXPECT_EQ(s.rejected, 0u);
  EXPECT_EQ(s.read_bytes, csv.size());
  std::remove(path.c_str());
}

TEST(FileSource, TuplesEndsTheStreamEarly) {
  const std::string path = temp_file("limit.jsonl", "{\"p0\":1,\"p1\":2}\n{\"p0\":3,\"p1\":4}\n{\"p0\":5,\"p1\":6}\n");
  Deployment d = file_deployment(path);
  d.tuples = 2;
  FileSource src(d, 0, 0, esper(), "jsonl");
  ASSERT_TRUE(src.start().ok());
  Status st;
  EXPECT_EQ(drain(src, &st), (std::vector<Tuple>{{0, 1, 2}, {1, 3, 4}}));
}

TEST(FileSource, ABadRecordFailsTheStreamNamingFileLineAndColumn) {
  const std::string path = temp_file("bad.csv", "p0,p1\n1,2\n3,4\n5,x6\n7,8\n");
  const Deployment d = file_deployment(path);
  FileSource src(d, 0, 0, esper(), "csv");
  ASSERT_TRUE(src.start().ok());
  Status st;
  drain(src, &st);
  EXPECT_EQ(st.message(), path + ":4:3: field p1 (i64): 'x6' is not an integer");
  std::remove(path.c_str());
}

TEST(FileSource, RejectedRecordsAreCountedAndLeftOut) {
  // Too few columns, a non-number, too many columns.
  const std::string path = temp_file("rej.csv", "p0,p1\n1,2\n3\n4,five\n6,7,8\n9,10\n");
  Deployment d = file_deployment(path);
  d.bad_records = "reject";
  FileSource src(d, 0, 0, esper(), "csv");
  ASSERT_TRUE(src.start().ok());
  Status st;
  EXPECT_EQ(drain(src, &st), (std::vector<Tuple>{{0, 1, 2}, {1, 9, 10}}));
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(src.rejected(), 3u);
  std::remove(path.c_str());
}

TEST(FileSource, AJsonRecordMissingAFieldIsRejectedWithItsPosition) {
  const std::string path = temp_file("miss.jsonl", "{\"p0\":1,\"p1\":2}\n{\"p0\":3}\n");
  const Deployment d = file_deployment(path);
  FileSource src(d, 0, 0, esper(), "jsonl");
  ASSERT_TRUE(src.start().ok());
  Status st;
  drain(src, &st);
  EXPECT_EQ(st.message(), path + ":2:8: no field 'p1' in the object");
  std::remove(path.c_str());
}

TEST(FileSource, ABinaryFileCutShortEndsInAnErrorNamingItsLastRecord) {
  std::string bin;
  for (int64_t v : {1, 2, 3, 4}) bin.append(reinterpret_cast<const char*>(&v), 8);
  const std::string path = temp_file("short.bin", bin + "abc");
  Deployment d = file_deployment(path);
  FileSource src(d, 0, 0, esper(), "binary");
  ASSERT_TRUE(src.start().ok());
  Status st;
  EXPECT_EQ(drain(src, &st), (std::vector<Tuple>{{0, 1, 2}, {1, 3, 4}}));  // what came before it went out
  EXPECT_EQ(st.message(), path + ": record 3 (byte 32): a record of 3 bytes, not 16 (the columns' bytes: p0:8, p1:8)");
  d.bad_records = "reject";
  FileSource lenient(d, 0, 0, esper(), "binary");
  ASSERT_TRUE(lenient.start().ok());
  Status ok;
  EXPECT_EQ(drain(lenient, &ok), (std::vector<Tuple>{{0, 1, 2}, {1, 3, 4}}));
  EXPECT_EQ(lenient.rejected(), 1u);
  std::remove(path.c_str());
}

TEST(FileSource, AFileWhoseColumnsMissAFieldFailsAtStart) {
  const std::string path = temp_file("cols.csv", "p0,q\n1,2\n");
  const Deployment d = file_deployment(path);
  FileSource src(d, 0, 0, esper(), "csv");
  EXPECT_EQ(src.start().message(), path + ": field 'p1' of schema 'esper' has no column (the columns: p0, q)");
  std::remove(path.c_str());
}

// Paced by a time field: records due at once go in one event, cut short
// where the next is not due; a stop while it waits ends the stream after
// what was sent.
TEST(FileSource, ATimeFieldCutsEventsWhereTheNextRecordIsNotDue) {
  // p1 is the time in seconds: three records at 0, then one 1000 s later.
  const std::string path = temp_file("paced.csv", "p0,p1\n1,0\n2,0\n3,0\n4,1000\n5,1000\n");
  Deployment d = file_deployment(path);
  d.source_time_field = "p1";
  d.source_time_unit = "s";
  FileSource src(d, 0, 0, esper(), "csv");
  ASSERT_TRUE(src.start().ok());
  Descriptor out[4];
  size_t n = 0;
  ASSERT_TRUE(src.next(out, &n).ok());
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(out[0].tuples, 3u);  // not 4: the fourth is not due for 1000 s
  (void)src.pool().release(out[0].slot);
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    src.stop();
  });
  ASSERT_TRUE(src.next(out, &n).ok());  // waits for the fourth until stopped
  stopper.join();
  ASSERT_EQ(n, 1u);
  EXPECT_TRUE(out[0].flags & kDescEnd);
  EndOfStream eos;
  read_end(src.pool().slot(out[0].slot), out[0].bytes, &eos);
  EXPECT_EQ(eos.streams[0].next_seq, 3u);
  EXPECT_TRUE(src.waited());

  // Sped up a million times, the same file goes whole within a few ms.
  d.source_speedup = 1e6;
  FileSource fast(d, 0, 0, esper(), "csv");
  ASSERT_TRUE(fast.start().ok());
  Status st;
  EXPECT_EQ(drain(fast, &st).size(), 5u);
  EXPECT_TRUE(st.ok()) << st.message();
  std::remove(path.c_str());
}

// A restart: the position after 2 events (with a rejected record among
// them) brings a new source to the third event's records, numbered on.
TEST(FileSource, AResumedSourceGoesOnAfterThePositionsEvents) {
  std::string csv = "p0,p1\n";
  for (int i = 0; i < 14; ++i) csv += (i == 5 ? std::string("bad") : std::to_string(i)) + "," + std::to_string(i) + "\n";
  const std::string path = temp_file("resume.csv", csv);
  Deployment d = file_deployment(path);
  d.bad_records = "reject";
  FileSource first(d, 0, 0, esper(), "csv");
  ASSERT_TRUE(first.start().ok());
  Status st;
  std::vector<Tuple> before = drain(first, &st, nullptr, 3);
  ASSERT_EQ(before.size(), 12u);
  SnapshotOut pos;
  ASSERT_TRUE(first.position(2, &pos));
  EXPECT_FALSE(first.position(20, &pos));  // never made

  FileSource again(d, 0, 0, esper(), "csv");
  SnapshotIn in(pos.data().data(), pos.data().size());
  ASSERT_TRUE(again.resume(2, 0, in).ok());
  ASSERT_TRUE(again.start().ok());
  std::vector<Tuple> after = drain(again, &st);
  ASSERT_TRUE(st.ok()) << st.message();
  std::vector<Tuple> want;
  for (int i = 9; i < 14; ++i) want.push_back({uint64_t(i - 1), i, i});  // seq 8 on; record 5 was rejected
  EXPECT_EQ(after, want);
  EXPECT_EQ(again.rejected(), 1u);  // counted before the position
  std::remove(path.c_str());
}

}  // namespace
}  // namespace sluice
