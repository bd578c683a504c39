#include "deploy/session.h"
#include "deploy/apps.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "base/file.h"
#include "deploy/slurm.h"

namespace sluice {

namespace fs = std::filesystem;

namespace {

// What state.json holds, read back or about to be written.
struct ProcState {
  std::string name, role, host, where;
  pid_t pid = -1;
  uint64_t start_ticks = 0;
  std::string state = "not started";  // not started | running | exited | killed
  int exit_code = -1, signal = 0;
  uint32_t restarts = 0;  // restart: on-failure: times the supervisor started it again
  double restart_due = 0;  // dead, to be started again at this CLOCK_REALTIME second (0: not)
  std::string log, summary, metrics_url, error;
};

struct State {
  std::string run_id, run_dir, deployment, launcher, phase;
  pid_t supervisor = -1;
  uint64_t supervisor_ticks = 0;
  std::vector<std::string> namespaces;
  bool ok = false;
  std::string error;
  std::vector<ProcState> processes;
};

using Json = nlohmann::ordered_json;  // keys in the order written

// One JSON document on one line (what `status --json` and `down --json` print).
std::string dump_line(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n"; }

// state.json: one JSON object, written and read with nlohmann-json. A name,
// path or error that is not UTF-8 is written with U+FFFD in its place.
std::string state_json(const State& s) {
  Json procs = Json::array();
  for (const auto& p : s.processes)
    procs.push_back({{"name", p.name}, {"role", p.role}, {"host", p.host}, {"where", p.where},
                     {"pid", p.pid}, {"start_ticks", p.start_ticks}, {"state", p.state},
                     {"exit_code", p.exit_code}, {"signal", p.signal}, {"log", p.log},
                     {"summary", p.summary}, {"metrics_url", p.metrics_url}, {"error", p.error},
                     {"restarts", p.restarts}, {"restart_due_s", p.restart_due}});
  Json j = {{"run_id", s.run_id},
            {"run_dir", s.run_dir},
            {"deployment", s.deployment},
            {"launcher", s.launcher},
            {"phase", s.phase},
            {"supervisor", {{"pid", s.supervisor}, {"start_ticks", s.supervisor_ticks}}},
            {"namespaces", s.namespaces},
            {"ok", s.ok},
            {"error", s.error},
            {"processes", std::move(procs)}};
  return j.dump(1, ' ', false, Json::error_handler_t::replace) + "\n";
}

// "metrics at URL" from the first lines of a process's log ("" if none yet).
std::string metrics_url_in_log(const std::string& log) {
  std::ifstream in(log);
  std::string line;
  for (int i = 0; i < 50 && std::getline(in, line); ++i) {
    const size_t at = line.find("] info: metrics at ");
    if (at != std::string::npos) return line.substr(at + std::strlen("] info: metrics at "));
  }
  return "";
}

State state_of(const RunReport& r, const char* phase) {
  State s;
  s.run_dir = r.run_dir;
  s.run_id = fs::path(r.run_dir).filename().string();
  s.deployment = r.deployment;
  s.launcher = r.launcher;
  s.phase = phase;
  s.supervisor = getpid();
  s.supervisor_ticks = process_start_ticks(getpid());
  s.namespaces = r.namespaces;
  s.ok = r.ok;
  s.error = r.error;
  for (const auto& p : r.processes) {
    ProcState q;
    q.name = p.name;
    q.role = role_name(p.role);
    q.host = p.host;
    q.where = p.where;
    q.pid = p.pid;
    q.start_ticks = p.start_ticks;
    q.state = p.pid >= 0         ? (p.running ? "running" : p.term_signal ? "killed" : "exited")
              : is_app(p.role) ? "waiting for its application"
                               : "not started";
    q.exit_code = p.exit_code;
    q.signal = p.term_signal;
    q.log = p.log_path;
    q.summary = p.summary_path;
    q.metrics_url = p.have_summary && !p.summary.metrics_url.empty() ? p.summary.metrics_url
                                                                      : metrics_url_in_log(p.log_path);
    q.error = p.error;
    q.restarts = p.restarts;
    q.restart_due = p.restart_due_wall_s;  // 0 again once it is restarted
    s.processes.push_back(std::move(q));
  }
  return s;
}

fs::path state_path(const std::string& where) {
  std::error_code ec;
  if (fs::is_directory(where, ec)) return fs::path(where) / "state.json";
  return fs::path(where);
}

Status read_state(const std::string& where, State* out) {
  const fs::path path = state_path(where);
  std::ifstream in(path);
  if (!in)
    return Status::Error(fmt::format("{}: {}; give the run directory that `sluice-deploy up` (or "
                                     "run) printed, or its state.json",
                                     path.string(), std::strerror(errno)));
  std::stringstream text;
  text << in.rdbuf();
  try {
    const Json n = Json::parse(text.str());
    if (!n.is_object() || !n.contains("processes") || !n.contains("supervisor"))
      return Status::Error(fmt::format("{}: not the state of a sluice-deploy run", path.string()));
    State s;
    s.run_id = n.value("run_id", "");
    s.run_dir = n.value("run_dir", "");
    s.deployment = n.value("deployment", "");
    s.launcher = n.value("launcher", "");
    s.phase = n.value("phase", "");
    const Json& sup = n.at("supervisor");
    s.supervisor = sup.value("pid", pid_t{-1});
    s.supervisor_ticks = sup.value("start_ticks", uint64_t{0});
    if (n.contains("namespaces"))
      for (const auto& e : n.at("namespaces")) s.namespaces.push_back(e.get<std::string>());
    s.ok = n.value("ok", false);
    s.error = n.value("error", "");
    for (const auto& e : n.at("processes")) {
      ProcState p;
      p.name = e.value("name", "");
      p.role = e.value("role", "");
      p.host = e.value("host", "");
      p.where = e.value("where", "");
      p.pid = e.value("pid", pid_t{-1});
      p.start_ticks = e.value("start_ticks", uint64_t{0});
      p.state = e.value("state", "");
      p.exit_code = e.value("exit_code", -1);
      p.signal = e.value("signal", 0);
      p.log = e.value("log", "");
      p.summary = e.value("summary", "");
      p.metrics_url = e.value("metrics_url", "");
      p.error = e.value("error", "");
      p.restarts = e.value("restarts", uint32_t{0});
      p.restart_due = e.value("restart_due_s", 0.0);
      s.processes.push_back(std::move(p));
    }
    if (s.run_dir.empty()) s.run_dir = path.parent_path().string();
    *out = std::move(s);
    return {};
  } catch (const nlohmann::json::exception& e) {
    return Status::Error(fmt::format("{}: not valid JSON: {}", path.string(), e.what()));
  }
}

// The process `pid` started at `ticks` is alive (not gone, not a zombie).
bool alive(pid_t pid, uint64_t ticks) {
  if (pid <= 0 || ticks == 0) return false;
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!std::getline(in, line)) return false;
  const size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size() || line[close + 2] == 'Z') return false;
  return process_start_ticks(pid) == ticks;
}

std::string describe_state(const ProcState& p, bool supervised);

// What status says of a process: its state, and how often it was restarted.
// Dead, and its supervisor will start it again (restart: on-failure).
bool restart_pending(const ProcState& p, bool supervised) {
  return supervised && p.state != "running" && p.restart_due > 0;
}

std::string describe(const ProcState& p, bool supervised) {
  std::string d = describe_state(p, supervised);
  if (restart_pending(p, supervised)) {
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    d += fmt::format("; restart {} due in {:.1f} s", p.restarts + 1, std::max(0.0, p.restart_due - now));
  }
  if (p.restarts > 0)
    d += fmt::format(" (restarted {} time{})", p.restarts, p.restarts == 1 ? "" : "s");
  return d;
}

std::string describe_state(const ProcState& p, bool supervised) {
  if (p.state == "running") {
    if (supervised) return fmt::format("running, pid {}", p.pid);
    return alive(p.pid, p.start_ticks)
               ? fmt::format("running, pid {} (its supervisor is gone)", p.pid)
               : fmt::format("gone, pid {} (it ended after its supervisor; exit status unknown)", p.pid);
  }
  if (p.state == "exited")
    return fmt::format("exited with code {}{}", p.exit_code,
                       p.exit_code == 3 ? " (the stream ended; the sink counted lost, duplicated or corrupt tuples)"
                                        : "");
  if (p.state == "killed")
    return fmt::format("killed by signal {} ({})", p.signal, strsignal(p.signal));
  return p.state;
}

bool process_failed(const ProcState& p) {
  return p.state == "killed" || (p.state == "exited" && p.exit_code != 0);
}

std::string read_text(const fs::path& p) {
  bool ok;
  return read_file(p.string(), &ok);
}

// Waits up to `seconds` for process `pid` (started at `ticks`), which need
// not be a child, to end: a pidfd polled, else /proc looked at.
bool wait_gone(pid_t pid, uint64_t ticks, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  while (alive(pid, ticks)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    if (fd >= 0) {
      pollfd p{fd, POLLIN, 0};
      poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 200)));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  if (fd >= 0) close(fd);
  return !alive(pid, ticks);
}

