#include "deploy/launcher.h"
#include "deploy/apps.h"
#include "deploy/progress.h"
#include "runtime/process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

extern char** environ;

namespace sluice {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLoadgenProgram = "sluice-loadgen";
constexpr const char* kNodeProgram = "sluice-node";
constexpr const char* kSinkProgram = "sluice-sink";

bool is_executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0;
}

double wall_s() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double mono_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return fmt::format("failed with exit code {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return fmt::format("failed with wait status {}", status);
}

// A running child: its own process group, so a signal reaches whatever it
// started too.
struct Child {
  size_t index;  // into the deployment's processes
  pid_t pid = -1;
  bool running = false;
  bool stopped = false;  // still running when the launcher stopped the run
  int status = 0;
  // When (mono_s) and in which place (0, 1, ...) the launcher saw it exit.
  // When one process dies, its neighbours fail a moment later for want of
  // it; the first to exit is the one the run names.
  double exited_at = -1;
  uint64_t exit_order = 0;
  // restart: on-failure: when (mono_s) it is started again after dying; -1:
  // no restart pending. While one is, it is neither running nor failed.
  double restart_at = -1;
  // Let go once every sink had ended (ProcessOutcome::settled): neither
  // restarted nor blamed; when (mono_s) it is killed if it still runs.
  bool settled = false;
  double settle_kill_at = -1;
};

// The process ran to its end: exit 0, or 3, a sink's verdict (the stream
// ended and it counted lost, duplicated or corrupt tuples), which its
// summary gives and the run's report judges, as it does a sink's 0.
bool exited_ok(const Child& c) {
  return WIFEXITED(c.status) && (WEXITSTATUS(c.status) == 0 || WEXITSTATUS(c.status) == 3);
}

// restart: on-failure starts again a process killed by a signal or failed
// (exit 1, or a launcher's own code: ssh's 255, srun's 192); never one that
// exited 2: its file or options are bad, or, restarted, it has state a
// restart cannot bring back, and trying again fails the same way. (Exit 3,
// a sink's verdict, is an end, not a death: exited_ok.)
// A load generator that ended before its stream began, asked to stop
// (Ctrl-C, down): it says so (kExitStoppedBeforeStream), or, still
// starting, died of the SIGINT before it could catch it.
bool ended_before_stream(int status) {
  return (WIFEXITED(status) && WEXITSTATUS(status) == kExitStoppedBeforeStream) ||
         (WIFSIGNALED(status) && WTERMSIG(status) == SIGINT);
}

bool restartable_death(int status) { return !(WIFEXITED(status) && WEXITSTATUS(status) == 2); }

// "signal KILL", "exit code 1": how a process died, for the restart line.
std::string death_words(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* abbrev = sigabbrev_np(sig);
    return abbrev ? fmt::format("signal {}", abbrev) : fmt::format("signal {}", sig);
  }
  if (WIFEXITED(status)) return fmt::format("exit code {}", WEXITSTATUS(status));
  return fmt::format("wait status {}", status);
}



// Tells the launcher which children exited, in the order they exited. A
// pidfd per child in one epoll set: the kernel queues each pidfd on the ready
// list when its process exits, so epoll_wait() hands them back in exit order
// however late the launcher wakes. Where pidfds are missing (Linux < 5.3),
// the children are polled instead and those seen in one sweep tie.
class ExitWatch {
 public:
  // `ex` turns the wait status of the child it started into the program's.
  explicit ExitWatch(const Executor& ex) : ex_(ex), epoll_(epoll_create1(EPOLL_CLOEXEC)) {}
  ~ExitWatch() {
    for (int fd : pidfds_)
      if (fd >= 0) close(fd);
    if (epoll_ >= 0) close(epoll_);
  }
  ExitWatch(const ExitWatch&) = delete;
  ExitWatch& operator=(const ExitWatch&) = delete;

  // `slot` is the child's place in the launcher's list.
  void watch(size_t slot, pid_t pid) {
    if (pidfds_.size() <= slot) pidfds_.resize(slot + 1, -1);
    if (epoll_ < 0) return;
    int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    if (fd < 0) return;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = slot;
    if (epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      close(fd);
      return;
    }
    pidfds_[slot] = fd;
  }

  // Every running child has a pidfd: an exit wakes reap() at once.
  bool wakes_on_exit(const std::vector<Child>& children) const {
    if (epoll_ < 0) return false;
    for (size_t i = 0; i < children.size(); ++i)
      if (children[i].running && (i >= pidfds_.size() || pidfds_[i] < 0)) return false;
    return true;
  }

