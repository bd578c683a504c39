#include "deploy/launcher.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "deploy/executor.h"
#include "graph/registry.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;

// guarantee: none with acks and snapshots: what a death does is each
// test's own restart, and any restart it sets can go on.
const char* kYaml = R"(preset: tcp-opt
guarantee: none
acks: on
checkpoint_interval_ms: 100
duration_s: 1
base_port: 27100
processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node}
  - {name: node-b, role: node}
  - {name: sink, role: sink}
)";

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

// Alive and not a zombie.
bool alive(pid_t pid) {
  if (pid <= 0 || kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  size_t paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] != 'Z';
}

// Dead within a short while (a killed grandchild is reaped by init).
bool gone(pid_t pid) {
  for (int i = 0; i < 100 && alive(pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return !alive(pid);
}

pid_t grandchild_of(const ProcessOutcome& p) {
  std::ifstream in(p.summary_path + ".grandchild");
  pid_t g = -1;
  in >> g;
  return g;
}

class Launcher : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-launcher-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    Status st = parse_deployment(kYaml, "test.yaml", {}, &d_);
    ASSERT_TRUE(st.ok()) << st.message();
    opts_.run_dir = dir_ + "/run";
    opts_.programs = {SLUICE_FAKE_PROCESS, SLUICE_FAKE_PROCESS, SLUICE_FAKE_PROCESS};
    opts_.grace_s = 0.5;
    opts_.progress_period_s = 0;
  }
  void TearDown() override {
    unsetenv("SLUICE_FAKE");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  RunReport run_with(const char* fake) {
    setenv("SLUICE_FAKE", fake, 1);
    return run_deployment(d_, opts_);
  }
  // The supervisor's progress lines go to a file the test reads after the run.
  void capture_progress() { opts_.progress = std::tmpfile(); }
  std::string progress_said() {
    std::rewind(opts_.progress);
    std::string said(4096, '\0');
    said.resize(std::fread(said.data(), 1, said.size(), opts_.progress));
    std::fclose(opts_.progress);
    opts_.progress = nullptr;
    return said;
  }
  void expect_nothing_left(const RunReport& r) {
    for (const auto& p : r.processes) {
      EXPECT_TRUE(gone(p.pid)) << p.name << " pid " << p.pid << " still running";
      pid_t g = grandchild_of(p);
      if (g > 0) {
        EXPECT_TRUE(gone(g)) << p.name << "'s grandchild " << g << " still running";
      }
      if (p.pid > 0) {
        EXPECT_TRUE(fs::exists(p.log_path)) << p.log_path;  // logs are kept
      }
    }
  }

  std::string dir_;
  Deployment d_;
  LaunchOptions opts_;
};

TEST_F(Launcher, GathersSummariesOfASuccessfulRun) {
  RunReport r = run_with("");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.run_dir, dir_ + "/run");
  EXPECT_EQ(r.started, (std::vector<std::string>{"sink", "node-b", "node-a", "loadgen"}));
  ASSERT_EQ(r.processes.size(), 4u);
  for (const auto& p : r.processes) {
    EXPECT_TRUE(p.ok) << p.name << ": " << p.error;
    EXPECT_TRUE(p.have_summary) << p.name;
    EXPECT_EQ(p.summary.name, p.name);
    EXPECT_EQ(p.summary.role, role_name(p.role));
    EXPECT_EQ(p.log_path, r.run_dir + "/" + p.name + ".log");
  }
  EXPECT_EQ(r.tuples, 255000u);
  EXPECT_DOUBLE_EQ(r.tuples_per_s, 255000 / 2.0);
  EXPECT_DOUBLE_EQ(r.gbps, 32768000 * 8.0 / 2.0 / 1e9);
  EXPECT_DOUBLE_EQ(r.latency_p99_us, 120.5);
  EXPECT_EQ(r.lost, 0u);
  // Every fake process takes 0.5 s user and 0.25 s system at 2.6 GHz; the
  // two nodes count 2000 events each (in and out), the loadgen and the sink
  // 1000 each: per event the nodes cost half what the endpoints do.
  EXPECT_DOUBLE_EQ(r.cpe_p_nodes, 2 * 0.75 * 2.6e9 / 4000);
  EXPECT_DOUBLE_EQ(r.cpe_s_nodes, 2 * 0.25 * 2.6e9 / 4000);
  EXPECT_DOUBLE_EQ(r.cpe_p_endpoints, 2 * 0.75 * 2.6e9 / 2000);
  EXPECT_DOUBLE_EQ(r.cpe_s_endpoints, 2 * 0.25 * 2.6e9 / 2000);
  EXPECT_DOUBLE_EQ(r.endpoints_cpu_share, 0.5);
  // Each child read resolved.yaml; it is the same deployment.
  Deployment back;
  Status st = load_deployment(r.run_dir + "/resolved.yaml", {}, &back);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(dump_deployment(back), dump_deployment(d_));
  std::ifstream log(r.run_dir + "/node-a.log");
  std::string first;
  std::getline(log, first);
  EXPECT_EQ(first, "fake node-a (node) starting, mode ok");
  expect_nothing_left(r);

  // The JSON report: parse it back (yaml-cpp reads JSON).
  YAML::Node j = YAML::Load(report_json(r));
  EXPECT_EQ(j["deployment"].as<std::string>(), "test.yaml");
  EXPECT_EQ(j["preset"].as<std::string>(), "tcp-opt");
  EXPECT_EQ(j["run_dir"].as<std::string>(), r.run_dir);
  EXPECT_TRUE(j["ok"].as<bool>());
  EXPECT_EQ(j["error"].as<std::string>(), "");
  EXPECT_EQ(j["tuples"].as<uint64_t>(), 255000u);
  EXPECT_DOUBLE_EQ(j["tuples_per_s"].as<double>(), 127500);
  EXPECT_DOUBLE_EQ(j["gbps"].as<double>(), r.gbps);
  for (const char* k : {"lost", "duplicated", "corrupt", "filtered"}) EXPECT_EQ(j[k].as<uint64_t>(), 0u) << k;
  EXPECT_DOUBLE_EQ(j["latency_us"]["p50"].as<double>(), 40);
  EXPECT_DOUBLE_EQ(j["latency_us"]["p99"].as<double>(), 120.5);
  EXPECT_DOUBLE_EQ(j["latency_us"]["max"].as<double>(), 900);
  EXPECT_DOUBLE_EQ(j["cpe_p_nodes"].as<double>(), r.cpe_p_nodes);
  EXPECT_DOUBLE_EQ(j["cpe_p_endpoints"].as<double>(), r.cpe_p_endpoints);
  EXPECT_DOUBLE_EQ(j["endpoints_cpu_share"].as<double>(), 0.5);
  ASSERT_EQ(j["processes"].size(), 4u);
  YAML::Node p = j["processes"][1];
  EXPECT_EQ(p["name"].as<std::string>(), "node-a");
  EXPECT_EQ(p["role"].as<std::string>(), "node");
  EXPECT_TRUE(p["ok"].as<bool>());
  for (const char* k : {"events_in", "events_out", "tuples_in", "tuples_out", "bytes_in", "bytes_out",
                        "wall_s", "user_s", "sys_s", "cores", "cpe_p", "cpe_u", "cpe_s", "cpe_i",
                        "cpb_p", "epe_joules", "rss_max_bytes", "credit_waits", "error"})
    EXPECT_TRUE(p[k].IsDefined()) << k;
  EXPECT_EQ(p["events_in"].as<uint64_t>(), 1000u);
  EXPECT_DOUBLE_EQ(p["cpe_p"].as<double>(), r.processes[1].summary.cpe_p);
  ASSERT_EQ(p["stages"].size(), 1u);
  EXPECT_EQ(p["stages"][0]["name"].as<std::string>(), "receive/0");

  std::string table = report_table(r);
  EXPECT_HAS(table, "node-a");
  EXPECT_HAS(table, "CPE_p");
  EXPECT_HAS(table, "pipeline: 255000 tuples");
  EXPECT_HAS(table, "cycles per event: nodes CPE_p 975000 (CPE_s 325000), endpoints CPE_p 1950000 "
                    "(CPE_s 650000), 50% of the CPU time in the endpoints");
  EXPECT_HAS(table, "ok; logs and summaries in");
  EXPECT_EQ(table.find("held back"), std::string::npos) << table;

  // A paced load generator that its downstream held back says so, and by
  // how much its schedule went unmade.
  r.processes[0].summary.held_back_s = 2.43;
  r.processes[0].summary.behind_events = 3625;
  EXPECT_HAS(report_table(r), "loadgen: held back 2.4 s, waiting for a free slot (credits or "
                              "acknowledgements from downstream); made 3625 events fewer than its "
                              "schedule called for");
  j = YAML::Load(report_json(r));
  EXPECT_DOUBLE_EQ(j["processes"][0]["held_back_s"].as<double>(), 2.43);
  EXPECT_EQ(j["processes"][0]["behind_events"].as<uint64_t>(), 3625u);
}

