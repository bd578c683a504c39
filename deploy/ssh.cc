#include "deploy/ssh.h"

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include "runtime/process.h"

namespace fs = std::filesystem;

namespace sluice {

namespace {

class SshExecutor : public Executor {
 public:
  SshExecutor(const Deployment& d, std::FILE* progress) : d_(d), progress_(progress) {
    ssh_ = find_tool("ssh");
    scp_ = find_tool("scp");
    std::istringstream in(d.ssh_options);
    for (std::string w; in >> w;) options_.push_back(w);
  }
  ~SshExecutor() override {
    // Whatever still runs on a host goes (the run signals each process;
    // this is for an exception or an early return).
    for (const auto& [pid, i] : started_) remote_kill(i, SIGKILL);
  }

  const char* name() const override { return "ssh"; }

  Status check() const override {
    if (d_.hosts.empty())
      return Status::Error(fmt::format("{}: the ssh launcher starts each process on a host of "
                                       "`hosts:`, and this file has none",
                                       d_.file));
    for (const char* tool : {"ssh", "scp"})
      if (find_tool(tool).empty())
        return Status::Error(fmt::format("the ssh launcher needs `{}` (Debian's openssh-client), "
                                         "found on neither PATH nor /usr/sbin, /sbin",
                                         tool));
    if (!d_.ssh_key.empty() && access(d_.ssh_key.c_str(), R_OK) != 0)
      return Status::Error(fmt::format("ssh_key {}: {}", d_.ssh_key, std::strerror(errno)));
    if (const char f = stdin_flag(options_))
      return Status::Error(fmt::format(
          "ssh_options has -{}: it gives ssh no stdin, and a remote program reads the end of its "
          "stdin as sluice-deploy gone (SLUICE_LIFELINE) and stops at once; leave -{} out",
          f, f));
    for (const HostConfig& h : d_.hosts) {
      if (!used(h)) continue;
      std::vector<std::string> argv = ssh_argv(h);
      argv.insert(argv.end(), {"-o", "ConnectTimeout=5", "true"});
      std::string out;
      if (Status st = run_command(argv, &out); !st)
        return Status::Error(fmt::format("{}: host '{}' ({}, port {}{}): cannot reach it over ssh: {}",
                                         h.source_line, h.name, h.address, h.ssh_port,
                                         h.ssh_user.empty() ? "" : ", user " + h.ssh_user,
                                         last_line(out.empty() ? st.message() : out)));
    }
    return {};
  }

  Status start(size_t i, const std::string& program, const std::vector<std::string>& args,
               const std::string& log_path, pid_t* pid) override {
    const HostConfig* h = d_.host_of(i);
    if (!h) return Status::Error(fmt::format("process '{}': no host", d_.processes[i].name));
    if (Status st = prepare(*h, program, args); !st) return st;
    Status st = lifeline_.spawn(command(i, program, args), log_path, pid);
    if (st) {
      started_[*pid] = i;
      run_dirs_[i] = remote_run_dir(args);
    }
    return st;
  }

  std::vector<std::string> command(size_t i, const std::string& program,
                                   const std::vector<std::string>& args) const override {
    const HostConfig* h = d_.host_of(i);
    if (!h) return {};
    std::vector<std::string> remote = {remote_program(program)};
    for (size_t k = 0; k < args.size(); ++k) {
      const bool path = k > 0 && (args[k - 1] == "--deployment" || args[k - 1] == "--summary");
      remote.push_back(path ? remote_path(args[k]) : args[k]);
    }
    const std::string run = remote_run_dir(args);
    std::vector<std::string> argv = ssh_argv(*h);
    argv.push_back(fmt::format("cd {} && echo $$ > {} && {}=stdin exec {}", shell_quote({run}),
                               shell_quote({d_.processes[i].name + ".pid"}), kLifelineEnv,
                               shell_quote(remote)));
    return argv;
  }

  void signal(pid_t pid, int sig) override {
    auto it = started_.find(pid);
    if (it != started_.end()) remote_kill(it->second, sig);
    if (sig == SIGKILL && pid > 0) kill(-pid, SIGKILL);
  }