volatile std::sig_atomic_t g_supervisor_stop = 0;
void on_supervisor_signal(int sig) { g_supervisor_stop = sig; }

// up's supervisor, in the child: never returns.
[[noreturn]] void supervise(const Deployment& d, LaunchOptions o, int ready_fd) {
  setsid();
  const fs::path run = o.run_dir;
  int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int log = open((run / "supervisor.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (null >= 0) dup2(null, 0);
  if (log >= 0) {
    dup2(log, 1);
    dup2(log, 2);
  }
  struct sigaction sa {};
  sa.sa_handler = on_supervisor_signal;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  bool told = false;
  auto tell = [&](const char* phase) {
    if (told) return;
    told = true;
    const std::string line = std::string(phase) + "\n";
    (void)!write(ready_fd, line.data(), line.size());
    close(ready_fd);
  };
  // The executor is made here, so the netns namespaces carry the pid of the
  // process that removes them.
  std::unique_ptr<Executor> ex;
  if (Status st = make_executor(d, stderr, &ex); !st) {
    fmt::print(stderr, "sluice-deploy: {}\n", st.message());
    tell("failed");
    _exit(2);
  }
  o.executor = ex.get();
  o.stop_signal = &g_supervisor_stop;
  o.progress = stderr;
  o.on_change = [&](const RunReport& r, const char* phase) {
    write_state(r, phase);
    if (std::strcmp(phase, "starting") != 0) tell(phase);
  };
  o.hold = [&] {
    fmt::print(stderr, "sluice-deploy: every process has ended; the hosts stay up until "
                       "`sluice-deploy down --run-dir {}`\n", run.string());
    std::fflush(stderr);
    // Signals blocked between the look at the flag and the wait for one.
    sigset_t block, old;
    sigemptyset(&block);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&block, s);
    sigprocmask(SIG_BLOCK, &block, &old);
    while (!g_supervisor_stop) sigsuspend(&old);
    sigprocmask(SIG_SETMASK, &old, nullptr);
  };
  fmt::print(stderr, "sluice-deploy: supervisor pid {} for {}\n", getpid(), run.string());
  std::fflush(stderr);
  RunReport r = run_deployment(d, o);
  tell("failed");
  ex.reset();
  write_final(r);
  fmt::print(stderr, "{}", report_table(r));
  std::fflush(nullptr);
  _exit(r.ok ? 0 : 1);
}

// What is left of a run whose supervisor is gone: each process group still
// alive gets SIGTERM, then SIGKILL; each namespace is deleted.
std::string clean_up_after(State& s) {
  std::vector<std::string> done;
  for (auto& p : s.processes)
    if (alive(p.pid, p.start_ticks)) {
      kill(-p.pid, SIGTERM);
      done.push_back(fmt::format("stopped {} (pid {})", p.name, p.pid));
    }
  for (auto& p : s.processes)
    if (alive(p.pid, p.start_ticks) && !wait_gone(p.pid, p.start_ticks, 3)) kill(-p.pid, SIGKILL);
  std::string left;
  const std::string ip = find_tool("ip");
  std::string list;
  if (!s.namespaces.empty() && !ip.empty()) run_command({ip, "netns", "list"}, &list);
  for (auto it = s.namespaces.rbegin(); it != s.namespaces.rend(); ++it) {
    if (list.find(*it) == std::string::npos) continue;
    if (Status st = run_command({ip, "netns", "del", *it}); st)
      done.push_back("removed namespace " + *it);
    else
      left += (left.empty() ? "" : "; ") + st.message();
  }
  // slurm: a step outlives its srun; cancel what the run started, and the
  // allocation --slurm-args made for it (named after the run).
  std::vector<SlurmStep> steps;
  if (s.launcher == "slurm" && slurm_steps_of(s.supervisor, &steps))
    for (const SlurmStep& st : steps)
      if (run_command({find_tool("scancel"), st.id}))
        done.push_back(fmt::format("cancelled Slurm step {} ({})", st.id, st.process));
  if (s.launcher == "slurm" && !s.run_dir.empty()) {
    std::string jobs;
    const std::string name = slurm_job_name(s.run_dir);
    if (run_command({find_tool("squeue"), "-h", "-n", name, "-o", "%i"}, &jobs) && !jobs.empty() &&
        run_command({find_tool("scancel"), "--name=" + name}))
      done.push_back(fmt::format("cancelled Slurm job {} ({})", jobs, name));
  }
  for (auto& p : s.processes)
    if (p.state == "running") {
      p.state = "unknown";
      p.error = "its exit was not seen: the supervisor was gone";
    }
  return fmt::format("{}{}", done.empty() ? "nothing was left running" : fmt::format("{}", fmt::join(done, ", ")),
                     left.empty() ? "" : "; left: " + left);
}

}  // namespace

