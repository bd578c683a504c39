// Errors a user meets: a typo in the file, a port in use, a bad option, a
// process that dies mid-run, and a link whose ends disagree on its schema.

#include "tests/pipeline_fixture.h"

namespace {

TEST(PipelineErrors, ATypoInTheDeploymentFileNamesFileLineAndKey) {
  std::string dir = scratch("typo-in");
  std::string file = dir + "/typo.yaml";
  std::ofstream(file) << "preset: tcp-opt\ntupel_bytes: 64\nprocesses:\n"
                         "  - {name: loadgen, role: loadgen}\n  - {name: sink, role: sink}\n";
  RunResult r = deploy("typo", 27200, {}, file);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("typo.yaml:2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tupel_bytes"), std::string::npos) << r.err;
}

TEST(PipelineErrors, APortInUseIsNamed) {
  // Hold node-a's port (process 1 listens on base_port + 100).
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(27400 + 100);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  RunResult r = deploy("port", 27400, {"tuples=1000"});
  close(fd);
  EXPECT_NE(r.code, 0);
  std::string all = r.err + r.out;
  EXPECT_NE(all.find("node-a"), std::string::npos) << all;
  EXPECT_NE(all.find("27500"), std::string::npos) << all;
}

// The three programs exit 2 for a bad option or value, as their --help says,
// with a short message naming the program; not CLI11's own codes (105 and up).
TEST(PipelineErrors, ProgramsExitTwoForABadOption) {
  std::string dir = scratch("bad-options");
  for (const std::string prog : {SLUICE_LOADGEN, SLUICE_NODE, SLUICE_SINK}) {
    const std::string name = fs::path(prog).filename();
    auto run = [&](const std::string& args, std::string* said) {
      int rc = std::system((prog + " " + args + " >" + dir + "/out 2>" + dir + "/err").c_str());
      *said = slurp(dir + "/err");
      return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    };
    std::string said;
    EXPECT_EQ(run("--no-such-option", &said), 2) << name << ": " << said;
    EXPECT_NE(said.find(name + ": The following argument was not expected: --no-such-option"),
              std::string::npos)
        << said;
    EXPECT_EQ(run("--process x", &said), 2) << name << ": " << said;  // needs --deployment
    EXPECT_EQ(run("--deployment", &said), 2) << name << ": " << said;  // no value
    EXPECT_EQ(run("--deployment /nonexistent/x.yaml", &said), 2) << name << ": " << said;
    EXPECT_NE(said.find("/nonexistent/x.yaml: cannot open"), std::string::npos) << said;
    EXPECT_EQ(run("--help", &said), 0) << name;
    EXPECT_NE(slurp(dir + "/out").find("Exit status:\n  0  ok, or --help\n"), std::string::npos) << name;
  }
}