TEST_F(Launcher, AFailingProcessEndsTheRunAndNamesItself) {
  RunReport r = run_with("loadgen:hang,node-a:fail,node-b:hang,sink:stubborn");
  EXPECT_FALSE(r.ok);
  EXPECT_HAS(r.error, "process 'node-a' (role node, pid " + std::to_string(r.processes[1].pid) +
                          ") failed with exit code 1: [error] node-a: link node-a -> next: "
                          "connection refused; log: " + r.run_dir + "/node-a.log");
  EXPECT_FALSE(r.processes[1].ok);
  for (size_t i : {0, 2, 3}) {
    EXPECT_FALSE(r.processes[i].ok);
    EXPECT_HAS(r.processes[i].error, "stopped by sluice-deploy");
  }
  expect_nothing_left(r);
  std::string table = report_table(r);
  EXPECT_HAS(table, "FAILED: process 'node-a'");
  YAML::Node j = YAML::Load(report_json(r));
  EXPECT_FALSE(j["ok"].as<bool>());
  EXPECT_EQ(j["error"].as<std::string>(), r.error);
  EXPECT_FALSE(j["processes"][1]["ok"].as<bool>());
}

TEST_F(Launcher, ACrashNamesTheSignal) {
  RunReport r = run_with("loadgen:hang,node-b:crash,node-a:hang,sink:hang");
  EXPECT_FALSE(r.ok);
  EXPECT_HAS(r.error, "process 'node-b' (role node, pid " + std::to_string(r.processes[2].pid) +
                          ") was killed by signal 6 (Aborted)");
  expect_nothing_left(r);
}

// node-a is killed; the loadgen and node-b notice at once and fail, the sink
// fails after node-b: all four have failed by the time the launcher looks.
// The run names node-a, the one that died first, whatever order the
// launcher finds them in. Three times, as the order of finding is a race.
TEST_F(Launcher, TheProcessThatDiedFirstIsNamedNotItsNeighbours) {
  for (int i = 0; i < 3; ++i) {
    opts_.run_dir = dir_ + "/run" + std::to_string(i);
    RunReport r = run_with("loadgen:follow=node-a,node-a:killed,node-b:follow=node-a,"
                           "sink:follow=node-b");
    EXPECT_FALSE(r.ok);
    EXPECT_HAS(r.error, "process 'node-a' (role node, pid " + std::to_string(r.processes[1].pid) +
                            ") was killed by signal 9 (Killed)");
    EXPECT_EQ(r.error.find("upstream closed"), std::string::npos) << r.error;
    EXPECT_FALSE(r.processes[1].ok);
    expect_nothing_left(r);
  }
}