void write_state(const RunReport& r, const char* phase) {
  if (r.run_dir.empty()) return;
  write_atomically(fs::path(r.run_dir) / "state.json", state_json(state_of(r, phase)));
}

void write_final(const RunReport& r) {
  if (r.run_dir.empty()) return;
  const fs::path run = r.run_dir;
  write_atomically(run / "report.json", report_json(r) + "\n");
  write_atomically(run / "report.txt", report_table(r));
  write_state(r, "down");
}

Status check_run_dir_free(const std::string& run_dir) {
  std::error_code ec;
  if (run_dir.empty() || !fs::exists(state_path(run_dir), ec)) return {};
  State s;
  if (!read_state(run_dir, &s).ok() || s.phase == "down") return {};
  std::string who;
  if (alive(s.supervisor, s.supervisor_ticks)) {
    who = fmt::format("its supervisor, pid {}, is alive", s.supervisor);
  } else {
    for (const ProcState& p : s.processes)
      if (alive(p.pid, p.start_ticks)) {
        who = fmt::format("its process {}, pid {}, is alive (its supervisor is gone)", p.name, p.pid);
        break;
      }
  }
  if (who.empty()) return {};
  return Status::Error(fmt::format(
      "{} belongs to a run that is not down ({}, phase {}): `sluice-deploy down --run-dir {}` ends it; or give "
      "another --run-dir",
      run_dir, who, s.phase, run_dir));
}

