// `sluice-deploy plan --predict`: the cost model's prediction (predict.h).
#include "deploy/predict.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace sluice {

namespace {

// The carrier's name in the calibration: the preset, or preset/provider for
// a libfabric provider or UCX transports other than the default (tcp).
std::string carrier_name(const std::string& preset, const LinkOptions& o,
                         const Calibration& cal) {
  std::string variant;
  if (preset == "fabric-opt") variant = o.msg.fabric_provider;
  if (preset == "ucx-opt") variant = o.msg.ucx_tls;
  if (!variant.empty() && cal.alpha.count(preset + "/" + variant)) return preset + "/" + variant;
  if (variant.empty() || variant == "tcp") return preset;
  return preset + "/" + variant;  // not calibrated: predict() says so
}

double tuples_per_event(const Deployment& d) {
  if (d.event_bytes == 0) return 1;
  const double fit = std::floor((double(d.event_bytes) - 64.0) / d.tuple_bytes);
  return std::max(1.0, fit);
}

}  // namespace

Status load_calibration(const std::string& path, Calibration* out) {
  YAML::Node j;
  try {
    j = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return Status::Error(fmt::format("calibration {}: cannot read it: {}", path, e.what()));
  }
  Calibration c;
  c.path = path;
  try {
    if (!j.IsMap() || !j["coefficients"].IsMap() || !j["alpha"].IsMap())
      return Status::Error(fmt::format(
          "calibration {}: not a cost model calibration (no `coefficients` and `alpha` maps); "
          "experiments/reproduce.py writes one",
          path));
    c.clock_ghz = j["clock_ghz"].as<double>(0);
    c.host_cores = j["host_cores"].as<double>(0);
    c.event_header_bytes = j["event_header_bytes"].as<uint32_t>(64);
    for (const auto& kv : j["coefficients"]) c.coefficients[kv.first.as<std::string>()] = kv.second.as<double>();
    for (const auto& kv : j["alpha"]) c.alpha[kv.first.as<std::string>()] = kv.second.as<double>();
    if (j["runs"].IsSequence()) c.runs = j["runs"].size();
  } catch (const YAML::Exception& e) {
    return Status::Error(fmt::format("calibration {}: a value is not a number: {}", path, e.what()));
  }
  if (!(c.clock_ghz > 0) || !(c.host_cores > 0))
    return Status::Error(fmt::format("calibration {}: clock_ghz and host_cores must be > 0", path));
  *out = std::move(c);
  return {};
}

