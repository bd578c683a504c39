// The local executor, make_executor() and what every executor shares:
// starting a program in its own process group, pinned, with its log; running
// the helper commands (ip, tc) of the netns executor.
#include "deploy/executor.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <string_view>
#include <thread>

#include "deploy/netns.h"
#include "deploy/slurm.h"
#include "deploy/ssh.h"
#include "graph/registry.h"
#include "runtime/process.h"

extern char** environ;

namespace sluice {

namespace fs = std::filesystem;

void Executor::signal(pid_t pid, int sig) {
  if (pid > 0) kill(-pid, sig);
}

Status Executor::fetch(size_t, const std::string& path, const std::string& local_path) {
  // The hosts share this machine's files: nothing to bring unless asked for
  // another place.
  if (path == local_path) return {};
  std::error_code ec;
  fs::copy_file(path, local_path, fs::copy_options::overwrite_existing, ec);
  if (ec) return Status::Error(fmt::format("copy {} to {} failed: {}", path, local_path, ec.message()));
  return {};
}

std::string Executor::where(size_t) const { return ""; }

std::vector<std::string> Executor::command(size_t, const std::string& program,
                                           const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {program};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

namespace {

// The program's CPUs are set on this thread for the moment of the spawn: the
// child inherits them before it runs a line (sched_setaffinity on the child
// afterwards would race with the threads it starts).
class PinnedForSpawn {
 public:
  explicit PinnedForSpawn(const std::vector<unsigned>& cpus) {
    if (cpus.empty()) return;
    if (pthread_getaffinity_np(pthread_self(), sizeof saved_, &saved_) != 0) return;
    cpu_set_t want;
    CPU_ZERO(&want);
    for (unsigned c : cpus) CPU_SET(c, &want);
    err_ = pthread_setaffinity_np(pthread_self(), sizeof want, &want);
    pinned_ = err_ == 0;
  }
  ~PinnedForSpawn() {
    if (pinned_) pthread_setaffinity_np(pthread_self(), sizeof saved_, &saved_);
  }
  PinnedForSpawn(const PinnedForSpawn&) = delete;
  PinnedForSpawn& operator=(const PinnedForSpawn&) = delete;
  int error() const { return err_; }

 private:
  cpu_set_t saved_{};
  bool pinned_ = false;
  int err_ = 0;
};

std::string cpus_name(const std::vector<unsigned>& cpus) { return cpu_list_name(cpus); }

// Whether this machine has `address`: a socket binds to it.
bool is_local_address(const std::string& address) {
  in_addr a{};
  if (inet_pton(AF_INET, address.c_str(), &a) != 1) {
    in6_addr a6{};
    if (inet_pton(AF_INET6, address.c_str(), &a6) != 1) return false;
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_addr = a6;
    const bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
    if (fd >= 0) close(fd);
    return ok;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr = a;
  const bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  if (fd >= 0) close(fd);
  return ok;
}

// Every process on this machine. With `hosts:`, the hosts are names for this
// machine, and their addresses must be its own (127.0.0.1, 127.0.0.2, ... all
// are): a process binds its host's address.
class LocalExecutor : public Executor {
 public:
  explicit LocalExecutor(const Deployment& d) : d_(d) {}
  const char* name() const override { return "local"; }

  Status check() const override {
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    for (const auto& h : d_.hosts) {
      if (!h.cpus.empty() && h.cpus.back() >= hw)
        return Status::Error(fmt::format("{}: host '{}': cores {}: this machine has CPUs 0-{}",
                                         h.source_line, h.name, cpus_name(h.cpus), hw - 1));
      bool used = false;
      for (const auto& p : d_.processes) used = used || p.host_name == h.name;
      if (used && !is_local_address(h.address))
        return Status::Error(fmt::format(
            "{}: host '{}': the local launcher runs every process on this machine, which has no "
            "address {}; run with --launcher netns (a namespace per host), or give the hosts "
            "addresses of this machine (127.0.0.1, 127.0.0.2, ...)",
            h.source_line, h.name, h.address));
    }
    return {};
  }

  Status start(size_t i, const std::string& program, const std::vector<std::string>& args,
               const std::string& log_path, pid_t* pid) override {
    const HostConfig* h = d_.host_of(i);
    return spawn_program(command(i, program, args), log_path,
                         h ? h->cpus : std::vector<unsigned>{}, pid, /*child=*/true);
  }

  std::string where(size_t i) const override {
    const HostConfig* h = d_.host_of(i);
    if (!h) return d_.processes[i].host;
    return fmt::format("{} ({}{})", h->name, h->address,
                       h->cpus.empty() ? "" : ", cpus " + cpus_name(h->cpus));
  }

 private:
  const Deployment& d_;
};

}  // namespace

Lifeline::Lifeline() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    error_ = errno;
    return;
  }
  read_ = Fd(fds[0]);
  write_ = Fd(fds[1]);
}

Status Lifeline::spawn(const std::vector<std::string>& argv, const std::string& log_path,
                       pid_t* pid) const {
  if (error_) return Status::Error(fmt::format("pipe2 for the programs' lifeline failed: {}", strerror(error_)));
  return spawn_program(argv, log_path, {}, pid, /*child=*/false, read_.get());
}

Status spawn_program(const std::vector<std::string>& argv_in, const std::string& log_path,
                     const std::vector<unsigned>& cpus, pid_t* pid, bool child, int stdin_fd) {
  // The environment as it is, but for the supervisor's pid: this one's for
  // a child, none for a program that is not one.
  const std::string key = std::string(kSupervisorPidEnv) + "=";
  const std::string me = key + std::to_string(getpid());
  const std::string life_key = std::string(kLifelineEnv) + "=";
  const std::string life = life_key + "stdin";
  std::vector<char*> envp;
  for (char** e = environ; *e; ++e)
    if (!std::string_view(*e).starts_with(key) && !std::string_view(*e).starts_with(life_key))
      envp.push_back(*e);
  if (child) envp.push_back(const_cast<char*>(me.c_str()));
  if (stdin_fd >= 0) envp.push_back(const_cast<char*>(life.c_str()));
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  if (stdin_fd >= 0)
    posix_spawn_file_actions_adddup2(&fa, stdin_fd, 0);
  else
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD, SIGQUIT}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> argv;
  for (const auto& a : argv_in) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int rc = 0;
  {
    PinnedForSpawn pin(cpus);
    rc = pin.error() ? pin.error() : posix_spawn(pid, argv[0], &fa, &attr, argv.data(), envp.data());
    if (pin.error()) {
      posix_spawn_file_actions_destroy(&fa);
      posix_spawnattr_destroy(&attr);
      return Status::Error(fmt::format("pthread_setaffinity_np to cpus {} for {} failed: {}",
                                       cpus_name(cpus), argv_in[0], strerror(rc)));
    }
  }
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Status::Error(fmt::format("posix_spawn {} failed: {}", argv_in[0], strerror(rc)));
  return {};
}