  Status fetch(size_t i, const std::string& path, const std::string& local_path) override {
    if (d_.remote_dir.empty()) return Executor::fetch(i, path, local_path);
    const HostConfig* h = d_.host_of(i);
    if (!h) return {};
    std::vector<std::string> argv = scp_argv(*h);
    argv.push_back(fmt::format("{}:{}", target(*h), remote_path(path)));
    argv.push_back(local_path);
    std::string out;
    if (Status st = run_command(argv, &out); !st)
      return Status::Error(fmt::format("cannot fetch {} from host '{}': {}", remote_path(path),
                                       h->name, last_line(out.empty() ? st.message() : out)));
    return {};
  }

  std::string where(size_t i) const override {
    const HostConfig* h = d_.host_of(i);
    if (!h) return d_.processes[i].host;
    return fmt::format("{} ({}, ssh {}{})", h->name, h->address, target(*h),
                       h->ssh_port == 22 ? "" : fmt::format(" port {}", h->ssh_port));
  }

 private:
  template <class... A>
  void say(fmt::format_string<A...> f, A&&... a) {
    if (!progress_) return;
    fmt::print(progress_, "sluice-deploy: ssh: {}\n", fmt::format(f, std::forward<A>(a)...));
    std::fflush(progress_);
  }

  static std::string last_line(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    const size_t nl = s.rfind('\n');
    return nl == std::string::npos ? s : s.substr(nl + 1);
  }

  bool used(const HostConfig& h) const {
    return std::any_of(d_.processes.begin(), d_.processes.end(),
                       [&](const ProcessConfig& p) { return p.host_name == h.name; });
  }

  // -n or -f among ssh options (alone or in a group, "-nq"), or 0: either
  // gives the client /dev/null for stdin. Letters after one that takes an
  // argument are that argument ("-oBatchMode=yes"), and a flag that ends a
  // word takes the next word.
  static char stdin_flag(const std::vector<std::string>& opts) {
    static constexpr std::string_view kWithArgument = "BbcDEeFIiJLlmOopQRSWw";
    for (size_t i = 0; i < opts.size(); ++i) {
      const std::string& w = opts[i];
      if (w.size() < 2 || w[0] != '-' || w[1] == '-') continue;
      for (size_t k = 1; k < w.size(); ++k) {
        if (w[k] == 'n' || w[k] == 'f') return w[k];
        if (kWithArgument.find(w[k]) != std::string_view::npos) {
          if (k + 1 == w.size()) ++i;
          break;
        }
      }
    }
    return 0;
  }

  std::string target(const HostConfig& h) const {
    return h.ssh_user.empty() ? h.address : h.ssh_user + "@" + h.address;
  }

  // ssh with the options every call takes, ending in the host.
  std::vector<std::string> ssh_argv(const HostConfig& h) const {
    std::vector<std::string> a = {ssh_.empty() ? "ssh" : ssh_, "-o", "BatchMode=yes", "-p",
                                  std::to_string(h.ssh_port)};
    if (!d_.ssh_key.empty()) a.insert(a.end(), {"-i", d_.ssh_key});
    a.insert(a.end(), options_.begin(), options_.end());
    a.push_back(target(h));
    return a;
  }
  std::vector<std::string> scp_argv(const HostConfig& h) const {
    std::vector<std::string> a = {scp_.empty() ? "scp" : scp_, "-q", "-o", "BatchMode=yes", "-P",
                                  std::to_string(h.ssh_port)};
    if (!d_.ssh_key.empty()) a.insert(a.end(), {"-i", d_.ssh_key});
    a.insert(a.end(), options_.begin(), options_.end());
    return a;
  }

  // Paths on the hosts: this machine's when remote_dir is empty; else the
  // programs in remote_dir/bin (copied) or where they are here, and the
  // run's files in remote_dir/runs/<the run folder's name>.
  std::string remote_program(const std::string& program) const {
    if (d_.remote_dir.empty() || !d_.copy_binaries) return program;
    return (fs::path(d_.remote_dir) / "bin" / fs::path(program).filename()).string();
  }
  std::string remote_path(const std::string& local) const {
    if (d_.remote_dir.empty()) return local;
    const fs::path p(local);
    return (fs::path(d_.remote_dir) / "runs" / p.parent_path().filename() / p.filename()).string();
  }
  std::string remote_run_dir(const std::vector<std::string>& args) const {
    for (size_t k = 0; k + 1 < args.size(); ++k)
      if (args[k] == "--deployment") return fs::path(remote_path(args[k + 1])).parent_path().string();
    return ".";
  }

