// `sluice-deploy plan` (plan.h).
#include "deploy/plan.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

namespace sluice {

namespace fs = std::filesystem;

Plan make_plan(const Deployment& d, const Programs& programs, const Executor& ex,
               const std::string& run_dir) {
  Plan p;
  p.file = d.file;
  p.preset = d.preset;
  p.launcher = ex.name();
  p.process_count = d.processes.size();
  p.run_dir_named = !run_dir.empty();
  std::error_code ec;
  const fs::path run = fs::absolute(p.run_dir_named ? run_dir : default_run_dir(), ec);
  p.run_dir = run.string();
  p.host_steps = ex.up_steps();
  const std::string resolved = (run / "resolved.yaml").string();
  for (size_t k : d.start_order()) {
    const ProcessConfig& pc = d.processes[k];
    PlannedProcess pp;
    pp.name = pc.name;
    pp.role = role_name(pc.role);
    pp.where = ex.where(k).empty() ? pc.host : ex.where(k);
    pp.summary = (run / (pc.name + ".json")).string();
    if (is_app(pc.role)) {
      pp.connect = fmt::format("Connect{{.run_dir = \"{}\", .process = \"{}\"}} (docs/API.md)", p.run_dir,
                               pc.name);
      p.processes.push_back(std::move(pp));
      continue;
    }
    pp.log = (run / (pc.name + ".log")).string();
    pp.command = ex.command(k, programs.of(pc.role), process_args(resolved, pc.name, pp.summary));
    for (size_t l = 0; l < d.links.size(); ++l) {
      if (d.links[l].to != k) continue;
      for (uint32_t i = 0; i < d.instances; ++i)
        pp.listens.push_back(fmt::format("{}:{} (from {}{})", pc.bind_address(), d.link_port(l, i),
                                         d.processes[d.links[l].from].name,
                                         d.instances > 1 ? fmt::format(", instance {}", i) : ""));
    }
    if (d.metrics)
      pp.metrics_url = fmt::format("http://{}:{}/metrics", metrics_bind_address(d, pc),
                                   d.metrics_port ? std::to_string(d.metrics_port + k) : "<any free port>");
    p.processes.push_back(std::move(pp));
  }
  return p;
}

std::string plan_text(const Plan& p) {
  std::string out = fmt::format("# sluice-deploy plan: {} ({} processes, preset {}, launcher {})\n",
                                p.file, p.process_count, p.preset, p.launcher);
  out += "# Nothing below has been done. `run` with the same file, options and --set does it";
  out += p.run_dir_named ? ".\n"
                         : fmt::format(";\n# its run directory is new each time ({} is this one's name).\n",
                                       p.run_dir);
  if (p.launcher == "netns")
    out += "# Namespace names carry the pid of the sluice-deploy that makes them (here this plan's).\n";
  out += fmt::format("\nhosts ({}):\n", p.host_steps.empty() ? "nothing to make" : "made in this order");
  for (const auto& s : p.host_steps)
    out += fmt::format("  {}{}\n", shell_quote(s.argv), s.why.empty() ? "" : "    # " + s.why);
  out += fmt::format("\nrun directory: {}\n  resolved.yaml  the deployment as resolved, read by every process\n",
                     p.run_dir);
  out += "\nprocesses, in start order (sinks first, load generators last):\n";
  for (const PlannedProcess& pp : p.processes) {
    if (!pp.connect.empty()) {
      out += fmt::format("  {} ({}): an application's end, not started; it connects with {}\n", pp.name,
                         pp.role, pp.connect);
      continue;
    }
    out += fmt::format("  {} ({}) on {}\n", pp.name, pp.role, pp.where);
    out += fmt::format("    command: {}\n", shell_quote(pp.command));
    if (!pp.listens.empty()) out += fmt::format("    listens: {}\n", fmt::join(pp.listens, ", "));
    if (!pp.metrics_url.empty()) out += fmt::format("    metrics: {}\n", pp.metrics_url);
    out += fmt::format("    log: {}\n    summary: {}\n", pp.log, pp.summary);
  }
  return out;
}

std::string plan_json(const Plan& p) {
  using Json = nlohmann::ordered_json;
  Json j;
  j["deployment"] = p.file;
  j["preset"] = p.preset;
  j["launcher"] = p.launcher;
  j["run_dir"] = p.run_dir;
  j["run_dir_is_new_each_time"] = !p.run_dir_named;
  j["hosts"] = Json::array();
  for (const auto& s : p.host_steps) j["hosts"].push_back({{"command", s.argv}, {"why", s.why}});
  j["processes"] = Json::array();
  for (const PlannedProcess& pp : p.processes) {
    Json q;
    q["name"] = pp.name;
    q["role"] = pp.role;
    q["where"] = pp.where;
    q["command"] = pp.command;
    q["listens"] = pp.listens;
    q["metrics_url"] = pp.metrics_url.empty() ? Json() : Json(pp.metrics_url);
    q["log"] = pp.log;
    q["summary"] = pp.summary;
    if (!pp.connect.empty()) q["application_connects_with"] = pp.connect;
    j["processes"].push_back(std::move(q));
  }
  j["runs_here"] = p.cannot_run.empty();
  if (!p.cannot_run.empty()) j["error"] = p.cannot_run;
  return j.dump();
}

}  // namespace sluice