// node-a logs its error and takes 600 ms to tear down; the sink logs its
// own error (caused by node-a's) 100 ms later and exits at once, so it is
// the first to exit. The run names node-a, whose error came first, though
// it was still running when the sink exited.
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// restart: on-failure: node-a is killed once, started again after its
// back-off, and the run succeeds counting one restart; its first log is kept.
TEST_F(Launcher, ADeadProcessIsRestartedAndCounted) {
  d_.restart = "on-failure";
  d_.restart_backoff_ms = 100;
  capture_progress();
  // The sink runs on past the restart, as a real one does until its
  // upstream's END (one that ended first lets a dead node go: below).
  RunReport r = run_with("node-a:killed-once,sink:slow");
  EXPECT_TRUE(r.ok) << r.error;
  const ProcessOutcome& a = r.processes[1];
  EXPECT_EQ(a.restarts, 1u);
  EXPECT_TRUE(a.settled.empty()) << a.settled;
  ASSERT_EQ(a.restarted_at_s.size(), 1u);
  EXPECT_GE(a.restarted_at_s[0], 0.3);  // 200 ms alive, then the 100 ms back-off
  EXPECT_HAS(slurp(a.log_path + ".1"), "mode killed-once");
  EXPECT_HAS(slurp(a.log_path), "fake node-a done");
  for (size_t i : {0, 2, 3}) EXPECT_EQ(r.processes[i].restarts, 0u);
  const std::string said = progress_said();
  EXPECT_HAS(said, "node-a died (signal KILL); restarting (1/3) in 100 ms");
  YAML::Node j = YAML::Load(report_json(r));
  EXPECT_EQ(j["restarts"].as<int>(), 1);
  EXPECT_EQ(j["processes"][1]["restarts"].as<int>(), 1);
  EXPECT_EQ(j["processes"][1]["restarted_at_s"].size(), 1u);
  EXPECT_EQ(j["processes"][0]["restarts"].as<int>(), 0);
  expect_nothing_left(r);
}

// restart: never (the default): the same death ends the run and names it.
TEST_F(Launcher, WithoutRestartADeadProcessFailsTheRun) {
  RunReport r = run_with("node-a:killed-once,loadgen:hang,node-b:hang,sink:hang");
  EXPECT_FALSE(r.ok);
  EXPECT_HAS(r.error, "process 'node-a' (role node, pid " + std::to_string(r.processes[1].pid) +
                          ") was killed by signal 9");
  EXPECT_EQ(r.error.find("restart"), std::string::npos) << r.error;
  EXPECT_EQ(r.processes[1].restarts, 0u);
  EXPECT_FALSE(fs::exists(r.processes[1].log_path + ".1"));
  expect_nothing_left(r);
}

// restart: on-failure. A process killed after every sink has ended its
// stream is not restarted: its END had passed on, and started again it would
// find its upstream and downstream gone and fail until its restarts ran out
// (seen: a node killed 1 ms after the load generator exited failed a run
// that had lost nothing, 30 s later). It is let go, and the run is ok.
// Without restart, the same death still fails the run.
TEST_F(Launcher, ADeathAfterEverySinkEndedIsNotRestartedAndFailsNothing) {
  d_.restart = "on-failure";
  d_.restart_backoff_ms = 100;
  capture_progress();
  RunReport r = run_with("node-a:late=sink");
  EXPECT_TRUE(r.ok) << r.error;
  const ProcessOutcome& a = r.processes[1];
  EXPECT_EQ(a.restarts, 0u);
  EXPECT_TRUE(a.ok);
  EXPECT_HAS(a.settled, "died (signal KILL) after every sink had ended its stream; not restarted");
  EXPECT_FALSE(fs::exists(a.log_path + ".1"));
  const std::string said = progress_said();
  EXPECT_HAS(said, "node-a died (signal KILL) after every sink had ended its stream");
  EXPECT_EQ(said.find("restarting"), std::string::npos) << said;
  EXPECT_HAS(report_table(r), "node-a: died (signal KILL) after every sink had ended its stream");
  YAML::Node j = YAML::Load(report_json(r));
  EXPECT_HAS(j["processes"][1]["settled"].as<std::string>(), "after every sink had ended");
  expect_nothing_left(r);

  // Killed while writing its summary: the torn file is no failure either.
  RunReport torn = run_with("node-a:late-torn=sink");
  EXPECT_TRUE(torn.ok) << torn.error;
  EXPECT_FALSE(torn.processes[1].have_summary);
  EXPECT_HAS(torn.processes[1].settled, "after every sink had ended its stream");
  expect_nothing_left(torn);

  d_.restart = "never";
  RunReport never = run_with("node-a:late=sink");
  EXPECT_FALSE(never.ok);
  EXPECT_HAS(never.error, "process 'node-a'");
  EXPECT_TRUE(never.processes[1].settled.empty());
  expect_nothing_left(never);
}

// restart: on-failure. A process restarted just before the end that still
// runs kSettleGrace (2 s) after every sink ended (here it hangs, as a node
// whose neighbours had gone waits for them) is stopped, not waited for
// until its connect timeout, and not blamed.
TEST_F(Launcher, ARestartedProcessStillRunningAfterEverySinkEndedIsStopped) {
  d_.restart = "on-failure";
  d_.restart_backoff_ms = 100;
  const auto t0 = std::chrono::steady_clock::now();
  RunReport r = run_with("node-a:killed-once-hang,sink:slow");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r.ok) << r.error;
  const ProcessOutcome& a = r.processes[1];
  EXPECT_EQ(a.restarts, 1u);
  EXPECT_HAS(a.settled, "stopped after every sink had ended its stream");
  EXPECT_GE(took, 2.8);   // the sink's 0.8 s, then the grace
  EXPECT_LT(took, 10.0);  // not the run's timeout
  expect_nothing_left(r);
}