SessionResult up_deployment(const Deployment& d, LaunchOptions o, bool json) {
  SessionResult res;
  std::error_code ec;
  const fs::path run = fs::absolute(o.run_dir.empty() ? default_run_dir() : o.run_dir, ec);
  fs::create_directories(run, ec);
  if (ec) {
    res.exit_code = 2;
    res.err = fmt::format("cannot make the run directory {}: {}", run.string(), ec.message());
    return res;
  }
  for (const char* f : {"state.json", "report.json", "report.txt"}) fs::remove(run / f, ec);
  o.run_dir = run.string();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    res.exit_code = 2;
    res.err = fmt::format("pipe2 failed: {}", std::strerror(errno));
    return res;
  }
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    res.exit_code = 2;
    res.err = fmt::format("fork failed: {}", std::strerror(errno));
    return res;
  }
  if (pid == 0) {
    close(fds[0]);
    supervise(d, std::move(o), fds[1]);
  }
  close(fds[1]);
  std::string phase;
  char buf[64];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n > 0) phase.append(buf, static_cast<size_t>(n));
    else if (errno != EINTR) break;
  }
  close(fds[0]);
  while (!phase.empty() && phase.back() == '\n') phase.pop_back();
  if (phase == "running") {
    res = deployment_status(run.string(), json);
    res.err = fmt::format("sluice-deploy: up: supervisor pid {}; see `sluice-deploy status --run-dir {}`, "
                          "end with `sluice-deploy down --run-dir {}`\n{}{}",
                          pid, run.string(), run.string(), app_connect_text(d, run.string()), res.err);
    return res;
  }
  // It did not come up: the supervisor stops and removes what it made and
  // writes the report; it is still our child.
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  const std::string report = read_text(run / (json ? "report.json" : "report.txt"));
  res.exit_code = WIFEXITED(st) && WEXITSTATUS(st) == 2 ? 2 : 1;
  res.out = report;
  res.err = fmt::format("sluice-deploy: up: the deployment did not come up; supervisor log {}\n",
                        (run / "supervisor.log").string());
  if (report.empty()) res.err += read_text(run / "supervisor.log");
  return res;
}

