#include "codec/file_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <utility>

namespace sluice {

RecordFile::RecordFile(RecordFile&& o) noexcept { *this = std::move(o); }

RecordFile& RecordFile::operator=(RecordFile&& o) noexcept {
  if (this == &o) return *this;
  if (fd_ >= 0) ::close(fd_);
  path_ = std::move(o.path_);
  fd_ = std::exchange(o.fd_, -1);
  binary_ = o.binary_;
  record_bytes_ = o.record_bytes_;
  buf_ = std::move(o.buf_);
  cap_ = o.cap_;
  p_ = std::exchange(o.p_, nullptr);
  end_ = std::exchange(o.end_, nullptr);
  at_ = std::exchange(o.at_, nullptr);
  buf_offset_ = o.buf_offset_;
  line_ = o.line_;
  read_total_ = o.read_total_;
  eof_ = o.eof_;
  header_ = std::move(o.header_);
  return *this;
}

RecordFile::~RecordFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status RecordFile::open(const std::string& path, RecordFormat format, uint32_t record_bytes, RecordFile* out,
                        size_t buffer_bytes, int fd) {
  RecordFile f;
  f.path_ = path;
  if (fd < 0) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Error(fmt::format("{}: cannot open it: {}", path, std::strerror(errno)));
  f.fd_ = fd;
  // Read once, front to back: the kernel may read ahead further, and drop
  // pages behind.
  (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  f.binary_ = format == RecordFormat::kBinary;
  if (f.binary_ && record_bytes == 0) return Status::Error(fmt::format("{}: binary records of 0 bytes", path));
  f.record_bytes_ = record_bytes;
  f.cap_ = std::max<size_t>(buffer_bytes, f.binary_ ? record_bytes : 1);
  f.buf_.reset(new char[f.cap_]);
  f.p_ = f.end_ = f.at_ = f.buf_.get();
  if (format == RecordFormat::kCsv) {
    std::string_view line;
    Status st;
    if (!f.next(&line, &st)) {
      if (!st.ok()) return st;
      return Status::Error(fmt::format("{}: empty: a csv file starts with a header line naming its columns", path));
    }
    RecordError e;
    if (!csv_header(line, &f.header_, &e)) {
      const std::string_view bad = line.substr(e.offset, 40);
      return Status::Error(
          fmt::format("{}:{}:{}: the header: expected {}: '{}'", path, f.line(), e.offset + 1, e.expected, bad));
    }
  }
  *out = std::move(f);
  return {};
}

bool RecordFile::fill(Status* st) {
  char* const buf = buf_.get();
  const size_t keep = static_cast<size_t>(end_ - p_);
  if (p_ != buf) {
    std::memmove(buf, p_, keep);
    buf_offset_ += static_cast<uint64_t>(p_ - buf);
    p_ = buf;
    end_ = buf + keep;
  }
  if (keep == cap_ || eof_) return false;
  for (;;) {
    const ssize_t n = ::read(fd_, buf + keep, cap_ - keep);
    if (n > 0) {
      end_ = buf + keep + n;
      read_total_ += static_cast<uint64_t>(n);
      return true;
    }
    if (n == 0) {
      eof_ = true;
      return false;
    }
    if (errno == EINTR) continue;
    *st = Status::Error(fmt::format("{}: read failed at byte {}: {}", path_, offset(), std::strerror(errno)));
    return false;
  }
}

bool RecordFile::refill_next(std::string_view* rec, Status* st) {
  for (;;) {
    // A text line not ended in the buffer, or a binary record not whole.
    if (fill(st)) {
      if (binary_) {
        if (static_cast<size_t>(end_ - p_) >= record_bytes_) return next(rec, st);
        continue;
      }
      if (std::memchr(p_, '\n', static_cast<size_t>(end_ - p_))) return next(rec, st);
      continue;
    }
    if (!st->ok()) return false;
    if (static_cast<size_t>(end_ - p_) == cap_) {
      *st = Status::Error(fmt::format("{}:{}: a line longer than the read buffer ({} bytes)", path_, line_ + 1, cap_));
      return false;
    }
    // The end of the file: what is left is the last record (a text line
    // without its '\n', or a binary record cut short).
    if (p_ == end_) return false;
    ++line_;
    at_ = p_;
    const char* r = end_;
    p_ = end_;
    if (!binary_ && r[-1] == '\r') --r;
    if (r == at_) return false;
    *rec = std::string_view(at_, static_cast<size_t>(r - at_));
    return true;
  }
}

std::string RecordFile::where() const {
  if (binary_)
    return fmt::format("{}: record {} (byte {})", path_, line_,
                       buf_offset_ + static_cast<uint64_t>(at_ - buf_.get()));
  return fmt::format("{}:{}", path_, line_);
}

Status RecordFile::seek(uint64_t offset, uint64_t line) {
  if (::lseek(fd_, static_cast<off_t>(offset), SEEK_SET) < 0)
    return Status::Error(fmt::format("{}: cannot seek to byte {}: {}", path_, offset, std::strerror(errno)));
  buf_offset_ = offset;
  p_ = end_ = at_ = buf_.get();
  line_ = line;
  eof_ = false;
  return {};
}

}  // namespace sluice