// sluice-deploy runs the example for a minute under guarantee: none (a
// death fails the run); `victim` is killed with SIGKILL a second after it
// starts. Returns sluice-deploy's exit code; its stdout (the JSON report)
// and stderr in *out and *err.
int kill_mid_run(const std::string& name, int port, const std::string& victim_name,
                 std::string* out, std::string* err) {
  std::string dir = scratch(name);
  std::string cmd = kDeploy + " run " + kExample + " --json --run-dir " + dir +
                    "/run --set guarantee=none --set base_port=" + std::to_string(port) +
                    " --set duration_s=60 --set progress_s=0 >" + dir + "/out 2>" + dir + "/err";
  pid_t d = fork();
  if (d == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Find the victim by its command line once it runs.
  pid_t victim = -1;
  for (int i = 0; i < 100 && victim < 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (const auto& e : fs::directory_iterator("/proc")) {
      std::string cl = slurp(e.path() / "cmdline");
      std::replace(cl.begin(), cl.end(), '\0', ' ');
      if (cl.find(dir + "/run/") != std::string::npos &&
          cl.find("--process " + victim_name + " ") != std::string::npos &&
          cl.find("sluice-") != std::string::npos) {
        victim = std::stoi(e.path().filename());
        break;
      }
    }
  }
  EXPECT_GT(victim, 0) << victim_name << " never started";
  if (victim > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    kill(victim, SIGKILL);
  } else {
    kill(d, SIGTERM);
  }
  int code = wait_exit(d, 30);
  EXPECT_NE(code, -1) << "sluice-deploy did not end after a peer vanished";
  EXPECT_TRUE(fs::exists(dir + "/run/node-a.log"));
  EXPECT_TRUE(fs::exists(dir + "/run/sink.log"));
  *out = slurp(dir + "/out");
  *err = slurp(dir + "/err");
  return code;
}

// Started again after a death without snapshots (--restarted, as the
// supervisor passes it), a sink and a node whose operators keep state have
// lost what they counted or kept: each refuses to run (exit 2, which the
// supervisor does not restart), naming what and the key to set, instead of
// reporting a wrong result. Before listening or connecting: nothing waits.
// (guarantee: none: the default would give them snapshots.)
TEST(PipelineErrors, ARestartedSinkOrStatefulNodeWithoutSnapshotsRefusesToRun) {
  std::string dir = scratch("restarted");
  const std::string esper = std::string(SLUICE_SOURCE_DIR) + "/deploy/examples/esper.yaml";
  auto run = [&](const std::string& prog, const std::string& args, std::string* said) {
    int rc = std::system(("timeout 20 " + prog + " " + args + " >" + dir + "/out 2>" + dir + "/err").c_str());
    *said = slurp(dir + "/err");
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  std::string said;
  EXPECT_EQ(run(SLUICE_SINK, "--deployment " + kExample + " --process sink --set guarantee=none --restarted 1", &said),
            2)
      << said;
  EXPECT_NE(said.find("sink: started again after a death, but without checkpoint_interval_ms a sink's counts"),
            std::string::npos)
      << said;
  EXPECT_EQ(run(SLUICE_NODE, "--deployment " + esper + " --process node-b --set guarantee=none --restarted 2", &said),
            2)
      << said;
  EXPECT_NE(said.find("node-b: started again after a death, but without checkpoint_interval_ms operator 0 "
                      "(groupby)"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("set checkpoint_interval_ms"), std::string::npos) << said;
}

// --starts FILE counts a process's starts, for a supervisor that restarts
// it without --restarted (Kubernetes, render --k8s): a start that finds a
// count in the file is a restart, so a sink without snapshots refuses the
// second one as above. A file that holds no count is named, not taken for 0.
TEST(PipelineErrors, ACountOfStartsMakesTheSecondStartARestart) {
  std::string dir = scratch("starts");
  const std::string file = dir + "/sink.starts";
  auto run = [&](const std::string& limit, std::string* said) {
    int rc = std::system(("timeout " + limit + " " + SLUICE_SINK + " --deployment " + kExample +
                          " --process sink --set guarantee=none --set base_port=21760 --starts " + file + " >" + dir +
                          "/out 2>" + dir + "/err")
                             .c_str());
    *said = slurp(dir + "/err");
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  std::string said;
  // The first start runs: it listens for its upstream until timeout ends it.
  EXPECT_EQ(run("1", &said), 124) << said;
  EXPECT_EQ(slurp(file), "1\n");
  EXPECT_EQ(run("20", &said), 2) << said;
  EXPECT_NE(said.find("restart 1 (--starts " + file + ")"), std::string::npos) << said;
  EXPECT_NE(said.find("sink: started again after a death, but without checkpoint_interval_ms"),
            std::string::npos)
      << said;
  EXPECT_EQ(slurp(file), "2\n");
  std::ofstream(file) << "two\n";
  EXPECT_EQ(run("20", &said), 2) << said;
  EXPECT_NE(said.find("--starts " + file + ": holds 'two', not a count of starts"), std::string::npos)
      << said;
  EXPECT_EQ(slurp(file), "two\n");
}

// node-b dies mid-run: the run ends with an error naming it, the others are
// stopped, their logs kept.
TEST(PipelineErrors, APeerThatVanishesEndsTheRunWithItsName) {
  std::string out, err;
  int code = kill_mid_run("vanish", 28200, "node-b", &out, &err);
  EXPECT_NE(code, 0);
  EXPECT_NE((err + out).find("node-b"), std::string::npos) << err + out;
}

// node-a is killed: node-b and the loadgen fail for want of it, and the sink
// for want of node-b, all within milliseconds. The run names node-a and its
// signal, not whichever neighbour the launcher happened to look at first.
// Three times: which one it finds first is a race.
TEST(PipelineErrors, TheKilledProcessIsNamedNotTheNeighboursItTookDown) {
  for (int i = 0; i < 3; ++i) {
    std::string out, err;
    int code = kill_mid_run("killed-" + std::to_string(i), 25600, "node-a", &out, &err);
    EXPECT_EQ(code, 1) << err;
    YAML::Node j;
    try {
      j = YAML::Load(out);
    } catch (const YAML::Exception&) {
    }
    ASSERT_TRUE(j.IsMap()) << out << err;
    const std::string e = j["error"].as<std::string>();
    EXPECT_EQ(e.rfind("process 'node-a' (role node, pid ", 0), 0u) << "run " << i << ": " << e;
    EXPECT_NE(e.find(") was killed by signal 9 (Killed)"), std::string::npos) << "run " << i << ": " << e;
  }
}

// A loadgen and a sink started from two files that disagree on the link's
// schema (price i64 in one, i32 in the other): the handshake refuses the
// link, and each end says why naming both layouts: the loadgen fails, the
// sink logs the refusal (and keeps waiting for its real upstream).
TEST(PipelineErrors, ALinkWhoseEndsDisagreeOnTheSchemaIsRefusedNamingBoth) {
  std::string dir = scratch("schema-mismatch");
  auto write = [&](const std::string& name, const char* price_type) {
    const std::string file = dir + "/" + name + ".yaml";
    std::ofstream(file) << "preset: tcp-opt\nschema: trades\nschemas:\n  trades:\n    fields:\n"
                           "      - {name: sym, type: u32, gen: {uniform: 16}}\n"
                           "      - {name: price, type: " << price_type << ", gen: {uniform: 1000}}\n"
                           "event_bytes: 2048\ntuples: 1000\nprogress_s: 0\nconnect_timeout_ms: 3000\n"
                           "base_port: 19600\nprocesses:\n"
                           "  - {name: loadgen, role: loadgen}\n"
                           "  - {name: sink, role: sink}\n";
    return file;
  };
  const std::string mine = write("loadgen-side", "i64"), theirs = write("sink-side", "i32");
  sluice::Deployment a, b;
  ASSERT_TRUE(sluice::load_deployment(mine, {}, &a).ok());
  ASSERT_TRUE(sluice::load_deployment(theirs, {}, &b).ok());
  const std::string sent = a.find_schema("trades")->schema.describe();
  const std::string expected = b.find_schema("trades")->schema.describe();
  ASSERT_NE(sent, expected);

  Proc sink = spawn(SLUICE_SINK, theirs, "sink", dir);
  Proc lg = spawn(SLUICE_LOADGEN, mine, "loadgen", dir);
  const int lg_code = wait_exit(lg.pid, 60);
  // The sink's log names the refusal; wait for it, then stop the sink.
  std::string sink_log;
  for (int i = 0; i < 100; ++i) {
    sink_log = slurp(sink.log);
    if (sink_log.find("refused") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(sink.pid, SIGTERM);
  wait_exit(sink.pid, 30);
  const std::string lg_log = slurp(lg.log);
  EXPECT_NE(lg_code, 0) << lg_log;
  EXPECT_NE(lg_log.find("handshake rejected"), std::string::npos) << lg_log;
  EXPECT_NE(lg_log.find(sent), std::string::npos) << lg_log;
  EXPECT_NE(lg_log.find(expected), std::string::npos) << lg_log;
  EXPECT_NE(sink_log.find("refused"), std::string::npos) << sink_log;
  EXPECT_NE(sink_log.find(sent), std::string::npos) << sink_log;
  EXPECT_NE(sink_log.find(expected), std::string::npos) << sink_log;
}

}  // namespace
