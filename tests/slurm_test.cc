// The slurm launcher on a real Slurm cluster: scripts/slurm-cluster.sh
// starts slurmctld, munged and four slurmd (nodes sn1..sn4, each in a
// network namespace on a bridge), an allocation of all four is made with
// `salloc -N4 --no-shell`, and deploy/examples/cluster.yaml runs in it with
// --launcher slurm:
//   1. a short run: nothing lost, and every process on a node of its own
//      (h1..h4 onto sn1..sn4 in order, each at its node's address), h2's
//      process bound to its `cores`;
//   2. a long run whose node-a step is killed with `scancel --signal=KILL`:
//      the run fails naming node-a, its node and the signal;
//   3. the same with restart: on-failure and acks: node-a comes back as a
//      new step on sn2, and nothing is lost;
//   4. up, status (each step on its node) and down (drained, lost 0, no
//      step left), and down after the supervisor was killed (no step left);
//   5. --slurm-args outside an allocation: one made, used and cancelled, by
//      run, and by up ... down;
//   6. the batch script of render --slurm under sbatch: lost 0, each
//      process at its node's address.
// The cluster is torn down in every case (also when a check fails), and the
// test checks nothing of it is left. It skips, saying why, only where this
// machine cannot make network namespaces; without slurm-wlm or munge it
// fails (scripts/setup.sh installs them).
#include <fcntl.h>
#include <signal.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

namespace fs = std::filesystem;

