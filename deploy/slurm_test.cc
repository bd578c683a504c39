// The slurm launcher's parts that need no cluster: the batch script
// `render --slurm` writes for deploy/examples/cluster.yaml, the CPU binding
// from a host's cores, the hosts mapped onto an allocation's nodes, and an
// srun exit status turned back into the signal that killed its task. The
// launcher on a real Slurm cluster: tests/slurm_test.cc.
#include "deploy/slurm.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "deploy/launcher.h"

namespace fs = std::filesystem;

namespace sluice {
namespace {

const std::string kCluster = std::string(SLUICE_SOURCE_DIR) + "/deploy/examples/cluster.yaml";

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

Deployment load(const std::vector<std::string>& sets = {}) {
  Deployment d;
  Status st = load_deployment(kCluster, sets, &d);
  EXPECT_TRUE(st) << st.message();
  return d;
}

Programs programs() { return {"/opt/sluice/sluice-loadgen", "/opt/sluice/sluice-node", "/opt/sluice/sluice-sink"}; }

// The srun command of each step, its continuation lines joined.
std::vector<std::string> steps(const std::string& script) {
  std::vector<std::string> out;
  std::istringstream in(script);
  std::string cur;
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("srun ", 0) == 0) cur = l;
    else if (cur.empty()) continue;
    else cur += "\n" + l;
    if (!cur.empty() && (cur.back() != '\\')) {
      out.push_back(cur);
      cur.clear();
    }
  }
  return out;
}

TEST(SlurmRender, ClusterYamlIsOneStepPerProcessOnItsHostsNode) {
  const Deployment d = load();
  const std::string s = slurm_batch_script(d, programs());
  EXPECT_EQ(s.rfind("#!/bin/bash\n", 0), 0u);
  EXPECT_HAS(s, "\n#SBATCH --nodes=4\n");
  EXPECT_HAS(s, "\n#SBATCH --exclusive\n");
  // duration_s 5 + 60 s of grace: 2 minutes.
  EXPECT_HAS(s, "\n#SBATCH --time=2\n");
  // Hosts onto the job's nodes in order, each at its node's address.
  EXPECT_HAS(s, "NODE[h1]=${NODES[0]}; ADDR[h1]=$(addr \"${NODE[h1]}\")");
  EXPECT_HAS(s, "NODE[h4]=${NODES[3]}; ADDR[h4]=$(addr \"${NODE[h4]}\")");

  const std::vector<std::string> st = steps(s);
  ASSERT_EQ(st.size(), 4u) << s;
  // Sinks first, load generators last; each on its host's node, one task,
  // no binding without `cores`, the program and its arguments.
  const std::vector<std::pair<std::string, std::string>> want = {
      {"sink", "h4"}, {"node-b", "h3"}, {"node-a", "h2"}, {"loadgen", "h1"}};
  for (size_t k = 0; k < want.size(); ++k) {
    const auto& [name, host] = want[k];
    SCOPED_TRACE(name);
    EXPECT_EQ(st[k].rfind("srun --nodes=1 --ntasks=1 -w \"${NODE[" + host + "]}\" --overlap", 0), 0u)
        << st[k];
    EXPECT_HAS(st[k], "--job-name=" + name + " ");
    EXPECT_HAS(st[k], "--cpu-bind=none");
    EXPECT_HAS(st[k], " --process " + name + " --summary \"$RUN/" + name + ".json\"");
    EXPECT_HAS(st[k], "> \"$RUN/" + name + ".log\" 2>&1 &");
    for (int h = 0; h < 4; ++h)
      EXPECT_HAS(st[k], "--set \"hosts." + std::to_string(h) + ".address=${ADDR[h" +
                            std::to_string(h + 1) + "]}\"");
  }
  EXPECT_HAS(st[0], "/opt/sluice/sluice-sink --deployment \"$RUN/resolved.yaml\"");
  EXPECT_HAS(st[3], "/opt/sluice/sluice-loadgen --deployment");
}

TEST(SlurmRender, ResolvedYamlInTheScriptIsTheDeployment) {
  const Deployment d = load();
  const std::string s = slurm_batch_script(d, programs());
  const std::string open = "<<'SLUICE_RESOLVED_YAML'\n", close = "\nSLUICE_RESOLVED_YAML\n";
  const size_t a = s.find(open), b = s.find(close);
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  const fs::path tmp = fs::temp_directory_path() / ("slurm_test_" + std::to_string(getpid()) + ".yaml");
  std::ofstream(tmp) << s.substr(a + open.size(), b - a - open.size()) << "\n";
  Deployment r;
  // As each step reads it: with its node's address for every host.
  Status st = load_deployment(tmp.string(), {"hosts.1.address=10.79.0.2"}, &r);
  fs::remove(tmp);
  ASSERT_TRUE(st) << st.message();
  EXPECT_EQ(r.launcher, "slurm");
  ASSERT_EQ(r.processes.size(), d.processes.size());
  for (size_t i = 0; i < d.processes.size(); ++i) {
    EXPECT_EQ(r.processes[i].name, d.processes[i].name);
    EXPECT_EQ(r.processes[i].host_name, d.processes[i].host_name);
  }
  // A process on h2 binds, and its upstream reaches it at, the node's address.
  EXPECT_EQ(r.processes[1].host, "10.79.0.2");
  EXPECT_EQ(r.duration_s, d.duration_s);
}

