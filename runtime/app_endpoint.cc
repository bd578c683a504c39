#include "runtime/app_endpoint.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "transport/event.h"

namespace sluice {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string app_endpoint_path(const std::string& run_dir, const std::string& name) {
  return (fs::path(run_dir) / "apps" / (name + ".json")).string();
}

std::string app_attach_path(const std::string& run_dir, const std::string& name) {
  return (fs::path(run_dir) / "apps" / (name + ".pid")).string();
}

AppEndpoint app_endpoint_of(const Deployment& d, size_t index, const std::string& run_dir,
                            const std::string& resolved) {
  const ProcessConfig& p = d.processes[index];
  AppEndpoint e;
  e.name = p.name;
  e.role = role_name(p.role);
  e.run_id = d.run_id;
  e.deployment = resolved;
  e.summary = (fs::path(run_dir) / (p.name + ".json")).string();
  e.attach = app_attach_path(run_dir, p.name);
  e.instances = d.instances;
  const bool sub = p.role == Role::kSubscriber;
  for (size_t l : sub ? d.inputs_of(index) : d.outputs_of(index)) {
    const LinkOptions o = d.link_options(l, 0);
    e.links.push_back({sub ? o.from : o.to, fmt::format("{}:{}", sub ? o.bind_address() : o.host, o.port),
                       o.transport, o.acks, sub});
    if (e.token.empty()) e.token = o.token;
  }
  const Schema& s = sub ? p.in_schema : p.out_schema;
  e.schema = s.describe();
  e.tuple_bytes = s.tuple_bytes();
  e.max_tuples = tuples_per_event(e.tuple_bytes, d.event_bytes);
  return e;
}

std::string app_endpoint_json(const AppEndpoint& e) {
  Json links = Json::array();
  for (const auto& l : e.links)
    links.push_back({{"peer", l.peer},
                     {"address", l.address},
                     {"transport", l.transport},
                     {"acks", l.acks},
                     {"listens", l.listens}});
  Json j = {{"name", e.name},          {"role", e.role},           {"run_id", e.run_id},
            {"deployment", e.deployment}, {"summary", e.summary}, {"attach", e.attach},
            {"instances", e.instances}, {"links", std::move(links)}, {"token", e.token},
            {"schema", e.schema},      {"tuple_bytes", e.tuple_bytes}, {"max_tuples", e.max_tuples}};
  return j.dump() + "\n";
}

Status read_app_endpoint(const std::string& path, AppEndpoint* out) {
  std::ifstream in(path);
  if (!in)
    return Status::Error(fmt::format("cannot read {}: is the run up (sluice-deploy up), and is the "
                                     "process an application's end (role publisher or subscriber)?",
                                     path));
  std::stringstream text;
  text << in.rdbuf();
  try {
    const Json j = Json::parse(text.str());
    AppEndpoint e;
    e.name = j.at("name").get<std::string>();
    e.role = j.at("role").get<std::string>();
    e.run_id = j.value("run_id", "");
    e.deployment = j.at("deployment").get<std::string>();
    e.summary = j.value("summary", "");
    e.attach = j.value("attach", "");
    e.instances = j.value("instances", 1u);
    for (const auto& l : j.at("links"))
      e.links.push_back({l.at("peer").get<std::string>(), l.at("address").get<std::string>(),
                         l.value("transport", ""), l.value("acks", false), l.value("listens", false)});
    e.token = j.value("token", "");
    e.schema = j.value("schema", "");
    e.tuple_bytes = j.value("tuple_bytes", 0u);
    e.max_tuples = j.value("max_tuples", 0u);
    *out = std::move(e);
  } catch (const std::exception& ex) {
    return Status::Error(fmt::format("{}: not an application's endpoint file: {}", path, ex.what()));
  }
  return {};
}

std::string app_endpoint_text(const AppEndpoint& e, const std::string& run_dir) {
  std::string out = fmt::format("  {} (role {}): Connect{{.run_dir = \"{}\", .process = \"{}\"}}\n", e.name,
                                e.role, run_dir, e.name);
  for (const auto& l : e.links)
    out += fmt::format("    {} {} ({}{}, acks {})\n", l.listens ? "listens on" : "connects to", l.address,
                       l.listens ? "from " + l.peer : l.peer, l.transport == "tcp" ? "" : ", " + l.transport,
                       l.acks ? "on" : "off");
  out += fmt::format("    schema {}, {} tuples per event, token {}\n", e.schema, e.max_tuples,
                     e.token.empty() ? "none" : e.token);
  return out;
}

}  // namespace sluice
