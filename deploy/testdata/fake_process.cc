// A stand-in for sluice-loadgen/-node/-sink in the launcher's tests. It takes
// the same arguments, reads the resolved deployment (so the tests also check
// what the launcher hands its children), and then does what SLUICE_FAKE says
// for its process name: a comma list of name:mode, mode one of
//   ok         write a summary and exit 0 (the default)
//   fail       print an error line and exit 1
//   hang       start a grandchild (its pid in <summary>.grandchild), sleep forever
//   stubborn   like hang, but ignore SIGTERM
//   nosummary  exit 0 without a summary
//   lost       (sink) an ok summary that counts 3 lost tuples
//   verdict    (sink) the same summary, and exit 3 as sluice-sink does then
//   refused    the first start dies like killed-once; started again
//              (--restarted N), it logs why it will not run and exits 2, as a
//              sink or stateful node without snapshots does
//   crash      die by SIGSEGV-like abort
//   killed     die by SIGKILL after 200 ms, as if killed from outside
//   killed-once  the first start (no <summary>.died yet) creates <summary>.died
//              and dies like killed; a start after that runs as ok
//   follow=P   wait until process P has died, then fail as a neighbour of a
//              vanished peer does ("upstream closed mid-stream")
//   slowfail   log a timestamped error as sluice's programs do, then take
//              600 ms to tear down before it exits 1
//   after=P    once P runs, wait 100 ms, log a timestamped error and exit 1
//              at once: the neighbour that exits before the cause does
//   late=P     wait until P has exited, then die by SIGKILL: a process killed
//              in the last moments of a run, after the sink ended
//   late-torn=P  the same, killed while writing its summary (half of it)
//   killed-once-hang  like killed-once, but a start after that hangs: a
//              process restarted to find its neighbours already gone
//   slow       ok, 800 ms later
//   connecting (a load generator) never connects; asked to stop (SIGINT),
//              exits 4, as sluice-loadgen stopped while it connects does
// Every fake writes its pid to <summary>.pid first (follow reads P's).
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "graph/config.h"
#include "node/metrics.h"

using namespace sluice;

namespace {

std::string mode_for(const std::string& name) {
  const char* env = std::getenv("SLUICE_FAKE");
  std::string spec = env ? env : "";
  size_t b = 0;
  while (b <= spec.size()) {
    size_t e = spec.find(',', b);
    if (e == std::string::npos) e = spec.size();
    std::string item = spec.substr(b, e - b);
    size_t colon = item.find(':');
    if (colon != std::string::npos && item.substr(0, colon) == name) return item.substr(colon + 1);
    b = e + 1;
  }
  return "ok";
}

void sleep_forever() {
  for (;;) pause();
}

// Blocks until process `name` (a sibling, started by the same launcher) has
// exited: its pid from <run>/NAME.json.pid, then a pidfd, readable once it
// is gone.
void wait_for_death_of(const std::string& summary, const std::string& name) {
  const std::string pid_file =
      (std::filesystem::path(summary).parent_path() / (name + ".json.pid")).string();
  pid_t pid = -1;
  while (pid <= 0) {
    std::ifstream(pid_file) >> pid;
    if (pid <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return;  // already gone
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, -1) < 0) {
  }
  close(fd);
}

// An error line in the format of sluice's logger ("%Y-%m-%d %H:%M:%S.%e
// [%n] %l: %v").
void log_error(const std::string& process, const std::string& what) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  char at[32];
  std::strftime(at, sizeof at, "%Y-%m-%d %H:%M:%S", std::localtime(&t));
  std::fprintf(stderr, "%s.%03d [%s] error: %s: %s\n", at, ms, process.c_str(), process.c_str(),
               what.c_str());
  std::fflush(stderr);
}

void wait_for_pid_file(const std::string& summary, const std::string& name) {
  const std::string pid_file =
      (std::filesystem::path(summary).parent_path() / (name + ".json.pid")).string();
  while (!std::filesystem::exists(pid_file))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

}  // namespace