TEST(SlurmRender, ScriptIsValidBash) {
  const fs::path tmp = fs::temp_directory_path() / ("slurm_test_" + std::to_string(getpid()) + ".sh");
  std::ofstream(tmp) << slurm_batch_script(load({"hosts.1.cores=0-1"}), programs());
  const int rc = std::system(("bash -n " + tmp.string()).c_str());
  fs::remove(tmp);
  EXPECT_EQ(rc, 0);
}

TEST(SlurmRender, CoresBindTheStepToThem) {
  const std::string s =
      slurm_batch_script(load({"hosts.1.cores=0-1", "hosts.2.cores=\"1\""}), programs());
  const std::vector<std::string> st = steps(s);
  ASSERT_EQ(st.size(), 4u);
  EXPECT_HAS(st[2], "--whole --cpu-bind=mask_cpu:0x3");  // node-a on h2: CPUs 0-1
  EXPECT_HAS(st[1], "--whole --cpu-bind=mask_cpu:0x2");  // node-b on h3: CPU 1
  EXPECT_HAS(st[0], "--cpu-bind=none");
}

TEST(SlurmCpuBinding, MaskOfAnyWidth) {
  HostConfig h;
  EXPECT_EQ(slurm_cpu_binding(&h), std::vector<std::string>{"--cpu-bind=none"});
  h.cpus = {4, 9};
  EXPECT_EQ(slurm_cpu_binding(&h),
            (std::vector<std::string>{"--whole", "--cpu-bind=mask_cpu:0x210"}));
  h.cpus = {0, 64};
  EXPECT_EQ(slurm_cpu_binding(&h)[1], "--cpu-bind=mask_cpu:0x10000000000000001");
}

SlurmAllocation allocation(size_t nodes) {
  SlurmAllocation a;
  a.job_id = "42";
  for (size_t k = 1; k <= nodes; ++k) {
    a.nodes.push_back("sn" + std::to_string(k));
    a.addresses.push_back("10.79.0." + std::to_string(k));
  }
  return a;
}

TEST(SlurmMap, HostsOntoNodesInOrder) {
  const Deployment d = load();
  std::map<std::string, size_t> m;
  ASSERT_TRUE(slurm_map_hosts(d, allocation(5), &m));
  EXPECT_EQ(m, (std::map<std::string, size_t>{{"h1", 0}, {"h2", 1}, {"h3", 2}, {"h4", 3}}));
  EXPECT_EQ(slurm_address_overrides(d, allocation(5), m),
            (std::vector<std::string>{"hosts.0.address=10.79.0.1", "hosts.1.address=10.79.0.2",
                                      "hosts.2.address=10.79.0.3", "hosts.3.address=10.79.0.4"}));
}

TEST(SlurmMap, AHostWithoutProcessesTakesNoNode) {
  // The sink moves to h3: h4 has nothing to run, and three nodes do.
  const Deployment d = load({"processes.3.host=h3"});
  std::map<std::string, size_t> m;
  Status st = slurm_map_hosts(d, allocation(3), &m);
  ASSERT_TRUE(st) << st.message();
  EXPECT_EQ(m, (std::map<std::string, size_t>{{"h1", 0}, {"h2", 1}, {"h3", 2}}));
  EXPECT_EQ(slurm_address_overrides(d, allocation(3), m).size(), 3u);
}

TEST(SlurmMap, TooFewNodesSaysHowMany) {
  const Deployment d = load();
  std::map<std::string, size_t> m;
  Status st = slurm_map_hosts(d, allocation(3), &m);
  ASSERT_FALSE(st);
  EXPECT_HAS(st.message(), "4 hosts have processes (h1, h2, h3, h4)");
  EXPECT_HAS(st.message(), "Slurm job 42 has 3 nodes (sn1, sn2, sn3)");
  EXPECT_HAS(st.message(), "salloc -N4");
}

TEST(SlurmAllocationTest, OutsideAnAllocationSaysSo) {
  const char* saved = getenv("SLURM_JOB_ID");
  const std::string keep = saved ? saved : "";
  unsetenv("SLURM_JOB_ID");
  unsetenv("SLURM_JOBID");
  SlurmAllocation a;
  Status st = slurm_allocation(&a);
  if (saved) setenv("SLURM_JOB_ID", keep.c_str(), 1);
  ASSERT_FALSE(st);
  EXPECT_HAS(st.message(), "SLURM_JOB_ID is not set");
  EXPECT_HAS(st.message(), "salloc");
}

TEST(SlurmExecutor, SrunStatusOfAKilledTaskIsTheSignal) {
  const Deployment d = load();
  auto ex = make_slurm_executor(d, nullptr);
  const int killed = ex->wait_status(W_EXITCODE(128 + SIGKILL, 0));
  ASSERT_TRUE(WIFSIGNALED(killed));
  EXPECT_EQ(WTERMSIG(killed), SIGKILL);
  // srun's own failure (a launch it could not do) is an exit code.
  const int launch = ex->wait_status(W_EXITCODE(192, 0));
  ASSERT_TRUE(WIFEXITED(launch));
  EXPECT_EQ(WEXITSTATUS(launch), 192);
  const int failed = ex->wait_status(W_EXITCODE(3, 0));
  ASSERT_TRUE(WIFEXITED(failed));
  EXPECT_EQ(WEXITSTATUS(failed), 3);
  EXPECT_EQ(ex->wait_status(W_EXITCODE(0, 0)), 0);
  EXPECT_STREQ(ex->name(), "slurm");
}

}  // namespace
}  // namespace sluice