  // Waits up to `timeout_ms` for an exit; reaps every child that exited,
  // those with a pidfd in the order they exited, then the rest. Returns how
  // many are still running.
  size_t reap(std::vector<Child>& children, int timeout_ms) {
    if (epoll_ >= 0 && !children.empty()) {
      std::vector<epoll_event> ready(children.size());
      int k = epoll_wait(epoll_, ready.data(), static_cast<int>(ready.size()), timeout_ms);
      for (int i = 0; i < k; ++i) collect(children, ready[i].data.u64);
    } else if (timeout_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
    }
    size_t alive = 0;
    for (size_t i = 0; i < children.size(); ++i) {
      collect(children, i);
      alive += children[i].running;
    }
    return alive;
  }

 private:
  void collect(std::vector<Child>& children, size_t slot) {
    Child& c = children[slot];
    if (!c.running) return;
    int st = 0;
    pid_t r = waitpid(c.pid, &st, WNOHANG);
    if (r != c.pid && !(r < 0 && errno == ECHILD)) return;
    c.running = false;
    c.status = r == c.pid ? ex_.wait_status(st) : 0;
    c.exited_at = mono_s();
    c.exit_order = next_order_++;
    if (slot < pidfds_.size() && pidfds_[slot] >= 0) {
      close(pidfds_[slot]);  // leaves the epoll set with it
      pidfds_[slot] = -1;
    }
  }

  const Executor& ex_;
  int epoll_;
  std::vector<int> pidfds_;
  uint64_t next_order_ = 0;
};

// SIGTERM (or `first`) to every running child's group, SIGKILL after `grace`,
// and everything reaped. Groups of children that already exited are killed
// too, so nothing they started outlives the run.
void stop_all(std::vector<Child>& children, ExitWatch& watch, Executor& ex, int first,
              double grace) {
  for (auto& c : children)
    if (c.running) {
      c.stopped = true;
      ex.signal(c.pid, first);
    }
  const double deadline = mono_s() + grace;
  while (watch.reap(children, 20) > 0 && mono_s() < deadline) {
  }
  for (auto& c : children) ex.signal(c.pid, SIGKILL);
  for (auto& c : children) {
    if (!c.running) continue;
    int st = 0;
    while (waitpid(c.pid, &st, 0) < 0 && errno == EINTR) {
    }
    c.running = false;
    c.status = ex.wait_status(st);
    c.exited_at = mono_s();
  }
}

// Each child's exit into its outcome; true if one exited since last time.
bool sync_exits(const std::vector<Child>& children, RunReport& r) {
  bool changed = false;
  for (const auto& c : children) {
    ProcessOutcome& p = r.processes[c.index];
    if (c.running || !p.running) continue;
    p.running = false;
    p.exit_code = WIFEXITED(c.status) ? WEXITSTATUS(c.status) : -1;
    p.term_signal = WIFSIGNALED(c.status) ? WTERMSIG(c.status) : 0;
    changed = true;
  }
  return changed;
}

std::string names_of_running(const std::vector<Child>& children, const Deployment& d) {
  std::vector<const Child*> run;
  for (const auto& c : children)
    if (c.running) run.push_back(&c);
  std::sort(run.begin(), run.end(), [](auto* a, auto* b) { return a->index < b->index; });
  std::string out;
  for (auto* c : run) out += (out.empty() ? "" : ", ") + d.processes[c->index].name;
  return out;
}

// " on host h2" where the deployment has hosts:; "" where every process is
// on this one.
std::string on_host(const Deployment& d, const ProcessOutcome& p) {
  if (d.hosts.empty()) return "";
  return " on host " + p.host + (p.node.empty() ? "" : " (node " + p.node + ")");
}

std::string num(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "0"; }

}  // namespace