int main(int argc, char** argv) {
  std::string deployment, process, summary, restarted = "0";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--deployment") deployment = argv[i + 1];
    else if (k == "--process") process = argv[i + 1];
    else if (k == "--summary") summary = argv[i + 1];
    else if (k == "--restarted") restarted = argv[i + 1];
  }
  Deployment d;
  Status st = load_deployment(deployment, {}, &d);
  if (!st) {
    std::fprintf(stderr, "[error] fake: %s\n", st.message().c_str());
    return 2;
  }
  int idx = d.process_index(process);
  if (idx < 0) {
    std::fprintf(stderr, "[error] fake: no process '%s'\n", process.c_str());
    return 2;
  }
  const std::string mode = mode_for(process);
  {
    std::ofstream pid_out(summary + ".pid.tmp");
    pid_out << getpid() << "\n";
  }
  std::filesystem::rename(summary + ".pid.tmp", summary + ".pid");
  std::printf("fake %s (%s) starting, mode %s\n", process.c_str(), role_name(d.processes[idx].role),
              mode.c_str());
  std::fflush(stdout);

  if (mode == "fail") {
    std::fprintf(stderr, "[error] %s: link %s -> %s: connection refused\n", process.c_str(),
                 process.c_str(), "next");
    std::fprintf(stderr, "shutting down\n");
    return 1;
  }
  if (mode == "crash") abort();
  if (mode == "slowfail") {
    log_error(process, "process stage: operator failed");
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    return 1;
  }
  if (mode.rfind("after=", 0) == 0) {
    wait_for_pid_file(summary, mode.substr(6));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    log_error(process, "link " + mode.substr(6) + " -> " + process + ": upstream closed mid-stream");
    return 1;
  }
  if (mode == "refused" && restarted != "0") {
    log_error(process, "restarted " + restarted + " times: its state died with the process it replaces");
    return 2;
  }
  if ((mode == "killed-once" || mode == "refused") && !std::filesystem::exists(summary + ".died")) {
    std::ofstream(summary + ".died") << getpid() << "\n";
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    kill(getpid(), SIGKILL);
  }
  if (mode == "killed-once-hang" && !std::filesystem::exists(summary + ".died")) {
    std::ofstream(summary + ".died") << getpid() << "\n";
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    kill(getpid(), SIGKILL);
  }
  if (mode.rfind("late=", 0) == 0 || mode.rfind("late-torn=", 0) == 0) {
    wait_for_death_of(summary, mode.substr(mode.find('=') + 1));
    if (mode[4] == '-') std::ofstream(summary) << "{\"name\": \"" << process << "\", \"ro";
    kill(getpid(), SIGKILL);
  }
  if (mode == "slow") std::this_thread::sleep_for(std::chrono::milliseconds(800));
  if (mode == "killed") {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    kill(getpid(), SIGKILL);
  }
  if (mode.rfind("follow=", 0) == 0) {
    wait_for_death_of(summary, mode.substr(7));
    std::fprintf(stderr, "[error] %s: link %s: upstream closed mid-stream\n", process.c_str(),
                 mode.substr(7).c_str());
    return 1;
  }
  if (mode == "hang" || mode == "stubborn" || mode == "killed-once-hang") {
    if (mode == "stubborn") signal(SIGTERM, SIG_IGN);
    pid_t g = fork();
    if (g == 0) sleep_forever();
    std::ofstream(summary + ".grandchild") << g << "\n";
    sleep_forever();
  }
  if (mode == "connecting") {
    signal(SIGINT, [](int) { _exit(4); });  // kExitStoppedBeforeStream
    sleep_forever();
  }
  if (mode == "nosummary") return 0;

  ProcessSummary s;
  s.name = process;
  s.role = role_name(d.processes[idx].role);
  s.instances = d.instances;
  s.cores = d.cores_of(idx);
  s.wall_s = 2.0;
  s.user_s = 0.5;
  s.sys_s = 0.25;
  const uint64_t events = 1000, tuples = 255000, bytes = 32768000;
  if (d.processes[idx].role != Role::kLoadgen) s.events_in = events, s.tuples_in = tuples, s.bytes_in = bytes;
  if (d.processes[idx].role != Role::kSink) s.events_out = events, s.tuples_out = tuples, s.bytes_out = bytes;
  if (d.processes[idx].role == Role::kSink) {
    s.latency_p50_us = 40;
    s.latency_p99_us = 120.5;
    s.latency_max_us = 900;
    if (mode == "lost" || mode == "verdict") s.lost = 3;
  }
  s.rss_max_bytes = 10 << 20;
  StageSummary stage;
  stage.name = "receive/0";
  stage.user_s = 0.1;
  stage.sys_s = 0.2;
  stage.events = events;
  s.stages.push_back(stage);
  s.compute();
  std::ofstream(summary) << s.to_json() << "\n";
  std::printf("fake %s done\n", process.c_str());
  return mode == "verdict" ? 3 : 0;
}
