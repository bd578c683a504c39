// The file reader: records cut right across its buffer's refills, the csv
// header read first, positions named, a long line refused, and seek() going
// on where offset() and line() said.
#include "codec/file_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace sluice {
namespace {

std::string temp_file(const std::string& name, const std::string& bytes) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("sluice-reader-" + std::to_string(getpid()) + "-" + name)).string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::vector<std::string> all(RecordFile& f, std::vector<std::string>* where = nullptr, Status* st_out = nullptr) {
  std::vector<std::string> out;
  std::string_view rec;
  Status st;
  while (f.next(&rec, &st)) {
    out.emplace_back(rec);
    if (where) where->push_back(f.where());
  }
  if (st_out) *st_out = st;
  else EXPECT_TRUE(st.ok()) << st.message();
  return out;
}

TEST(RecordFile, LinesComeWholeAcrossRefillsOfASmallBuffer) {
  std::string text = "p0,p1\n";
  std::vector<std::string> want;
  for (int i = 0; i < 500; ++i) {
    want.push_back(std::to_string(i * 7919 % 1000) + "," + std::string(i % 13, '9'));
    text += want.back() + (i % 3 == 0 ? "\r\n" : "\n");
    if (i % 50 == 0) text += "\n";  // empty lines are passed over
  }
  text += "last,line";  // no '\n'
  want.push_back("last,line");
  const std::string path = temp_file("lines.csv", text);
  for (size_t buffer : {size_t{24}, size_t{25}, size_t{64}, size_t{4096}}) {
    SCOPED_TRACE(buffer);
    RecordFile f;
    ASSERT_TRUE(RecordFile::open(path, RecordFormat::kCsv, 0, &f, buffer).ok());
    EXPECT_EQ(f.header(), (std::vector<std::string>{"p0", "p1"}));
    std::vector<std::string> where;
    EXPECT_EQ(all(f, &where), want);
    EXPECT_EQ(where.front(), path + ":2");
    EXPECT_EQ(f.bytes_read(), text.size());
  }
  std::remove(path.c_str());
}

TEST(RecordFile, ALineLongerThanTheBufferIsAnErrorNamingIt) {
  const std::string path = temp_file("long.jsonl", "{}\n{}\n" + std::string(100, 'x') + "\n{}\n");
  RecordFile f;
  ASSERT_TRUE(RecordFile::open(path, RecordFormat::kJsonl, 0, &f, 32).ok());
  Status st;
  EXPECT_EQ(all(f, nullptr, &st).size(), 2u);
  EXPECT_EQ(st.message(), path + ":3: a line longer than the read buffer (32 bytes)");
  std::remove(path.c_str());
}

TEST(RecordFile, BinaryRecordsAndAShortTail) {
  std::string bytes;
  for (int i = 0; i < 10; ++i) bytes += std::string(16, char('a' + i));
  bytes += "xyz";
  const std::string path = temp_file("recs.bin", bytes);
  RecordFile f;
  ASSERT_TRUE(RecordFile::open(path, RecordFormat::kBinary, 16, &f, 40).ok());
  std::vector<std::string> where;
  std::vector<std::string> recs = all(f, &where);
  ASSERT_EQ(recs.size(), 11u);
  EXPECT_EQ(recs[9], std::string(16, 'j'));
  EXPECT_EQ(recs[10], "xyz");  // the decoder refuses it by its size
  EXPECT_EQ(where[10], path + ": record 11 (byte 160)");
  std::remove(path.c_str());
}

TEST(RecordFile, SeekGoesOnWhereOffsetAndLineSaid) {
  const std::string path = temp_file("seek.csv", "a\n1\n2\n\n3\n4\n");
  RecordFile f;
  ASSERT_TRUE(RecordFile::open(path, RecordFormat::kCsv, 0, &f, 8).ok());
  std::string_view rec;
  Status st;
  ASSERT_TRUE(f.next(&rec, &st));
  ASSERT_TRUE(f.next(&rec, &st));
  EXPECT_EQ(rec, "2");
  const uint64_t offset = f.offset(), line = f.line();
  EXPECT_EQ(offset, 6u);
  EXPECT_EQ(all(f), (std::vector<std::string>{"3", "4"}));
  RecordFile g;
  ASSERT_TRUE(RecordFile::open(path, RecordFormat::kCsv, 0, &g, 8).ok());
  ASSERT_TRUE(g.seek(offset, line).ok());
  std::vector<std::string> where;
  EXPECT_EQ(all(g, &where), (std::vector<std::string>{"3", "4"}));
  EXPECT_EQ(where[0], path + ":5");
  std::remove(path.c_str());
}

TEST(RecordFile, ErrorsNameTheFile) {
  RecordFile f;
  Status st = RecordFile::open("/nonexistent/in.csv", RecordFormat::kCsv, 0, &f);
  EXPECT_EQ(st.message(), "/nonexistent/in.csv: cannot open it: No such file or directory");
  const std::string empty = temp_file("empty.csv", "\n\n");
  st = RecordFile::open(empty, RecordFormat::kCsv, 0, &f);
  EXPECT_EQ(st.message(), empty + ": empty: a csv file starts with a header line naming its columns");
  const std::string bad = temp_file("bad.csv", "p0,\"p1\n1,2\n");
  st = RecordFile::open(bad, RecordFormat::kCsv, 0, &f);
  EXPECT_EQ(st.message(), bad + ":1:4: the header: expected a closing quote before the line's end: '\"p1'");
  std::remove(empty.c_str());
  std::remove(bad.c_str());
}

}  // namespace
}  // namespace sluice