// A process that keeps dying is restarted restart_limit times, each back-off
// twice the last, then the run fails naming it and saying so.
TEST_F(Launcher, RestartsExhaustedFailTheRun) {
  d_.restart = "on-failure";
  d_.restart_limit = 2;
  d_.restart_backoff_ms = 100;
  RunReport r = run_with("node-a:killed,loadgen:hang,node-b:hang,sink:hang");
  EXPECT_FALSE(r.ok);
  const ProcessOutcome& a = r.processes[1];
  EXPECT_HAS(r.error, "process 'node-a' (role node, pid " + std::to_string(a.pid) +
                          ") was killed by signal 9");
  EXPECT_HAS(r.error, "restarts exhausted (2 of 2)");
  EXPECT_EQ(a.restarts, 2u);
  ASSERT_EQ(a.restarted_at_s.size(), 2u);
  // 200 ms alive, then a back-off of 200 ms (twice 100) before the second.
  EXPECT_GE(a.restarted_at_s[1] - a.restarted_at_s[0], 0.4);
  EXPECT_TRUE(fs::exists(a.log_path + ".1"));
  EXPECT_TRUE(fs::exists(a.log_path + ".2"));
  for (size_t i : {0, 2, 3}) EXPECT_HAS(r.processes[i].error, "stopped by sluice-deploy");
  expect_nothing_left(r);
}

// A restarted process is told so (--restarted N); one that then refuses to
// run (exit 2: a sink or stateful node without snapshots) is not started a
// third time, and the run names it with its reason.
TEST_F(Launcher, ARestartThatRefusesIsNotTriedAgain) {
  d_.restart = "on-failure";
  d_.restart_backoff_ms = 50;
  RunReport r = run_with("node-a:refused,loadgen:hang,node-b:hang,sink:hang");
  EXPECT_FALSE(r.ok);
  const ProcessOutcome& a = r.processes[1];
  EXPECT_EQ(a.restarts, 1u);
  EXPECT_HAS(r.error, "process 'node-a'");
  EXPECT_HAS(r.error, "failed with exit code 2");
  EXPECT_HAS(r.error, "restarted 1 times: its state died");
  EXPECT_FALSE(fs::exists(a.log_path + ".2"));
  expect_nothing_left(r);
}

// A sink's verdict (exit 3: the stream ended, and it counted lost tuples)
// is the end of the run, not a death: no restart, and the run says what the
// sink counted, every process having done its part. A restarted sink would
// wait for a stream that is over until the run's timeout.
TEST_F(Launcher, ASinkVerdictIsNotRestarted) {
  d_.restart = "on-failure";
  d_.restart_backoff_ms = 50;
  RunReport r = run_with("sink:verdict");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.processes[3].restarts, 0u);
  EXPECT_EQ(r.processes[3].exit_code, 3);
  EXPECT_HAS(r.error, "the sink counted 3 lost, 0 duplicated and 0 corrupt tuples");
  for (const auto& p : r.processes) EXPECT_TRUE(p.ok) << p.name << ": " << p.error;
  expect_nothing_left(r);
}

// A process that sets restart: never is not restarted under a top-level on-failure.
TEST_F(Launcher, AProcessOwnRestartNeverBeatsTheTopLevel) {
  d_.restart = "on-failure";
  d_.restart_backoff_ms = 50;
  d_.processes[1].restart = "never";
  RunReport r = run_with("node-a:killed-once,loadgen:hang,node-b:hang,sink:hang");
  EXPECT_FALSE(r.ok);
  EXPECT_HAS(r.error, "process 'node-a'");
  EXPECT_EQ(r.processes[1].restarts, 0u);
  expect_nothing_left(r);
}

TEST_F(Launcher, TheFirstErrorIsNamedNotTheFirstExit) {
  for (int i = 0; i < 2; ++i) {
    opts_.run_dir = dir_ + "/run" + std::to_string(i);
    RunReport r = run_with("node-a:slowfail,sink:after=node-a,node-b:hang,loadgen:hang");
    EXPECT_FALSE(r.ok);
    EXPECT_HAS(r.error, "process 'node-a' (role node, pid " + std::to_string(r.processes[1].pid) + ")");
    EXPECT_HAS(r.error, "operator failed");
    EXPECT_EQ(r.error.find("upstream closed"), std::string::npos) << r.error;
    expect_nothing_left(r);
  }
}

// Processes that log no timestamps are named in exit order.
TEST_F(Launcher, WithoutTimestampsTheFirstToExitIsNamed) {
  RunReport r = run_with("node-a:fail,node-b:hang,loadgen:hang,sink:hang");
  EXPECT_FALSE(r.ok);
  EXPECT_HAS(r.error, "process 'node-a'");
  EXPECT_HAS(r.error, "connection refused");
  expect_nothing_left(r);
}

TEST_F(Launcher, TimeoutStopsEverything) {
  opts_.timeout_s = 1;
  auto t0 = std::chrono::steady_clock::now();
  RunReport r = run_with("loadgen:hang,node-a:hang,node-b:hang,sink:stubborn");
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(r.ok);
  EXPECT_HAS(r.error, "timed out after 1 s; still running: loadgen, node-a, node-b, sink");
  EXPECT_LT(took, 10);  // a bound against hanging, not a timing assertion
  expect_nothing_left(r);
}

// While nothing is due the supervisor sleeps: a child's exit (its pidfd), a
// signal or the next deadline wakes it, not a poll. Counted as the calling
// thread's voluntary context switches over a 2 s run of processes that hang
// (a 50 ms poll made 40 and more on top of starting and stopping them; now
// about 4 a second at most, and the start and stop of four processes take
// 10 to 20 more on a loaded machine: 29 in all seen beside a -j2 suite).
TEST_F(Launcher, TheSupervisorSleepsWhileNothingIsDue) {
  opts_.timeout_s = 2;
  rusage r0{}, r1{};
  getrusage(RUSAGE_THREAD, &r0);
  RunReport r = run_with("loadgen:hang,node-a:hang,node-b:hang,sink:hang");
  getrusage(RUSAGE_THREAD, &r1);
  EXPECT_HAS(r.error, "timed out after 2 s");
  const long wakes = r1.ru_nvcsw - r0.ru_nvcsw;
  EXPECT_LE(wakes, 36) << "the supervisor woke " << wakes << " times in a 2 s run";
  expect_nothing_left(r);
}