Status predict(const Deployment& d, const Calibration& cal, Prediction* out) {
  const size_t n = d.processes.size();
  if (d.links.empty()) return Status::Error("predict: the deployment has no links");

  // One carrier for the whole graph: alpha is calibrated per carrier.
  std::set<std::string> carriers;
  // The link's options as its ends resolve them (ucx_tls: auto by hosts).
  for (size_t i = 0; i < d.links.size(); ++i) {
    const LinkConfig& l = d.links[i];
    carriers.insert(carrier_name(l.preset.empty() ? d.preset : l.preset, d.link_options(i, 0), cal));
  }
  if (carriers.size() != 1)
    return Status::Error(fmt::format("predict: links use {} carriers ({}); the model calibrates "
                                     "one share of the machine per carrier, so one at a time",
                                     carriers.size(), fmt::join(carriers, ", ")));
  Prediction p;
  p.carrier = *carriers.begin();
  auto alpha = cal.alpha.find(p.carrier);
  std::vector<std::string> known;
  for (const auto& kv : cal.alpha) known.push_back(kv.first);
  if (alpha == cal.alpha.end())
    return Status::Error(fmt::format("predict: carrier {} is not in calibration {} (it has: {})",
                                     p.carrier, cal.path, fmt::join(known, ", ")));
  p.alpha = alpha->second;

  // Flow per loadgen event: processes in an order where every input comes first.
  std::vector<size_t> order, indeg(n, 0);
  for (const LinkConfig& l : d.links) indeg[l.to]++;
  for (size_t i = 0; i < n; i++)
    if (indeg[i] == 0) order.push_back(i);
  for (size_t j = 0; j < order.size(); j++)
    for (size_t l : d.outputs_of(order[j]))
      if (--indeg[d.links[l].to] == 0) order.push_back(d.links[l].to);
  if (order.size() != n) return Status::Error("predict: the graph has a cycle");

  const double k = tuples_per_event(d);
  const double header = cal.event_header_bytes;
  p.tuples_per_event = k;
  struct Flow {
    double events = 0, tuples = 0, bytes = 0;
  };
  std::vector<Flow> in(n), out_flow(n);
  bool key_split = false;
  for (size_t i : order) {
    const ProcessConfig& pc = d.processes[i];
    const Flow f = pc.role == Role::kLoadgen ? Flow{1, k, header + k * d.tuple_bytes} : in[i];
    const auto outs = d.outputs_of(i);  // link indices
    if (pc.role == Role::kSink || outs.empty()) continue;
    const double m = outs.size();
    for (size_t l : outs) {
      Flow& to = in[d.links[l].to];
      Flow add;
      if (pc.split == Split::kCopy || m == 1) {
        add = f;  // every event to every output
      } else if (pc.split == Split::kKey) {
        // Each event's tuples are divided by key: every output gets an event
        // with its share of the tuples (sluice-node repacks per output).
        add = {f.events, f.tuples / m, f.events * header + (f.tuples / m) * d.tuple_bytes};
        key_split = true;
      } else {
        add = {f.events / m, f.tuples / m, f.bytes / m};  // whole streams, round-robin
      }
      to.events += add.events;
      to.tuples += add.tuples;
      to.bytes += add.bytes;
      out_flow[i].events += add.events;
      out_flow[i].tuples += add.tuples;
      out_flow[i].bytes += add.bytes;
    }
  }
  p.key_split = key_split;

  std::vector<std::string> missing;
  auto cost = [&](const std::string& name, double count) {
    if (count == 0) return 0.0;
    auto it = cal.coefficients.find(name);
    if (it == cal.coefficients.end()) {
      if (std::find(missing.begin(), missing.end(), name) == missing.end()) missing.push_back(name);
      return 0.0;
    }
    return it->second * count;
  };
  double sink_tuples = 0;
  for (size_t i = 0; i < n; i++) {
    const ProcessConfig& pc = d.processes[i];
    const Flow& fi = in[i];
    const Flow& fo = out_flow[i];
    double c = cost("send_event:" + p.carrier, fo.events) +
               cost("recv_event:" + p.carrier, fi.events) +
               cost("byte:" + p.carrier, fi.bytes + fo.bytes) +
               cost("tuple:" + p.carrier, fi.tuples + fo.tuples);
    if (pc.role == Role::kNode) {
      c += cost("handoff", 2 * fi.events);
      for (const OperatorConfig& op : pc.operators) c += cost("op:" + op.kind, fi.tuples);
      // sluice-node runs a key split as its `partition` operator (graph/partition.h).
      if (pc.split == Split::kKey && d.outputs_of(i).size() > 1) c += cost("op:partition", fi.tuples);
    } else if (pc.role == Role::kLoadgen) {
      c += cost("gen_tuple", fo.tuples) + cost("gen_byte", fo.bytes);
    } else {
      c += cost("sink_tuple", fi.tuples) + cost("sink_byte", fi.bytes);
      sink_tuples += fi.tuples;
    }
    ProcessPrediction pp;
    pp.name = pc.name;
    pp.role = role_name(pc.role);
    pp.cycles_per_unit = c;
    pp.events = fi.events + fo.events;
    pp.cpe_p = pp.events > 0 ? c / pp.events : 0;
    p.cycles_per_unit += c;
    p.processes.push_back(pp);
  }
  if (!missing.empty())
    return Status::Error(fmt::format("predict: calibration {} has no cost for {} (calibrate with "
                                     "runs that use it: experiments/reproduce.py)",
                                     cal.path, fmt::join(missing, ", ")));
  if (!(p.cycles_per_unit > 0)) return Status::Error("predict: the graph moves nothing");
  p.events_per_s = p.alpha * cal.host_cores * cal.clock_ghz * 1e9 / p.cycles_per_unit;
  p.tuples_per_s = p.events_per_s * sink_tuples;
  *out = std::move(p);
  return {};
}

std::string prediction_text(const Deployment& d, const Calibration& cal, const Prediction& p) {
  std::string s = fmt::format(
      "# predicted by the cost model in {} ({} runs; {} cores at {} GHz; carrier {}, alpha {:.3f})\n"
      "# {} B tuples, {} tuples per event; filters taken to pass every tuple; {} instance(s) "
      "share the same cores\n",
      cal.path, cal.runs, cal.host_cores, cal.clock_ghz, p.carrier, p.alpha, d.tuple_bytes,
      p.tuples_per_event, d.instances);
  s += fmt::format("{:<16} {:<8} {:>14} {:>12}\n", "process", "role", "cycles/event", "CPE_p");
  for (const ProcessPrediction& pp : p.processes)
    s += fmt::format("{:<16} {:<8} {:>14.0f} {:>12.0f}\n", pp.name, pp.role, pp.cycles_per_unit,
                     pp.cpe_p);
  s += fmt::format("predicted: {:.4g} tuples/s, {:.4g} events/s per load generator, {:.0f} cycles "
                   "per event over all processes\n",
                   p.tuples_per_s, p.events_per_s, p.cycles_per_unit);
  return s;
}

std::string prediction_json(const Deployment& d, const Calibration& cal, const Prediction& p) {
  using Json = nlohmann::ordered_json;
  Json j;
  j["deployment"] = d.file;
  j["calibration"] = cal.path;
  j["calibration_runs"] = cal.runs;
  j["host_cores"] = cal.host_cores;
  j["clock_ghz"] = cal.clock_ghz;
  j["carrier"] = p.carrier;
  j["alpha"] = p.alpha;
  j["tuple_bytes"] = d.tuple_bytes;
  j["tuples_per_event"] = p.tuples_per_event;
  j["instances"] = d.instances;
  j["tuples_per_s"] = p.tuples_per_s;
  j["events_per_s"] = p.events_per_s;
  j["cycles_per_event"] = p.cycles_per_unit;
  j["processes"] = Json::array();
  for (const ProcessPrediction& pp : p.processes)
    j["processes"].push_back(
        {{"name", pp.name}, {"role", pp.role}, {"cycles_per_event", pp.cycles_per_unit}, {"cpe_p", pp.cpe_p}});
  return j.dump();
}

}  // namespace sluice
