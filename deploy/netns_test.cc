// The netns launcher for real: deploy/examples/cluster.yaml on four
// namespace hosts (loadgen, node-a, node-b, sink), every tuple once, and
// nothing it made left behind after a clean run, a process killed mid-run,
// or sluice-deploy stopped by a signal. Needs root and `ip netns`; skipped
// (saying why) without them. No test asserts a timing; the rate-limited
// run checks a ceiling the qdisc enforces.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;

const std::string kDeploy = SLUICE_DEPLOY;
const std::string kCluster = std::string(SLUICE_SOURCE_DIR) + "/deploy/examples/cluster.yaml";

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

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

// `ip` as the launcher finds it (PATH, else /usr/sbin, /sbin).
std::string find_ip() {
  std::string p = shell("command -v ip || ls /usr/sbin/ip /sbin/ip 2>/dev/null | head -1");
  while (!p.empty() && (p.back() == '\n' || p.back() == ' ')) p.pop_back();
  return p;
}

// Why the tests cannot run here, or "".
std::string cannot_run() {
  if (geteuid() != 0) return "not root: the netns launcher makes network namespaces";
  int code = 0;
  std::string out = shell("ip netns list", &code);
  if (code != 0) return "`ip netns list` failed: " + out;
  // Root in a container may still lack CAP_SYS_ADMIN: make one to be sure.
  const std::string probe = "sluice-probe-" + std::to_string(getpid());
  out = shell("ip netns add " + probe, &code);
  if (code != 0) return "cannot make a network namespace here (`ip netns add`): " + out;
  shell("ip netns del " + probe);
  return "";
}

// What a run of sluice-deploy with pid `pid` left: namespaces named
// sl<pid>-..., and links in this namespace that point into one.
std::string leftovers(pid_t pid) {
  const std::string prefix = "sl" + std::to_string(pid) + "-";
  std::string left;
  for (const char* cmd : {"ip netns list", "ip -o link"}) {
    std::istringstream in(shell(cmd));
    std::string line;
    while (std::getline(in, line))
      if (line.find(prefix) != std::string::npos) left += std::string(cmd) + ": " + line + "\n";
  }
  return left;
}