  // Once per host: the run's folder, resolved.yaml, and the programs.
  Status prepare(const HostConfig& h, const std::string& program,
                 const std::vector<std::string>& args) {
    if (d_.remote_dir.empty()) return {};
    std::string resolved;
    for (size_t k = 0; k + 1 < args.size(); ++k)
      if (args[k] == "--deployment") resolved = args[k + 1];
    const std::string run = fs::path(remote_path(resolved)).parent_path().string();
    std::string out;
    if (!prepared_.count(h.name)) {
      std::vector<std::string> mk = ssh_argv(h);
      mk.push_back("mkdir -p " + shell_quote({run}) +
                   (d_.copy_binaries ? " " + shell_quote({d_.remote_dir + "/bin"}) : ""));
      if (Status st = run_command(mk, &out); !st)
        return Status::Error(fmt::format("host '{}': cannot make {}: {}", h.name, run,
                                         last_line(out.empty() ? st.message() : out)));
      std::vector<std::string> cp = scp_argv(h);
      cp.insert(cp.end(), {resolved, fmt::format("{}:{}/", target(h), run)});
      if (Status st = run_command(cp, &out); !st)
        return Status::Error(fmt::format("host '{}': cannot copy {}: {}", h.name, resolved,
                                         last_line(out.empty() ? st.message() : out)));
      prepared_.insert(h.name);
      say("host {}: {} ready", h.name, run);
    }
    if (d_.copy_binaries && !copied_.count(h.name + " " + program)) {
      // Copied beside, then renamed over: a program that runs already (a
      // host with two processes, or hosts sharing a disk) keeps its file.
      const std::string final_path = remote_program(program);
      const std::string temp = final_path + fmt::format(".new.{}", getpid());
      std::vector<std::string> cp = scp_argv(h);
      cp.insert(cp.end(), {program, fmt::format("{}:{}", target(h), temp)});
      Status st = run_command(cp, &out);
      if (st) {
        std::vector<std::string> mv = ssh_argv(h);
        mv.push_back("mv -f " + shell_quote({temp, final_path}));
        st = run_command(mv, &out);
      }
      if (!st)
        return Status::Error(fmt::format("host '{}': cannot copy {} to {}: {}", h.name, program,
                                         final_path, last_line(out.empty() ? st.message() : out)));
      copied_.insert(h.name + " " + program);
      say("host {}: copied {}", h.name, fs::path(program).filename().string());
    }
    return {};
  }

  // kill -SIG -- -PID on process i's host, PID from its NAME.pid.
  void remote_kill(size_t i, int sig) {
    const HostConfig* h = d_.host_of(i);
    if (!h) return;
    const std::string pidfile = d_.processes[i].name + ".pid";
    std::vector<std::string> argv = ssh_argv(*h);
    argv.push_back(fmt::format("cd {} && p=$(cat {}) && kill -{} -- -$p 2>/dev/null; true",
                               shell_quote({run_dirs_.count(i) ? run_dirs_.at(i) : "."}),
                               shell_quote({pidfile}), sig));
    run_command(argv);
  }

  const Deployment& d_;
  std::FILE* progress_;
  std::string ssh_, scp_;
  std::vector<std::string> options_;
  std::set<std::string> prepared_, copied_;
  Lifeline lifeline_;  // ends the remote programs if this process dies
  std::map<pid_t, size_t> started_;      // local ssh client -> process
  std::map<size_t, std::string> run_dirs_;  // process -> its run folder on its host
};

}  // namespace

std::unique_ptr<Executor> make_ssh_executor(const Deployment& d, std::FILE* progress) {
  return std::make_unique<SshExecutor>(d, progress);
}

}  // namespace sluice