TEST_F(Launcher, TimeoutNamesOnlyWhatStillRuns) {
  opts_.timeout_s = 1;
  RunReport r = run_with("node-b:hang");
  EXPECT_FALSE(r.ok);
  EXPECT_HAS(r.error, "timed out after 1 s; still running: node-b");
  EXPECT_TRUE(r.processes[0].ok) << r.processes[0].error;  // finished before the timeout
  EXPECT_TRUE(r.processes[3].have_summary);
  expect_nothing_left(r);
}

// SIGTERM stops everything at once (SIGINT first lets the stream drain; the
// pipeline test checks that with the real programs).
TEST_F(Launcher, StopSignalIsForwarded) {
  static volatile std::sig_atomic_t stop = 0;
  stop = 0;
  opts_.stop_signal = &stop;
  std::thread t([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop = SIGTERM;
  });
  RunReport r = run_with("loadgen:hang,node-a:hang,node-b:hang,sink:hang");
  t.join();
  EXPECT_FALSE(r.ok);
  EXPECT_HAS(r.error, "interrupted by signal 15");
  expect_nothing_left(r);
}

// Asked to stop (Ctrl-C, down) before the load generator had begun its
// stream: it ends with nothing sent (sluice-loadgen, stopped while it
// connects, exits 4; still starting, it dies of the SIGINT itself), and
// the rest, which wait for a stream that will never come, are let go. The
// run lost nothing: it is ok (`down` 20 ms after `up` failed it).
TEST_F(Launcher, AStopBeforeTheStreamBeganEndsTheRunOk) {
  for (const std::string loadgen : {"loadgen:connecting", "loadgen:hang"}) {
    static volatile std::sig_atomic_t stop = 0;
    stop = 0;
    opts_.stop_signal = &stop;
    std::thread t([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      stop = SIGINT;
    });
    RunReport r = run_with((loadgen + ",node-a:hang,node-b:hang,sink:hang").c_str());
    t.join();
    EXPECT_TRUE(r.ok) << loadgen << ": " << r.error;
    ASSERT_EQ(r.processes.size(), 4u);
    for (const auto& p : r.processes) {
      EXPECT_TRUE(p.ok) << loadgen << ": " << p.name << ": " << p.error;
      EXPECT_HAS(p.settled, p.role == Role::kLoadgen ? "asked to stop before its stream began"
                                                     : "the stream never began");
    }
    expect_nothing_left(r);
  }
}

TEST_F(Launcher, LostTuplesFailTheRun) {
  RunReport r = run_with("sink:lost");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.lost, 3u);
  EXPECT_HAS(r.error, "the sink counted 3 lost, 0 duplicated and 0 corrupt tuples");
  // Every process itself succeeded.
  for (const auto& p : r.processes) EXPECT_TRUE(p.ok) << p.name;
}

TEST_F(Launcher, MissingSummaryFailsTheRun) {
  RunReport r = run_with("node-b:nosummary");
  EXPECT_FALSE(r.ok);
  EXPECT_HAS(r.error, "process 'node-b' (role node) exited 0 but wrote no summary");
}

TEST_F(Launcher, ProgramThatDoesNotStart) {
  opts_.programs.node = dir_ + "/no-such-program";
  RunReport r = run_with("sink:hang");
  EXPECT_FALSE(r.ok);
  EXPECT_HAS(r.error, "process 'node-b' (role node) did not start");
  EXPECT_HAS(r.error, "no-such-program");
  EXPECT_EQ(r.started, std::vector<std::string>{"sink"});
  expect_nothing_left(r);
}

// A sink restored from its snapshot counts its whole stream (the tuples
// before the snapshot and this run's), but its own wall time is its last
// run's: the pipeline's tuples/s and Gb/s are over the stream's interval,
// from the first event before the snapshot to the last. Over the last run
// alone, a sink killed halfway through a paced run reported twice the rate
// it had, and one restarted after END (no run of its own) reported 0.
TEST(LauncherReport, ARestoredSinkIsMeasuredOverItsWholeStream) {
  RunReport r;
  ProcessOutcome sink;
  sink.name = "sink";
  sink.role = Role::kSink;
  sink.have_summary = true;
  ProcessSummary& s = sink.summary;
  s.tuples_in = 600;  // this run, 1 s of it, after the snapshot's 400
  s.bytes_in = 6000;
  s.wall_s = 1.0;
  s.restored_tuples = 400;
  s.restored_bytes = 4000;
  s.restored_first_arrival_s = 1000.0;
  s.first_arrival_s = 1003.0;
  s.last_arrival_s = 1004.0;
  r.processes.push_back(sink);
  fill_report(&r);
  EXPECT_EQ(r.tuples, 1000u);
  EXPECT_DOUBLE_EQ(r.tuples_per_s, 1000 / 4.0);
  EXPECT_DOUBLE_EQ(r.gbps, 10000 * 8.0 / 4.0 / 1e9);

  // Restarted after END: it took nothing in itself.
  RunReport ended;
  s.tuples_in = s.bytes_in = 0;
  s.wall_s = s.first_arrival_s = 0;
  s.restored_tuples = 1000;
  s.restored_bytes = 10000;
  ended.processes.push_back(sink);
  fill_report(&ended);
  EXPECT_EQ(ended.tuples, 1000u);
  EXPECT_DOUBLE_EQ(ended.tuples_per_s, 1000 / 4.0);

  // Not restored: its own wall time, as always (the span is not used).
  RunReport fresh;
  s = ProcessSummary{};
  s.tuples_in = 1000;
  s.bytes_in = 10000;
  s.wall_s = 2.0;
  s.first_arrival_s = 1000.0;
  s.last_arrival_s = 1004.0;
  fresh.processes.push_back(sink);
  fill_report(&fresh);
  EXPECT_DOUBLE_EQ(fresh.tuples_per_s, 1000 / 2.0);
}

