// The schema of the deployment file: the key tables (see config_keys.h) and
// the presets' choices.
//
// One entry per key. link_keys(): the keys of a link (the top level's are
// the defaults of every link); keys(): the other top-level keys. An entry
// is made by a small constructor that says the type:
//   link_uint("slots", nullptr, field)      an unsigned integer of LinkOptions
//   link_enum("encoding", "tcp", &allowed, set, get)
//   uint_key / double_key / enum_key / string_key   the same for Deployment
// or written out as {name, read, write} where the type is special (a rate,
// a subnet, an optional string). The second argument of a link key names
// the carrier that reads it; a link of another carrier refuses it.
//
// Order matters twice: dump_deployment writes keys in table order, and
// parse_root reads `preset` before every key (so explicit keys beat it).
// Defaults live in graph/config.h (the fields' initial values) and in
// apply_preset below, nowhere else.
#include "graph/config_keys.h"

#include <fmt/format.h>

#include "graph/operator.h"
#include "transport/transport.h"

namespace sluice {

Status apply_preset(const std::string& preset, LinkOptions* link) {
  if (preset == "original") {
    link->transport = "tcp";
    link->tcp.encoding = Encoding::kCapnp;
    link->tcp.async_send = true;
    link->tcp.rx_select = true;
    link->tcp.read_bytes = 4096;
    link->tcp.poll_timeout_us = 1000;
  } else if (preset == "tcp-opt") {
    link->transport = "tcp";
    link->tcp.encoding = Encoding::kSg;
    link->tcp.async_send = false;
    link->tcp.rx_select = false;
    link->tcp.read_bytes = 65536;
  } else if (preset == "fabric-opt" || preset == "ucx-opt") {
    link->transport = preset == "fabric-opt" ? "fabric" : "ucx";
    link->tcp.encoding = Encoding::kSg;
    link->tcp.async_send = false;
    link->tcp.rx_select = false;
  } else {
    return Status::Error(fmt::format(
        "unknown preset '{}' (known: original, tcp-opt, fabric-opt, ucx-opt)", preset));
  }
  return {};
}

namespace cfg {

const std::vector<std::string> kEncodings = {"capnp", "copy", "sg"};
const std::vector<std::string> kTransports = {"tcp", "fabric", "ucx"};
const std::vector<std::string> kCongestion = {"default", "reno", "cubic", "bbr"};
const std::vector<std::string> kWaits = {"block", "spin", "hybrid"};
const std::vector<std::string> kRoles = {"loadgen", "node", "sink"};
const std::vector<std::string> kProcessKeys = {"name", "role", "host", "listen", "port", "cores", "split", "split_key", "pin_stages", "operators", "schema", "results"};
const std::vector<std::string> kSchemaKeys = {"fields", "tuple_bytes"};
const std::vector<std::string> kFieldKeys = {"name", "type", "width", "gen"};
const std::vector<std::string> kGenKinds = {"sequence", "uniform", "zipf", "constant", "random"};
const std::vector<std::string> kHostKeys = {"name", "address", "cores", "rate", "ssh_user", "ssh_port"};
const std::vector<std::string> kLaunchers = {"local", "netns", "ssh"};
const std::vector<std::string>& kOperatorKinds = *new std::vector<std::string>(operator_kinds());

template <class T>
LinkKey link_uint(const char* name, const char* only, T& (*field)(LinkOptions&)) {
  return {name, only,
          [=](const Reader& r, const YAML::Node& n, const std::string& path, LinkOptions* l) {
            return r.get(n, path, &field(*l));
          },
          [=](YAML::Emitter& e, const LinkOptions& l) {
            e << YAML::Key << name << YAML::Value << uint64_t(field(const_cast<LinkOptions&>(l)));
          }};
}

// An enum: read as one of `allowed`, stored by `set`, written by `get`.
LinkKey link_enum(const char* name, const char* only, const std::vector<std::string>* allowed,
                  std::function<void(LinkOptions*, const std::string&)> set,
                  std::function<std::string(const LinkOptions&)> get) {
  return {name, only,
          [=](const Reader& r, const YAML::Node& n, const std::string& path, LinkOptions* l) {
            std::string v;
            if (Status st = r.get_enum(n, path, *allowed, &v); !st) return st;
            set(l, v);
            return Status();
          },
          [=](YAML::Emitter& e, const LinkOptions& l) { e << YAML::Key << name << YAML::Value << get(l); }};
}

const std::vector<std::string> kSendQueues = {"sync", "async"};
const std::vector<std::string> kRxPolls = {"block", "select"};
const std::vector<std::string> kHandovers = {"descriptor", "copy"};
const std::vector<std::string> kOnOff = {"on", "off"};
const std::vector<std::string> kCongestionIn = {"", "default", "reno", "cubic", "bbr"};
const std::vector<std::string> kSplits = {"stream", "copy", "key"};
// Providers and UCX transports sluice knows how to drive; whether one is
// present on this machine is the carrier's to say at start.
const std::vector<std::string> kFabricProviders = {"tcp", "net", "shm", "verbs", "efa", "psm2", "psm3"};
const std::vector<std::string> kUcxTls = {"tcp", "sm", "posix", "sysv", "cma", "rc", "ud", "dc",
                                          "rc_x", "ud_x", "dc_x", "sm,tcp", "rc,sm", "ud,sm", "all"};
const std::vector<std::string> kSendCompletions = {"async", "sync"};

// Whether a carrier-specific key means something on a link of `transport`.
bool key_applies(const char* only, const std::string& transport) {
  if (!only) return true;
  std::string o = only;
  size_t pos = 0;
  while (pos <= o.size()) {
    size_t bar = o.find('|', pos);
    if (bar == std::string::npos) bar = o.size();
    if (o.compare(pos, bar - pos, transport) == 0) return true;
    pos = bar + 1;
  }
  return false;
}

// Every key a link may set, at the top level (the defaults of every link) or
// in a link of `links:`.
const std::vector<LinkKey>& link_keys() {
  static const std::vector<LinkKey> k = {
      link_enum("transport", nullptr, &kTransports,
                [](LinkOptions* l, const std::string& v) { l->transport = v; },
                [](const LinkOptions& l) { return l.transport; }),
      link_enum("encoding", "tcp", &kEncodings,
                [](LinkOptions* l, const std::string& v) { parse_encoding(v, &l->tcp.encoding); },
                [](const LinkOptions& l) { return std::string(encoding_name(l.tcp.encoding)); }),
      link_enum("send_queue", "tcp", &kSendQueues,
                [](LinkOptions* l, const std::string& v) { l->tcp.async_send = v == "async"; },
                [](const LinkOptions& l) { return std::string(l.tcp.async_send ? "async" : "sync"); }),
      link_enum("rx_poll", "tcp", &kRxPolls,
                [](LinkOptions* l, const std::string& v) { l->tcp.rx_select = v == "select"; },
                [](const LinkOptions& l) { return std::string(l.tcp.rx_select ? "select" : "block"); }),
      link_uint("read_bytes", "tcp", +[](LinkOptions& l) -> uint32_t& { return l.tcp.read_bytes; }),
      link_uint("poll_timeout_us", "tcp",
                +[](LinkOptions& l) -> uint32_t& { return l.tcp.poll_timeout_us; }),
      {"congestion", "tcp",
       [](const Reader& r, const YAML::Node& n, const std::string& path, LinkOptions* l) {
         std::string v;
         if (n.IsNull()) v.clear();
         else if (Status st = r.get_enum(n, path, kCongestionIn, &v); !st) return st;
         l->tcp.congestion = v == "default" ? "" : v;
         return Status();
       },
       [](YAML::Emitter& e, const LinkOptions& l) {
         e << YAML::Key << "congestion" << YAML::Value
           << (l.tcp.congestion.empty() ? std::string("default") : l.tcp.congestion);
       }},
      link_uint("slot_bytes", nullptr, +[](LinkOptions& l) -> uint32_t& { return l.slot_bytes; }),
      link_uint("slots", nullptr, +[](LinkOptions& l) -> uint32_t& { return l.slots; }),
      link_uint("credit_batch", nullptr, +[](LinkOptions& l) -> uint32_t& { return l.credit_batch; }),
      link_uint("connect_timeout_ms", nullptr,
                +[](LinkOptions& l) -> uint32_t& { return l.connect_timeout_ms; }),
      link_enum("fabric_provider", "fabric", &kFabricProviders,
                [](LinkOptions* l, const std::string& v) { l->msg.fabric_provider = v; },
                [](const LinkOptions& l) { return l.msg.fabric_provider; }),
      link_enum("ucx_tls", "ucx", &kUcxTls,
                [](LinkOptions* l, const std::string& v) { l->msg.ucx_tls = v; },
                [](const LinkOptions& l) { return l.msg.ucx_tls; }),
      link_enum("send_completion", "fabric|ucx", &kSendCompletions,
                [](LinkOptions* l, const std::string& v) { l->msg.sync_completion = v == "sync"; },
                [](const LinkOptions& l) { return std::string(l.msg.sync_completion ? "sync" : "async"); }),
      link_uint("spin_us", "fabric|ucx", +[](LinkOptions& l) -> uint32_t& { return l.msg.spin_us; }),
      {"token", nullptr,
       [](const Reader& r, const YAML::Node& n, const std::string& path, LinkOptions* l) {
         return r.get_string(n, path, true, &l->token);
       },
       [](YAML::Emitter& e, const LinkOptions& l) {
         e << YAML::Key << "token" << YAML::Value << YAML::DoubleQuoted << l.token;
       }},
  };
  return k;
}

const LinkKey* find_link_key(const std::string& name) {
  for (const auto& k : link_keys())
    if (k.name == name) return &k;
  return nullptr;
}

template <class T>
Key uint_key(const char* name, T Deployment::*m) {
  return {name,
          [=](const Reader& r, const YAML::Node& n, Deployment* d) { return r.get(n, name, &(d->*m)); },
          [=](YAML::Emitter& e, const Deployment& d) { e << YAML::Key << name << YAML::Value << uint64_t(d.*m); }};
}

Key double_key(const char* name, double Deployment::*m) {
  return {name,
          [=](const Reader& r, const YAML::Node& n, Deployment* d) {
            return r.get_double(n, name, &(d->*m));
          },
          [=](YAML::Emitter& e, const Deployment& d) {
            e << YAML::Key << name << YAML::Value << fmt_double(d.*m);
          }};
}

Key enum_key(const char* name, const std::vector<std::string>* allowed,
             std::function<void(Deployment*, const std::string&)> set,
             std::function<std::string(const Deployment&)> get) {
  return {name,
          [=](const Reader& r, const YAML::Node& n, Deployment* d) {
            std::string v;
            if (Status st = r.get_enum(n, name, *allowed, &v); !st) return st;
            set(d, v);
            return Status();
          },
          [=](YAML::Emitter& e, const Deployment& d) {
            e << YAML::Key << name << YAML::Value << get(d);
          }};
}

// In the order dump_deployment writes them, after `preset` and the link keys.
// `preset`, `host`, `processes` and `links` are read specially (parse_root).
// A string key that may be left out; written back only when set.
Key string_key(const char* name, std::string Deployment::*m) {
  return {name,
          [name, m](const Reader& r, const YAML::Node& n, Deployment* d) {
            return r.get_string(n, name, false, &(d->*m));
          },
          [name, m](YAML::Emitter& e, const Deployment& d) {
            if (!(d.*m).empty()) e << YAML::Key << name << YAML::Value << YAML::DoubleQuoted << d.*m;
          }};
}

const std::vector<Key>& keys() {
  static const std::vector<Key> k = {
      enum_key("handover", &kHandovers,
               [](Deployment* d, const std::string& v) { d->handover_copy = v == "copy"; },
               [](const Deployment& d) { return std::string(d.handover_copy ? "copy" : "descriptor"); }),
      {"schema",
       [](const Reader& r, const YAML::Node& n, Deployment* d) {
         return r.get_string(n, "schema", true, &d->link.schema);
       },
       [](YAML::Emitter& e, const Deployment& d) {
         e << YAML::Key << "schema" << YAML::Value << YAML::DoubleQuoted << d.link.schema;
       }},
      // The stream.
      uint_key("tuple_bytes", &Deployment::tuple_bytes),
      uint_key("event_bytes", &Deployment::event_bytes),
      uint_key("data_bytes", &Deployment::data_bytes),
      double_key("duration_s", &Deployment::duration_s),
      uint_key("tuples", &Deployment::tuples),
      double_key("rate", &Deployment::rate),
      uint_key("burst_events", &Deployment::burst_events),
      double_key("burst_ms", &Deployment::burst_ms),
      uint_key("burst_head_events", &Deployment::burst_head_events),
      uint_key("streams", &Deployment::streams),
      uint_key("instances", &Deployment::instances),
      // The node.
      enum_key("wait", &kWaits,
               [](Deployment* d, const std::string& v) { parse_wait(v, &d->wait); },
               [](const Deployment& d) { return std::string(wait_name(d.wait)); }),
      uint_key("ring_slots", &Deployment::ring_slots),
      uint_key("loadgen_slots", &Deployment::loadgen_slots),
      // Accounting.
      double_key("clock_ghz", &Deployment::clock_ghz),
      double_key("peak_watts", &Deployment::peak_watts),
      double_key("progress_s", &Deployment::progress_s),
      uint_key("base_port", &Deployment::base_port),
      // Where the processes run (`hosts:` is read specially).
      enum_key("launcher", &kLaunchers, [](Deployment* d, const std::string& v) { d->launcher = v; },
               [](const Deployment& d) { return d.launcher; }),
      string_key("ssh_key", &Deployment::ssh_key),
      string_key("ssh_options", &Deployment::ssh_options),
      string_key("remote_dir", &Deployment::remote_dir),
      enum_key("copy_binaries", &kOnOff,
               [](Deployment* d, const std::string& v) { d->copy_binaries = v == "on"; },
               [](const Deployment& d) { return std::string(d.copy_binaries ? "on" : "off"); }),
      {"host_rate",
       [](const Reader& r, const YAML::Node& n, Deployment* d) {
         return r.get_rate(n, "host_rate", &d->host_rate_bps);
       },
       [](YAML::Emitter& e, const Deployment& d) {
         e << YAML::Key << "host_rate" << YAML::Value << rate_name(d.host_rate_bps);
       }},
      {"subnet",
       [](const Reader& r, const YAML::Node& n, Deployment* d) {
         if (Status st = r.get_string(n, "subnet", true, &d->subnet); !st) return st;
         if (!d->subnet.empty() && !parse_subnet(d->subnet, nullptr, nullptr))
           return r.error(n, "subnet",
                          fmt::format("expected an IPv4 subnet a.b.c.d/n (n 1..30), got '{}'",
                                      d->subnet));
         return Status();
       },
       [](YAML::Emitter& e, const Deployment& d) {
         e << YAML::Key << "subnet" << YAML::Value << YAML::DoubleQuoted << d.subnet;
       }},
      // Metrics.
      enum_key("metrics", &kOnOff, [](Deployment* d, const std::string& v) { d->metrics = v == "on"; },
               [](const Deployment& d) { return std::string(d.metrics ? "on" : "off"); }),
      {"metrics_address",
       [](const Reader& r, const YAML::Node& n, Deployment* d) {
         return r.get_string(n, "metrics_address", false, &d->metrics_address);
       },
       [](YAML::Emitter& e, const Deployment& d) {
         if (!d.metrics_address.empty())  // "": the default, the process's own address
           e << YAML::Key << "metrics_address" << YAML::Value << d.metrics_address;
       }},
      uint_key("metrics_port", &Deployment::metrics_port),
  };
  return k;
}

const std::vector<std::string>& key_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = {"preset", "host", "hosts", "schemas", "processes", "links"};
    for (const auto& k : link_keys()) v.push_back(k.name);
    for (const auto& k : keys()) v.push_back(k.name);
    return v;
  }();
  return names;
}

const std::vector<std::string>& link_entry_keys() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = {"from", "to", "port", "preset"};
    for (const auto& k : link_keys()) v.push_back(k.name);
    return v;
  }();
  return names;
}

}  // namespace cfg
}  // namespace sluice
