#include "sink/results.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace sluice {

ResultsFile::~ResultsFile() { close(); }

void ResultsFile::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  used_ = 0;
}

Status ResultsFile::prepare(const std::string& path, const Schema& schema, RecordFormat format,
                            std::vector<std::string> fields) {
  if (fields.empty())
    for (const auto& f : schema.fields())
      if (f.type != FieldType::kBytes || format == RecordFormat::kBinary) fields.push_back(f.name);
  if (Status st = RecordEncoder::make(schema, format, std::move(fields), &encoder_); !st)
    return Status::Error(fmt::format("results file {}: {}", path, st.message()));
  // Checked now: a folder that takes no file fails the sink at its start.
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  struct stat sb {};
  int err = 0;
  if (::stat(dir.c_str(), &sb) != 0) err = errno;
  else if (!S_ISDIR(sb.st_mode)) err = ENOTDIR;
  else if (::access(dir.c_str(), W_OK | X_OK) != 0) err = errno;
  if (err) return Status::Error(fmt::format("results file {}: its folder {}: {}", path, dir, std::strerror(err)));
  path_ = path;
  newline_ = format != RecordFormat::kBinary;
  if (format == RecordFormat::kCsv) header_ = encoder_.csv_header() + "\n";
  room_ = encoder_.max_bytes() + 1;
  cap_ = std::max(kBufferBytes, room_);
  buf_.reset(new char[cap_]);
  return {};
}

Status ResultsFile::open(int64_t keep) {
  const std::string part = part_path();
  auto fail = [&](const std::string& what) {
    close();
    return Status::Error(fmt::format("results file {}: {}", part, what));
  };
  if (keep < 0) {
    fd_ = ::open(part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) return fail(std::strerror(errno));
    file_bytes_ = 0;
    used_ = 0;
    std::memcpy(buf_.get(), header_.data(), header_.size());  // csv: the header first
    used_ = header_.size();
    return {};
  }
  // Restored: the snapshot saw `keep` bytes written. Finished before the
  // restart (renamed at END): go on from the complete file, renamed back.
  std::error_code ec;
  if (!std::filesystem::exists(part, ec) && std::filesystem::exists(path_, ec))
    std::filesystem::rename(path_, part, ec);
  fd_ = ::open(part.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd_ < 0) return fail(std::strerror(errno));
  struct stat sb {};
  if (::fstat(fd_, &sb) != 0) return fail(std::strerror(errno));
  // Shorter than what the snapshot saw: cut or replaced since, and
  // extending it would add zeros.
  if (sb.st_size < keep)
    return fail(fmt::format("{} bytes, fewer than the {} the restored snapshot saw written (was it cut "
                            "or replaced?)",
                            sb.st_size, keep));
  if (::ftruncate(fd_, keep) != 0 || ::lseek(fd_, keep, SEEK_SET) != keep)
    return fail(std::strerror(errno));
  file_bytes_ = keep;
  used_ = 0;
  return {};
}

Status ResultsFile::flush() {
  size_t off = 0;
  while (off < used_) {
    const ssize_t n = ::write(fd_, buf_.get() + off, used_ - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Error(fmt::format("writing the results file {}: {}", part_path(), std::strerror(errno)));
    }
    off += static_cast<size_t>(n);
  }
  file_bytes_ += static_cast<int64_t>(used_);
  used_ = 0;
  return {};
}

Status ResultsFile::written(int64_t* bytes) {
  if (Status st = flush(); !st) return st;
  *bytes = file_bytes_;
  return {};
}

Status ResultsFile::finish() {
  if (Status st = flush(); !st) return st;
  // On disk before it has its name: a crash of the machine then leaves the
  // complete file or PATH.part, never PATH with its end missing.
  if (::fdatasync(fd_) != 0)
    return Status::Error(fmt::format("results file {}: fdatasync: {}", part_path(), std::strerror(errno)));
  close();
  if (::rename(part_path().c_str(), path_.c_str()) != 0)
    return Status::Error(fmt::format("results file: renaming {} to {}: {}", part_path(), path_, std::strerror(errno)));
  return {};
}

}  // namespace sluice
