// LockWatch and the thread that looks at every watch (shm_locks.h says why).
#include "transport/fabric/shm_locks.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "base/fd.h"

namespace sluice::fabric::shm {
namespace {

// The first fields of libfabric 1.17's struct smr_region (include/ofi_shm.h;
// 1.18's are the same), as a release build lays them out (ofi_atomic32_t is
// its int32 alone without ENABLE_DEBUG):
//
//   offset  field                                   checked
//        0  uint8_t  version                        == 4 (SMR_VERSION)
//        4  int      pid                            == the pid in its name
//       16  void*    base_addr                      != 0
//       24  pthread_spinlock_t lock                 (what is freed)
//       28  int32_t  signal                         (progress runs when 1)
//       40  size_t   total_size                     == the file's size
//      104  size_t   name_offset                    its name is there
struct RegionHead {
  uint8_t version;
  uint8_t resv;
  uint16_t flags;
  int pid;
  uint8_t cma_cap_peer;
  uint8_t cma_cap_self;
  uint32_t max_sar_buf_per_peer;
  void* base_addr;
  pthread_spinlock_t lock;
  int32_t signal;
  void* map;
  size_t total_size;
  size_t cmd_cnt;
  size_t sar_cnt;
  size_t cmd_queue_offset;
  size_t resp_queue_offset;
  size_t inject_pool_offset;
  size_t sar_pool_offset;
  size_t peer_data_offset;
  size_t name_offset;
  size_t sock_name_offset;
};
static_assert(offsetof(RegionHead, pid) == 4);
static_assert(offsetof(RegionHead, lock) == 24);
static_assert(offsetof(RegionHead, total_size) == 40);
static_assert(offsetof(RegionHead, name_offset) == 104);
constexpr uint8_t kSmrVersion = 4;
constexpr size_t kHeadBytes = 4096;
constexpr auto kRound = std::chrono::milliseconds(200);
constexpr int kStuckRounds = 5;  // a call inside libfabric for a second

}  // namespace

// One segment's header, mapped by this process a second time (the same
// pages as libfabric's mapping; kept when the file is unlinked).
struct LockWatch::Segment {
  RegionHead* head = nullptr;
  ~Segment() {
    if (head) munmap(head, kHeadBytes);
  }
};

namespace {

// Maps /dev/shm/NAME's header and checks it is the layout above, made by `pid`.
Status map_segment(const std::string& name, int pid, RegionHead** out) {
  const std::string path = "/dev/shm/" + name;
  Fd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd.valid()) return Status::Error(fmt::format("open {}: {}", path, std::strerror(errno)));
  struct stat sb {};
  if (fstat(fd.get(), &sb) != 0) return Status::Error(fmt::format("fstat {}: {}", path, std::strerror(errno)));
  if (sb.st_size < static_cast<off_t>(kHeadBytes))
    return Status::Error(fmt::format("{}: {} bytes, smaller than a header", path, sb.st_size));
  void* p = mmap(nullptr, kHeadBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) return Status::Error(fmt::format("mmap {}: {}", path, std::strerror(errno)));
  auto* h = static_cast<RegionHead*>(p);
  std::string why;
  if (h->version != kSmrVersion) {
    why = fmt::format("version {}, not {}", h->version, kSmrVersion);
  } else if (h->pid != pid) {
    why = fmt::format("made by pid {}, not {}", h->pid, pid);
  } else if (!h->base_addr) {
    why = "no base address";
  } else if (h->total_size != static_cast<size_t>(sb.st_size)) {
    why = fmt::format("a size of {} in a file of {}", h->total_size, sb.st_size);
  } else if (h->name_offset >= h->total_size || h->total_size - h->name_offset < name.size() + 1) {
    why = fmt::format("a name offset of {} in {} bytes", h->name_offset, h->total_size);
  } else {
    std::string there(name.size() + 1, '\0');
    if (pread(fd.get(), there.data(), there.size(), static_cast<off_t>(h->name_offset)) !=
            static_cast<ssize_t>(there.size()) ||
        there.compare(0, name.size(), name) != 0 || there.back() != '\0')
      why = "another name at its name offset";
  }
  if (!why.empty()) {
    munmap(p, kHeadBytes);
    return Status::Error(fmt::format("{}: {}", path, why));
  }
  *out = h;
  return {};
}

}  // namespace

// The one thread that looks at every watch, while there are any (detached:
// a process may end with links open and this thread in a round). Leaked on
// purpose, for the same reason.
class Watcher {
 public:
  static Watcher& get() {
    static Watcher* w = [] {
      auto* x = new Watcher;
      // A child forked by a process with watches (tests do) starts with none,
      // no thread, and the lock free.
      pthread_atfork([] { get().mu_.lock(); }, [] { get().mu_.unlock(); },
                     [] {
                       Watcher& g = get();
                       g.watches_.clear();
                       g.running_ = false;
                       g.mu_.unlock();
                     });
      return x;
    }();
    return *w;
  }

