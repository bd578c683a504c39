// deploy/: the live table `sluice-deploy run` draws on a terminal.
//
//   1. Each process's metrics endpoint is found in its log ("metrics at
//      http://HOST:PORT/metrics", the line every process writes once it
//      serves), so any metrics_port works, 0 included.
//   2. update() scrapes each endpoint (the same counters Prometheus and the
//      summary read: runtime/exporter.h) and keeps the last scrape; the
//      figures of a row are over the time between two scrapes: tuples/s,
//      Gb/s (the larger of in and out, as the summary counts) and CPE_p,
//      CPE_u, CPE_s, CPE_i (cycles of the process per event in + out, with
//      the clock and cores the process exports).
//   3. render() is the table; draw() writes it to a terminal over the one
//      drawn before (cursor up, clear each line), as top does, so it never
//      scrolls.
// Nothing here is drawn when stdout or stderr is not a terminal or with
// --json: sluice-deploy decides that (LaunchOptions::live_table).
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace sluice {

// The samples of one Prometheus text exposition: "name{labels}" -> value
// (labels as the exporter writes them, in its order).
std::map<std::string, double> parse_metrics_text(const std::string& text);

class LiveTable {
 public:
  struct Process {
    std::string name, role, log_path;
  };
  explicit LiveTable(std::vector<Process> processes);
  // Scrapes every process (up to timeout_ms each); `now` is a monotonic time in s.
  void update(double now, int timeout_ms = 200);
  // Feeds one process's scrape directly (tests): its text at `now`.
  void feed(size_t i, double now, const std::string& text);
  std::string render(const std::string& title) const;
  // Writes render(title) over what the last draw() wrote to `out`.
  void draw(std::FILE* out, const std::string& title);

 private:
  struct Row {
    std::string hostport;  // from the log, once found
    bool have = false, rates = false;
    double t = 0;
    std::map<std::string, double> last;
    double tuples_s = 0, gbps = 0, cpe_p = 0, cpe_u = 0, cpe_s = 0, cpe_i = 0;
  };
  std::vector<Process> procs_;
  std::vector<Row> rows_;
  size_t drawn_lines_ = 0;
};

}  // namespace sluice
