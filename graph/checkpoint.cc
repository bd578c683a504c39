#include "graph/checkpoint.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace sluice {
namespace {

constexpr char kMagic[8] = {'S', 'L', 'U', 'I', 'C', 'E', 'S', 'N'};
// A snapshot larger than this is refused as corrupt before it is read: the
// largest declared operator state fits many times over.
constexpr uint64_t kMaxSnapshotBytes = uint64_t{16} << 30;

void put_string(SnapshotOut& out, const std::string& s) { out.block(s.data(), s.size()); }

std::string get_string(SnapshotIn& in, size_t max) {
  const uint64_t n = in.get<uint64_t>();
  if (!in.ok()) return {};
  if (n > max || n > in.left()) {
    in.fail(fmt::format("names a string of {} bytes", n));
    return {};
  }
  std::string s(n, '\0');
  in.bytes(s.data(), n);
  return s;
}

}  // namespace

void encode_snapshot(const std::string& token, const OperatorChain& chain, const CheckpointState& st,
                     SnapshotOut* scratch, std::string* out) {
  SnapshotOut& p = *scratch;
  p.clear();
  put_string(p, token);
  p.put<uint64_t>(st.number);
  p.put<uint32_t>(static_cast<uint32_t>(chain.size()));
  SnapshotOut one;
  for (size_t i = 0; i < chain.size(); ++i) {
    put_string(p, chain.op(i).name());
    one.clear();
    chain.op(i).save(one);
    put_string(p, one.data());
  }
  p.put<uint64_t>(st.max_ts);
  for (size_t i = 0; i < chain.size(); ++i) p.put<uint64_t>(i < st.watermarks.size() ? st.watermarks[i] : 0);
  uint32_t streams = 0;
  for (uint64_t q : st.next_seq) streams += q != 0;
  p.put<uint32_t>(streams);
  for (uint32_t i = 0; i < kMaxStreams; ++i) {
    if (!st.next_seq[i]) continue;
    p.put<uint32_t>(i);
    p.put<uint64_t>(st.next_seq[i]);
  }
  put_string(p, st.process);

  const std::string& payload = p.data();
  out->clear();
  out->reserve(kSnapshotHeaderBytes + payload.size());
  out->append(kMagic, sizeof kMagic);
  const uint32_t version = kSnapshotVersion, reserved = 0;
  const uint64_t bytes = payload.size(), sum = XXH3_64bits(payload.data(), payload.size());
  out->append(reinterpret_cast<const char*>(&version), 4);
  out->append(reinterpret_cast<const char*>(&reserved), 4);
  out->append(reinterpret_cast<const char*>(&bytes), 8);
  out->append(reinterpret_cast<const char*>(&sum), 8);
  out->append(payload);
}