Status find_programs(const std::string& bin_dir, Programs* out) {
  const std::pair<const char*, std::string*> want[] = {
      {kLoadgenProgram, &out->loadgen}, {kNodeProgram, &out->node}, {kSinkProgram, &out->sink}};
  if (!bin_dir.empty()) {
    std::vector<std::string> missing;
    for (auto [name, slot] : want) {
      fs::path p = fs::path(bin_dir) / name;
      if (is_executable(p)) *slot = p.string();
      else missing.push_back(p.string());
    }
    if (!missing.empty())
      return Status::Error(fmt::format("--bin-dir {}: no executable {}", bin_dir,
                                       fmt::join(missing, ", ")));
    return {};
  }
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return Status::Error(fmt::format("readlink /proc/self/exe failed: {}", ec.message()));
  const fs::path here = self.parent_path();
  const fs::path build = here.parent_path();
  for (auto [name, slot] : want) {
    std::vector<fs::path> tried = {build / "loadgen" / name, build / "node" / name,
                                   build / "sink" / name, here / name};
    for (const auto& p : tried)
      if (is_executable(p)) {
        *slot = fs::weakly_canonical(p, ec).string();
        break;
      }
    if (slot->empty()) {
      std::vector<std::string> t;
      for (const auto& p : tried) t.push_back(p.lexically_normal().string());
      return Status::Error(fmt::format("cannot find {} (looked for {}); build it (ninja {}) or "
                                       "pass --bin-dir",
                                       name, fmt::join(t, ", "), name));
    }
  }
  return {};
}

std::string read_file(const std::string& path, bool* ok) {
  std::ifstream in(path);
  *ok = static_cast<bool>(in);
  std::stringstream s;
  if (in) s << in.rdbuf();
  return s.str();
}

std::string default_run_dir() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  return fmt::format("runs/{}-{}", stamp, getpid());
}

uint64_t process_start_ticks(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (pid <= 0 || !std::getline(in, line)) return 0;
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  for (int f = 3; rest >> field; ++f)
    if (f == 22) return std::strtoull(field.c_str(), nullptr, 10);
  return 0;
}

double default_timeout_s(const Deployment& d) {
  // An application's stream lasts as long as the application: the run waits
  // for it to connect (app_wait_s), then for it to end.
  for (const auto& p : d.processes)
    if (is_app(p.role)) return std::numeric_limits<double>::infinity();
  return d.tuples > 0 ? 120 : d.duration_s + 60;
}

std::string last_error_line(const std::string& log_path) {
  std::ifstream in(log_path);
  std::string line, last, last_error;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) continue;
    last = line;
    std::string lower = line;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower.find("error") != std::string::npos || lower.find("fatal") != std::string::npos ||
        lower.find("failed") != std::string::npos || lower.find("[critical]") != std::string::npos)
      last_error = line;
  }
  return last_error.empty() ? last : last_error;
}

// The timestamp that opens a line of a process's log ("2026-11-22
// 23:42:37.301 [node-a] error: ..."), or "" when the line has none. As
// fixed-width text it sorts as the time does.
// How long after a process fails (other than by a signal) the launcher
// waits before it names the one that failed first.
constexpr double kBlameWait = 0.3;

// restart: on-failure, once every sink has ended its stream: how long a
// restarted process may still run before it is stopped. It has nothing left
// to deliver, but one restarted a moment before the end finishes on its own
// within milliseconds; one whose upstream or downstream had already gone
// would wait for them until its connect timeout, and fail.
constexpr double kSettleGrace = 2.0;

// Every sink has ended its stream (exit 0, or 3: its verdict), and none is
// waiting for a restart: what the run delivered is settled.
bool sinks_ended(const std::vector<Child>& children, const Deployment& d) {
  bool any = false;
  for (const auto& c : children) {
    if (d.processes[c.index].role != Role::kSink) continue;
    if (c.running || c.restart_at >= 0 || !exited_ok(c)) return false;
    any = true;
  }
  return any;
}

std::string error_timestamp(const std::string& line) {
  static constexpr const char kShape[] = "dddd-dd-dd dd:dd:dd.ddd";
  constexpr size_t n = sizeof kShape - 1;
  if (line.size() < n) return "";
  for (size_t i = 0; i < n; ++i)
    if (kShape[i] == 'd' ? !std::isdigit(static_cast<unsigned char>(line[i])) : line[i] != kShape[i])
      return "";
  return line.substr(0, n);
}

// The first line of a process's log that its logger wrote at level error
// or critical ("... [node-a] error: ..."): the cause, where later lines are
// consequences. "" when there is none.
std::string logged_error(const std::string& log_path) {
  std::ifstream in(log_path);
  std::string line;
  while (std::getline(in, line))
    if (!error_timestamp(line).empty() &&
        (line.find("] error: ") != std::string::npos || line.find("] critical: ") != std::string::npos)) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
      return line;
    }
  return "";
}

