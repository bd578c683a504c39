// What a run reports besides metrics: the sink's burst statistics and
// histograms, and the live table on a terminal (and its absence).

#include "tests/pipeline_fixture.h"

// ---- bursts: the sink's burst statistics ----------------------------------

TEST(PipelineBursts, TheSinkReportsEveryBurstAndWritesItsHistograms) {
  RunResult r = deploy("bursts", 32000,
                       {"duration_s=2", "burst_events=8", "burst_ms=50", "burst_head_events=2",
                        "event_bytes=4096"});
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const YAML::Node sink = r.json["processes"][3];
  const YAML::Node b = sink["burst"];
  ASSERT_TRUE(b.IsMap()) << r.out;
  const uint64_t bursts = b["bursts"].as<uint64_t>();
  // At most one burst per period of the run (2 s / 50 ms, and the one at 0).
  EXPECT_GE(bursts, 1u);
  EXPECT_LE(bursts, 41u);
  EXPECT_EQ(b["head_events"].as<uint64_t>(), 2u);
  EXPECT_GT(b["processing_us"]["max"].as<double>(), 0);
  EXPECT_LE(b["processing_us"]["p50"].as<double>(), b["processing_us"]["max"].as<double>());
  // The histogram file beside the sink's summary: every burst once in
  // `processing`, every event once in `head` or `tail`, at most 2 per burst
  // in the head.
  const std::string tsv = slurp(r.json["run_dir"].as<std::string>() + "/sink.bursts.tsv");
  ASSERT_EQ(tsv.rfind("kind\tupper_us\tcount\n", 0), 0u) << tsv;
  std::map<std::string, uint64_t> n;
  std::istringstream in(tsv);
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string kind, upper;
    uint64_t c = 0;
    f >> kind >> upper >> c;
    n[kind] += c;
  }
  EXPECT_EQ(n["processing"], bursts);
  EXPECT_LE(n["head"], 2 * bursts);
  EXPECT_EQ(n["head"] + n["tail"], sink["events_in"].as<uint64_t>());
}

// ---- the live table on a terminal -----------------------------------------

namespace live_test {

bool have(const char* prog) {
  return std::system((std::string("command -v ") + prog + " >/dev/null 2>&1").c_str()) == 0;
}

// Lines of `pane` that contain `what`.
int count_lines(const std::string& pane, const std::string& what, const std::string& unless = "") {
  std::istringstream in(pane);
  int n = 0;
  for (std::string line; std::getline(in, line);)
    if (line.find(what) != std::string::npos && (unless.empty() || line.find(unless) == std::string::npos)) ++n;
  return n;
}

int line_of(const std::string& pane, const std::string& what) {
  std::istringstream in(pane);
  int i = 0;
  for (std::string line; std::getline(in, line); ++i)
    if (line.find(what) != std::string::npos) return i;
  return -1;
}

// A run of sluice-deploy in a detached tmux session (its own server), as a
// person at a terminal would start it; the pane captured while it runs.
struct TmuxRun {
  std::string server, dir;
  std::vector<std::string> panes;
  std::string last;
  TmuxRun(const std::string& name, const std::string& args) {
    dir = scratch(name);
    server = "sluice-" + name + "-" + std::to_string(getpid());
    const std::string inner = kDeploy + " run " + kExample + " --run-dir " + dir + "/run " + args +
                              "; echo EXITED $?; sleep 60";
    const std::string cmd = "tmux -L " + server + " new-session -d -s run -x 150 -y 45 '" + inner + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    for (int i = 0; i < 400; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      const std::string cap = "tmux -L " + server + " capture-pane -p -t run >" + dir + "/pane 2>&1";
      if (std::system(cap.c_str()) != 0) break;
      last = slurp(dir + "/pane");
      if (last.find("EXITED") != std::string::npos) break;
      panes.push_back(last);
    }
  }
  ~TmuxRun() { (void)!std::system(("tmux -L " + server + " kill-server >/dev/null 2>&1").c_str()); }
};

// The live table's header; the report's has the same columns after
// "events in", so a count of live headers leaves lines with that out.
const char* kLiveHeader = "tuples/s    Gb/s     CPE_p";

}  // namespace live_test