namespace {

const std::string kDeploy = SLUICE_DEPLOY;
const std::string kSource = SLUICE_SOURCE_DIR;
const std::string kCluster = kSource + "/deploy/examples/cluster.yaml";
const std::string kFixture = kSource + "/scripts/slurm-cluster.sh";

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

std::string shell(const std::string& cmd, int* code = nullptr) {
  std::string out;
  if (FILE* f = popen((cmd + " 2>&1").c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    const int rc = pclose(f);
    if (code) *code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }
  return out;
}

std::string slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The cluster and the allocation, for the whole suite; torn down at its end.
class SlurmCluster : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_.clear();
    error_.clear();
    if (geteuid() != 0) {
      skip_ = "not root: the Slurm nodes are network namespaces on a bridge";
      return;
    }
    const std::string probe = "sluice-slurm-probe-" + std::to_string(getpid());
    int rc = 0;
    const std::string out = shell("ip netns add " + probe + " && ip netns del " + probe, &rc);
    if (rc != 0) {
      skip_ = "cannot make network namespaces here: " + out;
      return;
    }
    for (const char* t : {"slurmctld", "slurmd", "munged", "salloc", "srun", "scancel"})
      if (shell(std::string("command -v ") + t).empty()) {
        error_ = std::string("no ") + t + ": install slurm-wlm and munge (scripts/setup.sh)";
        return;
      }
    // One such cluster per machine (fixed names and subnet): runs of this
    // test from other build trees wait their turn.
    lock_fd_ = open("/tmp/sluice-slurm-cluster.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0666);
    if (lock_fd_ >= 0) flock(lock_fd_, LOCK_EX);
    // Holding the lock, any cluster a run of this test left (killed by a
    // ctest timeout) is stale: down it. One brought up by hand
    // (/tmp/sluice-slurm) is left alone, and up below says it is there.
    for (const auto& e : fs::directory_iterator("/tmp"))
      if (e.path().filename().string().rfind("sluice-slurm-test-", 0) == 0)
        fprintf(stderr, "stale cluster %s: %s", e.path().c_str(),
                shell("SLUICE_SLURM_DIR=" + e.path().string() + " " + kFixture + " down").c_str());
    dir_ = "/tmp/sluice-slurm-test-" + std::to_string(getpid());
    setenv("SLUICE_SLURM_DIR", dir_.c_str(), 1);
    setenv("SLURM_CONF", (dir_ + "/slurm.conf").c_str(), 1);
    const auto t0 = std::chrono::steady_clock::now();
    up_ = shell(kFixture + " up", &rc);
    if (rc != 0) {
      error_ = "scripts/slurm-cluster.sh up failed:\n" + up_;
      return;
    }
    fprintf(stderr, "slurm cluster up in %.2f s\n",
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    // Whole nodes, so a step can be bound to any of a node's CPUs.
    const std::string alloc = shell("salloc -N4 --no-shell --exclusive", &rc);
    std::smatch m;
    if (rc != 0 || !std::regex_search(alloc, m, std::regex("Granted job allocation ([0-9]+)"))) {
      error_ = "salloc -N4 --no-shell failed: " + alloc;
      return;
    }
    job_ = m[1];
    setenv("SLURM_JOB_ID", job_.c_str(), 1);
  }

  static void TearDownTestSuite() {
    if (!dir_.empty()) {
      if (!job_.empty()) shell("scancel " + job_);
      const std::string down = shell(kFixture + " down");
      fprintf(stderr, "%s", down.c_str());
    }
    unsetenv("SLURM_JOB_ID");
    unsetenv("SLURM_CONF");
    if (lock_fd_ >= 0) close(lock_fd_);
    lock_fd_ = -1;
  }

  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_TRUE(error_.empty()) << error_;
  }

  // The allocation's steps still listed, once slurmctld had 5 s to see the
  // last ones end (a step whose srun exited can show a moment longer while
  // its node reports it complete; one left running shows all along).
  static std::string steps_left() {
    std::string left;
    for (int i = 0; i < 50; ++i) {
      left = shell("squeue -h -s -j " + job_);
      if (left.empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return left;
  }

  static std::string run_dir(const std::string& name) {
    return dir_ + "/runs/" + name;
  }

  static inline std::string skip_, error_, dir_, job_, up_;
  static inline int lock_fd_ = -1;
};

TEST_F(SlurmCluster, ClusterYamlRunsOnFourNodesWithNothingLost) {
  int rc = 0;
  const std::string out =
      shell("{ " + kDeploy + " run " + kCluster +
                " --launcher slurm --set duration_s=2 --set hosts.1.cores='\"1\"' --json --run-dir " +
                run_dir("ok") +
                " 2>" + dir_ + "/ok.err; }",
            &rc);
  ASSERT_EQ(rc, 0) << out << slurp(dir_ + "/ok.err") << slurp(run_dir("ok") + "/sink.log");
  const YAML::Node r = YAML::Load(out);
  EXPECT_TRUE(r["ok"].as<bool>());
  EXPECT_EQ(r["lost"].as<uint64_t>(), 0u);
  EXPECT_GT(r["tuples"].as<uint64_t>(), 0u);
  // h1..h4 onto the allocation's nodes in order, at their addresses.
  const std::map<std::string, std::pair<std::string, std::string>> want = {
      {"loadgen", {"sn1", "10.79.0.1"}},
      {"node-a", {"sn2", "10.79.0.2"}},
      {"node-b", {"sn3", "10.79.0.3"}},
      {"sink", {"sn4", "10.79.0.4"}}};
  ASSERT_EQ(r["processes"].size(), 4u);
  for (const auto& p : r["processes"]) {
    const std::string name = p["name"].as<std::string>();
    SCOPED_TRACE(name);
    ASSERT_TRUE(want.count(name));
    EXPECT_EQ(p["node"].as<std::string>(), want.at(name).first);
    EXPECT_HAS(p["where"].as<std::string>(), want.at(name).second);
    // It served its metrics at its node's address: it ran in that node's
    // namespace, not on this host.
    EXPECT_HAS(p["metrics_url"].as<std::string>(), "http://" + want.at(name).second + ":");
    // h2 has `cores: "1"`: its step is bound there (--whole
    // --cpu-bind=mask_cpu:0x2); the others are not bound and may use both
    // of their node's CPUs.
    if (name == "node-a") EXPECT_EQ(p["cpus"].as<std::string>(), "1");
    else EXPECT_EQ(p["cpus"].as<std::string>(), "0-1");
  }
  // No step of the run is left in the allocation.
  EXPECT_EQ(steps_left(), "");
}

// guarantee: none: the killed step fails the run (under the default it is
// started again, and the run goes on).
TEST_F(SlurmCluster, AStepKilledWithScancelIsNamedWithItsNode) {
  const std::string dir = run_dir("killed");
  const std::string cmd = kDeploy + " run " + kCluster +
                          " --launcher slurm --set guarantee=none --set duration_s=30 --json --run-dir " + dir +
                          " 2>" + dir + ".err";
  fs::create_directories(fs::path(dir).parent_path());
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  // node-a's step, once it runs.
  std::string step;
  for (int i = 0; i < 100 && step.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::istringstream in(shell("squeue -h -s -j " + job_ + " -o '%i %j'"));
    for (std::string id, name; in >> id >> name;)
      if (name.rfind("sluice-node-a-", 0) == 0) step = id;
  }
  if (!step.empty()) {
    std::this_thread::sleep_for(std::chrono::seconds(1));  // tuples are flowing
    shell("scancel --signal=KILL " + step);
  }
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const int st = pclose(f);
  ASSERT_FALSE(step.empty()) << "node-a's step never ran: " << slurp(dir + ".err");
  EXPECT_EQ(WEXITSTATUS(st), 1) << out;
  const YAML::Node r = YAML::Load(out);
  EXPECT_FALSE(r["ok"].as<bool>());
  const std::string error = r["error"].as<std::string>();
  EXPECT_HAS(error, "process 'node-a'");
  EXPECT_HAS(error, "(node sn2)");
  EXPECT_HAS(error, "killed by signal 9");
  // The others were stopped, or ended on their own first: their link to
  // node-a broke before srun told the supervisor that node-a's step died
  // (slurmd's report takes longer than a neighbour's read). Either way the
  // run's error names node-a, the first to fail.
  for (const auto& p : r["processes"])
    if (p["name"].as<std::string>() != "node-a") {
      const std::string e = p["error"].as<std::string>();
      EXPECT_TRUE(e.find("stopped by sluice-deploy") != std::string::npos ||
                  e.find("failed with exit code 1") != std::string::npos)
          << p["name"].as<std::string>() << ": " << e;
    }
  EXPECT_EQ(steps_left(), "");
}

// sluice-deploy killed outright (SIGKILL: it stops nothing): each srun reads
// end of file on its stdin (the launcher's lifeline) and passes it on, and
// each program stops itself, so its step ends. Before the lifeline the sruns
// and their steps ran on for the rest of the 60 s.
TEST_F(SlurmCluster, KillingTheSupervisorEndsTheSteps) {
  const std::string dir = run_dir("orphaned");
  fs::create_directories(fs::path(dir).parent_path());
  const std::string cmd = "exec " + kDeploy + " run " + kCluster +
                          " --launcher slurm --set duration_s=60 --set rate=2000 --set progress_s=0"
                          " --run-dir " + dir + " >" + dir + ".out 2>&1";
  const pid_t d = fork();
  if (d == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(d, 0);
  size_t running = 0;
  for (int i = 0; i < 100 && running < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::istringstream in(shell("squeue -h -s -j " + job_ + " -o '%j'"));
    running = 0;
    for (std::string name; in >> name;) running += name.rfind("sluice-", 0) == 0;
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));  // tuples are flowing
  ASSERT_EQ(kill(d, SIGKILL), 0);
  waitpid(d, nullptr, 0);
  ASSERT_EQ(running, 4u) << slurp(dir + ".out");
  EXPECT_EQ(steps_left(), "") << "steps still running 5 s after their supervisor died";
  EXPECT_HAS(slurp(dir + "/sink.log"), "its supervisor is gone; stopping");
}

// restart: on-failure through the same executor: the killed process comes
// back as a new step on the same node, and with acks nothing is lost.
TEST_F(SlurmCluster, AKilledStepIsRestartedAsAStepOnItsNode) {
  const std::string dir = run_dir("restarted");
  const std::string cmd = kDeploy + " run " + kCluster +
                          " --launcher slurm --set duration_s=6 --set restart=on-failure"
                          " --set acks=on --json --run-dir " + dir + " 2>" + dir + ".err";
  fs::create_directories(fs::path(dir).parent_path());
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string step;
  for (int i = 0; i < 100 && step.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::istringstream in(shell("squeue -h -s -j " + job_ + " -o '%i %j'"));
    for (std::string id, name; in >> id >> name;)
      if (name.rfind("sluice-node-a-", 0) == 0) step = id;
  }
  if (!step.empty()) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    shell("scancel --signal=KILL " + step);
  }
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const int st = pclose(f);
  ASSERT_FALSE(step.empty()) << "node-a's step never ran: " << slurp(dir + ".err");
  // Everything the run said, for any check below that fails: its report,
  // the supervisor's lines and each process's log (a restarted one's first
  // log is LOG.1).
  const std::string err = slurp(dir + ".err");
  std::string said = out + "\n--- stderr:\n" + err;
  for (const char* log : {"loadgen.log", "node-a.log.1", "node-a.log", "node-b.log", "sink.log"})
    said += std::string("\n--- ") + log + ":\n" + slurp(dir + "/" + log);
  ASSERT_EQ(WEXITSTATUS(st), 0) << said;
  const YAML::Node r = YAML::Load(out);
  EXPECT_TRUE(r["ok"].as<bool>()) << said;
  EXPECT_EQ(r["lost"].as<uint64_t>(), 0u) << said;
  for (const auto& p : r["processes"])
    if (p["name"].as<std::string>() == "node-a") {
      EXPECT_EQ(p["restarts"].as<int>(), 1) << said;
      EXPECT_EQ(p["node"].as<std::string>(), "sn2");
    }
  EXPECT_HAS(err, "node-a died (signal KILL); restarting");
  // Started twice on sn2: two steps.
  EXPECT_NE(err.find("node-a on node sn2: step"), err.rfind("node-a on node sn2: step")) << said;
  EXPECT_EQ(steps_left(), "");
}

// up, status and down with the slurm launcher: status shows each process's
// step on its node; down drains the stream (lost 0) and leaves no step. A
// second run whose supervisor is killed: down still leaves no step.
TEST_F(SlurmCluster, UpStatusDownShowAndEndTheSteps) {
  const std::string dir = run_dir("up");
  int rc = 0;
  std::string out = shell("{ " + kDeploy + " up " + kCluster +
                              " --launcher slurm --set duration_s=60 --run-dir " + dir +
                              " 2>/dev/null; }",
                          &rc);
  ASSERT_EQ(rc, 0) << out;
  // Each step shows in squeue once srun has made it.
  YAML::Node st;
  for (int i = 0; i < 50; ++i) {
    st = YAML::Load(shell("{ " + kDeploy + " status " + dir + " --json 2>/dev/null; }"));
    bool all = st["processes"].size() == 4;
    for (const auto& p : st["processes"]) all = all && p["slurm_step"].IsDefined() &&
                                          p["slurm_step"].as<std::string>().rfind("Slurm step ", 0) == 0;
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::map<std::string, std::string> node = {
      {"loadgen", "sn1"}, {"node-a", "sn2"}, {"node-b", "sn3"}, {"sink", "sn4"}};
  for (const auto& p : st["processes"]) {
    const std::string name = p["name"].as<std::string>();
    EXPECT_EQ(p["state"].as<std::string>(), "running") << name;
    EXPECT_HAS(p["slurm_step"].as<std::string>(), "Slurm step " + job_ + ".");
    EXPECT_HAS(p["slurm_step"].as<std::string>(), " on " + node.at(name));
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  out = shell("{ " + kDeploy + " down " + dir + " --json 2>/dev/null; }", &rc);
  EXPECT_EQ(rc, 0) << out;
  const YAML::Node r = YAML::Load(out);
  EXPECT_TRUE(r["ok"].as<bool>());
  EXPECT_EQ(r["lost"].as<uint64_t>(), 0u);
  EXPECT_GT(r["tuples"].as<uint64_t>(), 0u);
  EXPECT_EQ(steps_left(), "");

  // The supervisor killed: down stops what it left, and no step survives.
  const std::string dir2 = run_dir("orphaned");
  out = shell("{ " + kDeploy + " up " + kCluster + " --launcher slurm --set duration_s=60 --run-dir " +
                  dir2 + " 2>/dev/null; }",
              &rc);
  ASSERT_EQ(rc, 0) << out;
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const YAML::Node state = YAML::LoadFile(dir2 + "/state.json");
  const pid_t sup = state["supervisor"]["pid"].as<pid_t>();
  ASSERT_GT(sup, 0);
  kill(sup, SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  out = shell("{ " + kDeploy + " down " + dir2 + " 2>&1; }", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_HAS(out, "was gone");
  EXPECT_EQ(steps_left(), "");
}

// Outside an allocation, --slurm-args makes one (salloc --no-shell
// --nodes=4 ARGS), runs in it, and cancels it at the end (run), or when
// down ends the run (up). The suite's
// allocation has whole nodes, so it goes first.
TEST_F(SlurmCluster, SlurmArgsMakesAndEndsItsOwnAllocation) {
  shell("scancel " + job_);
  job_.clear();
  int rc = 0;
  const std::string err = dir_ + "/own.err";
  const std::string out =
      shell("{ env -u SLURM_JOB_ID -u SLURM_JOB_NODELIST " + kDeploy + " run " + kCluster +
                " --launcher slurm --slurm-args '--time=5' --set duration_s=2 --json --run-dir " +
                run_dir("own") + " 2>" + err + "; }",
            &rc);
  ASSERT_EQ(rc, 0) << out << slurp(err);
  const YAML::Node r = YAML::Load(out);
  EXPECT_EQ(r["lost"].as<uint64_t>(), 0u);
  std::smatch m;
  const std::string log = slurp(err);
  ASSERT_TRUE(std::regex_search(log, m, std::regex("slurm: job ([0-9]+) ")) ) << log;
  const std::string own = m[1];
  for (const auto& p : r["processes"]) EXPECT_HAS(p["where"].as<std::string>(), "job " + own + ")");
  // Cancelled when the run ended.
  EXPECT_EQ(shell("squeue -h -j " + own + " -t running,pending"), "");

  // up --slurm-args: the allocation lives on with the supervisor, named
  // after the run, until down cancels it.
  const std::string dir = run_dir("own-up");
  std::string up = shell("{ env -u SLURM_JOB_ID -u SLURM_JOB_NODELIST " + kDeploy + " up " +
                             kCluster + " --launcher slurm --slurm-args '--time=5' --set duration_s=60"
                             " --run-dir " + dir + " 2>/dev/null; }",
                         &rc);
  ASSERT_EQ(rc, 0) << up;
  const std::string name = "sluice-" + fs::path(dir).filename().string();
  EXPECT_HAS(shell("squeue -h -n " + name + " -o %T"), "RUNNING");
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const std::string down = shell("{ " + kDeploy + " down " + dir + " --json 2>/dev/null; }", &rc);
  EXPECT_EQ(rc, 0) << down;
  EXPECT_EQ(YAML::Load(down)["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(shell("squeue -h -n " + name + " -t running,pending"), "");
}

// The batch script render --slurm writes, submitted as a user would
// (sbatch): every step on its node, nothing lost. It asks for
// whole nodes (--exclusive), so the suite's allocation goes first.
TEST_F(SlurmCluster, RenderedBatchScriptRunsUnderSbatch) {
  if (!job_.empty()) shell("scancel " + job_);
  job_.clear();
  const std::string dir = dir_ + "/sbatch";
  fs::create_directories(dir);
  int rc = 0;
  std::string out = shell("{ " + kDeploy + " render --slurm " + kCluster +
                              " --set duration_s=2 -o " + dir + "; }",
                          &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(out, dir + "/cluster.sbatch\n");
  // sbatch --wait polls every few seconds; squeue every 0.2 s is quicker.
  const std::string id = shell("cd " + dir + " && env -u SLURM_JOB_ID SLUICE_RUN_DIR=" + dir +
                                   "/run sbatch --parsable --time=2 cluster.sbatch",
                               &rc);
  ASSERT_EQ(rc, 0) << id;
  const std::string job = id.substr(0, id.find_first_of(";\n"));
  std::string state;
  for (int i = 0; i < 300; ++i) {
    state = shell("scontrol show job " + job);
    if (state.find("JobState=COMPLETED") != std::string::npos ||
        state.find("JobState=FAILED") != std::string::npos ||
        state.find("JobState=CANCELLED") != std::string::npos ||
        state.find("JobState=TIMEOUT") != std::string::npos)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_HAS(state, "JobState=COMPLETED");
  EXPECT_HAS(state, "ExitCode=0:0");
  const YAML::Node sink = YAML::LoadFile(dir + "/run/sink.json");
  EXPECT_TRUE(sink["ok"].as<bool>());
  EXPECT_EQ(sink["lost"].as<uint64_t>(), 0u);
  EXPECT_GT(sink["tuples_in"].as<uint64_t>(), 0u);
  const std::map<std::string, std::string> at = {{"loadgen", "10.79.0.1"},
                                                 {"node-a", "10.79.0.2"},
                                                 {"node-b", "10.79.0.3"},
                                                 {"sink", "10.79.0.4"}};
  for (const auto& [name, address] : at) {
    const YAML::Node p = YAML::LoadFile(dir + "/run/" + name + ".json");
    EXPECT_HAS(p["metrics_url"].as<std::string>(), "http://" + address + ":");
  }
}

// Last: the fixture's down leaves nothing (checked by running it here).
TEST_F(SlurmCluster, ZDownLeavesNothing) {
  if (!job_.empty()) shell("scancel " + job_);
  job_.clear();
  const std::string pids = slurp(dir_ + "/pids");
  int rc = 0;
  const std::string down = shell(kFixture + " down", &rc);
  EXPECT_EQ(rc, 0) << down;
  std::istringstream in(pids);
  // Gone, or a zombie: the daemons' parent (the `up` shell) has exited, and
  // init reaps them when it gets to it.
  for (std::string name, pid; in >> name >> pid;) {
    const std::string stat = slurp("/proc/" + pid + "/stat");
    const size_t paren = stat.rfind(')');
    const bool running = paren != std::string::npos && stat.size() > paren + 2 && stat[paren + 2] != 'Z';
    EXPECT_FALSE(running) << name << " (pid " << pid << ") is still running: " << stat;
  }
  EXPECT_EQ(shell("ip netns list | grep sluice-slurm-"), "");
  EXPECT_EQ(shell("ip link show sluiceslurm0 >/dev/null 2>&1 && echo the bridge is left"), "");
  EXPECT_FALSE(fs::exists(dir_));
  dir_.clear();  // torn down already
}

}  // namespace