  void add(LockWatch* w) {
    std::lock_guard lk(mu_);
    watches_.push_back(w);
    if (running_) return;
    running_ = true;
    std::thread([this] { run(); }).detach();
  }
  void remove(LockWatch* w) {
    std::lock_guard lk(mu_);
    for (size_t i = 0; i < watches_.size(); ++i)
      if (watches_[i] == w) {
        watches_[i] = watches_.back();
        watches_.pop_back();
        break;
      }
  }

 private:
  void run() {
    for (;;) {
      {
        std::lock_guard lk(mu_);
        if (watches_.empty()) {
          running_ = false;
          return;
        }
        for (LockWatch* w : watches_) w->check();
      }
      std::this_thread::sleep_for(kRound);
    }
  }

  std::mutex mu_;
  std::vector<LockWatch*> watches_;
  bool running_ = false;
};

namespace {
// Whether a process is gone: no such pid, or a zombie not reaped yet.
bool process_gone(int pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0) return errno == ESRCH;
  // Killed and not reaped yet by its parent: a zombie holds nothing.
  std::ifstream f(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
  const char state = stat[paren + 2];
  return state == 'Z' || state == 'X';
}
}  // namespace

int pid_of_segment(const std::string& name) {
  unsigned long pid = 0;
  char dash = 0;
  if (std::sscanf(name.c_str(), "sluice-%lu%c", &pid, &dash) != 2 || dash != '-' || pid == 0 ||
      pid > 0x7fffffff)
    return 0;
  return static_cast<int>(pid);
}

LockWatch::LockWatch(std::string link, int peer_pid) : link_(std::move(link)), peer_pid_(peer_pid) {}

std::unique_ptr<LockWatch> LockWatch::make(const std::string& own, const std::string& peer,
                                           std::string link, std::string* why) {
  // Names come as the provider gives them (fi_getname: with their NUL).
  const std::string o = own.substr(0, own.find('\0')), p = peer.substr(0, peer.find('\0'));
  const int peer_pid = pid_of_segment(p);
  if (pid_of_segment(o) != getpid() || peer_pid == 0) {
    *why = fmt::format("segment names '{}' and '{}' are not sluice's", o, p);
    return nullptr;
  }
  std::unique_ptr<LockWatch> w(new LockWatch(std::move(link), peer_pid));
  w->own_ = std::make_unique<Segment>();
  w->peer_ = std::make_unique<Segment>();
  Status st = map_segment(o, getpid(), &w->own_->head);
  if (st) st = map_segment(p, peer_pid, &w->peer_->head);
  if (!st) {
    *why = st.message();
    return nullptr;
  }
  Watcher::get().add(w.get());
  return w;
}

LockWatch::~LockWatch() { Watcher::get().remove(this); }

namespace {
// glibc's pthread spin lock is one int, and the unlocked one holds what
// pthread_spin_init writes. The watch reads and writes that int, not the
// lock's functions, which a sanitizer would take for this process's own use
// of a lock it never saw taken (another process took it).
int unlocked_value() {
  static_assert(std::is_same_v<pthread_spinlock_t, volatile int>);
  static const int v = [] {
    pthread_spinlock_t l;
    pthread_spin_init(&l, PTHREAD_PROCESS_SHARED);
    const int x = l;
    pthread_spin_destroy(&l);
    return x;
  }();
  return v;
}
}  // namespace

void LockWatch::check() {
  const uint32_t c = calls_.load(std::memory_order_relaxed);
  if (!(c & 1) || c != last_) {
    last_ = c;
    stuck_ = 0;
    return;
  }
  if (++stuck_ < kStuckRounds || !process_gone(peer_pid_)) return;
  const int unlocked = unlocked_value();
  for (Segment* s : {own_.get(), peer_.get()}) {
    volatile int* l = &s->head->lock;
    if (__atomic_load_n(l, __ATOMIC_ACQUIRE) == unlocked) continue;  // not what the call waits on
    __atomic_store_n(l, unlocked, __ATOMIC_RELEASE);
    spdlog::warn(
        "{}: libfabric shm: a call has waited {} ms on the lock of {}'s segment, which its peer (pid "
        "{}) held when it died; freed it, so the link can see its peer gone (libfabric 1.17 spins on "
        "such a lock for ever)",
        link_, stuck_ * kRound.count(), s == own_.get() ? "this endpoint" : "the peer", peer_pid_);
  }
  stuck_ = 0;
}

namespace testing {
Status hold_lock(const std::string& name) {
  const int pid = pid_of_segment(name);
  RegionHead* h = nullptr;
  Status st = map_segment(name, pid, &h);
  if (!st) return st;
  pthread_spin_lock(&h->lock);  // and never unlocked; the mapping stays
  // A send killed after it posted: the segment's owner is told to look
  // (its progress runs only when signalled), and takes the lock.
  __atomic_store_n(&h->signal, 1, __ATOMIC_SEQ_CST);
  return {};
}
}  // namespace testing

}  // namespace sluice::fabric::shm
