// deploy/: `sluice-deploy run --prometheus`: a Prometheus server for one run.
//
//   1. The targets are known before any process starts: sluice-deploy
//      gives the run a metrics_port when the file leaves it 0 (free_ports()),
//      so process i serves at metrics_port + i. (Discovered targets would
//      not do: Prometheus applies new targets at most every 5 s, and a run
//      may last 4.)
//   2. start(): writes <run>/prometheus/prometheus.yml (every process a
//      static target labelled with its name and role, scraped each second;
//      the rules of deploy/prometheus/sluice.rules.yml) and starts Debian's
//      `prometheus` on a free loopback port, its data in
//      <run>/prometheus/data, its log in <run>/prometheus.log; waits until
//      /-/ready answers and every target is active (Prometheus applies even
//      static targets on a 5 s tick: a run with --prometheus starts up to
//      5 s later).
//   3. At the end of the run, figures() reads the samples Prometheus holds
//      for each process in this run (a run directory used again keeps the
//      earlier runs' samples; they are left out) and computes CPE_p, CPE_s
//      and Gb/s over them: from the first scrape that saw an event to the
//      last one taken while events still came. Up to a scrape interval (1 s)
//      at each end of the stream is not in them; the JSON summary's figures
//      cover the whole measured window.
//   4. The destructor stops the server (SIGTERM, SIGKILL after 5 s).
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace sluice {

// What Prometheus recorded for one process over the run.
struct PrometheusFigures {
  double cpe_p = 0, cpe_s = 0, gbps = 0;
  double seconds = 0;  // between the first scrape that saw an event and the last while they came
  int samples = 0;     // scrapes in that span
};

class PrometheusServer {
 public:
  struct Target {
    std::string process, role, hostport;
  };
  // `rules`: the recording rules file (deploy/prometheus/sluice.rules.yml);
  // `consoles`: the folder of console templates and libraries ("" = none).
  static std::unique_ptr<PrometheusServer> start(const std::string& run_dir,
                                                 const std::vector<Target>& targets,
                                                 const std::string& rules,
                                                 const std::string& consoles, Status* st);
  ~PrometheusServer();
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  std::string url() const;  // http://127.0.0.1:PORT
  // Per process name, from the samples in Prometheus.
  Status figures(std::map<std::string, PrometheusFigures>* out) const;
  // GET `path_and_query` from the server: the body.
  Status get(const std::string& path_and_query, std::string* body) const;

 private:
  PrometheusServer() = default;
  std::string dir_;
  uint16_t port_ = 0;
  pid_t pid_ = -1;
  double since_ = 0;  // when start() began, in seconds since the epoch
};

// `n` consecutive TCP ports free on `address` now, the first returned (0:
// none found). Another program may take one before the process binds it;
// the process then fails to start and says which port.
uint16_t free_ports(const std::string& address, size_t n);

// The prometheus binary: PATH, else /usr/bin/prometheus; "" if none.
std::string find_prometheus();

// One HTTP GET over TCP (HTTP/1.0, the body to the end of the connection):
// `host:port`, `path`, within `timeout_ms`. Not a general client: enough
// for Prometheus's API and the processes' /metrics.
Status http_get(const std::string& hostport, const std::string& path, int timeout_ms,
                std::string* body);

}  // namespace sluice