Status decode_snapshot(const void* data, size_t n, const std::string& where, const std::string& token,
                       OperatorChain& chain, CheckpointState* st, bool* stale) {
  *stale = false;
  auto bad = [&](const std::string& why) {
    return Status::Error(fmt::format("snapshot {}: {}", where, why));
  };
  if (n < kSnapshotHeaderBytes) return bad(fmt::format("{} bytes, shorter than its 32-byte header (truncated)", n));
  const auto* b = static_cast<const std::byte*>(data);
  if (std::memcmp(b, kMagic, sizeof kMagic) != 0) return bad("is not a sluice snapshot (bad magic)");
  uint32_t version;
  uint64_t bytes, sum;
  uint32_t reserved;
  std::memcpy(&version, b + 8, 4);
  std::memcpy(&reserved, b + 12, 4);
  std::memcpy(&bytes, b + 16, 8);
  std::memcpy(&sum, b + 24, 8);
  if (version != kSnapshotVersion)
    return bad(fmt::format("format version {}, this build reads {}", version, kSnapshotVersion));
  if (reserved != 0) return bad(fmt::format("reserved header field is {}, not 0", reserved));
  if (bytes != n - kSnapshotHeaderBytes)
    return bad(fmt::format("header says {} payload bytes, the file holds {} (truncated or appended to)",
                           bytes, n - kSnapshotHeaderBytes));
  const std::byte* payload = b + kSnapshotHeaderBytes;
  if (XXH3_64bits(payload, bytes) != sum) return bad("checksum mismatch: the file was altered or damaged");

  SnapshotIn in(payload, bytes);
  const std::string run = get_string(in, 4096);
  if (!in.ok()) return bad(in.what());
  if (run != token) {
    *stale = true;
    return {};
  }
  CheckpointState got;
  got.number = in.get<uint64_t>();
  const uint32_t ops = in.get<uint32_t>();
  if (in.ok() && ops != chain.size())
    return bad(fmt::format("holds {} operators, this node has {}", ops, chain.size()));
  for (uint32_t i = 0; in.ok() && i < ops; ++i) {
    const std::string name = get_string(in, 256);
    if (!in.ok()) break;
    if (name != chain.op(i).name())
      return bad(fmt::format("operator {} is {}, this node's is {}", i, name, chain.op(i).name()));
    const uint64_t len = in.get<uint64_t>();
    if (!in.ok()) break;
    if (len > in.left()) return bad(fmt::format("operator {} ({}): state of {} bytes runs past the end", i, name, len));
    std::string state(len, '\0');
    in.bytes(state.data(), len);
    SnapshotIn op_in(state.data(), state.size());
    if (Status s = chain.op(i).load(op_in); !s || !op_in.ok())
      return bad(fmt::format("operator {} ({}): {}", i, name, !s ? s.message() : op_in.what()));
    if (op_in.left() != 0)
      return bad(fmt::format("operator {} ({}): {} bytes of state left unread (a different configuration?)",
                             i, name, op_in.left()));
  }
  got.max_ts = in.get<uint64_t>();
  got.watermarks.resize(chain.size());
  for (size_t i = 0; i < chain.size(); ++i) got.watermarks[i] = in.get<uint64_t>();
  const uint32_t streams = in.get<uint32_t>();
  if (in.ok() && streams > kMaxStreams)
    return bad(fmt::format("holds {} streams, this build at most {}", streams, kMaxStreams));
  for (uint32_t k = 0; in.ok() && k < streams; ++k) {
    const uint32_t i = in.get<uint32_t>();
    const uint64_t q = in.get<uint64_t>();
    if (in.ok() && i >= kMaxStreams) return bad(fmt::format("names input stream {}", i));
    if (in.ok()) got.next_seq[i] = q;
  }
  got.process = get_string(in, in.left());
  if (!in.ok()) return bad(in.what());
  if (in.left() != 0) return bad(fmt::format("{} bytes left after its end", in.left()));
  *st = std::move(got);
  return {};
}

Status peek_snapshot(const void* data, size_t n, const std::string& where, std::string* token,
                     uint64_t* number) {
  auto bad = [&](const std::string& why) {
    return Status::Error(fmt::format("snapshot {}: {}", where, why));
  };
  if (n < kSnapshotHeaderBytes) return bad(fmt::format("{} bytes, shorter than its 32-byte header (truncated)", n));
  const auto* b = static_cast<const std::byte*>(data);
  if (std::memcmp(b, kMagic, sizeof kMagic) != 0) return bad("is not a sluice snapshot (bad magic)");
  uint64_t bytes, sum;
  std::memcpy(&bytes, b + 16, 8);
  std::memcpy(&sum, b + 24, 8);
  if (bytes != n - kSnapshotHeaderBytes)
    return bad(fmt::format("header says {} payload bytes, the file holds {} (truncated or appended to)",
                           bytes, n - kSnapshotHeaderBytes));
  if (XXH3_64bits(b + kSnapshotHeaderBytes, bytes) != sum)
    return bad("checksum mismatch: the file was altered or damaged");
  SnapshotIn in(b + kSnapshotHeaderBytes, bytes);
  *token = get_string(in, 4096);
  *number = in.get<uint64_t>();
  if (!in.ok()) return bad(in.what());
  return {};
}

SnapshotFiles::~SnapshotFiles() {
  for (int fd : fd_)
    if (fd >= 0) ::close(fd);
}

std::string SnapshotFiles::directory() const {
  const size_t slash = path_.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path_.substr(0, slash);
}

Status SnapshotFiles::prepare() {
  const std::string dir = directory();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Status::Error(fmt::format("state_dir {}: cannot make it: {}", dir, ec.message()));
  const std::string probe = path_ + ".probe";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::Error(fmt::format("state_dir {}: cannot write snapshots there ({}: {})", dir, probe,
                                     std::strerror(errno)));
  ::close(fd);
  ::unlink(probe.c_str());
  return {};
}

