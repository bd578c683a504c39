// Faults on the real four processes on loopback (loadgen -> node-a -> node-b
// -> sink, deploy/examples/pipeline.yaml) started by sluice-deploy: a process
// is killed with SIGKILL mid-run and the supervisor either restarts it
// (restart: on-failure) or fails the run naming it (restart: never). Short
// runs (a few seconds); no timing is asserted.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace {

const std::string kDeploy = SLUICE_DEPLOY;
const std::string kExample = std::string(SLUICE_SOURCE_DIR) + "/deploy/examples/pipeline.yaml";
const std::string kEsper = std::string(SLUICE_SOURCE_DIR) + "/deploy/examples/esper.yaml";
const std::string kSplitKey = std::string(SLUICE_SOURCE_DIR) + "/deploy/examples/split_key.yaml";
const std::string kCorrelate = std::string(SLUICE_SOURCE_DIR) + "/deploy/examples/correlate.yaml";

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The exit code of `pid`, 128 + a signal, or -1 (then killed) after timeout_s.
int wait_exit(pid_t pid, int timeout_s) {
  for (int i = 0; i < timeout_s * 20; ++i) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

// A process of the run in `run_dir` by its command line; -1 if none within 10 s.
pid_t find_process(const std::string& run_dir, const std::string& name) {
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (const auto& e : fs::directory_iterator("/proc")) {
      std::string cl = slurp(e.path() / "cmdline");
      std::replace(cl.begin(), cl.end(), '\0', ' ');
      if (cl.find(run_dir + "/") != std::string::npos &&
          cl.find("--process " + name + " ") != std::string::npos &&
          cl.find("sluice-") != std::string::npos)
        return std::stoi(e.path().filename());
    }
  }
  return -1;
}

struct Outcome {
  int code = -1;
  std::string err;
  YAML::Node json;
  std::string run_dir;
  std::string results;  // the sink's results file (esper- or correlate-results.csv), when it wrote one
  std::string node_a_log;
  std::string loadgen_log;
  bool position_left = false;  // a load generator's position file is in the run directory
};