SessionResult deployment_status(const std::string& where, bool json) {
  SessionResult res;
  State s;
  if (Status st = read_state(where, &s); !st) {
    res.exit_code = 2;
    res.err = fmt::format("sluice-deploy: {}\n", st.message());
    return res;
  }
  // A URL the state had not seen yet (the process logs it as it starts).
  for (auto& p : s.processes)
    if (p.metrics_url.empty() && p.state == "running") p.metrics_url = metrics_url_in_log(p.log);
  const bool down = s.phase == "down";
  const bool supervised = !down && alive(s.supervisor, s.supervisor_ticks);
  bool failed = down ? !s.ok : !supervised;
  // One dead with a restart planned has not failed the run (yet).
  for (const auto& p : s.processes) failed = failed || (process_failed(p) && !restart_pending(p, supervised));
  res.exit_code = failed ? 1 : 0;
  // slurm: each process's job step, as Slurm has it now.
  std::map<std::string, std::string> steps;
  if (s.launcher == "slurm" && !down) {
    std::vector<SlurmStep> known;
    if (slurm_steps_of(s.supervisor, &known))
      for (const SlurmStep& st : known) steps[st.process] = st.id + " on " + st.nodes;
  }
  auto step_of = [&](const ProcState& p) -> std::string {
    if (s.launcher != "slurm" || down) return "";
    auto it = steps.find(p.name);
    return it != steps.end() ? "Slurm step " + it->second : "no Slurm step";
  };
  const std::string sup =
      down ? "the hosts are removed" : supervised ? fmt::format("supervisor pid {} alive", s.supervisor)
                                 : fmt::format("its supervisor (pid {}) is gone", s.supervisor);
  if (json) {
    Json procs = Json::array();
    for (const auto& p : s.processes) {
      std::string state = p.state;
      if (state == "running" && !supervised) state = alive(p.pid, p.start_ticks) ? "running" : "unknown";
      Json e = {{"name", p.name},       {"role", p.role},         {"host", p.host},
                {"where", p.where},     {"pid", p.pid},           {"state", state},
                {"exit_code", p.exit_code}, {"signal", p.signal}, {"describe", describe(p, supervised)},
                {"metrics_url", p.metrics_url}, {"log", p.log},   {"restarts", p.restarts},
                {"restarting", restart_pending(p, supervised)}};
      if (const std::string step = step_of(p); !step.empty()) e["slurm_step"] = step;
      procs.push_back(std::move(e));
    }
    Json j = {{"run_id", s.run_id},
              {"run_dir", s.run_dir},
              {"deployment", s.deployment},
              {"launcher", s.launcher},
              {"phase", s.phase},
              {"supervisor", {{"pid", s.supervisor}, {"alive", supervised}}},
              {"namespaces", s.namespaces},
              {"ok", s.ok},
              {"failed", failed},
              {"error", s.error},
              {"processes", std::move(procs)}};
    res.out = dump_line(j);
    return res;
  }
  std::string out = fmt::format("run {} ({}, launcher {}): {}; {}\n", s.run_id, s.deployment,
                                s.launcher, s.phase, sup);
  if (!s.namespaces.empty() && !down)
    out += fmt::format("  namespaces: {}\n", fmt::join(s.namespaces, ", "));
  size_t w = 8;
  for (const auto& p : s.processes) w = std::max(w, p.name.size());
  for (const auto& p : s.processes) {
    const std::string step = step_of(p);
    out += fmt::format("  {:<{}} {:<8} on {}: {}{}\n", p.name, w, p.role,
                       step.empty() ? p.host : p.where, describe(p, supervised),
                       step.empty() ? "" : "; " + step);
    if (p.state == "running" && !p.metrics_url.empty() && !down)
      out += fmt::format("  {:<{}} metrics {}\n", "", w + 9, p.metrics_url);
  }
  if (down) out += s.ok ? "ok\n" : fmt::format("FAILED: {}\n", s.error);
  out += fmt::format("logs in {}\n", s.run_dir);
  res.out = out;
  return res;
}