class Netns : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
    char tmpl[] = "/tmp/sluice-netns-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  // Starts `sluice-deploy run cluster.yaml --launcher netns --json` with
  // `extra` arguments; stdout and stderr to files in the scratch folder.
  void start(const std::vector<std::string>& extra, const std::vector<std::string>& before = {}) {
    std::vector<std::string> args = before;
    for (const std::string& a : {kDeploy, std::string("run"), kCluster, std::string("--launcher"),
                                 std::string("netns"), std::string("--json"),
                                 std::string("--run-dir"), dir_ + "/run", std::string("--set"),
                                 std::string("progress_s=0")})
      args.push_back(a);
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      freopen((dir_ + "/out").c_str(), "w", stdout);
      freopen((dir_ + "/err").c_str(), "w", stderr);
      setpgid(0, 0);  // a signal to this test's group does not reach it
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execvp(argv[0], argv.data());
      _exit(127);
    }
  }

  // Waits for sluice-deploy; its exit code, its JSON in json_.
  int finish() {
    int st = 0;
    waitpid(pid_, &st, 0);
    deploy_pid_ = pid_;
    pid_ = -1;
    out_ = slurp(dir_ + "/out");
    err_ = slurp(dir_ + "/err");
    try {
      json_ = YAML::Load(out_);
    } catch (const YAML::Exception&) {
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }

  // The pid of process `name` in host `host`'s namespace, once it runs there
  // (the namespace also holds, for a moment, the `ip` commands that set it up).
  pid_t pid_in(const std::string& host, const std::string& name) {
    const std::string ns = "sl" + std::to_string(pid_) + "-" + host;
    for (int i = 0; i < 500; ++i) {
      std::istringstream in(shell("ip netns pids " + ns));
      pid_t p = -1;
      while (in >> p) {
        std::string cmd = slurp("/proc/" + std::to_string(p) + "/cmdline");
        for (char& c : cmd)
          if (c == '\0') c = ' ';
        if (cmd.find("--process " + name + " ") != std::string::npos) return p;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

  std::string dir_, out_, err_;
  pid_t pid_ = -1, deploy_pid_ = -1;
  YAML::Node json_;
};

TEST_F(Netns, FourHostsEveryTupleOnceEachProcessNamesItsHost) {
  start({"--set", "duration_s=2"});
  const int code = finish();
  ASSERT_EQ(code, 0) << err_ << out_;
  ASSERT_TRUE(json_.IsMap()) << out_;
  EXPECT_TRUE(json_["ok"].as<bool>());
  EXPECT_GT(json_["tuples"].as<uint64_t>(), 0u);
  EXPECT_EQ(json_["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(json_["duplicated"].as<uint64_t>(), 0u);
  EXPECT_EQ(json_["corrupt"].as<uint64_t>(), 0u);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"loadgen", "h1"}, {"node-a", "h2"}, {"node-b", "h3"}, {"sink", "h4"}};
  ASSERT_EQ(json_["processes"].size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const YAML::Node p = json_["processes"][i];
    EXPECT_EQ(p["name"].as<std::string>(), want[i].first);
    EXPECT_EQ(p["host"].as<std::string>(), want[i].second);
    EXPECT_HAS(p["where"].as<std::string>(), "netns sl" + std::to_string(deploy_pid_) + "-" + want[i].second);
  }
  // The links crossed the bridge: each sender connected to the next host's address.
  EXPECT_HAS(slurp(dir_ + "/run/resolved.yaml"), "address: \"10.77.0.4\"");
  EXPECT_EQ(leftovers(deploy_pid_), "");
}

// guarantee: none: the death fails the run (under the default node-a is
// started again in its namespace, and the run goes on).
TEST_F(Netns, AProcessKilledMidRunIsNamedAndNothingIsLeft) {
  start({"--set", "guarantee=none", "--set", "duration_s=30"});
  const pid_t node_a = pid_in("h2", "node-a");
  ASSERT_GT(node_a, 0) << slurp(dir_ + "/err");
  ASSERT_EQ(kill(node_a, SIGKILL), 0);
  const int code = finish();
  EXPECT_EQ(code, 1) << err_ << out_;
  ASSERT_TRUE(json_.IsMap()) << out_;
  EXPECT_HAS(json_["error"].as<std::string>(), "process 'node-a' (role node, pid");
  EXPECT_HAS(json_["error"].as<std::string>(), "on host h2 was killed by signal 9");
  EXPECT_EQ(leftovers(deploy_pid_), "");
}

// A sluice-deploy killed with SIGKILL runs no down(): its namespaces stay.
// The next run removes them, saying whose they were, before making its own
// (a run given the dead one's pid could not make its own otherwise).
TEST_F(Netns, NamespacesLeftByAKilledRunAreRemovedByTheNext) {
  start({"--set", "duration_s=1"});
  ASSERT_GT(pid_in("h1", "loadgen"), 0) << slurp(dir_ + "/err");
  const pid_t killed = pid_;
  ASSERT_EQ(kill(killed, SIGKILL), 0);
  waitpid(killed, nullptr, 0);
  pid_ = -1;
  ASSERT_NE(leftovers(killed), "");
  // Its processes end with it (SIGTERM from the kernel), or else with their duration.
  for (const char* host : {"h1", "h2", "h3", "h4"})
    for (int i = 0; i < 500 && !shell("ip netns pids sl" + std::to_string(killed) + "-" + host).empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  start({"--set", "duration_s=1"});
  ASSERT_EQ(finish(), 0) << err_ << out_;
  EXPECT_EQ(leftovers(killed), "");
  const std::string k = std::to_string(killed);
  EXPECT_HAS(err_, "removed namespace sl" + k + "-net, left by sluice-deploy pid " + k + ", which is gone");
  EXPECT_EQ(leftovers(deploy_pid_), "");
}

TEST_F(Netns, StoppedBySigtermNothingIsLeft) {
  start({"--set", "duration_s=30"});
  ASSERT_GT(pid_in("h1", "loadgen"), 0) << slurp(dir_ + "/err");  // the load generator runs: all are up
  const pid_t deploy = pid_;
  ASSERT_EQ(kill(deploy, SIGTERM), 0);
  EXPECT_EQ(finish(), 1) << err_;
  EXPECT_HAS(json_["error"].as<std::string>(), "interrupted by signal 15");
  EXPECT_EQ(leftovers(deploy), "");
}

TEST_F(Netns, CtrlCDrainsReportsAndLeavesNothing) {
  start({"--set", "duration_s=30"});
  ASSERT_GT(pid_in("h1", "loadgen"), 0) << slurp(dir_ + "/err");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const pid_t deploy = pid_;
  ASSERT_EQ(kill(deploy, SIGINT), 0);
  EXPECT_EQ(finish(), 0) << err_ << out_;
  EXPECT_EQ(json_["lost"].as<uint64_t>(), 0u) << out_;
  EXPECT_EQ(leftovers(deploy), "");
}

TEST_F(Netns, ARateLimitedRunStaysUnderItsRate) {
  start({"--set", "duration_s=2", "--set", "host_rate=1gbit"});
  ASSERT_EQ(finish(), 0) << err_ << out_;
  EXPECT_GT(json_["gbps"].as<double>(), 0.0);
  EXPECT_LT(json_["gbps"].as<double>(), 1.0) << "a 1gbit link moved more than 1 Gb/s of tuples";
  EXPECT_EQ(json_["lost"].as<uint64_t>(), 0u);
  EXPECT_HAS(json_["processes"][0]["where"].as<std::string>(), "rate 1gbit");
  EXPECT_EQ(leftovers(deploy_pid_), "");
}

// plan names every namespace, veth and address run would make, and makes
// none of them.
TEST_F(Netns, PlanMakesNothing) {
  int code = -1;
  const std::string out = shell(kDeploy + " plan " + kCluster + " --launcher netns --set host_rate=1gbit" +
                                " --run-dir " + dir_ + "/run", &code);
  ASSERT_EQ(code, 0) << out;
  const size_t at = out.find("ip netns add sl");
  ASSERT_NE(at, std::string::npos) << out;
  const std::string prefix = out.substr(at + 13, out.find('-', at + 13) - (at + 13) + 1);
  for (const char* host : {"h1", "h2", "h3", "h4"})
    EXPECT_HAS(out, "ip netns add " + prefix + host);
  EXPECT_HAS(out, "addr add 10.77.0.3/24 dev eth0");
  EXPECT_HAS(out, "tbf rate 1000000000bit");
  EXPECT_HAS(out, "command: " + find_ip() + " netns exec " + prefix + "h2 ");
  EXPECT_EQ(shell("ip netns list | grep -c '^" + prefix + "' || true"), "0\n");
  EXPECT_FALSE(fs::exists(dir_ + "/run"));
}

TEST_F(Netns, WithoutTheCapabilitiesTheErrorNamesThem) {
  if (shell("command -v setpriv").empty()) GTEST_SKIP() << "no setpriv (util-linux) to drop capabilities";
  // Root without a bounding set has no capabilities after exec.
  start({}, {"setpriv", "--bounding-set=-all", "--inh-caps=-all"});
  EXPECT_EQ(finish(), 2) << err_;
  EXPECT_HAS(err_, "lacks CAP_SYS_ADMIN and CAP_NET_ADMIN (run sluice-deploy as root)");
  EXPECT_EQ(leftovers(deploy_pid_), "");
}

}  // namespace

namespace {

// The same file on the local launcher: every host is this machine, so their
// addresses must be its own (the 127.0.0.0/8 ones are).
TEST(LocalLauncherWithHosts, RunsTheClusterOnLoopbackAddresses) {
  char tmpl[] = "/tmp/sluice-local-hosts-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::string cmd = kDeploy + " run " + kCluster + " --launcher local --json --run-dir " + dir +
                    "/run --set progress_s=0 --set tuples=200000";
  for (int i = 0; i < 4; ++i)
    cmd += " --set hosts." + std::to_string(i) + ".address=127.0.9." + std::to_string(i + 1);
  int code = 0;
  const std::string out = shell(cmd + " 2>/dev/null", &code);
  ASSERT_EQ(code, 0) << out;
  YAML::Node j = YAML::Load(out);
  EXPECT_EQ(j["tuples"].as<uint64_t>(), 200000u);
  EXPECT_EQ(j["processes"][2]["host"].as<std::string>(), "h3");
  EXPECT_EQ(j["processes"][2]["where"].as<std::string>(), "h3 (127.0.9.3)");

  // Addresses this machine does not have: refused before anything starts.
  const std::string err = shell(kDeploy + " run " + kCluster + " --launcher local --run-dir " +
                                    dir + "/run2",
                                &code);
  EXPECT_EQ(code, 2) << err;
  EXPECT_HAS(err, "cluster.yaml:");  // the line of h1
  EXPECT_HAS(err, ": host 'h1': the local launcher runs every process on this "
                  "machine, which has no address 10.77.0.1");
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