TEST(PipelineLiveTable, OnATerminalEachProcessIsARowRedrawnInPlace) {
  using namespace live_test;
  if (!have("tmux")) GTEST_SKIP() << "no tmux (Debian's package; scripts/setup.sh installs it)";
  TmuxRun t("live", "--set base_port=32200 --set duration_s=5 --set rate=3000");
  ASSERT_NE(t.last.find("EXITED 0"), std::string::npos) << t.last;
  // Captures taken while the table was up, with figures in every row.
  int with_figures = 0, header_row = -1;
  std::set<std::string> titles;
  for (const auto& p : t.panes) {
    if (count_lines(p, kLiveHeader, "events in") == 0) continue;
    // Redrawn in place: one title, one header, one row per process, always
    // on the same lines, however many seconds have passed.
    EXPECT_EQ(count_lines(p, " s expected; alive "), 1) << p;
    EXPECT_EQ(count_lines(p, kLiveHeader, "events in"), 1) << p;
    for (const char* name : {"loadgen  loadgen", "node-a   node", "node-b   node", "sink     sink"})
      EXPECT_EQ(count_lines(p, name, "events in"), 1) << name << "\n" << p;
    const int at = line_of(p, kLiveHeader);
    if (header_row < 0) header_row = at;
    EXPECT_EQ(at, header_row) << p;
    std::smatch m;
    const std::regex row(R"(node-a   node +([0-9]+) +([0-9.]+) +([0-9]+))");
    if (std::regex_search(p, m, row) && std::stod(m[1]) > 0 && std::stod(m[3]) > 0) ++with_figures;
    titles.insert(p.substr(p.find("sluice-deploy: "), p.find(" s /") - p.find("sluice-deploy: ")));
  }
  EXPECT_GE(with_figures, 1) << (t.panes.empty() ? t.last : t.panes.back());
  EXPECT_GE(titles.size(), 2u) << "the table was not redrawn as seconds passed";
  // The report follows the table when the run is over.
  EXPECT_NE(t.last.find("events in"), std::string::npos) << t.last;
}

TEST(PipelineLiveTable, WithJsonOrWithoutATerminalThereIsNoTable) {
  using namespace live_test;
  // --json on a terminal.
  if (have("tmux")) {
    TmuxRun t("live-json", "--json --set base_port=32300 --set duration_s=2 --set rate=3000");
    ASSERT_NE(t.last.find("EXITED 0"), std::string::npos) << t.last;
    for (const auto& p : t.panes) EXPECT_EQ(count_lines(p, kLiveHeader, "events in"), 0) << p;
    EXPECT_EQ(count_lines(t.last, kLiveHeader, "events in"), 0) << t.last;
  }
  // Not a terminal (a file): no table, no escape sequence, in either stream.
  RunResult r = deploy("live-file", 32400, {"duration_s=2", "rate=3000"}, kExample, "");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const std::string* s : {&r.out, &r.err}) {
    EXPECT_EQ(s->find("\x1b["), std::string::npos) << *s;
    EXPECT_EQ(count_lines(*s, kLiveHeader, "events in"), 0) << *s;
  }
  const std::string dir = scratch("live-plain");
  const std::string cmd = kDeploy + " run " + kExample + " --run-dir " + dir +
                          "/run --set base_port=32500 --set duration_s=2 --set rate=3000 >" + dir +
                          "/out 2>" + dir + "/err";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(dir + "/err");
  for (const char* f : {"/out", "/err"}) {
    const std::string s = slurp(dir + f);
    EXPECT_EQ(s.find("\x1b["), std::string::npos) << s;
    EXPECT_EQ(count_lines(s, kLiveHeader, "events in"), 0) << s;
  }
  EXPECT_NE(slurp(dir + "/out").find("events in"), std::string::npos);  // the report, still
}
