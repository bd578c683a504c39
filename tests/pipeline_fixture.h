// What the pipeline_*_test.cc files share: running sluice-deploy and the programs, and
// a scratch folder per test (pipeline_scratch_test.cc removes it when the test passes).
#pragma once

// The real programs, started by sluice-deploy (or by hand where a test needs
// the pids), each test on fixed loopback ports of its own (the ranges in use
// are listed at cases() in pipeline_presets_test.cc). Every tuple must arrive
// once and intact. No test asserts a timing: these machines are shared.

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "graph/config.h"
#include "graph/partition.h"
#include "loadgen/generator.h"

namespace fs = std::filesystem;

inline const std::string kDeploy = SLUICE_DEPLOY;
inline const std::string kExample = std::string(SLUICE_SOURCE_DIR) + "/deploy/examples/pipeline.yaml";

struct RunResult {
  int code = -1;
  std::string dir;  // the run's folder: each process's log is dir/run/<name>.log
  std::string out;
  std::string err;
  YAML::Node json;
};

inline std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The scratch folders the running test made: removed when it passes (or is
// skipped), kept and named on stderr when it fails, for the logs in them.
inline std::vector<fs::path>& scratch_dirs() {
  static std::vector<fs::path> dirs;
  return dirs;
}

// Each test gets its own ports and run directory: ctest runs tests in parallel.
inline std::string scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("sluice-it-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  scratch_dirs().push_back(d);
  return d;
}

// `run_dir`: where the run keeps its files ("" = DIR/run in its scratch folder).
inline RunResult deploy(const std::string& name, int port, const std::vector<std::string>& sets,
           const std::string& file = kExample, const std::string& flags = "",
           const std::string& run_dir = "") {
  std::string dir = scratch(name);
  std::string cmd = kDeploy + " run " + file + " --json --run-dir " + (run_dir.empty() ? dir + "/run" : run_dir) +
                    " --set base_port=" + std::to_string(port) + " --set progress_s=0";
  for (const auto& s : sets) cmd += " --set " + s;
  cmd += flags + " >" + dir + "/out 2>" + dir + "/err";
  RunResult r;
  r.dir = dir;
  int rc = std::system(cmd.c_str());
  r.code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = slurp(dir + "/out");
  r.err = slurp(dir + "/err");
  try {
    r.json = YAML::Load(r.out);
  } catch (const YAML::Exception&) {
  }
  return r;
}

inline void expect_clean(const RunResult& r, uint64_t tuples) {
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  ASSERT_TRUE(r.json.IsMap()) << r.out;
  EXPECT_TRUE(r.json["ok"].as<bool>());
  EXPECT_EQ(r.json["tuples"].as<uint64_t>(), tuples);
  EXPECT_EQ(r.json["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(r.json["duplicated"].as<uint64_t>(), 0u);
  EXPECT_EQ(r.json["corrupt"].as<uint64_t>(), 0u);
  ASSERT_EQ(r.json["processes"].size(), 4u);
  EXPECT_EQ(r.json["processes"][0]["role"].as<std::string>(), "loadgen");
  EXPECT_EQ(r.json["processes"][3]["role"].as<std::string>(), "sink");
  for (const auto& p : r.json["processes"]) {
    EXPECT_GT(p["cpe_p"].as<double>(), 0) << p["name"].as<std::string>();
    EXPECT_GT(p["rss_max_bytes"].as<uint64_t>(), 0u);
  }
}

// Every process's log of a deploy() run, one after the other.
inline std::string run_logs(const RunResult& r) {
  std::string all;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(r.dir) / "run", ec))
    if (e.path().extension() == ".log") all += slurp(e.path());
  return all;
}

// Processes started by hand: the test needs their pids.
struct Proc {
  pid_t pid = -1;
  std::string log;
};

inline Proc spawn(const std::string& bin, const std::string& file, const std::string& name,
           const std::string& dir) {
  Proc p;
  p.log = dir + "/" + name + ".log";
  p.pid = fork();
  if (p.pid == 0) {
    FILE* f = std::freopen(p.log.c_str(), "w", stderr);
    (void)f;
    std::string summary = dir + "/" + name + ".json";
    execl(bin.c_str(), bin.c_str(), "--deployment", file.c_str(), "--process", name.c_str(),
          "--summary", summary.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return p;
}

inline int wait_exit(pid_t pid, int timeout_s) {
  for (int i = 0; i < timeout_s * 20; ++i) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}