Status run_command(const std::vector<std::string>& argv_in, std::string* output) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Status::Error(fmt::format("pipe2 failed: {}", strerror(errno)));
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD, SIGQUIT}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> argv;
  for (const auto& a : argv_in) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(fds[1]);
  const std::string cmd = fmt::format("{}", fmt::join(argv_in, " "));
  if (rc != 0) {
    close(fds[0]);
    return Status::Error(fmt::format("{}: posix_spawn failed: {}", cmd, strerror(rc)));
  }
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0) out.append(buf, static_cast<size_t>(n));
    else if (n == 0 || errno != EINTR) break;
  }
  close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  if (output) *output = out;
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return {};
  return Status::Error(fmt::format("`{}` failed ({}){}{}", cmd,
                                   WIFEXITED(st) ? fmt::format("exit {}", WEXITSTATUS(st))
                                                 : fmt::format("signal {}", WTERMSIG(st)),
                                   out.empty() ? "" : ": ", out));
}

std::string find_tool(const std::string& name) {
  std::vector<std::string> dirs;
  if (const char* path = getenv("PATH")) {
    std::string p = path;
    for (size_t b = 0; b <= p.size();) {
      size_t c = p.find(':', b);
      if (c == std::string::npos) c = p.size();
      if (c > b) dirs.push_back(p.substr(b, c - b));
      b = c + 1;
    }
  }
  for (const char* d : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) dirs.push_back(d);
  for (const auto& d : dirs) {
    const std::string f = d + "/" + name;
    if (access(f.c_str(), X_OK) == 0) return f;
  }
  return "";
}

namespace {

// Each launcher of the registry (graph/registry.h) and how its executor is
// made. deploy_launcher_test fails while a launcher there has no line here.
using ExecutorFactory = std::unique_ptr<Executor> (*)(const Deployment&, std::FILE*);
const std::map<std::string, ExecutorFactory>& executor_factories() {
  static const std::map<std::string, ExecutorFactory> f = {
      {"local", [](const Deployment& d, std::FILE*) -> std::unique_ptr<Executor> {
         return std::make_unique<LocalExecutor>(d);
       }},
      {"netns", make_netns_executor},
      {"ssh", make_ssh_executor},
      {"slurm", make_slurm_executor},
  };
  return f;
}

}  // namespace

Status make_executor(const Deployment& d, std::FILE* progress, std::unique_ptr<Executor>* out) {
  const auto& f = executor_factories();
  auto it = f.find(d.launcher);
  if (it == f.end())
    return Status::Error(fmt::format("unknown launcher '{}' (known: {})", d.launcher, launcher_names()));
  *out = it->second(d, progress);
  return {};
}

bool has_executor(const std::string& launcher) { return executor_factories().count(launcher) > 0; }

std::string shell_quote(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !a.empty() && std::all_of(a.begin(), a.end(), [](unsigned char c) {
      return std::isalnum(c) || std::strchr("_./:=@%+,-", c);
    });
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace sluice