// A restart's recovery ends at the first tuple at the sink after it: the
// end of the sink's pause that the restart falls in, or, for a node killed
// before the stream reached the sink, the sink's first tuple (the report
// said "its recovery not seen at a sink" for one killed as the run started).
TEST(LauncherReport, ARecoveryEndsAtTheSinksFirstTupleAfterTheRestart) {
  RunReport r;
  ProcessOutcome node;
  node.name = "node-a";
  node.role = Role::kNode;
  node.restarts = 2;
  node.died_wall_s = {1000.0, 1010.0};
  node.restarted_wall_s = {1000.5, 1010.5};
  ProcessOutcome sink;
  sink.name = "sink";
  sink.role = Role::kSink;
  sink.have_summary = true;
  sink.summary.first_arrival_s = 1001.25;  // the stream reached it after the first restart
  sink.summary.stalls_s = {{1009.0, 1011.5}};
  r.processes = {node, sink};
  fill_report(&r);
  ASSERT_EQ(r.processes[0].recovery_s.size(), 2u);
  EXPECT_DOUBLE_EQ(r.processes[0].recovery_s[0], 1.25);
  EXPECT_DOUBLE_EQ(r.processes[0].recovery_s[1], 1.5);
  EXPECT_NE(report_table(r).find("node-a 2 times (recovered in 1.250 s, recovered in 1.500 s)"),
            std::string::npos)
      << report_table(r);

  // A restored sink's first arrival is its own restart's: not a recovery
  // of the node's.
  r.processes[1].summary.restored_first_arrival_s = 999.0;
  fill_report(&r);
  EXPECT_DOUBLE_EQ(r.processes[0].recovery_s[0], -1);
  EXPECT_DOUBLE_EQ(r.processes[0].recovery_s[1], 1.5);
}