namespace {

// Starts every process through `ex`, waits for the end of the run, and stops
// whatever still runs. Returns the run's failure ("" when none so far).
std::string run_processes(const Deployment& d, const LaunchOptions& o, Executor& ex,
                          const std::string& resolved, RunReport* rp) {
  RunReport& r = *rp;
  // A stop signal while the hosts were made: nothing is started.
  if (o.stop_signal && *o.stop_signal)
    return fmt::format("interrupted by signal {} ({}) before any process started",
                       int(*o.stop_signal), strsignal(*o.stop_signal));
  // Start downstream first (sinks, then the nodes that feed them, load
  // generators last), so every listener is up before its upstream connects.
  std::vector<Child> children;
  ExitWatch watch(ex);
  // Those still running when the run stopped them are not blamed.
  struct MarkStopped {
    std::vector<Child>& children;
    RunReport& r;
    ~MarkStopped() {
      for (const auto& c : children) r.processes[c.index].stopped = c.stopped;
      sync_exits(children, r);
    }
  } mark{children, r};
  // The run's clock starts with its first process: restarted_at_s counts
  // from here, so a restart is never dated before its process had started.
  const double t0 = mono_s();
  for (size_t k : d.start_order()) {
    ProcessOutcome& p = r.processes[k];
    if (is_app(p.role)) continue;  // the applications' (AppWatch)
    const std::string& program = o.programs.of(p.role);
    Child c{k};
    Status st = program.empty()
                    ? Status::Error(fmt::format("no program for role {}", role_name(p.role)))
                    : ex.start(k, program, process_args(resolved, p.name, p.summary_path),
                               p.log_path, &c.pid);
    if (!st) {
      p.error = st.message();
      stop_all(children, watch, ex, SIGTERM, o.grace_s);
      for (const auto& c : children) ex.signal(c.pid, SIGKILL);
      return fmt::format("process '{}' (role {}){} did not start: {}", p.name,
                         role_name(p.role), on_host(d, p), st.message());
    }
    c.running = true;
    p.pid = c.pid;
    p.running = true;
    p.start_ticks = process_start_ticks(c.pid);
    watch.watch(children.size(), c.pid);
    children.push_back(c);
    r.started.push_back(p.name);
  }
  AppWatch apps(d, r.run_dir, resolved);
  if (apps.any() && o.progress) {
    fmt::print(o.progress, "{}", apps.connect_text());
    std::fflush(o.progress);
  }
  if (o.on_change) o.on_change(r, "running");

  // Wait for all of them, or the first failure, the timeout or a stop signal.
  const double timeout = o.timeout_s > 0 ? o.timeout_s : default_timeout_s(d);
  const double period =
      o.progress_period_s >= 0 ? o.progress_period_s : (isatty(STDERR_FILENO) ? 1.0 : 5.0);
  double next_progress = mono_s() + period;
  std::unique_ptr<LiveTable> table;
  if (o.live_table && o.progress && period > 0) {
    std::vector<LiveTable::Process> ps;
    for (const auto& p : r.processes) ps.push_back({p.name, role_name(p.role), p.log_path});
    table = std::make_unique<LiveTable>(std::move(ps));
  }
  std::string failure;
  double drain_deadline = -1;
  double blame_at = -1;  // when a failure seen is judged
  double sinks_ended_at = -1;  // when every sink had ended (restart: on-failure)
  bool never_began = false;    // stopped before any load generator began its stream
  // How long to sleep for an exit: until the next thing due (a restart, a
  // failure to judge, the drain deadline, the timeout, a progress line).
  // The cap covers a stop signal that another thread caught (a signal to
  // this thread interrupts the wait) and children without a pidfd (polled).
  // A fixed 50 ms poll woke the supervisor 20 times a second for nothing,
  // on the same cores as the pipeline it watches.
  auto wait_ms = [&] {
    const double now = mono_s();
    double until = now + (watch.wakes_on_exit(children) ? 0.25 : 0.05);
    until = std::min(until, t0 + timeout);
    if (period > 0 && o.progress) until = std::min(until, next_progress);
    if (blame_at > 0) until = std::min(until, blame_at);
    if (drain_deadline > 0) until = std::min(until, drain_deadline);
    if (sinks_ended_at > 0) until = std::min(until, std::max(now, sinks_ended_at + kSettleGrace));
    for (const auto& c : children) {
      if (c.restart_at >= 0) until = std::min(until, c.restart_at);
      if (c.running && c.settle_kill_at > 0) until = std::min(until, c.settle_kill_at);
    }
    return std::max(0, int(std::ceil((until - now) * 1e3)));
  };
  for (;;) {
    size_t alive = watch.reap(children, wait_ms());
    if (sync_exits(children, r) && o.on_change) o.on_change(r, "running");
    if (apps.any()) {
      const size_t before = apps.waiting();
      failure = apps.poll(&r, mono_s() - t0);
      if (!failure.empty()) {
        stop_all(children, watch, ex, SIGTERM, o.grace_s);
        break;
      }
      if (apps.waiting() != before && o.on_change) o.on_change(r, "running");
      alive += apps.waiting();
    }
    // restart: on-failure. A process that died (a signal or a non-zero
    // code) and has restarts left is started again after its back-off, with
    // the same command through the same executor, so on its own host for
    // every launcher. Its previous log is kept as LOG.N.
    //
    // Once every sink has ended its stream, nothing is restarted: a process
    // killed in the last milliseconds (its END already passed on) would
    // come back to find its upstream or downstream gone, and fail until
    // its restarts ran out, failing a run that had lost nothing. It is let
    // go instead, and so is one restarted just before, if it still runs
    // kSettleGrace later.
    if (sinks_ended_at < 0 && sinks_ended(children, d)) sinks_ended_at = mono_s();
    // Asked to end the stream (Ctrl-C, down) before a load generator had
    // begun it: it ended with nothing sent. Once every one has, the rest
    // wait for a stream that will never come: they are let go (stopped,
    // not blamed), and the run, which lost nothing, ends. (`down` 20 ms
    // after `up` failed the run: the load generator, stopped while it
    // connected, exited 1, or died of the SIGINT before it could catch it.)
    if (drain_deadline >= 0 && !never_began) {
      bool all = true;
      for (auto& c : children) {
        if (d.processes[c.index].role != Role::kLoadgen) continue;
        if (!c.running && !c.settled && c.restart_at < 0 && ended_before_stream(c.status)) {
          c.settled = true;
          r.processes[c.index].settled = "asked to stop before its stream began; nothing was sent";
        }
        all = all && c.settled && ended_before_stream(c.status);
      }
      if (all) {
        never_began = true;
        for (auto& c : children) {
          if (!c.running || c.settled) continue;
          c.settled = true;
          c.settle_kill_at = mono_s() + o.grace_s;
          r.processes[c.index].settled = "stopped: the stream never began (asked to stop before "
                                         "the load generator had begun it)";
          ex.signal(c.pid, SIGTERM);
        }
        if (o.progress) {
          fmt::print(o.progress, "sluice-deploy: stopped before the stream began; nothing was sent\n");
          std::fflush(o.progress);
        }
      }
    }
    size_t pending = 0;
    for (size_t slot = 0; slot < children.size(); ++slot) {
      Child& c = children[slot];
      ProcessOutcome& p = r.processes[c.index];
      if (c.running || exited_ok(c) || c.settled) continue;
      if (sinks_ended_at >= 0 && restarts_on_failure(d, d.processes[c.index]) && p.error.empty()) {
        c.settled = true;
        c.restart_at = -1;
        p.settled = fmt::format("{} after every sink had ended its stream; not restarted: nothing "
                                "was left for it to deliver",
                                c.settle_kill_at > 0 ? "stopped" : "died (" + death_words(c.status) + ")");
        if (o.progress) {
          fmt::print(o.progress, "sluice-deploy: {} {}\n", p.name, p.settled);
          std::fflush(o.progress);
        }
        continue;
      }
      if (c.restart_at < 0) {
        if (!restarts_on_failure(d, d.processes[c.index]) || p.restarts >= d.restart_limit ||
            !p.error.empty() || !restartable_death(c.status))
          continue;
        // (One that would refuse to run again, a sink or operators that
        // keep state without snapshots, never gets here: the parser
        // refuses its restart: validate_restarts.)
        c.restart_at = c.exited_at + restart_backoff_s(d, p.restarts + 1);
        p.restart_due_wall_s = wall_s() + (c.restart_at - mono_s());
        if (o.on_change) o.on_change(r, "running");  // status: restarting, not only dead
        if (o.progress) {
          fmt::print(o.progress, "sluice-deploy: {} died ({}); restarting ({}/{}) in {:.0f} ms\n",
                     p.name, death_words(c.status), p.restarts + 1, d.restart_limit,
                     restart_backoff_s(d, p.restarts + 1) * 1e3);
          std::fflush(o.progress);
        }
      }
      if (mono_s() < c.restart_at) {
        ++pending;
        continue;
      }
      c.restart_at = -1;
      p.restart_due_wall_s = 0;
      ++p.restarts;
      p.restarted_at_s.push_back(mono_s() - t0);
      p.restarted_wall_s.push_back(wall_s());
      p.died_wall_s.push_back(p.restarted_wall_s.back() - (mono_s() - c.exited_at));
      std::error_code ec;
      fs::rename(p.log_path, fmt::format("{}.{}", p.log_path, p.restarts), ec);
      pid_t pid = -1;
      std::vector<std::string> args = process_args(resolved, p.name, p.summary_path);
      args.insert(args.end(), {"--restarted", std::to_string(p.restarts)});
      Status st = ex.start(c.index, o.programs.of(p.role), args, p.log_path, &pid);
      if (!st) {
        p.error = fmt::format("could not be restarted ({}/{}): {}", p.restarts, d.restart_limit,
                              st.message());
        continue;
      }
      c.pid = pid;
      c.running = true;
      c.status = 0;
      p.pid = pid;
      p.running = true;
      p.exit_code = -1;
      p.term_signal = 0;
      p.start_ticks = process_start_ticks(pid);
      watch.watch(slot, pid);
      ++alive;
      if (o.on_change) o.on_change(r, "running");
    }
    if (sinks_ended_at >= 0 && mono_s() >= sinks_ended_at + kSettleGrace)
      for (auto& c : children) {
        if (!c.running || r.processes[c.index].restarts == 0 || c.settle_kill_at >= 0) continue;
        c.settle_kill_at = mono_s() + o.grace_s;
        ex.signal(c.pid, SIGTERM);
      }
    // One let go (either way above) that outlives its SIGTERM's grace.
    for (auto& c : children)
      if (c.running && c.settle_kill_at > 0 && mono_s() >= c.settle_kill_at) ex.signal(c.pid, SIGKILL);
    // The child that failed first ends the run and is the one it names: when
    // a process dies, its upstream and downstream fail a moment later for
    // want of it, and are stopped (or, if they were quicker than the
    // launcher, described) but not blamed.
    //
    // Which failed first: a process killed by a signal from outside is its
    // own cause, and it is the first of those to exit. Otherwise the
    // earliest error its log timestamps: a node that fails logs its error,
    // closes its links and then takes a while to tear down, so its
    // downstream, failing on EOF, often exits before it does; by exit
    // order the sink was blamed for node-a's error. A process still
    // running with an error already in its log counts too.
    const Child* first = nullptr;
    bool any_failed = false;
    for (const auto& c : children) {
      if (c.running || c.restart_at >= 0 || exited_ok(c) || c.settled) continue;
      any_failed = true;
      ProcessOutcome& p = r.processes[c.index];
      if (p.error.empty()) {
        std::string why = last_error_line(p.log_path);
        p.error = fmt::format("{}{}{}", describe_exit(c.status), why.empty() ? "" : ": ", why);
        if (restarts_on_failure(d, d.processes[c.index]))
          p.error += restartable_death(c.status)
                         ? fmt::format("; restarts exhausted ({} of {})", p.restarts, d.restart_limit)
                         : std::string("; not restarted: exit 2 would come again");
      }
      if (WIFSIGNALED(c.status) && (!first || c.exit_order < first->exit_order)) first = &c;
    }
    // A failure that is not a signal is judged a moment later (kBlameWait),
    // so that the process whose error caused it has logged and exited too.
    const bool judge = first || alive + pending == 0 ||
                       (any_failed && blame_at > 0 && mono_s() >= blame_at);
    if (any_failed && blame_at < 0) blame_at = mono_s() + kBlameWait;
    if (any_failed && !first && judge) {
      std::string first_at;
      for (const auto& c : children) {
        if ((!c.running && exited_ok(c)) || c.restart_at >= 0 || c.settled) continue;
        const std::string at = error_timestamp(logged_error(r.processes[c.index].log_path));
        if (at.empty()) continue;
        if (!first || at < first_at || (at == first_at && !c.running && first->running)) {
          first = &c;
          first_at = at;
        }
      }
      if (first && first->running) {
        // It has not exited yet: it is named for its error, and stopped below.
        ProcessOutcome& p = r.processes[first->index];
        p.error = "failed: " + logged_error(p.log_path);
      }
    }
    if (any_failed && !first && judge)  // no timestamps (not sluice's programs): exit order
      for (const auto& c : children)
        if (!c.running && !exited_ok(c) && c.restart_at < 0 && !c.settled &&
            (!first || c.exit_order < first->exit_order))
          first = &c;
    if (first) {
      const ProcessOutcome& p = r.processes[first->index];
      failure = fmt::format("process '{}' (role {}, pid {}){} {}; log: {}", p.name,
                            role_name(p.role), p.pid, on_host(d, p), p.error, p.log_path);
      stop_all(children, watch, ex, SIGTERM, o.grace_s);
      break;
    }
    if (alive + pending == 0) break;
    const double now = mono_s();
    // Ctrl-C: the load generator ends its stream, everything queued drains
    // through, and every process reports. Past the drain deadline, or on any
    // other signal, everything is stopped.
    if (o.stop_signal && *o.stop_signal == SIGINT && drain_deadline < 0) {
      drain_deadline = now + 10;
      for (const auto& c : children)
        if (c.running && d.processes[c.index].role == Role::kLoadgen) ex.signal(c.pid, SIGINT);
      if (o.progress)
        fmt::print(o.progress, "sluice-deploy: interrupted: the load generator ends the stream; "
                               "waiting up to 10 s for the pipeline to drain\n");
    }
    if (o.stop_signal && *o.stop_signal && (*o.stop_signal != SIGINT || now > drain_deadline)) {
      const int sig = *o.stop_signal;
      failure = fmt::format("interrupted by signal {} ({}); stopped {}", sig, strsignal(sig),
                            names_of_running(children, d));
      stop_all(children, watch, ex, sig, o.grace_s);
      break;
    }
    if (now - t0 >= timeout) {
      failure = fmt::format("timed out after {} s; still running: {}", num(timeout),
                            names_of_running(children, d));
      stop_all(children, watch, ex, SIGTERM, o.grace_s);
      break;
    }
    if (period > 0 && now >= next_progress && o.progress) {
      next_progress += period;
      std::string expect = apps.any()       ? std::string("as long as the applications")
                           : d.tuples > 0 ? fmt::format("{} tuples to send", d.tuples)
                                          : fmt::format("{} s expected", num(d.duration_s));
      std::string running = names_of_running(children, d);
      if (const std::string a = apps.waiting_names(); !a.empty()) running += (running.empty() ? "" : ", ") + a;
      if (table) {
        table->update(now);
        table->draw(o.progress, fmt::format("sluice-deploy: {:.0f} s / {}; alive {}/{}", now - t0,
                                            expect, alive, children.size() + apps.size()));
        continue;
      }
      fmt::print(o.progress, "sluice-deploy: {:.0f} s / {}; alive {}/{}: {}\n", now - t0, expect,
                 alive, children.size() + apps.size(), running);
      std::fflush(o.progress);
    }
  }
  // Whatever a child left in its group goes too.
  for (const auto& c : children) ex.signal(c.pid, SIGKILL);
  return failure;
}

}  // namespace