// Runs the example for duration_s with `sets`, sends `victim` (none if
// empty) `sig` (SIGKILL by default) a second after it starts, with SIGSTOP
// continues it after pause_ms, and waits for sluice-deploy to end.
Outcome kill_mid_run(const std::string& name, int port, const std::string& victim,
                     const std::string& sets, int sig = SIGKILL, int pause_ms = 0,
                     const std::string& example = kExample) {
  fs::path dir = fs::temp_directory_path() / ("sluice-faults-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  Outcome o;
  o.run_dir = (dir / "run").string();
  // rate: a steady 2000 events/s, so the run stays light on a shared machine.
  const std::string cmd = kDeploy + " run " + example + " --json --run-dir " + o.run_dir +
                          " --set base_port=" + std::to_string(port) +
                          " --set duration_s=3 --set rate=2000 --set progress_s=0 " + sets + " >" +
                          (dir / "out").string() + " 2>" + (dir / "err").string();
  pid_t d = fork();
  if (d == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  pid_t v = victim.empty() ? 0 : find_process(o.run_dir, victim);
  EXPECT_TRUE(victim.empty() || v > 0) << victim << " never started";
  if (v > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    kill(v, sig);
    if (sig == SIGSTOP) {
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      kill(v, SIGCONT);
    }
  } else if (!victim.empty()) {
    kill(d, SIGTERM);
  }
  o.code = wait_exit(d, 40);
  o.err = slurp(dir / "err");
  o.results = slurp(fs::path(o.run_dir) / (example == kCorrelate ? "correlate-results.csv" : "esper-results.csv"));
  o.node_a_log = slurp(fs::path(o.run_dir) / "node-a.log");
  o.loadgen_log = slurp(fs::path(o.run_dir) / "loadgen.log");
  for (int i : {0, 1})
    o.position_left = o.position_left || fs::exists(fs::path(o.run_dir) / ("loadgen.0.position." + std::to_string(i)));
  try {
    o.json = YAML::Load(slurp(dir / "out"));
  } catch (const YAML::Exception&) {
  }
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
  return o;
}

// With the defaults alone (guarantee: exactly-once: acks on every link,
// restart: on-failure, the sink's snapshots), kill -9 of each of the demo's
// four processes in turn, each once the one before was started again: the
// run ends ok, every process restarted once, nothing lost or counted twice.
// No key of acks, restart or snapshots is set; the stream is lighter
// (2,000 events/s) and longer (8 s) than the demo's, so that the four kills
// and restarts fall inside it on a busy machine. No timing is asserted.
TEST(Faults, WithTheDefaultsAKillOfEachProcessInTurnLosesNothing) {
  fs::path dir = fs::temp_directory_path() / ("sluice-faults-defaults-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string run_dir = (dir / "run").string();
  const std::string cmd = kDeploy + " run " + kExample + " --json --run-dir " + run_dir +
                          " --set base_port=15000 --set duration_s=8 --set rate=2000 --set progress_s=0 >" +
                          (dir / "out").string() + " 2>" + (dir / "err").string();
  pid_t d = fork();
  if (d == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  for (const char* victim : {"loadgen", "node-a", "node-b", "sink"}) {
    const pid_t v = find_process(run_dir, victim);
    EXPECT_GT(v, 0) << victim << " never started: " << slurp(dir / "err");
    if (v <= 0) break;
    // Running a while: the one before it has reconnected and replayed.
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    kill(v, SIGKILL);
    // Started again: the same name under a new pid (the dead one's command
    // line reads empty once it is a zombie).
    pid_t again = -1;
    const auto t0 = std::chrono::steady_clock::now();
    while ((again <= 0 || again == v) && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(15))
      again = find_process(run_dir, victim);
    EXPECT_TRUE(again > 0 && again != v) << victim << " was not started again: " << slurp(dir / "err");
  }
  const int code = wait_exit(d, 60);
  const std::string err = slurp(dir / "err");
  YAML::Node j;
  try {
    j = YAML::Load(slurp(dir / "out"));
  } catch (const YAML::Exception&) {
  }
  ASSERT_TRUE(j.IsMap()) << err;
  EXPECT_EQ(code, 0) << err << j["error"];
  EXPECT_TRUE(j["ok"].as<bool>()) << j["error"];
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(j["processes"][i]["restarts"].as<int>(), 1) << j["processes"][i]["name"] << ": " << err;
  EXPECT_GT(j["processes"][3]["restored_checkpoint"].as<uint64_t>(0), 0u) << err;
  EXPECT_GT(j["tuples"].as<uint64_t>(), 0u);
  EXPECT_EQ(j["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(j["duplicated"].as<uint64_t>(), 0u);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// restart: on-failure with acks: node-a is killed, restarted once on its
// host, its upstream replays what it had not acknowledged, and the run
// succeeds with nothing lost and nothing twice at the sink.
TEST(Faults, AKilledNodeIsRestartedAndTheRunSucceeds) {
  Outcome o = kill_mid_run("restart", 29300, "node-a",
                           "--set restart=on-failure --set restart_backoff_ms=200 --set acks=on");
  ASSERT_TRUE(o.json.IsMap()) << o.err;
  EXPECT_EQ(o.code, 0) << o.err << o.json["error"];
  EXPECT_TRUE(o.json["ok"].as<bool>()) << o.json["error"];
  EXPECT_EQ(o.json["restarts"].as<int>(), 1);
  EXPECT_EQ(o.json["processes"][1]["name"].as<std::string>(), "node-a");
  EXPECT_EQ(o.json["processes"][1]["restarts"].as<int>(), 1);
  EXPECT_EQ(o.json["processes"][1]["restarted_at_s"].size(), 1u);
  // The recovery: from the kill to the first tuple at the sink after the
  // restart, so never shorter than the back-off, and over within the run.
  const YAML::Node rec = o.json["processes"][1]["recovery_s"];
  ASSERT_EQ(rec.size(), 1u) << o.err;
  ASSERT_FALSE(rec[0].IsNull()) << "the sink never paused across the restart: "
                                << o.json["processes"][3]["stalls_s"];
  EXPECT_GE(rec[0].as<double>(), 0.2);
  EXPECT_LT(rec[0].as<double>(), 3.0);
  for (int i : {0, 2, 3}) EXPECT_EQ(o.json["processes"][i]["restarts"].as<int>(), 0);
  EXPECT_NE(o.err.find("node-a died (signal KILL); restarting (1/3) in 200 ms"), std::string::npos)
      << o.err;
  EXPECT_GT(o.json["tuples"].as<uint64_t>(), 0u);
  EXPECT_EQ(o.json["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(o.json["duplicated"].as<uint64_t>(), 0u);
}

// The same for node-b, the sink's upstream: node-a's sender connects to
// the restarted node-b and replays; the sink, whose upstream broke, waits
// for it to connect again and drops what it already had (deduplicated).
TEST(Faults, AKilledNodeBeforeTheSinkIsRestartedAndTheRunSucceeds) {
  Outcome o = kill_mid_run("restart-b", 29500, "node-b",
                           "--set restart=on-failure --set restart_backoff_ms=200 --set acks=on");
  ASSERT_TRUE(o.json.IsMap()) << o.err;
  EXPECT_EQ(o.code, 0) << o.err << o.json["error"];
  EXPECT_EQ(o.json["processes"][2]["name"].as<std::string>(), "node-b");
  EXPECT_EQ(o.json["processes"][2]["restarts"].as<int>(), 1);
  EXPECT_GE(o.json["reconnects"].as<uint64_t>(), 2u);  // node-a's sender, the sink's receiver
  EXPECT_GT(o.json["tuples"].as<uint64_t>(), 0u);
  EXPECT_EQ(o.json["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(o.json["duplicated"].as<uint64_t>(), 0u);
}

// The same with node_backup: copies: node-a keeps what it sent in its slots
// and replays it to the restarted node-b itself; its upstream sends nothing
// again.
TEST(Faults, AKilledNodeBeforeTheSinkIsReplayedByANodeThatKeepsCopies) {
  Outcome o = kill_mid_run("restart-b-copies", 24100, "node-b",
                           "--set restart=on-failure --set restart_backoff_ms=200 --set acks=on "
                           "--set node_backup=copies");
  ASSERT_TRUE(o.json.IsMap()) << o.err;
  EXPECT_EQ(o.code, 0) << o.err << o.json["error"];
  EXPECT_EQ(o.json["processes"][2]["restarts"].as<int>(), 1);
  EXPECT_EQ(o.json["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(o.json["duplicated"].as<uint64_t>(), 0u);
  EXPECT_NE(o.node_a_log.find("unacknowledged frames"), std::string::npos) << o.node_a_log;
  EXPECT_EQ(o.node_a_log.find("keeps no copies"), std::string::npos) << o.node_a_log;
}

// The same over ucx shared memory with rma: on, where node-a's upstream
// wrote frames straight into the killed node's slots: the restarted node
// maps a new pool, its upstream attaches it and replays into it.
TEST(Faults, AKilledNodeOverUcxRmaIsRestartedAndLosesNothing) {
  Outcome o = kill_mid_run("restart-rma", 31400, "node-a",
                           "--set preset=ucx-opt --set ucx_tls=sm --set rma=on --set restart=on-failure "
                           "--set restart_backoff_ms=200 --set acks=on");
  ASSERT_TRUE(o.json.IsMap()) << o.err;
  EXPECT_EQ(o.code, 0) << o.err << o.json["error"];
  EXPECT_EQ(o.json["processes"][1]["restarts"].as<int>(), 1) << o.err;
  EXPECT_GT(o.json["tuples"].as<uint64_t>(), 0u);
  EXPECT_EQ(o.json["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(o.json["duplicated"].as<uint64_t>(), 0u);
  EXPECT_NE(o.err.find("node-a died (signal KILL); restarting (1/3) in 200 ms"), std::string::npos)
      << o.err;
}

// node-a keeps no copies (node_backup: upstream, the default with acks): a
// short stream at a low rate has passed node-a whole, END included, while
// node-b is stopped, so node-a waits for node-b's acknowledgements before
// it sends END on; node-b is then killed and restarted. node-a cannot send
// again what it has no copy of: it breaks its upstream link, the load
// generator sends everything not acknowledged again, END too, and node-a
// sends END only after that. Nothing lost, nothing twice.
TEST(Faults, ANodeThatKeepsNoCopiesHasItsUpstreamSendAgainWhenTheNextDiesAtTheEnd) {
  fs::path dir = fs::temp_directory_path() / ("sluice-faults-nocopies-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string run_dir = (dir / "run").string();
  // 40 events of 255 tuples at 40 events/s: a second of stream.
  const std::string cmd = kDeploy + " run " + kExample + " --json --run-dir " + run_dir +
                          " --set base_port=24500 --set tuples=10200 --set rate=40 --set progress_s=0"
                          " --set acks=on --set restart=on-failure --set restart_backoff_ms=200 >" +
                          (dir / "out").string() + " 2>" + (dir / "err").string();
  pid_t d = fork();
  if (d == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  const pid_t b = find_process(run_dir, "node-b");
  ASSERT_GT(b, 0) << "node-b never started";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(b, SIGSTOP);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  kill(b, SIGKILL);
  const int code = wait_exit(d, 40);
  const std::string err = slurp(dir / "err");
  const std::string node_a = slurp(fs::path(run_dir) / "node-a.log");
  YAML::Node j;
  try {
    j = YAML::Load(slurp(dir / "out"));
  } catch (const YAML::Exception&) {
  }
  ASSERT_TRUE(j.IsMap()) << err;
  EXPECT_EQ(code, 0) << err << j["error"];
  EXPECT_TRUE(j["ok"].as<bool>()) << j["error"];
  EXPECT_EQ(j["processes"][2]["restarts"].as<int>(), 1) << err;
  EXPECT_EQ(j["tuples"].as<uint64_t>(), 10200u);
  EXPECT_EQ(j["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(j["duplicated"].as<uint64_t>(), 0u);
  EXPECT_NE(node_a.find("this node keeps no copies"), std::string::npos) << node_a;
  EXPECT_NE(node_a.find("the end of the stream goes again after what its upstream sends again"),
            std::string::npos)
      << node_a;
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// restart: never (guarantee: none), acks or not: the same kill fails the
// run and names node-a and its signal.
TEST(Faults, WithoutRestartAKilledNodeFailsTheRunNamingIt) {
  Outcome o = kill_mid_run("never", 29700, "node-a", "--set guarantee=none --set acks=on");
  ASSERT_TRUE(o.json.IsMap()) << o.err;
  EXPECT_EQ(o.code, 1) << o.err;
  const std::string e = o.json["error"].as<std::string>();
  EXPECT_NE(e.find("process 'node-a' (role node"), std::string::npos) << e;
  EXPECT_NE(e.find("killed by signal 9"), std::string::npos) << e;
  EXPECT_EQ(o.json["restarts"].as<int>(), 0);
  EXPECT_EQ(o.err.find("restarting"), std::string::npos) << o.err;
  // What got through is counted: node-b and the sink, stopped by SIGTERM,
  // report before they die of it (they died at once: "0 tuples").
  for (int i : {2, 3}) {
    const YAML::Node p = o.json["processes"][i];
    EXPECT_EQ(p["error"].as<std::string>(""), "stopped by sluice-deploy when the run ended early") << p;
    EXPECT_GT(p["events_in"].as<uint64_t>(0), 0u) << p;
  }
  EXPECT_GT(o.json["tuples"].as<uint64_t>(), 0u);
  EXPECT_LE(o.json["tuples"].as<uint64_t>(), o.json["processes"][0]["tuples_out"].as<uint64_t>());
}

// A node stopped (SIGSTOP) for 2 s of a 3 s run, then continued: its
// upstreams wait on credits (the pool bounds what waits), nobody restarts
// anything, and the run ends with everything delivered once.
TEST(Faults, AStoppedNodeHoldsItsUpstreamsAndLosesNothing) {
  Outcome o = kill_mid_run("stop", 29900, "node-a",
                           "--set restart=on-failure --set acks=on", SIGSTOP, 2000);
  ASSERT_TRUE(o.json.IsMap()) << o.err;
  EXPECT_EQ(o.code, 0) << o.err << o.json["error"];
  EXPECT_EQ(o.json["restarts"].as<int>(), 0);
  EXPECT_EQ(o.json["reconnects"].as<uint64_t>(), 0u);
  EXPECT_GT(o.json["tuples"].as<uint64_t>(), 0u);
  EXPECT_EQ(o.json["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(o.json["duplicated"].as<uint64_t>(), 0u);
}

// A key split (deploy/examples/split_key.yaml: node-a cuts each event into
// one part per sink by key) killed mid-run: its accounts of what went to the
// other sink come back from its snapshot, the loader replays what came
// after, and each sink drops the parts it already had (deduplicated: its
// process stage, by the event_seq its own snapshot holds), so
// both end with lost 0, duplicated 0 and filtered 0: everything a sink did
// not get is accounted as partitioned, exactly what the other sink got.
TEST(Faults, AKilledKeySplitRestoresItsAccountsAndEachSinkDropsRepeatedParts) {
  Outcome o = kill_mid_run("split-key", 31100, "node-a",
                           "--set restart=on-failure --set restart_backoff_ms=200 --set acks=on "
                           "--set checkpoint_interval_ms=50",
                           SIGKILL, 0, kSplitKey);
  ASSERT_TRUE(o.json.IsMap()) << o.err;
  EXPECT_EQ(o.code, 0) << o.err << o.json["error"];
  EXPECT_EQ(o.json["processes"][1]["restarts"].as<int>(), 1) << o.err;
  EXPECT_GT(o.json["processes"][1]["restored_checkpoint"].as<uint64_t>(), 0u) << o.err;
  EXPECT_EQ(o.json["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(o.json["duplicated"].as<uint64_t>(), 0u);
  const YAML::Node s1 = o.json["processes"][2], s2 = o.json["processes"][3];
  ASSERT_EQ(s1["name"].as<std::string>(), "sink-1");
  const uint64_t got1 = s1["tuples_in"].as<uint64_t>() - s1["deduplicated"].as<uint64_t>();
  const uint64_t got2 = s2["tuples_in"].as<uint64_t>() - s2["deduplicated"].as<uint64_t>();
  EXPECT_GT(got1, 0u);
  EXPECT_GT(got2, 0u);
  for (const YAML::Node& s : {s1, s2}) {
    EXPECT_EQ(s["lost"].as<uint64_t>(), 0u);
    EXPECT_EQ(s["filtered"].as<uint64_t>(), 0u) << "a sink explained a gap as filtered: its accounts were lost";
    EXPECT_EQ(s["corrupt"].as<uint64_t>(), 0u);
  }
  EXPECT_EQ(s1["partitioned"].as<uint64_t>(), got2);
  EXPECT_EQ(s2["partitioned"].as<uint64_t>(), got1);
}

// The other two kernels that keep state between events
// (deploy/examples/correlate.yaml): node-a's grace join holds a batch of
// up to 4,096 tuples not yet joined, node-b's correlate the open
// transactions. Each killed mid-run restores its snapshot, and the sink's
// matches are those of a run without the fault, row for row. The snapshots
// are synced to disk (snapshot_sync: on), as a run that must survive its
// machine would have them.
TEST(Faults, KilledJoinAndCorrelateNodesRestoreTheirSnapshotsAndEmitTheSameMatches) {
  const std::string sets =
      "--set restart=on-failure --set restart_backoff_ms=200 --set acks=on --set checkpoint_interval_ms=50 "
      "--set snapshot_sync=on --set tuples=1000000";  // 3 s at 2,000 events/s
  Outcome ref = kill_mid_run("correlate-ref", 31500, "", sets, 0, 0, kCorrelate);
  ASSERT_TRUE(ref.json.IsMap()) << ref.err;
  ASSERT_EQ(ref.code, 0) << ref.err << ref.json["error"];
  ASSERT_GT(ref.results.size(), 1000u) << "the reference run wrote no matches";
  for (const char* victim : {"node-a", "node-b"}) {
    SCOPED_TRACE(victim);
    const int index = victim == std::string("node-a") ? 1 : 2;
    Outcome o = kill_mid_run(std::string("correlate-") + victim, index == 1 ? 31700 : 31900, victim, sets,
                             SIGKILL, 0, kCorrelate);
    ASSERT_TRUE(o.json.IsMap()) << o.err;
    EXPECT_EQ(o.code, 0) << o.err << o.json["error"];
    EXPECT_EQ(o.json["processes"][index]["restarts"].as<int>(), 1) << o.err;
    EXPECT_GT(o.json["processes"][index]["restored_checkpoint"].as<uint64_t>(), 0u) << o.err;
    EXPECT_EQ(o.json["lost"].as<uint64_t>(), 0u);
    EXPECT_EQ(o.json["duplicated"].as<uint64_t>(), 0u);
    EXPECT_TRUE(o.results == ref.results) << "matches: " << std::count(o.results.begin(), o.results.end(), '\n')
                                          << " against " << std::count(ref.results.begin(), ref.results.end(), '\n');
  }
}

// A node whose operators keep state (deploy/examples/esper.yaml: node-b's
// group by ... having over count windows of 100,000 tuples) snapshots it
// every 50 ms. Killed mid-run and restarted, it restores its last snapshot,
// node-a replays what came after it, and the sink's groups are those of a
// run without the fault, row for row. (Without snapshots the same kill
// loses the windows' state and the run never completes.) The same for the
// sink and its results file.
TEST(Faults, AKilledStatefulNodeRestoresItsSnapshotAndEmitsTheSameGroups) {
  const std::string sets =
      "--set restart=on-failure --set restart_backoff_ms=200 --set acks=on --set checkpoint_interval_ms=50";
  Outcome ref = kill_mid_run("esper-ref", 30100, "", sets, 0, 0, kEsper);
  ASSERT_TRUE(ref.json.IsMap()) << ref.err;
  ASSERT_EQ(ref.code, 0) << ref.err << ref.json["error"];
  ASSERT_GT(ref.results.size(), 100u) << "the reference run wrote no groups";
  EXPECT_GT(ref.json["processes"][2]["checkpoints"].as<uint64_t>(), 0u);

  Outcome o = kill_mid_run("esper-kill", 30300, "node-b", sets, SIGKILL, 0, kEsper);
  ASSERT_TRUE(o.json.IsMap()) << o.err;
  EXPECT_EQ(o.code, 0) << o.err << o.json["error"];
  EXPECT_EQ(o.json["processes"][2]["name"].as<std::string>(), "node-b");
  EXPECT_EQ(o.json["processes"][2]["restarts"].as<int>(), 1);
  EXPECT_GT(o.json["processes"][2]["restored_checkpoint"].as<uint64_t>(), 0u) << o.err;
  EXPECT_EQ(o.json["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(o.json["duplicated"].as<uint64_t>(), 0u);
  EXPECT_EQ(o.results, ref.results);

  // The sink killed instead: its results file is cut back to what its
  // snapshot had written, and the rows after it come again once.
  Outcome k = kill_mid_run("esper-sink", 30900, "sink", sets, SIGKILL, 0, kEsper);
  ASSERT_TRUE(k.json.IsMap()) << k.err;
  EXPECT_EQ(k.code, 0) << k.err << k.json["error"];
  EXPECT_EQ(k.json["processes"][3]["restarts"].as<int>(), 1);
  EXPECT_EQ(k.json["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(k.json["duplicated"].as<uint64_t>(), 0u);
  EXPECT_EQ(k.results, ref.results);
}

// A snapshot that is not one (damaged, truncated, another program's file)
// where a restarted node would read it: the node fails at once with an
// error naming the file; it never starts from a wrong state.
TEST(Faults, ADamagedSnapshotIsAnErrorNamingTheFile) {
  const fs::path state = fs::temp_directory_path() / ("sluice-faults-state-" + std::to_string(getpid()));
  fs::remove_all(state);
  fs::create_directories(state);
  const fs::path snap = state / "node-b.0.snapshot.1";
  std::ofstream(snap) << "SLUICESN this is not what node-b wrote";
  Outcome o = kill_mid_run("esper-bad", 30500, "", "--set acks=on --set checkpoint_interval_ms=50 --set state_dir=" +
                           state.string(), 0, 0, kEsper);
  ASSERT_TRUE(o.json.IsMap()) << o.err;
  EXPECT_EQ(o.code, 1) << o.err;
  const std::string node_b = o.json["processes"][2]["error"].as<std::string>("");
  EXPECT_NE(node_b.find("snapshot " + snap.string() + ": "), std::string::npos) << node_b << "\n" << o.err;
  fs::remove_all(state);
}

// SIGTERM to the load generator is Ctrl-C's: the stream ends after what
// was made, drains, and the run succeeds with everything counted (as
// before nodes and sinks reported on SIGTERM too; only a generator whose
// END cannot drain is stopped at once, a second later).
TEST(Faults, ALoadGeneratorToldSIGTERMEndsTheStreamAndTheRunSucceeds) {
  Outcome o = kill_mid_run("term-loadgen", 28300, "loadgen", "--set acks=on", SIGTERM);
  ASSERT_TRUE(o.json.IsMap()) << o.err;
  EXPECT_EQ(o.code, 0) << o.err << o.json["error"];
  EXPECT_GT(o.json["tuples"].as<uint64_t>(), 0u);
  EXPECT_EQ(o.json["tuples"].as<uint64_t>(), o.json["processes"][0]["tuples_out"].as<uint64_t>());
  EXPECT_EQ(o.json["lost"].as<uint64_t>(), 0u);
}

// A killed load generator is restarted and resumes where its position
// says its events were acknowledged downstream: it makes only the rest of
// its stream, and the run succeeds with nothing lost or twice. Before
// positions it made the whole stream again (a kill at 1 s of a 3 s run:
// 4 s of events for the sink to count 3 s of, dropping the first second's
// again).
TEST(Faults, AKilledLoadGeneratorResumesFromWhatWasAcknowledged) {
  Outcome o = kill_mid_run("loadgen-resume", 28900, "loadgen",
                           "--set restart=on-failure --set restart_backoff_ms=200 --set acks=on");
  ASSERT_TRUE(o.json.IsMap()) << o.err;
  EXPECT_EQ(o.code, 0) << o.err << o.json["error"];
  EXPECT_EQ(o.json["processes"][0]["name"].as<std::string>(), "loadgen");
  EXPECT_EQ(o.json["processes"][0]["restarts"].as<int>(), 1);
  const uint64_t tuples = o.json["tuples"].as<uint64_t>();
  EXPECT_GT(tuples, 0u);
  EXPECT_EQ(o.json["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(o.json["duplicated"].as<uint64_t>(), 0u);
  // The restarted generator's summary: only what it made after resuming.
  EXPECT_LT(o.json["processes"][0]["tuples_out"].as<uint64_t>(), tuples);
  EXPECT_LT(o.json["deduplicated"].as<uint64_t>(), tuples / 2);
  EXPECT_NE(o.loadgen_log.find("resuming from"), std::string::npos) << o.loadgen_log;
  EXPECT_NE(o.loadgen_log.find("events were acknowledged downstream"), std::string::npos) << o.loadgen_log;
  // The stream ended whole: the position files are gone with it.
  EXPECT_FALSE(o.position_left);
}

// A load generator whose events go to two sinks (split: stream, then
// copy) resumes too: from the least position every link acknowledged all
// before (events_safe_downstream), not from the stream's start. Each sink
// drops what its link had acknowledged past that and gets again; nothing
// lost or twice. Before, it made its whole stream again: a kill at 1 s of a
// 3 s run, 4 s of events and every first second's twice.
TEST(Faults, AKilledLoadGeneratorWithTwoLinksResumesWhereBothAcknowledged) {
  const fs::path file =
      fs::temp_directory_path() / ("sluice-faults-loadgen-split-" + std::to_string(getpid()) + ".yaml");
  std::ofstream(file) << "preset: tcp-opt\n"
                         "tuple_bytes: 128\n"
                         "event_bytes: 4096\n"
                         "streams: 4\n"
                         "processes:\n"
                         "  - {name: loadgen, role: loadgen, split: stream}\n"
                         "  - {name: sink-1, role: sink}\n"
                         "  - {name: sink-2, role: sink}\n"
                         "links:\n"
                         "  - {from: loadgen, to: sink-1}\n"
                         "  - {from: loadgen, to: sink-2}\n";
  for (const std::string split : {"stream", "copy"}) {
    SCOPED_TRACE(split);
    Outcome o = kill_mid_run("loadgen-split-" + split, 25700, "loadgen",
                             "--set restart=on-failure --set restart_backoff_ms=200 --set acks=on "
                             "--set processes.0.split=" + split,
                             SIGKILL, 0, file.string());
    ASSERT_TRUE(o.json.IsMap()) << o.err;
    EXPECT_EQ(o.code, 0) << o.err << o.json["error"];
    EXPECT_EQ(o.json["processes"][0]["restarts"].as<int>(), 1);
    const uint64_t tuples = o.json["tuples"].as<uint64_t>();
    EXPECT_GT(tuples, 0u);
    EXPECT_EQ(o.json["lost"].as<uint64_t>(), 0u);
    EXPECT_EQ(o.json["duplicated"].as<uint64_t>(), 0u);
    // Both sinks got tuples, and the restarted generator made only the rest.
    EXPECT_GT(o.json["processes"][1]["tuples_in"].as<uint64_t>(), 0u);
    EXPECT_GT(o.json["processes"][2]["tuples_in"].as<uint64_t>(), 0u);
    const uint64_t made = o.json["processes"][0]["tuples_out"].as<uint64_t>();
    EXPECT_LT(made, split == "copy" ? tuples / 2 : tuples);
    EXPECT_LT(o.json["deduplicated"].as<uint64_t>(), tuples / 4);
    EXPECT_NE(o.loadgen_log.find("resuming from"), std::string::npos) << o.loadgen_log;
    EXPECT_FALSE(o.position_left);
  }
  fs::remove(file);
}

// A stateful node's snapshot waits for the acknowledgements of what its
// operators emitted before it, but its process stage does not: it goes on
// with the next input meanwhile (Instance::ck_node_begin). The sink stopped
// for 1 s of the esper example at 2,000 events/s: node-b's group-by waited
// 0.7-1.0 s of it when a snapshot stopped the stage until acknowledged;
// now it waits for none of it, and the run loses nothing.
TEST(Faults, AStatefulNodeGoesOnProcessingWhileItsSnapshotWaitsForAcknowledgements) {
  Outcome o = kill_mid_run("stop-sink-esper", 25700, "sink",
                           "--set acks=on --set checkpoint_interval_ms=50 --set restart=on-failure", SIGSTOP,
                           1000, kEsper);
  ASSERT_TRUE(o.json.IsMap()) << o.err;
  EXPECT_EQ(o.code, 0) << o.err << o.json["error"];
  EXPECT_EQ(o.json["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(o.json["duplicated"].as<uint64_t>(), 0u);
  bool seen = false;
  for (const auto& p : o.json["processes"]) {
    if (p["name"].as<std::string>() != "node-b") continue;
    seen = true;
    EXPECT_GT(p["checkpoints"].as<uint64_t>(), 0u);
    EXPECT_LT(p["checkpoint_wait_s"].as<double>(), 0.3);
  }
  EXPECT_TRUE(seen);
}

// state_dir is made when missing; one that cannot hold files fails the
// process at its start, naming state_dir (it failed at the first snapshot,
// with the stream running, as "snapshot DIR/sink.0.snapshot.1: cannot
// create").
TEST(Faults, AStateDirIsMadeOrItsFaultNamedAtTheStart) {
  const fs::path base = fs::temp_directory_path() / ("sluice-faults-statedir-" + std::to_string(getpid()));
  fs::remove_all(base);
  fs::create_directories(base);
  const fs::path made = base / "not" / "yet";
  Outcome o = kill_mid_run("statedir-made", 28800, "",
                           "--set acks=on --set checkpoint_interval_ms=50 --set duration_s=1 --set state_dir=" +
                               made.string());
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(fs::exists(made / "sink.0.snapshot.0")) << o.err;
  EXPECT_FALSE(fs::exists(made / "sink.0.snapshot.probe"));
  const fs::path file = base / "a-file";
  std::ofstream(file) << "not a directory";
  o = kill_mid_run("statedir-file", 28800, "",
                   "--set acks=on --set checkpoint_interval_ms=50 --set duration_s=1 --set state_dir=" +
                       file.string());
  ASSERT_TRUE(o.json.IsMap()) << o.err;
  EXPECT_EQ(o.code, 1);
  const std::string e = o.json["error"].as<std::string>("");
  EXPECT_NE(e.find("state_dir " + file.string() + ": cannot make it"), std::string::npos) << e;
  if (!::testing::Test::HasFailure()) fs::remove_all(base);
}

// The sink killed and restarted, with snapshots on: it restores its
// verifier (every stream's position, its counts) from its last snapshot,
// node-b replays what the sink had not acknowledged (a sink acknowledges
// only what a snapshot holds), and the run ends with every tuple the load
// generator made counted once.
TEST(Faults, AKilledSinkRestoresItsCountsAndLosesNothing) {
  Outcome o = kill_mid_run("sink", 30700, "sink",
                           "--set restart=on-failure --set restart_backoff_ms=200 --set acks=on "
                           "--set checkpoint_interval_ms=50");
  ASSERT_TRUE(o.json.IsMap()) << o.err;
  EXPECT_EQ(o.code, 0) << o.err << o.json["error"];
  EXPECT_EQ(o.json["processes"][3]["name"].as<std::string>(), "sink");
  EXPECT_EQ(o.json["processes"][3]["restarts"].as<int>(), 1);
  EXPECT_GT(o.json["processes"][3]["restored_checkpoint"].as<uint64_t>(), 0u) << o.err;
  EXPECT_GT(o.json["processes"][3]["restored_tuples"].as<uint64_t>(), 0u);
  // A restarted sink's recovery ends with its own first event.
  const YAML::Node rec = o.json["processes"][3]["recovery_s"];
  ASSERT_EQ(rec.size(), 1u) << o.err;
  ASSERT_FALSE(rec[0].IsNull()) << o.err;
  EXPECT_GE(rec[0].as<double>(), 0.2);
  EXPECT_LT(rec[0].as<double>(), 3.0);
  EXPECT_EQ(o.json["tuples"].as<uint64_t>(), o.json["processes"][0]["tuples_out"].as<uint64_t>());
  EXPECT_EQ(o.json["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(o.json["duplicated"].as<uint64_t>(), 0u);
}

// A stalled sink (SIGSTOP, 2 s): what is upstream of it waits for credits
// and acknowledgements asleep, on tcp and on ucx over shared memory. Over
// ucx sm the load generator and both nodes spun at 30-100% of a core each
// for as long (End::idle: UCX refuses to arm while a send waits for room in
// the peer's receive FIFO, and an unarmed worker's fd stays readable).
// libfabric shm still polls every 100 us while its peer owes it progress
// (End::wake), at a third of a core: not asserted here.
TEST(Faults, WhatWaitsOnAStalledSinkSleeps) {
  const struct {
    const char* name;
    int port;
    const char* sets;
  } carriers[] = {{"tcp", 20500, ""}, {"ucx-sm", 20600, "--set transport=ucx --set ucx_tls=sm"}};
  for (const auto& c : carriers) {
    SCOPED_TRACE(c.name);
    Outcome o = kill_mid_run(std::string("stall-") + c.name, c.port, "sink",
                             std::string("--set acks=on ") + c.sets, SIGSTOP, 2000);
    ASSERT_TRUE(o.json.IsMap()) << o.err;
    EXPECT_EQ(o.code, 0) << o.err << o.json["error"];
    EXPECT_EQ(o.json["lost"].as<uint64_t>(), 0u);
    for (int i = 0; i < 3; ++i) {  // the load generator and the nodes
      const YAML::Node p = o.json["processes"][i];
      const double busy = p["cpe_u"].as<double>() + p["cpe_s"].as<double>();
      const double share = busy / (busy + p["cpe_i"].as<double>());
      // At 2,000 events/s they take 10-25% of a core running; spinning for
      // the 2 s of the stall took them past 50%.
      EXPECT_LT(share, 0.4) << p["name"].as<std::string>() << ": " << share << " of a core";
    }
  }
}

// A restart that could not go on is refused before anything starts, with
// the key to set: restart: on-failure without acks (before, a kill -9 of
// node-a made node-b, the load generator and the sink exit 1 in turn, and
// the run failed), and a sink restarted without snapshots (before, its
// counts died with it and the run failed at its death). The same file
// under the default guarantee runs (the tests above kill under it).
TEST(Faults, ARestartThatCouldNotGoOnIsRefusedBeforeTheRun) {
  const fs::path dir = fs::temp_directory_path() / ("sluice-faults-refused-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto run = [&](const std::string& sets) {
    const std::string cmd = kDeploy + " run " + kExample + " --json --run-dir " + (dir / "run").string() +
                            " --set base_port=21750 --set duration_s=1 --set rate=2000 --set progress_s=0 " +
                            sets + " >" + (dir / "out").string() + " 2>" + (dir / "err").string();
    const int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  EXPECT_EQ(run("--set guarantee=none --set restart=on-failure"), 2);
  std::string e = slurp(dir / "err");
  EXPECT_NE(e.find("--set restart=on-failure: process 'loadgen' has restart: on-failure, but link 0 "
                   "(loadgen -> node-a) has acks: off"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("set acks: on"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(dir / "run" / "sink.log")) << "a process started";
  EXPECT_EQ(run("--set guarantee=none --set restart=on-failure --set acks=on"), 2);
  e = slurp(dir / "err");
  EXPECT_NE(e.find("process 'sink' has restart: on-failure, but without checkpoint_interval_ms a "
                   "sink's counts and positions die with its process"),
            std::string::npos)
      << e;
  EXPECT_FALSE(fs::exists(dir / "run" / "sink.log")) << "a process started";
  EXPECT_EQ(run("--set restart=on-failure"), 0) << slurp(dir / "err");
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// A run directory used again: the sink keeps its final snapshot (a kill
// after END restarts from it), and the next run in the same directory wrote
// its summary beside it, under the same path. Its sink restored the last
// run's ended stream as its own, and the run failed ("Connection reset by
// peer" on node-b's handshake). Each run now has its own run_id: the old
// files are passed over and overwritten.
TEST(Faults, ARunDirectoryUsedAgainStartsAfresh) {
  const fs::path dir = fs::temp_directory_path() / ("sluice-faults-again-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string run = (dir / "run").string();
  const std::string cmd = kDeploy + " run " + kExample + " --json --run-dir " + run +
                          " --set base_port=28600 --set duration_s=1 --set rate=2000 --set progress_s=0"
                          " --set acks=on --set checkpoint_interval_ms=50 >" +
                          (dir / "out").string() + " 2>" + (dir / "err").string();
  for (int round = 0; round < 2; ++round) {
    ASSERT_EQ(std::system(cmd.c_str()), 0) << "round " << round << ": " << slurp(dir / "err");
    const YAML::Node j = YAML::Load(slurp(dir / "out"));
    ASSERT_TRUE(fs::exists(run + "/sink.0.snapshot.0") || fs::exists(run + "/sink.0.snapshot.1"));
    EXPECT_EQ(j["processes"][3]["name"].as<std::string>(), "sink");
    EXPECT_EQ(j["processes"][3]["restored_checkpoint"].as<uint64_t>(0), 0u) << "round " << round;
    EXPECT_GT(j["tuples"].as<uint64_t>(), 0u);
    EXPECT_EQ(j["tuples"].as<uint64_t>(), j["processes"][0]["tuples_out"].as<uint64_t>()) << "round " << round;
    EXPECT_EQ(j["lost"].as<uint64_t>(), 0u);
  }
  EXPECT_NE(slurp(run + "/sink.log").find("another run's snapshot, passed over"), std::string::npos)
      << slurp(run + "/sink.log");
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// sluice-deploy killed with SIGKILL stops nothing on its way out: its
// programs, told its pid (SLUICE_SUPERVISOR_PID), have the kernel send them
// SIGTERM when it dies, instead of running on unsupervised for the rest of
// a 60 s run with their ports held. A program told of a supervisor that is
// not its parent (gone before it started) does not run.
TEST(Faults, ProcessesEndWhenTheirSupervisorIsKilled) {
  fs::path dir = fs::temp_directory_path() / ("sluice-faults-orphans-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string run_dir = (dir / "run").string();
  pid_t d = fork();
  if (d == 0) {
    const std::string out = (dir / "out").string();
    freopen(out.c_str(), "w", stdout);
    freopen(out.c_str(), "a", stderr);
    execl(kDeploy.c_str(), kDeploy.c_str(), "run", kExample.c_str(), "--run-dir", run_dir.c_str(), "--set",
          "base_port=21770", "--set", "duration_s=60", "--set", "rate=2000", "--set", "progress_s=0",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  std::vector<pid_t> pids;
  for (const char* name : {"loadgen", "node-a", "node-b", "sink"}) {
    pids.push_back(find_process(run_dir, name));
    ASSERT_GT(pids.back(), 0) << name << " never started: " << slurp(dir / "out");
  }
  ASSERT_EQ(kill(d, SIGKILL), 0);
  waitpid(d, nullptr, 0);
  for (size_t i = 0; i < pids.size(); ++i) {
    bool gone = false;
    for (int t = 0; t < 200 && !gone; ++t) {
      gone = kill(pids[i], 0) != 0 && errno == ESRCH;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(gone) << "process " << i << " (pid " << pids[i] << ") still runs 10 s after its supervisor died";
    if (!gone) kill(pids[i], SIGKILL);
  }
  const std::string cmd = std::string("SLUICE_SUPERVISOR_PID=") + std::to_string(d) + " " + SLUICE_SINK +
                          " --deployment " + kExample + " --process sink --set base_port=21770 >" +
                          (dir / "err").string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 1) << rc;
  EXPECT_NE(slurp(dir / "err").find("started by sluice-deploy (pid " + std::to_string(d) + "), which is gone"),
            std::string::npos)
      << slurp(dir / "err");
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// The ssh launcher's lifeline (SLUICE_LIFELINE=stdin): a program whose stdin
// reaches end of file, its supervisor gone, stops itself (SIGTERM) and says
// why; a value it does not know is an error, not ignored. The ssh side end to
// end: Ssh.KillingTheSupervisorEndsTheRemotePrograms.
TEST(Faults, AProgramWhoseLifelineClosesStops) {
  const fs::path err = fs::temp_directory_path() / ("sluice-lifeline-" + std::to_string(getpid()));
  const std::string sink = std::string(SLUICE_SINK) + " --deployment " + kExample +
                           " --process sink --set base_port=21780 --set duration_s=30 <";
  const auto t0 = std::chrono::steady_clock::now();
  int rc = std::system(("timeout 20 env SLUICE_LIFELINE=stdin " + sink + "/dev/null >" + err.string() + " 2>&1")
                           .c_str());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 128 + SIGTERM) << rc << ": " << slurp(err);
  EXPECT_LT(s, 10) << "a sink with nothing upstream waits; it should have stopped at once";
  EXPECT_NE(slurp(err).find("its supervisor is gone; stopping"), std::string::npos) << slurp(err);
  rc = std::system(("env SLUICE_LIFELINE=pipe " + sink + "/dev/null >" + err.string() + " 2>&1").c_str());
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 1) << rc;
  EXPECT_NE(slurp(err).find("SLUICE_LIFELINE='pipe': the only value is 'stdin'"), std::string::npos)
      << slurp(err);
  fs::remove(err);
}

}  // namespace
