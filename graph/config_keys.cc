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
// parse_root reads `preset`, then `guarantee`, before every other key (so
// explicit keys beat them). Defaults live in graph/config.h (the fields'
// initial values), in the presets (graph/registry.cc) and in apply_guarantee
// below, nowhere else.
#include "graph/config_keys.h"

#include <fmt/format.h>

#include "graph/operator.h"
#include "graph/registry.h"
#include "transport/transport.h"

namespace sluice {

const char* guarantee_name(Guarantee g) {
  switch (g) {
    case Guarantee::kNone: return "none";
    case Guarantee::kAtLeastOnce: return "at-least-once";
    case Guarantee::kExactlyOnce: return "exactly-once";
  }
  return "?";
}

void apply_guarantee(Guarantee g, Deployment* d) {
  const bool keeps = g != Guarantee::kNone;
  d->guarantee = g;
  d->link.acks = keeps;
  d->restart = keeps ? "on-failure" : "never";
  d->checkpoint_interval_ms = keeps ? kGuaranteeCheckpointMs : 0;
}

namespace cfg {

// The names are guarantee_name's, the one place that spells them.
constexpr Guarantee kGuaranteeValues[] = {Guarantee::kNone, Guarantee::kAtLeastOnce, Guarantee::kExactlyOnce};
const std::vector<std::string> kGuarantees = {guarantee_name(Guarantee::kNone),
                                              guarantee_name(Guarantee::kAtLeastOnce),
                                              guarantee_name(Guarantee::kExactlyOnce)};
const std::vector<std::string> kEncodings = {"capnp", "copy", "sg"};
const std::vector<std::string> kTransports = {"tcp", "fabric", "ucx"};
const std::vector<std::string> kWaits = {"block", "spin", "hybrid"};
const std::vector<std::string> kRoles = {"loadgen", "node", "sink", "publisher", "subscriber"};
const std::vector<std::string> kGenKinds = {"sequence", "uniform", "zipf", "constant", "random"};
const std::vector<std::string> kLaunchers = [] {
  std::vector<std::string> v;
  for (const Launcher& l : launchers()) v.push_back(l.name);
  return v;
}();
const std::vector<std::string>& kOperatorKinds = operator_kind_list();  // with test binaries' kinds
const std::vector<std::string> kSendQueues = {"sync", "async"};
const std::vector<std::string> kRxPolls = {"block", "select"};
const std::vector<std::string> kHandovers = {"descriptor", "copy"};
const std::vector<std::string> kLoadgenBackups = {"headers", "slots"};
const std::vector<std::string> kNodeBackups = {"upstream", "copies"};
const std::vector<std::string> kOnOff = {"on", "off"};
const std::vector<std::string> kCreditModes = {"fixed", "adaptive"};
const std::vector<std::string> kRestarts = {"never", "on-failure"};
const std::vector<std::string> kThreads = {"auto", "dedicated", "shared", "adaptive"};
const std::vector<std::string> kPins = {"off", "spread"};
const std::vector<std::string> kCongestionIn = {"", "default", "reno", "cubic", "bbr"};
const std::vector<std::string> kSplits = {"stream", "copy", "key"};
const std::vector<std::string> kSources = {"generator", "kafka", "file"};
const std::vector<std::string> kRecordFormats = {"csv", "jsonl", "binary"};
const std::vector<std::string> kAutoOnOff = {"auto", "on", "off"};
const std::vector<std::string> kBadRecords = {"fail", "reject"};
const std::vector<std::string> kTimeUnits = {"ns", "us", "ms", "s"};
// Providers and UCX transports sluice knows how to drive; whether one is
// present on this machine is the carrier's to say at start.
const std::vector<std::string> kFabricProviders = {"tcp", "net", "shm", "verbs", "efa", "psm2", "psm3"};
const std::vector<std::string> kUcxTls = {"auto", "tcp", "sm", "posix", "sysv", "cma", "rc", "ud", "dc",
                                          "rc_x", "ud_x", "dc_x", "sm,tcp", "rc,sm", "ud,sm", "all"};
const std::vector<std::string> kSendCompletions = {"async", "sync"};
const std::vector<std::string> kRmaModes = {"auto", "on", "off"};

namespace {

std::string one_of(const std::vector<std::string>& allowed) {
  std::string out;
  for (const auto& a : allowed)
    if (!a.empty()) out += (out.empty() ? "" : " | ") + a;
  return out;
}

// The launcher key's doc: each launcher of the registry and what it does.
std::string launcher_doc() {
  std::string out = "how sluice-deploy run, up and plan start the processes:";
  for (const Launcher& l : launchers()) out += fmt::format(" {}, {};", l.name, l.summary);
  out.pop_back();
  return out;
}

template <class T>
LinkKey link_uint(const char* name, const char* only, T& (*field)(LinkOptions&), const char* doc) {
  return {name, only, "unsigned integer", doc,
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
                  std::function<std::string(const LinkOptions&)> get, const char* doc) {
  return {name, only, one_of(*allowed), doc,
          [=](const Reader& r, const YAML::Node& n, const std::string& path, LinkOptions* l) {
            std::string v;
            if (Status st = r.get_enum(n, path, *allowed, &v); !st) return st;
            set(l, v);
            return Status();
          },
          [=](YAML::Emitter& e, const LinkOptions& l) { e << YAML::Key << name << YAML::Value << get(l); }};
}

template <class T>
Key uint_key(const char* name, T Deployment::*m, const std::string& doc) {
  return {name, "unsigned integer", doc,
          [=](const Reader& r, const YAML::Node& n, Deployment* d) { return r.get(n, name, &(d->*m)); },
          [=](YAML::Emitter& e, const Deployment& d) { e << YAML::Key << name << YAML::Value << uint64_t(d.*m); }};
}

Key double_key(const char* name, double Deployment::*m, const char* doc) {
  return {name, "number >= 0", doc,
          [=](const Reader& r, const YAML::Node& n, Deployment* d) {
            return r.get_double(n, name, &(d->*m));
          },
          [=](YAML::Emitter& e, const Deployment& d) {
            e << YAML::Key << name << YAML::Value << fmt_double(d.*m);
          }};
}

Key enum_key(const char* name, const std::vector<std::string>* allowed,
             std::function<void(Deployment*, const std::string&)> set,
             std::function<std::string(const Deployment&)> get, const std::string& doc) {
  return {name, one_of(*allowed), doc,
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

// A string key that may be left out; written back only when set.
Key string_key(const char* name, std::string Deployment::*m, const char* doc) {
  return {name, "string", doc,
          [name, m](const Reader& r, const YAML::Node& n, Deployment* d) {
            return r.get_string(n, name, false, &(d->*m));
          },
          [name, m](YAML::Emitter& e, const Deployment& d) {
            if (!(d.*m).empty()) e << YAML::Key << name << YAML::Value << YAML::DoubleQuoted << d.*m;
          }};
}

std::vector<std::string> names_of(const std::vector<SectionKey>& keys) {
  std::vector<std::string> v;
  for (const auto& k : keys) v.push_back(k.name);
  return v;
}

}  // namespace

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

const std::vector<LinkKey>& link_keys() {
  static const std::vector<LinkKey> k = {
      link_enum("transport", nullptr, &kTransports,
                [](LinkOptions* l, const std::string& v) { l->transport = v; },
                [](const LinkOptions& l) { return l.transport; },
                "the carrier under the protocol core: tcp sockets, libfabric or UCX"),
      link_enum("encoding", "tcp", &kEncodings,
                [](LinkOptions* l, const std::string& v) { parse_encoding(v, &l->tcp.encoding); },
                [](const LinkOptions& l) { return std::string(encoding_name(l.tcp.encoding)); },
                "how events travel on the byte stream: sg gathers them straight from pool slots "
                "(sendmsg), copy packs them into one buffer, capnp makes each a Cap'n Proto message"),
      link_enum("send_queue", "tcp", &kSendQueues,
                [](LinkOptions* l, const std::string& v) { l->tcp.async_send = v == "async"; },
                [](const LinkOptions& l) { return std::string(l.tcp.async_send ? "async" : "sync"); },
                "sync: the send stage writes the socket itself; async: a queue drained by a "
                "thread of its own (the original Borealis)"),
      link_enum("rx_poll", "tcp", &kRxPolls,
                [](LinkOptions* l, const std::string& v) { l->tcp.rx_select = v == "select"; },
                [](const LinkOptions& l) { return std::string(l.tcp.rx_select ? "select" : "block"); },
                "block: the receiver blocks in read; select: poll() with a timeout before "
                "every read (the original Borealis)"),
      link_uint("read_bytes", "tcp", +[](LinkOptions& l) -> uint32_t& { return l.tcp.read_bytes; },
                "bytes asked of each read by the copy and capnp encodings"),
      link_uint("poll_timeout_us", "tcp",
                +[](LinkOptions& l) -> uint32_t& { return l.tcp.poll_timeout_us; },
                "the poll() timeout of rx_poll: select, in microseconds"),
      {"congestion", "tcp", "reno | cubic | bbr | default",
       "TCP congestion control of the link's socket (TCP_CONGESTION); default keeps the "
       "system's",
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
      link_uint("tcp_rto_max_ms", "tcp", +[](LinkOptions& l) -> uint32_t& { return l.tcp.rto_max_ms; },
                "the cap of TCP's retransmission back-off on the link's sockets (TCP_RTO_MAX_MS, "
                "Linux 6.15+), in milliseconds: a wire that was down carries the stream again "
                "within about this much of coming back (the system's cap is 120 s); 0: the "
                "system's; else 1000-120000"),
      // Every carrier: fabric and ucx links learn that their peer is gone
      // through their control connection, a TCP connection of their own.
      link_uint("tcp_keepalive_s", nullptr, +[](LinkOptions& l) -> uint32_t& { return l.tcp.keepalive_s; },
                "TCP keepalive on the link's TCP connections (a tcp link's socket, a fabric or "
                "ucx link's control connection): an idle link probes its peer after this many "
                "seconds, then every second, so a peer whose process died unseen (its reset lost "
                "in a cut, its host rebooted) breaks the link at once, and one silent for 60 "
                "probes breaks it then, instead of the link waiting forever; 0: off; else 1-7200"),
      link_uint("slot_bytes", nullptr, +[](LinkOptions& l) -> uint32_t& { return l.slot_bytes; },
                "bytes of one receiver slot: the largest frame a link carries (an event must fit)"),
      link_uint("slots", nullptr, +[](LinkOptions& l) -> uint32_t& { return l.slots; },
                "receiver slots per link: the credits a sender starts with; unless set, 128 on "
                "a link with acks: on into a node that holds its slots until the sinks "
                "acknowledge what they became (one that keeps copies, merges, splits or runs "
                "operators that emit); 64 elsewhere, where a slot comes back once its frame is "
                "sent on or checked"),
      link_uint("credit_batch", nullptr, +[](LinkOptions& l) -> uint32_t& { return l.credit_batch; },
                "credits the receiver returns at a time; 0: a quarter of slots"),
      link_enum("credits", nullptr, &kCreditModes,
                [](LinkOptions* l, const std::string& v) { l->adaptive_credits = v == "adaptive"; },
                [](const LinkOptions& l) { return std::string(l.adaptive_credits ? "adaptive" : "fixed"); },
                "adaptive: where the sender runs out of credits, the receiver lets it hold twice "
                "what the link carries in one credit round trip (both measured), within "
                "credit_batch..slots, so a link keeps no more in flight than it needs; fixed: "
                "every slot's credit (the original preset)"),
      link_uint("connect_timeout_ms", nullptr,
                +[](LinkOptions& l) -> uint32_t& { return l.connect_timeout_ms; },
                "how long a sender keeps retrying to connect to its receiver, in milliseconds"),
      link_enum("acks", nullptr, &kOnOff,
                [](LinkOptions* l, const std::string& v) { l->acks = v == "on"; },
                [](const LinkOptions& l) { return std::string(l.acks ? "on" : "off"); },
                "on: upstream backup: a sender keeps what it sent until the receiver "
                "acknowledges it, connects again after a break and replays the rest (nothing "
                "lost when a node dies and restarts; transport/PROTOCOL.md section 5); set by "
                "guarantee (on unless it is none)"),
      link_uint("ack_delay_ms", nullptr, +[](LinkOptions& l) -> uint32_t& { return l.ack_delay_ms; },
                "with acks: how long the receiver may hold an acknowledgement short of a credit "
                "batch while it waits for more frames, in milliseconds; 0: it sends what it owes "
                "whenever it goes idle (a credit message per few frames at moderate rates, each "
                "a system call at both ends); a sender waiting for acknowledgements (its log "
                "full, its snapshot, its close) waits this much longer at most"),
      link_uint("max_delay_us", nullptr, +[](LinkOptions& l) -> uint32_t& { return l.max_delay_us; },
                "how long the sending node may hold what it has queued for this link, waiting "
                "for more to fill a frame (a slot of the receiver's), in microseconds; 0: it "
                "sends at once. One-tuple events at high rates then travel many to a frame"),
      link_uint("reconnect_timeout_ms", nullptr,
                +[](LinkOptions& l) -> uint32_t& { return l.reconnect_timeout_ms; },
                "with acks: how long a sender whose link broke keeps trying to connect again "
                "before the run fails, in milliseconds"),
      link_enum("fabric_provider", "fabric", &kFabricProviders,
                [](LinkOptions* l, const std::string& v) { l->msg.fabric_provider = v; },
                [](const LinkOptions& l) { return l.msg.fabric_provider; },
                "the libfabric provider of the link (the carrier says at start whether it is "
                "present)"),
      link_enum("ucx_tls", "ucx", &kUcxTls,
                [](LinkOptions* l, const std::string& v) { l->msg.ucx_tls = v; },
                [](const LinkOptions& l) { return l.msg.ucx_tls; },
                "UCX_TLS of the link: the UCX transports it may use; auto: sm when both ends "
                "are on one host (the same address), tcp otherwise"),
      link_enum("send_completion", "fabric|ucx", &kSendCompletions,
                [](LinkOptions* l, const std::string& v) { l->msg.sync_completion = v == "sync"; },
                [](const LinkOptions& l) { return std::string(l.msg.sync_completion ? "sync" : "async"); },
                "async: sends complete in the background; sync: wait for each send to complete"),
      link_enum("rma", "fabric|ucx", &kRmaModes,
                [](LinkOptions* l, const std::string& v) {
                  l->msg.rma_set = v != "auto";
                  l->msg.rma = v == "on";
                },
                [](const LinkOptions& l) {
                  return std::string(!l.msg.rma_set ? "auto" : l.msg.rma ? "on" : "off");
                },
                "on: the sender writes each frame straight into a slot of the receiver's that "
                "the receiver named with its credit (ucx: the receiver's pool mapped for the "
                "peer once; fabric: its slots registered for remote writes), then sends an "
                "8-byte note; ucx over shared memory (ucx_tls: sm) is then one copy by the "
                "sender and none by the receiver; off: each frame is a message into a "
                "pre-posted receive; auto: on for ucx over shared memory (sm, posix, sysv), "
                "where it won in every run measured, off elsewhere"),
      link_enum("in_place", "ucx", &kOnOff,
                [](LinkOptions* l, const std::string& v) { l->msg.in_place = v == "on"; },
                [](const LinkOptions& l) { return std::string(l.msg.in_place ? "on" : "off"); },
                "with rma where the receiver's slots are mapped into the sender (ucx over shared "
                "memory) and threads: shared: on: the sending node's last operator writes what "
                "it emits straight into the receiver's slot, and the send is an 8-byte note; "
                "off: into its own pool, and the send copies it. Never with acks (the replay "
                "copy stays with the sender)"),
      link_uint("spin_us", "fabric|ucx", +[](LinkOptions& l) -> uint32_t& { return l.msg.spin_us; },
                "how long a link that found nothing polls before it sleeps on its wait fd (or, "
                "fabric shm, at most: its doorbell's poll shortens while waits outlast it), in "
                "microseconds"),
      {"token", nullptr, "string", "a shared secret both ends of a link must give at the handshake; "
       "empty: none",
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

const std::vector<Key>& keys() {
  static const std::vector<Key> k = {
      enum_key("handover", &kHandovers,
               [](Deployment* d, const std::string& v) { d->handover_copy = v == "copy"; },
               [](const Deployment& d) { return std::string(d.handover_copy ? "copy" : "descriptor"); },
               "how a node hands an event from stage to stage: descriptor (the slot's index) or "
               "copy (a fresh copy, the original Borealis)"),
      {"schema", "string", "the loadgens' stream schema: a name in schemas:, else the name the "
       "default schema (seq, key, payload) goes by",
       [](const Reader& r, const YAML::Node& n, Deployment* d) {
         return r.get_string(n, "schema", true, &d->link.schema);
       },
       [](YAML::Emitter& e, const Deployment& d) {
         e << YAML::Key << "schema" << YAML::Value << YAML::DoubleQuoted << d.link.schema;
       }},
      // The stream.
      uint_key("tuple_bytes", &Deployment::tuple_bytes,
               "bytes per tuple of the default schema, at least 12 (sequence and key)"),
      uint_key("event_bytes", &Deployment::event_bytes,
               "bytes per event, the batching factor: as many tuples as fit; 0: one tuple per event"),
      uint_key("data_bytes", &Deployment::data_bytes, "array data bytes per event, after its tuples"),
      double_key("duration_s", &Deployment::duration_s, "how long each load generator sends, in seconds"),
      uint_key("tuples", &Deployment::tuples,
               "if not 0, each load generator sends exactly this many tuples instead"),
      double_key("rate", &Deployment::rate,
                 "events/s per load generator and instance; 0: as fast as the pipeline takes them"),
      uint_key("burst_events", &Deployment::burst_events,
               "bursts instead of a steady stream: this many events every burst_ms; 0: no bursts"),
      double_key("burst_ms", &Deployment::burst_ms, "the period of bursts, in milliseconds"),
      uint_key("burst_head_events", &Deployment::burst_head_events,
               "the head of a burst whose latency the sink reports apart: its first k events; 0: a "
               "tenth of a burst"),
      uint_key("streams", &Deployment::streams,
               "streams per load generator and instance, their events sent round-robin"),
      // The load generators' source.
      string_key("source_file", &Deployment::source_file,
                 "the file a loadgen with source: file reads (records of record_format), through a fixed "
                 "buffer whatever its size; one stream per instance, ending at the file's end or after "
                 "`tuples`"),
      string_key("source_time_field", &Deployment::source_time_field,
                 "source: file: a numeric field whose values pace the stream: a record goes "
                 "(value - first value) / source_speedup after the first; unset: as fast as the "
                 "pipeline takes them, or at `rate`"),
      enum_key("source_time_unit", &kTimeUnits,
               [](Deployment* d, const std::string& v) { d->source_time_unit = v; },
               [](const Deployment& d) { return d.source_time_unit; },
               "the unit of source_time_field's values"),
      double_key("source_speedup", &Deployment::source_speedup,
                 "source_time_field's pace, sped up this many times"),
      uint_key("instances", &Deployment::instances,
               "independent copies of the whole graph, each over its own links and stage threads"),
      uint_key("parallelism", &Deployment::parallelism,
               "processes each load generator and node runs as (a process's own `parallelism` "
               "beats it; a sink's is 1 unless it sets one): NAME.0, NAME.1, ..., each with its "
               "own streams (a load generator) and links to every replica downstream, split as "
               "the process's `split` says, or replica i to replica i where both sides have as "
               "many and the split is not by key"),
      // The node.
      enum_key("wait", &kWaits,
               [](Deployment* d, const std::string& v) { parse_wait(v, &d->wait); },
               [](const Deployment& d) { return std::string(wait_name(d.wait)); },
               "how a stage waits on an empty or full descriptor ring: block, spin, or spin a "
               "while then block (hybrid)"),
      enum_key("threads", &kThreads, [](Deployment* d, const std::string& v) { d->threads = v; },
               [](const Deployment& d) { return d.threads; },
               "how a node's receive, process and send stages share threads: dedicated (one "
               "thread each, joined by rings), shared (one thread runs them in turn), adaptive "
               "(dedicated threads, but the receiving thread runs process and send itself while "
               "they are idle), or auto: shared for a process whose every link is over shared "
               "memory (ucx sm, posix, sysv; fabric shm), adaptive otherwise; a process may set "
               "its own"),
      enum_key("pin", &kPins, [](Deployment* d, const std::string& v) { d->pin = v; },
               [](const Deployment& d) { return d.pin; },
               "off, or spread: every process's stage threads (each replica's, each instance's) "
               "pinned to CPUs of its host in turn, in the order the processes are listed, so "
               "that each stage has its core while there are cores enough (a process's own "
               "pin_stages beats it)"),
      uint_key("ring_slots", &Deployment::ring_slots,
               "descriptors per ring between a node's stages (a power of two)"),
      uint_key("loadgen_slots", &Deployment::loadgen_slots,
               "pool slots of a load generator's events, at most"),
      enum_key("loadgen_backup", &kLoadgenBackups,
               [](Deployment* d, const std::string& v) { d->loadgen_backup_slots = v == "slots"; },
               [](const Deployment& d) {
                 return std::string(d.loadgen_backup_slots ? "slots" : "headers");
               },
               "with acks, what a load generator keeps of each event until it is acknowledged: "
               "headers (64 bytes; the slot is free once sent, and a replay makes the event "
               "again) or slots (the whole event, as a node with node_backup: copies keeps it). headers needs "
               "a generator without operators and handover: descriptor, else it keeps slots"),
      enum_key("node_backup", &kNodeBackups,
               [](Deployment* d, const std::string& v) { d->node_backup_copies = v == "copies"; },
               [](const Deployment& d) {
                 return std::string(d.node_backup_copies ? "copies" : "upstream");
               },
               "with acks, what a node keeps of each frame it forwards until the next hop "
               "acknowledges it: upstream (nothing: the slot is free once sent, the node "
               "acknowledges the frame upstream only once the next hop did, and a downstream "
               "that breaks makes its upstream send everything not acknowledged again) or copies "
               "(the slot). upstream needs one upstream and one downstream link, operators that "
               "keep no state (filter, project); a node without these keeps copies"),
      // Accounting.
      double_key("clock_ghz", &Deployment::clock_ghz,
                 "the nominal clock F in the cycles-per-event figures, in GHz"),
      double_key("peak_watts", &Deployment::peak_watts, "P in the energy-per-event model, in watts"),
      double_key("progress_s", &Deployment::progress_s,
                 "the period of each process's progress line in its log, in seconds; 0: off"),
      uint_key("base_port", &Deployment::base_port,
               "the first port: process i listens from base_port + 100 * i unless it or its link "
               "names a port"),
      // Where the processes run (`hosts:` is read specially).
      enum_key("launcher", &kLaunchers, [](Deployment* d, const std::string& v) { d->launcher = v; },
               [](const Deployment& d) { return d.launcher; },
               launcher_doc()),
      string_key("ssh_key", &Deployment::ssh_key, "ssh: the identity file (-i); unset: ssh's own choice"),
      string_key("ssh_options", &Deployment::ssh_options,
                 "ssh: more options for every ssh and scp, split at spaces; not -n or -f (the "
                 "remote programs read their stdin's end as sluice-deploy gone)"),
      string_key("remote_dir", &Deployment::remote_dir,
                 "ssh: the folder on the hosts for the run's files and copied programs; unset: "
                 "the same paths as here"),
      enum_key("copy_binaries", &kOnOff,
               [](Deployment* d, const std::string& v) { d->copy_binaries = v == "on"; },
               [](const Deployment& d) { return std::string(d.copy_binaries ? "on" : "off"); },
               "ssh, with remote_dir: scp the programs to every host first"),
      {"host_rate", "rate (10gbit, 500mbit, 0)",
       "every host's link speed unless it sets its own rate (netns, with tc); 0: no limit",
       [](const Reader& r, const YAML::Node& n, Deployment* d) {
         return r.get_rate(n, "host_rate", &d->host_rate_bps);
       },
       [](YAML::Emitter& e, const Deployment& d) {
         e << YAML::Key << "host_rate" << YAML::Value << rate_name(d.host_rate_bps);
       }},
      {"subnet", "IPv4 subnet a.b.c.d/n",
       "the subnet the netns hosts share; empty: the /24 of the first host",
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
               [](const Deployment& d) { return std::string(d.metrics ? "on" : "off"); },
               "every process serves its counters for Prometheus at http://ADDRESS:PORT/metrics"),
      {"metrics_address", "IPv4 address | host",
       "the address the metrics endpoints bind (default 127.0.0.1, loopback only); host: the "
       "address each process binds, for a Prometheus on another machine or namespace",
       [](const Reader& r, const YAML::Node& n, Deployment* d) {
         if (Status st = r.get_string(n, "metrics_address", false, &d->metrics_address); !st)
           return st;
         uint32_t a = 0;
         if (d->metrics_address != "host" && !parse_ipv4(d->metrics_address, &a))
           return r.error(n, "metrics_address",
                          fmt::format("expected an IPv4 address (127.0.0.1, 0.0.0.0) or 'host' "
                                      "(the address each process binds), got '{}'",
                                      d->metrics_address));
         return Status();
       },
       [](YAML::Emitter& e, const Deployment& d) {
         e << YAML::Key << "metrics_address" << YAML::Value << d.metrics_address;
       }},
      uint_key("metrics_port", &Deployment::metrics_port,
               "process i serves metrics on metrics_port + i; 0: any free port"),
      // The supervisor of run and up.
      enum_key("guarantee", &kGuarantees,
               [](Deployment* d, const std::string& v) {
                 for (Guarantee g : kGuaranteeValues)
                   if (v == guarantee_name(g)) d->guarantee = g;
               },
               [](const Deployment& d) { return std::string(guarantee_name(d.guarantee)); },
               "what a run promises when a process dies (kill -9 of any of them, the load "
               "generator and the sinks too): none: acks off, restart never, no snapshots, a "
               "death fails the run; at-least-once: acks on, restart on-failure, snapshots "
               "(checkpoint_interval_ms) of the sinks and of operators that keep state, so the "
               "run goes on with nothing lost and each sink counts every tuple once, and an "
               "output that cannot be taken back (a Kafka topic) may get again what a sink wrote "
               "after its last snapshot; exactly-once: the same, and each sink commits its "
               "outputs with its snapshots (the results file is cut back to its snapshot on "
               "restore). Unless set, none under preset: original. Those keys given beside it "
               "win where they keep its promise; one that breaks it is an error (docs/RUNNING.md, "
               "Guarantees)"),
      enum_key("restart", &kRestarts, [](Deployment* d, const std::string& v) { d->restart = v; },
               [](const Deployment& d) { return d.restart; },
               "what run and up do when a process dies: never (the run fails, naming it) or "
               "on-failure (start it again on its host; needs acks: on on its links, and "
               "snapshots for a sink or operators that keep state); a process may set its own; "
               "set by guarantee (on-failure unless it is none)"),
      uint_key("restart_limit", &Deployment::restart_limit,
               "restart: on-failure: how many times each process is restarted at most"),
      uint_key("restart_backoff_ms", &Deployment::restart_backoff_ms,
               "restart: on-failure: the wait before the first restart, doubled before each "
               "next one, up to 10 s"),
      // Applications' ends (role publisher, subscriber).
      double_key("app_wait_s", &Deployment::app_wait_s,
                 "how long run and up wait for each application's end (role publisher or "
                 "subscriber) to connect, and a process whose downstream is a subscriber keeps "
                 "trying to connect to it, in seconds"),
      // Operator snapshots.
      uint_key("checkpoint_interval_ms", &Deployment::checkpoint_interval_ms,
               fmt::format("0: off; else a node whose operators keep state (groupby, correlate, join, "
                           "moving_avg) and a sink (its verifier) snapshot it this often to state_dir "
                           "and restore it when restarted; needs acks: on (docs/DESIGN.md, Operator "
                           "snapshots); set by guarantee (0 under none, else {})",
                           kGuaranteeCheckpointMs)),
      string_key("state_dir", &Deployment::state_dir,
                 "where snapshots go, on each node's host (NAME.INSTANCE.snapshot.0 and .1), made if "
                 "missing; one that cannot hold files fails the process at its start; unset: the "
                 "run's directory"),
      enum_key("snapshot_sync", &kOnOff, [](Deployment* d, const std::string& v) { d->snapshot_sync = v; },
               [](const Deployment& d) { return d.snapshot_sync; },
               "on: each snapshot reaches the disk (fdatasync) before the input it holds is acknowledged, "
               "so it survives the death of its machine, not only of its process, and a restart passes "
               "over a torn newer file; off: the page cache holds it"),
      // Kafka endpoints.
      string_key("kafka_bootstrap", &Deployment::kafka_bootstrap,
                 "HOST:PORT[,HOST:PORT...] of the Kafka cluster that a loadgen with source: kafka reads "
                 "and a sink with kafka_topic writes (scripts/kafka.sh up prints one); required once a "
                 "process uses Kafka"),
      string_key("kafka_group", &Deployment::kafka_group,
                 "the consumer group a Kafka source commits its offsets in; a run starts from the "
                 "group's committed offsets (the topic's start where it has none) and a restarted source "
                 "from what it committed; unset: sluice-RUN_ID, a group of the run's own"),
      enum_key("kafka_transactions", &kAutoOnOff,
               [](Deployment* d, const std::string& v) { d->kafka_transactions = v; },
               [](const Deployment& d) { return d.kafka_transactions; },
               "a sink's Kafka writes: on: in transactions committed with each of its snapshots, so a "
               "read_committed reader sees every row once even across a killed process (needs "
               "checkpoint_interval_ms); off: the idempotent producer, flushed before each snapshot "
               "(a row may come twice after a restart, none is lost); auto: on where the sink "
               "snapshots, off under guarantee: at-least-once; guarantee: exactly-once refuses off"),
      enum_key("bad_records", &kBadRecords, [](Deployment* d, const std::string& v) { d->bad_records = v; },
               [](const Deployment& d) { return d.bad_records; },
               "a record that does not decode into a tuple of the schema: fail (the source stops with "
               "an error naming its place: topic, partition and offset, or file:line:column) or reject "
               "(counted as rejected, the first few logged with their place, and passed over)"),
      string_key("run_id", &Deployment::run_id,
                 "names the run its snapshots belong to: a process restores only one written under the same "
                 "run_id and summary path, so a run directory used again starts afresh; sluice-deploy run "
                 "and up set a new one for each run unless the file or --set gives one; unset (a process "
                 "started by hand): its summary's path alone"),
  };
  return k;
}

// The keys read by hand (config_parse.cc). Their defaults are written here
// for the documentation only; the parser's are the fields' initial values.
const std::vector<SectionKey>& root_section_keys() {
  static const std::vector<SectionKey> k = {
      {"preset", "tcp-opt", "the link choices every link starts from: " + preset_names(", ") +
                                "; the keys given beat it"},
      {"host", "127.0.0.1", "every process's host unless it names its own (with hosts:, a host's name)"},
      {"hosts", "none", "the machines processes run on (below); without it every host is an "
                        "address on this machine"},
      {"schemas", "none", "named schemas (below): name -> {fields, tuple_bytes}"},
      {"processes", "required", "the processes (below)"},
      {"links", "the chain of processes", "the links (below); left out, the processes form a "
                                          "chain in the order listed"},
  };
  return k;
}

const std::vector<SectionKey>& process_keys() {
  static const std::vector<SectionKey> k = {
      {"name", "required", "letters, digits, '.', '_', '-'; names its log and summary files"},
      {"role", "required", "loadgen | node | sink | publisher | subscriber (an application's ends: "
                           "sluice-deploy does not start them; docs/API.md)"},
      {"host", "the top-level host", "where it runs and its upstreams connect (with hosts:, a host's name)"},
      {"listen", "its host", "the address it binds"},
      {"port", "base_port + 100 * its place", "the first port it listens on"},
      {"cores", "its host's cores shared", "N in the cycles-per-event formulas"},
      {"split", "stream", "with several downstream links: stream (stream s to link s % n), copy, "
                          "or key (by split_key's hash)"},
      {"split_key", "none", "split: key hashes this numeric field of what it sends"},
      {"pin_stages", "off", "off, on (spread the stage threads over its host's cores) or CPUs to "
                            "pin them to in turn"},
      {"operators", "none", "the operators of its process stage, in order (docs/OPERATORS.md)"},
      {"schema", "the top-level schema", "a loadgen's or publisher's stream schema, a name in schemas:"},
      {"source", "generator", "a loadgen's tuples: generator (made from the schema's gens), kafka "
                              "(read from kafka_topic, one stream per partition: streams must equal "
                              "the partitions) or file (read from source_file)"},
      {"kafka_topic", "none", "a loadgen with source: kafka reads this topic; a sink produces every "
                              "row it receives to it (no header), beside or instead of results"},
      {"kafka_key", "none", "a sink with kafka_topic: the field of its rows whose value keys each record, "
                            "which goes to the partition of the key's murmur2 hash (as Kafka's Java "
                            "producer partitions); without it the rows of input stream s go to "
                            "partition s % partitions, each stream's rows in order"},
      {"record_format", "csv", "how a record of a Kafka topic or a file maps to a tuple (codec/record.h): "
                               "csv (comma-separated; a file's header line names the columns, a Kafka "
                               "record holds the schema's fields after seq in order), jsonl (a JSON "
                               "object, fields by name) or binary (the fields after seq back to back, "
                               "little-endian)"},
      {"results", "none", "a sink writes every tuple it receives to this file ({instance}: "
                          "the instance's number; {replica}: the replica's, with parallelism), complete when renamed "
                          "from NAME.part at "
                          "the stream's END"},
      {"results_format", "csv", "csv (a header line, then a line per tuple) | jsonl (a JSON "
                                "object per line) | binary (the fields back to back)"},
      {"results_fields", "seq and every field", "the fields the results hold, in order: a list "
                                                "or \"a,b\" (csv and jsonl leave bytes fields "
                                                "out unless named)"},
      {"restart", "the top-level restart", "never | on-failure: whether run and up start it "
                                           "again when it dies"},
      {"threads", "the top-level threads",
       "auto | dedicated | shared | adaptive: how its stages share threads"},
      {"parallelism", "the top-level parallelism (a sink: 1)",
       "the processes it runs as (NAME.0, NAME.1, ...); its links reach every replica"},
  };
  return k;
}

const std::vector<SectionKey>& host_keys() {
  static const std::vector<SectionKey> k = {
      {"name", "required", "letters, digits, '.', '_', '-'; unique; names its network namespace"},
      {"address", "required", "where its processes are reached and what they bind; unique"},
      {"cores", "not pinned", "the CPUs its processes are pinned to: 0-3, \"0,2\", [0, 1, 4-5]"},
      {"rate", "host_rate", "its link speed in each direction, tc's units (10gbit); netns only"},
      {"ssh_user", "ssh's own", "the user the ssh launcher logs in as"},
      {"ssh_port", "22", "the port the ssh launcher connects to"},
  };
  return k;
}

const std::vector<SectionKey>& schema_keys() {
  static const std::vector<SectionKey> k = {
      {"fields", "required", "the fields after the sequence number: {name, type, width, gen}"},
      {"tuple_bytes", "the fields' size", "bytes per tuple, padding after the fields"},
  };
  return k;
}

const std::vector<SectionKey>& field_keys() {
  static const std::vector<SectionKey> k = {
      {"name", "required", "the field's name"},
      {"type", "required", "i32 | i64 | u32 | u64 | f64 | timestamp | bytes"},
      {"width", "0", "bytes of a bytes field"},
      {"gen", "sequence (bytes: random)", "how the load generator fills it: sequence, random, "
                                          "{uniform: N}, {zipf: N, s: S}, {constant: V}"},
  };
  return k;
}

const std::vector<SectionKey>& link_own_keys() {
  static const std::vector<SectionKey> k = {
      {"from", "required", "the sending process's name"},
      {"to", "required", "the receiving process's name"},
      {"port", "automatic", "the receiver's port for instance 0 (instance k: port + k)"},
      {"preset", "the top-level preset", "a preset for this link alone; its own keys beat it"},
  };
  return k;
}

const std::vector<std::string> kProcessKeys = names_of(process_keys());
const std::vector<std::string> kSchemaKeys = names_of(schema_keys());
const std::vector<std::string> kFieldKeys = names_of(field_keys());
const std::vector<std::string> kHostKeys = names_of(host_keys());

const std::vector<std::string>& key_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = names_of(root_section_keys());
    for (const auto& k : link_keys()) v.push_back(k.name);
    for (const auto& k : keys()) v.push_back(k.name);
    return v;
  }();
  return names;
}

const std::vector<std::string>& link_entry_keys() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = names_of(link_own_keys());
    for (const auto& k : link_keys()) v.push_back(k.name);
    return v;
  }();
  return names;
}

}  // namespace cfg
}  // namespace sluice