double restart_backoff_s(const Deployment& d, uint32_t attempt) {
  const double ms =
      double(d.restart_backoff_ms) * std::ldexp(1.0, int(std::clamp(attempt, 1u, 32u)) - 1);
  return std::min(ms, 10000.0) / 1e3;
}

std::vector<std::string> process_args(const std::string& resolved, const std::string& name,
                                      const std::string& summary) {
  return {"--deployment", resolved, "--process", name, "--summary", summary};
}

RunReport run_deployment(const Deployment& given, const LaunchOptions& o) {
  Deployment with_tokens;
  const Deployment& d = app_link_tokens(given, &with_tokens);
  RunReport r;
  r.deployment = d.file;
  r.preset = d.preset;
  std::error_code ec;
  fs::path run = fs::absolute(o.run_dir.empty() ? default_run_dir() : o.run_dir, ec);
  r.run_dir = run.string();
  fs::create_directories(run, ec);
  if (ec) {
    r.error = fmt::format("cannot make the run directory {}: {}", r.run_dir, ec.message());
    return r;
  }
  const std::string resolved = (run / "resolved.yaml").string();
  {
    std::ofstream out(resolved);
    out << "# The deployment as sluice-deploy resolved it from " << d.file
        << " (every key, overrides applied).\n"
        << dump_deployment(d);
    if (!out) {
      r.error = fmt::format("cannot write {}", resolved);
      return r;
    }
  }
  if (Status st = AppWatch(d, r.run_dir, resolved).write_files(); !st) {
    r.error = st.message();
    return r;
  }

  for (size_t i = 0; i < d.processes.size(); ++i) {
    const ProcessConfig& p = d.processes[i];
    ProcessOutcome out;
    out.name = p.name;
    out.role = p.role;
    out.host = p.host_name.empty() ? p.host : p.host_name;
    out.log_path = (run / (p.name + ".log")).string();
    out.summary_path = (run / (p.name + ".json")).string();
    fs::remove(out.summary_path, ec);  // a stale one must not pass for this run's
    r.processes.push_back(std::move(out));
  }

  std::unique_ptr<Executor> own;
  Executor* ex = o.executor;
  if (!ex) {
    if (Status st = make_executor(d, o.progress, &own); !st) {
      r.error = st.message();
      return r;
    }
    ex = own.get();
  }
  for (size_t i = 0; i < d.processes.size(); ++i) {
    r.processes[i].where = ex->where(i);
    r.processes[i].node = ex->node(i);
  }
  r.launcher = ex->name();
  if (Status st = ex->up(); !st) {
    r.error = fmt::format("the {} launcher could not make the hosts: {}", ex->name(), st.message());
    return r;
  }
  r.namespaces = ex->namespaces();
  if (o.on_change) o.on_change(r, "starting");
  // --prometheus: the server is up before the first process starts.
  std::unique_ptr<PrometheusServer> prom;
  if (o.prometheus) {
    Status st;
    std::vector<PrometheusServer::Target> targets;
    for (size_t i = 0; i < d.processes.size(); ++i) {
      const ProcessConfig& p = d.processes[i];
      targets.push_back({p.name, role_name(p.role),
                         fmt::format("{}:{}", metrics_bind_address(d, p),
                                     d.metrics_port + i)});
    }
    prom = PrometheusServer::start(r.run_dir, targets, o.prometheus_rules, o.prometheus_consoles, &st);
    if (!prom) {
      r.error = st.message();
      ex->down();
      return r;
    }
    r.prometheus_url = prom->url();
    if (o.progress)
      fmt::print(o.progress, "sluice-deploy: prometheus at {} (consoles: {}/consoles/sluice.html)\n",
                 prom->url(), prom->url());
  }
  std::string failure = run_processes(d, o, *ex, resolved, &r);
  if (prom) {
    if (Status st = prom->figures(&r.prometheus); !st && o.progress)
      fmt::print(o.progress, "sluice-deploy: --prometheus: {}\n", st.message());
    prom.reset();  // stopped; its data stay in <run>/prometheus/data
  }
  if (o.on_change) o.on_change(r, "ended");
  if (o.hold) o.hold();
  // What the launcher made goes before the summaries are read: whatever the
  // run did, nothing of it is left behind.
  if (Status st = ex->down(); !st && failure.empty())
    failure = fmt::format("the {} launcher could not remove what it made: {}", ex->name(), st.message());
  for (size_t i = 0; i < r.processes.size(); ++i) {
    ProcessOutcome& p = r.processes[i];
    if (Status st = ex->fetch(i, p.summary_path, p.summary_path); !st && p.error.empty())
      p.error = st.message();
  }
  // Gather the summaries.
  for (size_t i = 0; i < r.processes.size(); ++i) {
    ProcessOutcome& p = r.processes[i];
    bool have = false;
    std::string text = read_file(p.summary_path, &have);
    if (have) {
      Status st = summary_from_json(text, &p.summary);
      if (st) {
        p.have_summary = true;
      } else {
        p.summary = ProcessSummary{};  // nothing of a torn one counts
        if (p.error.empty() && p.settled.empty())
          p.error = fmt::format("{}: {}", p.summary_path, st.message());
      }
    }
    // One let go at the end (settled) is no failure, with or without a
    // summary of its own.
    if (p.error.empty() && p.settled.empty()) {
      if (p.stopped) p.error = "stopped by sluice-deploy when the run ended early";
      else if (p.pid < 0) p.error = "not started: the run ended first";
      else if (!p.have_summary)
        p.error = fmt::format("exited {} but wrote no summary {}", std::max(p.exit_code, 0), p.summary_path);
      else if (!p.summary.ok) p.error = fmt::format("reported an error: {}", p.summary.error);
    }
    if (!p.error.empty() && failure.empty())
      failure = fmt::format("process '{}' (role {}){} {}; log: {}", p.name, role_name(p.role),
                            on_host(d, p), p.error, p.log_path);
    p.ok = p.error.empty();
  }
  fill_report(&r);
  if (failure.empty() && (r.lost || r.duplicated || r.corrupt))
    failure = fmt::format("the sink counted {} lost, {} duplicated and {} corrupt tuples", r.lost,
                          r.duplicated, r.corrupt);
  r.error = failure;
  r.ok = failure.empty();
  return r;
}


}  // namespace sluice
