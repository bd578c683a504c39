// The applications' ends of a run (role publisher or subscriber).
// sluice-deploy starts every other process; these the applications are:
//
//   1. Before resolved.yaml is written, a link to or from one that names no
//      token gets a random one for the run (app_link_tokens): the listeners
//      an application reaches, or that reach it, take no stranger.
//   2. After it, RUN/apps/NAME.json for each (runtime/app_endpoint.h): the
//      resolved file, its links, token and schema; `run` and `up` print
//      how to connect (AppWatch::connect_text).
//   3. While the run goes on, AppWatch::poll looks at each: attached (the
//      library wrote RUN/apps/NAME.pid), ended (its summary RUN/NAME.json is
//      there), died without one, or not attached within app_wait_s: the
//      last two fail the run, naming it. The run ends once every process
//      and every application has ended, and reports their summaries beside
//      the others'.
#pragma once

#include <string>
#include <vector>

#include "deploy/launcher.h"
#include "graph/config.h"

namespace sluice {

// A copy of `d` whose links to and from an application's end carry a
// token (a random one for this run where the file gives none); `d` itself
// where it has no application's end.
const Deployment& app_link_tokens(const Deployment& d, Deployment* storage);

// How each application's end of the run in run_dir connects (its
// RUN/apps/NAME.json), for a person; "" without any.
std::string app_connect_text(const Deployment& d, const std::string& run_dir);

class AppWatch {
 public:
  AppWatch(const Deployment& d, const std::string& run_dir, const std::string& resolved);
  bool any() const { return !apps_.empty(); }
  // RUN/apps/NAME.json for each; a stale RUN/apps/NAME.pid goes.
  Status write_files() const;
  // How each one connects, for the person who started the run.
  std::string connect_text() const;
  // Looks at each one once (files and pids): updates its outcome in `r`;
  // `since_s`: seconds since the run's processes started. Returns the
  // failure that ends the run, "" when none.
  std::string poll(RunReport* r, double since_s);
  // Applications not ended yet (attached or awaited), and their names
  // ("publisher (application)").
  size_t waiting() const;
  std::string waiting_names() const;
  size_t size() const { return apps_.size(); }

 private:
  struct App {
    size_t index;
    std::string name, attach, summary;
    bool attached = false, ended = false;
    pid_t pid = -1;
    uint64_t ticks = 0;
  };
  const Deployment& d_;
  std::string run_dir_, resolved_;
  std::vector<App> apps_;
};

}  // namespace sluice
