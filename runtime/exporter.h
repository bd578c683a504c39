// The Prometheus endpoint of a sluice process (prometheus-cpp's pull
// exposer): http://ADDRESS:PORT/metrics.
//
//   1. start() binds the address (port 0: any free one) before any link is
//      made, so a port in use is an error of the set-up, named.
//   2. watch() gives it the process's instances once they are built.
//   3. A scrape reads the instances' live counters (written by one stage
//      thread each, read here with relaxed loads), getrusage for the process
//      and /proc/self/task/TID/stat for each stage thread's user and system
//      time: nothing is counted for the exporter on the data path, and a
//      process nobody scrapes pays nothing.
//   4. The exporter goes before the instances it reads (the owner declares
//      it after them).
//
// Names follow Prometheus's conventions: one prefix `sluice_`, base units,
// `_total` for counters, labels with bounded values (direction, mode, stage,
// ring, copy: the pipeline instance). The summary's CPE figures come from
// these with the recording rules in deploy/prometheus/ (clock and power are
// exported as gauges, so the rules need no constants).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace sluice {

class Instance;

struct ExporterIdentity {
  std::string process;  // its name in the deployment
  std::string role;     // loadgen | node | sink
  double cores = 1;     // N of the CPE formulas
  double clock_ghz = 2.6;
  double peak_watts = 200;
};

class Exporter {
 public:
  static std::unique_ptr<Exporter> start(const std::string& address, uint16_t port,
                                         const ExporterIdentity& id, Status* st);
  ~Exporter();
  // The instances to read; they outlive the exporter.
  void watch(std::vector<const Instance*> instances);
  // Marks the start of the measured interval (the first event), which the
  // summary's figures cover: exported as sluice_measure_start_seconds.
  void measure_started();
  std::string url() const;  // http://ADDRESS:PORT/metrics

  // The text a scrape returns (for tests and for a look without a server).
  std::string scrape() const;

 private:
  struct Impl;
  explicit Exporter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice
