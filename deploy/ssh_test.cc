// The ssh launcher end to end, against real sshd: four network namespaces,
// each a host with its own sshd, joined by a bridge in this namespace (so
// this machine reaches them as it would reach a cluster), a client key and a
// host key made for the test. deploy/examples/cluster.yaml runs on them with
// --launcher ssh. Everything made is removed, also when a test fails.
// Skips itself (with the reason) only where it cannot run: not root, no
// namespaces, no sshd or ssh.
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

namespace fs = std::filesystem;

namespace {

const std::string kDeploy = SLUICE_DEPLOY;
const std::string kCluster = std::string(SLUICE_SOURCE_DIR) + "/deploy/examples/cluster.yaml";

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

// Four hosts with sshd, made once for the suite.
class SshCluster {
 public:
  void SetUp() {
    if (geteuid() != 0) return skip("not root: the test makes network namespaces for its hosts");
    for (const char* t : {"/usr/sbin/sshd", "ssh", "ssh-keygen", "ip"})
      if (shell(std::string("command -v ") + t + " || test -x " + t + " && echo " + t).empty())
        return skip(std::string("no ") + t + " (openssh-server, openssh-client, iproute2)");
    const pid_t me = getpid();
    tag_ = "slt" + std::to_string(me % 100000);
    net_ = "10.98." + std::to_string(me % 200) + ".";
    char tmpl[] = "/tmp/sluice-ssh-test-XXXXXX";
    if (!mkdtemp(tmpl)) return skip("mkdtemp failed");
    dir_ = tmpl;
    int code = 0;
    std::string out = shell("ip netns add " + tag_ + "-probe && ip netns del " + tag_ + "-probe", &code);
    if (code != 0) return skip("cannot make a network namespace here: " + out);
    made_ = true;
    const std::string script =
        "set -e; d=" + dir_ + "; mkdir -p /run/sshd;"
        "ssh-keygen -q -t ed25519 -N '' -f $d/id; ssh-keygen -q -t ed25519 -N '' -f $d/hostkey;"
        "cp $d/id.pub $d/authorized_keys;"
        "ip link add " + tag_ + " type bridge; ip addr add " + net_ + "254/24 dev " + tag_ +
        "; ip link set " + tag_ + " up;"
        "for i in 1 2 3 4; do ns=" + tag_ + "-h$i;"
        "  ip netns add $ns; ip -n $ns link set lo up;"
        "  ip link add " + tag_ + "v$i type veth peer name eth0 netns $ns;"
        "  ip link set " + tag_ + "v$i master " + tag_ + " up;"
        "  ip -n $ns addr add " + net_ + "$i/24 dev eth0; ip -n $ns link set eth0 up;"
        "  printf 'Port 22\\nListenAddress " + net_ + "%s\\nHostKey %s/hostkey\\n"
        "AuthorizedKeysFile %s/authorized_keys\\nPasswordAuthentication no\\n"
        "KbdInteractiveAuthentication no\\nUsePAM no\\nStrictModes no\\n"
        "PermitRootLogin prohibit-password\\nPidFile none\\nLogLevel ERROR\\n"
        "Subsystem sftp internal-sftp\\n' $i $d $d"
        "    > $d/sshd-$i.conf;"
        "  ip netns exec $ns /usr/sbin/sshd -f $d/sshd-$i.conf -E $d/sshd-$i.log;"
        "done";
    out = shell("bash -c " + quote(script), &code);
    if (code != 0) {
      error_ = "could not make the hosts: " + out;
      return;
    }
    // sshd answers.
    for (int i = 1; i <= 4; ++i) {
      std::string ok;
      for (int t = 0; t < 50 && ok.find("up") == std::string::npos; ++t) {
        ok = shell(ssh() + " root@" + net_ + std::to_string(i) + " echo up");
        if (ok.find("up") == std::string::npos) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (ok.find("up") == std::string::npos) {
        error_ = "sshd on host " + std::to_string(i) + " does not answer: " + ok;
        return;
      }
    }
  }
  void TearDown() {
    if (!made_) return;
    // sshd keeps its namespace (and the veth in it) alive until it exits.
    // ssh[d]: the pattern must not match the shell that runs pkill.
    shell("pkill -f 'ssh[d] -f " + dir_ + "/sshd-'; sleep 0.2; "
          "for i in 1 2 3 4; do ip netns del " + tag_ + "-h$i 2>/dev/null; ip link del " + tag_ +
          "v$i 2>/dev/null; done; ip link del " + tag_ + " 2>/dev/null; true");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static std::string quote(const std::string& s) {
    std::string o = "'";
    for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return o + "'";
  }
  std::string ssh_options() const {
    return "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR";
  }
  std::string ssh() const { return "ssh -o BatchMode=yes -i " + dir_ + "/id " + ssh_options(); }
  // --set arguments that put cluster.yaml on these hosts over ssh.
  std::string sets() const {
    std::string s = " --launcher ssh --set ssh_key=" + dir_ + "/id --set ssh_options=" +
                    quote(ssh_options()) + " --set progress_s=0";
    for (int i = 0; i < 4; ++i)
      s += " --set hosts." + std::to_string(i) + ".address=" + net_ + std::to_string(i + 1) +
           " --set hosts." + std::to_string(i) + ".ssh_user=root";
    return s;
  }

  std::string skip_, error_, dir_, tag_, net_;
  bool made_ = false;

 private:
  void skip(const std::string& why) { skip_ = why; }
};

SshCluster* g_cluster = nullptr;

class Ssh : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g_cluster = new SshCluster;
    g_cluster->SetUp();
  }
  static void TearDownTestSuite() {
    g_cluster->TearDown();
    delete g_cluster;
    g_cluster = nullptr;
  }
  void SetUp() override {
    if (!g_cluster->skip_.empty()) GTEST_SKIP() << g_cluster->skip_;
    ASSERT_EQ(g_cluster->error_, "");
    run_ = g_cluster->dir_ + "/run-" + std::to_string(++n_);
  }
  // sluice-deploy run cluster.yaml over ssh, --json; the exit code.
  int run(const std::string& extra) {
    const std::string cmd = kDeploy + " run " + kCluster + " --json --run-dir " + run_ +
                            g_cluster->sets() + extra;
    out_ = shell("(" + cmd + " 2>" + run_ + ".err)", &code_);
    err_ = slurp(run_ + ".err");
    try {
      json_ = YAML::Load(out_.substr(out_.find('{') == std::string::npos ? 0 : out_.find('{')));
    } catch (const YAML::Exception&) {
    }
    return code_;
  }
  static int n_;
  std::string run_, out_, err_;
  int code_ = -1;
  YAML::Node json_;
};
int Ssh::n_ = 0;

TEST_F(Ssh, FourHostsEveryTupleOnceEachProcessNamesItsHost) {
  ASSERT_EQ(run(" --set duration_s=2"), 0) << err_ << out_;
  EXPECT_EQ(json_["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(json_["duplicated"].as<uint64_t>(), 0u);
  EXPECT_GT(json_["tuples"].as<uint64_t>(), 0u);
  const char* hosts[] = {"h1", "h2", "h3", "h4"};
  for (size_t i = 0; i < 4; ++i) {
    const YAML::Node p = json_["processes"][i];
    EXPECT_EQ(p["host"].as<std::string>(), hosts[i]);
    EXPECT_HAS(p["where"].as<std::string>(), "ssh root@" + g_cluster->net_ + std::to_string(i + 1));
    EXPECT_GT(p["events_in"].as<uint64_t>() + p["events_out"].as<uint64_t>(), 0u);
  }
  // Each process ran on its host: its pid file is there, and the remote
  // program is gone.
  for (const char* n : {"loadgen", "node-a", "node-b", "sink"}) {
    const std::string pid = slurp(run_ + "/" + n + ".pid");
    ASSERT_FALSE(pid.empty()) << n;
    EXPECT_NE(kill(std::stoi(pid), 0), 0) << n << " still runs";
  }
}

TEST_F(Ssh, AnUnreachableHostIsNamedBeforeAnythingStarts) {
  EXPECT_EQ(run(" --set hosts.2.address=" + g_cluster->net_ + "77"), 2) << err_ << out_;
  EXPECT_HAS(err_, "host 'h3' (" + g_cluster->net_ + "77, port 22, user root): cannot reach it over ssh");
  EXPECT_FALSE(fs::exists(run_ + "/sink.log")) << "a process was started";
}

TEST_F(Ssh, CopiesTheProgramsAndBringsTheSummariesBack) {
  const std::string remote = g_cluster->dir_ + "/remote";
  ASSERT_EQ(run(" --set duration_s=1 --set remote_dir=" + remote + " --set copy_binaries=on"), 0)
      << err_ << out_;
  EXPECT_EQ(json_["lost"].as<uint64_t>(), 0u);
  for (const char* b : {"sluice-loadgen", "sluice-node", "sluice-sink"})
    EXPECT_TRUE(fs::exists(remote + "/bin/" + b)) << b;
  const std::string run_name = fs::path(run_).filename().string();
  EXPECT_TRUE(fs::exists(remote + "/runs/" + run_name + "/resolved.yaml"));
  EXPECT_TRUE(fs::exists(remote + "/runs/" + run_name + "/node-a.json"));
  // The summary came back to the run directory here.
  EXPECT_TRUE(fs::exists(run_ + "/node-a.json"));
  EXPECT_GT(json_["processes"][1]["events_in"].as<uint64_t>(), 0u);
}

// ssh -n (or -f) would give the remote programs a stdin already at its end,
// which they read as sluice-deploy gone: refused before anything starts,
// wherever the flag hides, and a word after -o is not read as flags.
TEST_F(Ssh, AnSshOptionThatTakesStdinAwayIsRefused) {
  for (const char* opts : {"-n", "-q -fT", "-o LogLevel=ERROR -n"}) {
    EXPECT_EQ(run(std::string(" --set \"ssh_options=") + opts + "\""), 2) << opts << ": " << err_;
    EXPECT_HAS(err_, "ssh_options has -");
    EXPECT_HAS(err_, "stops at once");
    EXPECT_FALSE(fs::exists(run_ + "/sink.log")) << opts << ": a process was started";
  }
  EXPECT_EQ(run(" --set duration_s=1 --set \"ssh_options=-o StrictHostKeyChecking=no -o "
                "UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ServerAliveInterval=5\""),
            0)
      << err_;
}

TEST_F(Ssh, StoppingTheRunStopsTheRemotePrograms) {
  // A run far longer than its timeout: the launcher stops every process on
  // its host, and none is left.
  EXPECT_EQ(run(" --set duration_s=60 --timeout 3"), 1) << err_;
  EXPECT_HAS(json_["error"].as<std::string>(), "timed out after 3 s");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (const char* n : {"loadgen", "node-a", "node-b", "sink"}) {
    const std::string pid = slurp(run_ + "/" + n + ".pid");
    ASSERT_FALSE(pid.empty()) << n;
    EXPECT_NE(kill(std::stoi(pid), 0), 0) << n << " (pid " << pid << ") still runs on its host";
  }
}

// sluice-deploy killed outright (SIGKILL: nothing stops anything): its ssh
// clients read end of file on their stdin (the launcher's lifeline) and pass
// it on, and each remote program stops itself. Before the lifeline they ran
// on, unsupervised, for the rest of their 60 s, holding their ports.
TEST_F(Ssh, KillingTheSupervisorEndsTheRemotePrograms) {
  const std::string cmd = "exec " + kDeploy + " run " + kCluster + " --run-dir " + run_ + g_cluster->sets() +
                          " --set duration_s=60 --set rate=2000 >" + run_ + ".out 2>&1";
  const pid_t d = fork();
  if (d == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(d, 0);
  const char* names[] = {"loadgen", "node-a", "node-b", "sink"};
  std::vector<pid_t> pids;
  for (const char* n : names) {
    pid_t pid = 0;
    for (int t = 0; t < 300 && pid <= 0; ++t) {
      const std::string s = slurp(run_ + "/" + n + ".pid");
      if (!s.empty() && s.back() == '\n') pid = std::stoi(s);
      if (pid <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    pids.push_back(pid);
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the stream flows
  ASSERT_EQ(kill(d, SIGKILL), 0);
  waitpid(d, nullptr, 0);
  for (size_t i = 0; i < pids.size(); ++i) {
    ASSERT_GT(pids[i], 0) << names[i] << " never started: " << slurp(run_ + ".out");
    bool gone = false;
    for (int t = 0; t < 200 && !gone; ++t) {
      gone = kill(pids[i], 0) != 0 && errno == ESRCH;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(gone) << names[i] << " (pid " << pids[i] << ") still runs on its host 10 s after its supervisor died";
    if (!gone) kill(pids[i], SIGKILL);
  }
  EXPECT_HAS(slurp(run_ + "/sink.log"), "its supervisor is gone; stopping");
}

}  // namespace