Status SnapshotFiles::write(uint64_t number, const std::string& bytes) {
  const int i = static_cast<int>(number & 1);
  if (fd_[i] < 0) {
    fd_[i] = ::open(name(i).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd_[i] < 0)
      return Status::Error(fmt::format("snapshot {}: cannot create: {}", name(i), std::strerror(errno)));
    size_[i] = SIZE_MAX;  // unknown: cut to size after the first write
    if (sync_) {  // the new name, on disk too
      const std::string dir = directory();
      const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      const bool synced = dfd >= 0 && ::fsync(dfd) == 0;
      const int err = errno;
      if (dfd >= 0) ::close(dfd);
      if (!synced)
        return Status::Error(fmt::format("snapshot {}: cannot sync its directory {}: {}", name(i), dir,
                                         std::strerror(err)));
    }
  }
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t w = ::pwrite(fd_[i], bytes.data() + off, bytes.size() - off, static_cast<off_t>(off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      return Status::Error(fmt::format("snapshot {}: write failed: {}", name(i), std::strerror(errno)));
    off += static_cast<size_t>(w);
  }
  if (bytes.size() < size_[i] && ::ftruncate(fd_[i], static_cast<off_t>(bytes.size())) != 0)
    return Status::Error(fmt::format("snapshot {}: truncate failed: {}", name(i), std::strerror(errno)));
  size_[i] = bytes.size();
  if (sync_ && ::fdatasync(fd_[i]) != 0)
    return Status::Error(fmt::format("snapshot {}: sync failed: {}", name(i), std::strerror(errno)));
  return {};
}

Status SnapshotFiles::read_newest(const std::string& token, std::string* out, std::string* where, bool* found) {
  *found = false;
  std::string bytes[2], errors;
  uint64_t best = 0;
  int pick = -1;
  others_ = 0;
  for (int i = 0; i < 2; ++i) {
    bool there = false;
    if (Status st = read_snapshot_file(name(i), &bytes[i], &there); !st) return st;
    if (!there) continue;
    std::string tok;
    uint64_t number = 0;
    if (Status st = peek_snapshot(bytes[i].data(), bytes[i].size(), name(i), &tok, &number); !st) {
      errors += (errors.empty() ? "" : "; ") + st.message();
      continue;
    }
    if (tok != token) {  // another run's
      ++others_;
      continue;
    }
    if (pick < 0 || number > best) {
      pick = i;
      best = number;
    }
  }
  // A damaged file is an error even beside a whole one: it may be the newer
  // snapshot, whose input was acknowledged; the older one would lose it.
  // Unless every write was synced before its input was acknowledged: then
  // the damaged one is a write cut short, and nothing it held was.
  passed_over_.clear();
  if (!errors.empty() && sync_ && pick >= 0) {
    passed_over_ = errors + "; passed over (snapshot_sync: on, so its input was never acknowledged): loading " +
                   name(pick);
  } else if (!errors.empty()) {
    return Status::Error(errors + " (remove the file to start this node afresh)");
  }
  if (pick < 0) return {};
  *out = std::move(bytes[pick]);
  *where = name(pick);
  *found = true;
  return {};
}

void SnapshotFiles::remove() {
  for (int i = 0; i < 2; ++i) {
    if (fd_[i] >= 0) ::close(fd_[i]);
    fd_[i] = -1;
    ::unlink(name(i).c_str());
  }
}

Status read_snapshot_file(const std::string& path, std::string* out, bool* found) {
  *found = false;
  out->clear();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return {};
    return Status::Error(fmt::format("snapshot {}: cannot open: {}", path, std::strerror(errno)));
  }
  struct stat sb;
  if (::fstat(fd, &sb) != 0 || static_cast<uint64_t>(sb.st_size) > kMaxSnapshotBytes) {
    ::close(fd);
    return Status::Error(fmt::format("snapshot {}: {} bytes, more than a snapshot may be", path,
                                     static_cast<uint64_t>(sb.st_size)));
  }
  out->resize(static_cast<size_t>(sb.st_size));
  size_t off = 0;
  while (off < out->size()) {
    const ssize_t r = ::read(fd, out->data() + off, out->size() - off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    off += static_cast<size_t>(r);
  }
  ::close(fd);
  out->resize(off);
  *found = true;
  return {};
}

}  // namespace sluice