TEST(LauncherHelpers, JsonEscape) {
  EXPECT_EQ(json_escape("plain"), "plain");
  EXPECT_EQ(json_escape("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(json_escape("l1\nl2\tx\r"), "l1\\nl2\\tx\\r");
  EXPECT_EQ(json_escape(std::string("\x01\x1f", 2)), "\\u0001\\u001f");
  EXPECT_EQ(json_escape("h\xc3\xa9"), "h\xc3\xa9");
  // Round trip through a JSON reader.
  std::string nasty = "quote \" back \\ nl \n tab \t bell \x07 end";
  YAML::Node n = YAML::Load("{\"s\": \"" + json_escape(nasty) + "\"}");
  EXPECT_EQ(n["s"].as<std::string>(), nasty);
}

TEST(LauncherHelpers, LastErrorLine) {
  char tmpl[] = "/tmp/sluice-log-XXXXXX";
  int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(tmpl) << "starting\n[error] first\nmore\n[error] second\nshutting down\n\n";
  EXPECT_EQ(last_error_line(tmpl), "[error] second");
  std::ofstream(tmpl) << "starting\nlast words\n";
  EXPECT_EQ(last_error_line(tmpl), "last words");
  unlink(tmpl);
  EXPECT_EQ(last_error_line("/nonexistent"), "");
}

TEST(LauncherHelpers, RestartBackoffDoublesUpToTenSeconds) {
  Deployment d;
  EXPECT_EQ(restart_backoff_s(d, 1), 0.5);
  EXPECT_EQ(restart_backoff_s(d, 2), 1.0);
  EXPECT_EQ(restart_backoff_s(d, 3), 2.0);
  EXPECT_EQ(restart_backoff_s(d, 5), 8.0);
  EXPECT_EQ(restart_backoff_s(d, 6), 10.0);
  EXPECT_EQ(restart_backoff_s(d, 1000), 10.0);
  d.restart_backoff_ms = 0;
  EXPECT_EQ(restart_backoff_s(d, 3), 0.0);
  d.restart_backoff_ms = 30000;  // a first wait beyond the cap is capped too
  EXPECT_EQ(restart_backoff_s(d, 1), 10.0);
}

TEST(LauncherHelpers, DefaultTimeout) {
  Deployment d;
  d.duration_s = 5;
  EXPECT_EQ(default_timeout_s(d), 65);
  d.tuples = 10;
  EXPECT_EQ(default_timeout_s(d), 120);
}

TEST(LauncherHelpers, BinDirMustHoldAllThree) {
  Programs p;
  Status st = find_programs("/nonexistent-dir", &p);
  EXPECT_FALSE(st.ok());
  EXPECT_HAS(st.message(), "--bin-dir /nonexistent-dir: no executable /nonexistent-dir/sluice-loadgen");
  EXPECT_HAS(st.message(), "sluice-sink");
}

// A launcher of the registry (graph/registry.h) that make_executor cannot
// make would pass the parser and --launcher, then fail at the first run.
TEST(LauncherHelpers, EveryRegisteredLauncherHasItsExecutor) {
  ASSERT_FALSE(launchers().empty());
  for (const ::sluice::Launcher& l : launchers()) {  // not this file's fixture
    EXPECT_TRUE(has_executor(l.name)) << l.name;
    Deployment d;
    d.launcher = l.name;
    std::unique_ptr<Executor> ex;
    ASSERT_TRUE(make_executor(d, nullptr, &ex).ok()) << l.name;
    EXPECT_STREQ(ex->name(), l.name);
  }
  Deployment d;
  d.launcher = "pigeon";
  std::unique_ptr<Executor> ex;
  Status st = make_executor(d, nullptr, &ex);
  EXPECT_FALSE(st.ok());
  EXPECT_HAS(st.message(), "unknown launcher 'pigeon' (known: " + launcher_names() + ")");
}

// sluice-deploy itself, end to end, over the fake programs.
class DeployProgram : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-deploy-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directory(dir_ + "/bin");
    for (const char* n : {"sluice-loadgen", "sluice-node", "sluice-sink"})
      fs::create_symlink(SLUICE_FAKE_PROCESS, dir_ + "/bin/" + n);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // Runs a shell command; returns its exit code, stdout in *out.
  int sh(const std::string& cmd, std::string* out) {
    FILE* f = popen(cmd.c_str(), "r");
    char buf[4096];
    size_t n;
    out->clear();
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) out->append(buf, n);
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  std::string dir_;
};

TEST_F(DeployProgram, RunJsonOverFakes) {
  std::string out;
  int rc = sh(std::string(SLUICE_DEPLOY) + " run " SLUICE_SOURCE_DIR "/deploy/examples/pipeline.yaml" +
                  " --set duration_s=1 --set base_port=27500 --json --bin-dir " + dir_ +
                  "/bin --run-dir " + dir_ + "/run 2>" + dir_ + "/stderr",
              &out);
  EXPECT_EQ(rc, 0) << out;
  YAML::Node j = YAML::Load(out);
  EXPECT_TRUE(j["ok"].as<bool>());
  EXPECT_EQ(j["preset"].as<std::string>(), "tcp-opt");
  EXPECT_EQ(j["processes"].size(), 4u);
  EXPECT_EQ(j["tuples"].as<uint64_t>(), 255000u);
  Deployment d;
  ASSERT_TRUE(load_deployment(dir_ + "/run/resolved.yaml", {}, &d).ok());
  EXPECT_EQ(d.duration_s, 1);
  EXPECT_EQ(d.base_port, 27500);
}

TEST_F(DeployProgram, FailureExitsOneAndBadFileTwo) {
  std::string out;
  // guarantee: none: a failed process fails the run (not restarted).
  int rc = sh("SLUICE_FAKE=node-b:fail " + std::string(SLUICE_DEPLOY) +
                  " run " SLUICE_SOURCE_DIR "/deploy/examples/pipeline.yaml --set guarantee=none --json --bin-dir " +
                  dir_ + "/bin --run-dir " + dir_ + "/run 2>/dev/null",
              &out);
  EXPECT_EQ(rc, 1);
  YAML::Node j = YAML::Load(out);
  EXPECT_FALSE(j["ok"].as<bool>());
  EXPECT_HAS(j["error"].as<std::string>(), "process 'node-b' (role node, pid ");
  EXPECT_HAS(j["error"].as<std::string>(), ") failed with exit code 1");

  rc = sh(std::string(SLUICE_DEPLOY) + " validate " SLUICE_SOURCE_DIR
              "/deploy/examples/pipeline.yaml --set tuple_bytes=abc 2>&1",
          &out);
  EXPECT_EQ(rc, 2);
  EXPECT_HAS(out, "--set tuple_bytes=abc: expected an unsigned integer");

  rc = sh(std::string(SLUICE_DEPLOY) + " validate " SLUICE_SOURCE_DIR
              "/deploy/examples/pipeline.yaml --set preset=original --set encoding=copy",
          &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_HAS(out, "preset: original");
  EXPECT_HAS(out, "encoding: copy");
  EXPECT_HAS(out, "send_queue: async");
}

// Exit status 2 for every bad option or value, as --help says, with a short
// message; not CLI11's own codes (105 and up).
TEST_F(DeployProgram, BadOptionsExitTwoWithAShortMessage) {
  const std::string deploy = SLUICE_DEPLOY;
  const std::string file = SLUICE_SOURCE_DIR "/deploy/examples/pipeline.yaml";
  const std::string bins = " --bin-dir " + dir_ + "/bin --run-dir " + dir_ + "/run";
  auto longest_number = [](const std::string& s) {
    size_t best = 0, run = 0;
    for (char c : s) best = std::max(best, run = std::isdigit(static_cast<unsigned char>(c)) ? run + 1 : 0);
    return best;
  };
  struct Case {
    std::string args, says;
  };
  const Case cases[] = {
      {"run " + file + " --timeout -1" + bins,
       "sluice-deploy: --timeout: must be a positive number of seconds, got -1"},
      {"run " + file + " --timeout 0" + bins, "--timeout: must be a positive number of seconds, got 0"},
      {"run " + file + " --timeout soon" + bins, "--timeout: must be a positive number of seconds, got soon"},
      {"run " + file + " --timeout inf" + bins, "got inf"},
      {"run " + file + " --no-such-option" + bins, "--no-such-option"},
      {"check " + file + " --timeout 3", "--timeout"},  // an option of run, not of check
      {"run", "FILE.yaml is required"},
      {"", "A subcommand is required"},
      {"frobnicate " + file, "A subcommand is required"},
      {"run /nonexistent/x.yaml" + bins, "/nonexistent/x.yaml: cannot open the deployment file"},
      {"run " + file + " --bin-dir /nonexistent-dir", "--bin-dir /nonexistent-dir: no executable"},
  };
  for (const auto& c : cases) {
    std::string out;
    int rc = sh(deploy + " " + c.args + " 2>&1 >/dev/null", &out);
    EXPECT_EQ(rc, 2) << c.args << "\n" << out;
    EXPECT_HAS(out, c.says);
    EXPECT_LT(out.size(), 300u) << c.args;
    EXPECT_LT(longest_number(out), 10u) << c.args << "\n" << out;
  }
  // --help: exit 0, the exit codes told.
  std::string out;
  EXPECT_EQ(sh(deploy + " --help", &out), 0);
  EXPECT_HAS(out, "Exit status");
  EXPECT_HAS(out, "  2  validate: a bad option");
  EXPECT_HAS(out, "     render: as validate;");
  EXPECT_EQ(sh(deploy + " run --help", &out), 0);
  EXPECT_HAS(out, "--timeout");
  // A good timeout still runs.
  EXPECT_EQ(sh(deploy + " run " + file + " --timeout 30 --set duration_s=1 --set base_port=27600" +
                   bins + " 2>/dev/null",
               &out),
            0)
      << out;
}

// plan prints what run then does: the same command line for every process,
// in the same order, and makes nothing (no run directory, no process).
TEST_F(DeployProgram, PlanPrintsWhatRunDoesAndDoesNothing) {
  const std::string deploy = SLUICE_DEPLOY;
  const std::string file = SLUICE_SOURCE_DIR "/deploy/examples/pipeline.yaml";
  const std::string run = dir_ + "/run";
  const std::string args = " --bin-dir " + dir_ + "/bin --run-dir " + run +
                           " --set duration_s=1 --set base_port=27700";
  std::string plan;
  ASSERT_EQ(sh(deploy + " plan " + file + args + " 2>&1", &plan), 0) << plan;
  EXPECT_FALSE(fs::exists(run)) << "plan made the run directory";
  // Every process: its command, its port, its log; sinks first.
  const char* order[] = {"sink (sink)", "node-b (node)", "node-a (node)", "loadgen (loadgen)"};
  size_t at = 0;
  for (const char* o : order) {
    size_t next = plan.find(o, at);
    ASSERT_NE(next, std::string::npos) << o << " missing or out of order in:\n" << plan;
    at = next;
  }
  EXPECT_HAS(plan, "command: " + dir_ + "/bin/sluice-node --deployment " + run +
                       "/resolved.yaml --process node-a --summary " + run + "/node-a.json");
  EXPECT_HAS(plan, "listens: 127.0.0.1:27800 (from loadgen)");
  EXPECT_HAS(plan, "log: " + run + "/sink.log");
  // run does it: the files the plan named are where it said.
  std::string out;
  ASSERT_EQ(sh(deploy + " run " + file + args + " 2>&1", &out), 0) << out;
  for (const char* n : {"resolved.yaml", "loadgen.json", "node-a.json", "node-b.json", "sink.json",
                        "node-a.log"})
    EXPECT_TRUE(fs::exists(run + "/" + n)) << n;
  // A launcher that cannot run here: the plan still prints, and says so (exit 2).
  EXPECT_EQ(sh(deploy + " plan " SLUICE_SOURCE_DIR "/deploy/examples/cluster.yaml --launcher local" +
                   args + " 2>&1",
               &out),
            2);
  EXPECT_HAS(out, "command: ");
  EXPECT_HAS(out, "run would stop before it starts");
  EXPECT_HAS(out, "the local launcher runs every process on this machine, which has no address 10.77.0.1");
  // validate, and its alias check.
  EXPECT_EQ(sh(deploy + " validate " + file + " >/dev/null 2>&1", &out), 0);
  EXPECT_EQ(sh(deploy + " check " + file + " >/dev/null 2>&1", &out), 0);
}

// Every verb that prints results takes --json and says a failure there too;
// every verb that reads a run directory takes --run-dir (status and down
// also as the positional argument they first took).
TEST_F(DeployProgram, JsonAndRunDirTheSameWayOnEveryVerb) {
  const std::string deploy = SLUICE_DEPLOY;
  const std::string file = SLUICE_SOURCE_DIR "/deploy/examples/pipeline.yaml";
  const std::string run = dir_ + "/run";
  const std::string args = " --bin-dir " + dir_ + "/bin --run-dir " + run + " --set base_port=27900";
  std::string out;

  ASSERT_EQ(sh(deploy + " validate " + file + " --json --set duration_s=3 2>/dev/null", &out), 0) << out;
  YAML::Node j = YAML::Load(out);
  EXPECT_TRUE(j["ok"].as<bool>());
  EXPECT_EQ(j["resolved"]["duration_s"].as<int>(), 3);
  EXPECT_EQ(j["resolved"]["processes"][1]["name"].as<std::string>(), "node-a");
  EXPECT_HAS(j["graph"][0].as<std::string>(), "4 processes, 3 links");
  ASSERT_EQ(sh(deploy + " validate " + file + " --json --set tuple_bytes=abc 2>/dev/null", &out), 2);
  j = YAML::Load(out);
  EXPECT_FALSE(j["ok"].as<bool>());
  EXPECT_HAS(j["error"].as<std::string>(), "--set tuple_bytes=abc: expected an unsigned integer");

  // plan --json: the processes in start order with the commands run uses.
  ASSERT_EQ(sh(deploy + " plan " + file + args + " --json 2>/dev/null", &out), 0) << out;
  j = YAML::Load(out);
  EXPECT_TRUE(j["runs_here"].as<bool>());
  ASSERT_EQ(j["processes"].size(), 4u);
  EXPECT_EQ(j["processes"][0]["name"].as<std::string>(), "sink");
  EXPECT_EQ(j["processes"][3]["name"].as<std::string>(), "loadgen");
  EXPECT_EQ(j["processes"][2]["command"][0].as<std::string>(), dir_ + "/bin/sluice-node");
  EXPECT_EQ(j["processes"][2]["log"].as<std::string>(), run + "/node-a.log");
  EXPECT_EQ(sh(deploy + " plan " SLUICE_SOURCE_DIR "/deploy/examples/cluster.yaml --launcher local --json" +
                   args + " 2>/dev/null",
               &out),
            2);
  j = YAML::Load(out);
  EXPECT_FALSE(j["runs_here"].as<bool>());
  EXPECT_HAS(j["error"].as<std::string>(), "no address 10.77.0.1");
  ASSERT_EQ(sh(deploy + " plan " + file + " --predict --json 2>/dev/null", &out), 0) << out;
  j = YAML::Load(out);
  EXPECT_GT(j["tuples_per_s"].as<double>(), 0);
  EXPECT_EQ(j["processes"].size(), 4u);

  // A run, then status by --run-dir and by the positional argument alike.
  ASSERT_EQ(sh(deploy + " run " + file + args + " --set duration_s=1 2>/dev/null", &out), 0) << out;
  std::string by_option, by_position;
  EXPECT_EQ(sh(deploy + " status --run-dir " + run + " --json 2>/dev/null", &by_option), 0);
  EXPECT_EQ(sh(deploy + " status " + run + " --json 2>/dev/null", &by_position), 0);
  EXPECT_EQ(by_option, by_position);
  EXPECT_EQ(YAML::Load(by_option)["phase"].as<std::string>(), "down") << by_option;
  EXPECT_EQ(sh(deploy + " status --run-dir " + run + " " + dir_ + " 2>&1", &out), 2);
  EXPECT_HAS(out, "two run directories given");
  EXPECT_EQ(sh(deploy + " down 2>&1", &out), 2);
  EXPECT_HAS(out, "say which run: --run-dir DIR");
  EXPECT_EQ(sh(deploy + " status --run-dir " + dir_ + "/nothing --json 2>/dev/null", &out), 2);
  EXPECT_FALSE(YAML::Load(out)["ok"].as<bool>()) << out;
}

}  // namespace
}  // namespace sluice