SessionResult down_deployment(const std::string& where, bool now, bool json, double wait_s) {
  SessionResult res;
  State s;
  if (Status st = read_state(where, &s); !st) {
    res.exit_code = 2;
    res.err = fmt::format("sluice-deploy: {}\n", st.message());
    return res;
  }
  const fs::path run = s.run_dir;
  auto report = [&](const State& st) {
    SessionResult r;
    r.out = read_text(run / (json ? "report.json" : "report.txt"));
    r.exit_code = st.ok ? 0 : 1;
    return r;
  };
  if (s.phase == "down") {
    SessionResult r = report(s);
    r.err = fmt::format("sluice-deploy: down: {} was down already\n", s.run_id);
    return r;
  }
  std::string why;
  if (alive(s.supervisor, s.supervisor_ticks)) {
    kill(s.supervisor, now ? SIGTERM : SIGINT);
    if (wait_gone(s.supervisor, s.supervisor_ticks, wait_s)) {
      State after;
      if (read_state(where, &after) && after.phase == "down") return report(after);
      why = fmt::format("the supervisor (pid {}) ended without a report", s.supervisor);
    } else {
      kill(s.supervisor, SIGKILL);
      wait_gone(s.supervisor, s.supervisor_ticks, 2);
      why = fmt::format("the supervisor (pid {}) did not end within {} s and was killed",
                        s.supervisor, wait_s);
    }
    read_state(where, &s);  // what it saw last
  } else {
    why = fmt::format("the supervisor (pid {}) was gone before down", s.supervisor);
  }
  // Nobody is left to gather: stop what is left and remove the hosts here.
  const std::string done = clean_up_after(s);
  s.phase = "down";
  s.ok = false;
  s.error = fmt::format("{}; down: {}", why, done);
  write_atomically(run / "state.json", state_json(s));
  res.exit_code = 1;
  res.out = json ? dump_line(Json{{"run_dir", s.run_dir}, {"ok", false}, {"error", s.error}})
                 : fmt::format("FAILED: {}\nlogs in {}\n", s.error, s.run_dir);
  return res;
}

}  // namespace sluice
