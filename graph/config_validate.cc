// Checks across keys, made once the whole file is read (called from
// parse_root): what no single key's type can say.
//
//   validate_graph       the graph's shape: no self-links or repeated links,
//                        no sink upstream or loadgen downstream of anything,
//                        every node reached and reaching, no cycle (named).
//   validate             ranges that involve several keys (ring_slots a power
//                        of two, streams within what a pipeline carries), an
//                        event fits a slot on every link, the end of a stream
//                        fits one, and no two receivers listen on one
//                        address:port for any instance (a wildcard
//                        address clashes with every address of its host).
//   validate_split_keys  split: key hashes a numeric field of what the
//                        process sends, and only a node splits by key.
//   validate_guarantee   under at-least-once or exactly-once, no key given
//                        beside the guarantee breaks its promise.
//   validate_restarts    a process with restart: on-failure can go on once
//                        started again: acks on its links, snapshots where
//                        it keeps state (a sink, a stateful operator).
//
// An error names the key to fix where it was given: a link's own key at the
// link's line, a top-level default at the top level's line (Places), or the
// --set that set it.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>

#include "graph/config_stages.h"
#include "graph/operator.h"
#include "transport/event.h"
#include "transport/handshake.h"

namespace sluice::cfg {

// `split: key` hashes `split_key`, a numeric field of what the process sends
// (its out_schema), over two or more downstream links; `split_key` means
// nothing without it.
Status validate_split_keys(const Deployment& d, const std::vector<Places>& process_at) {
  for (size_t i = 0; i < d.processes.size(); ++i) {
    const ProcessConfig& p = d.processes[i];
    const Places& at = process_at[i];
    const std::string path = fmt::format("processes.{}", i);
    if (p.split != Split::kKey) {
      if (!p.split_key.empty())
        return at.error(path + ".split_key", "split_key",
                        fmt::format("process '{}': split_key needs split: key (its split is {})",
                                    p.name, split_name(p.split)));
      continue;
    }
    if (p.split_key.empty())
      return at.error(path + ".split", "split",
                      fmt::format("process '{}': split: key needs split_key: FIELD, a numeric "
                                  "field of {}", p.name, p.out_schema.describe()));
    FieldRef f;
    if (!p.out_schema.find(p.split_key, &f) || f.type == FieldType::kBytes)
      return at.error(path + ".split_key", "split_key",
                      fmt::format("process '{}': '{}' is no numeric field of what it sends, {}",
                                  p.name, p.split_key, p.out_schema.describe()));
    if (p.role != Role::kNode)
      return at.error(path + ".split", "split",
                      fmt::format("process '{}': only a node splits by key (a {} {}); put a node "
                                  "with split: key after it", p.name, role_name(p.role),
                                  is_end(p.role) ? "has no downstream links"
                                                        : "splits by stream or copy"));
    // A sink reconciles each stream on one path: parts of one event that
    // come back together by two links interleave (counted duplicated, and
    // with acks dropped). A process whose operators consume their input (a
    // group-by, say: the key's replicas) ends the parts' paths: past it goes
    // its own derived stream, and its END's accounts of the parts, which a
    // union adds up again (NetSource::merge_end).
    auto consumes = [&](size_t j) {
      for (const OperatorConfig& op : d.processes[j].operators)
        if (const OperatorSpec* spec = find_operator_spec(op.kind); spec && spec->emits) return true;
      return false;
    };
    {
      const std::vector<size_t> outs = d.outputs_of(i);
      std::vector<int> reached(d.processes.size(), -1);  // by which of the split's links
      for (size_t k = 0; k < outs.size(); ++k) {
        std::vector<size_t> todo{d.links[outs[k]].to};
        while (!todo.empty()) {
          const size_t j = todo.back();
          todo.pop_back();
          if (consumes(j)) continue;
          if (reached[j] == static_cast<int>(k)) continue;
          if (reached[j] >= 0)
            return at.error(path + ".split", "split",
                            fmt::format("process '{}': split: key sends each key down one of its links, and "
                                        "the links to '{}' and '{}' meet again at '{}': a sink reconciles "
                                        "each stream on one path, and the parts would interleave there; "
                                        "give each path its own sink, or consume the parts on the way "
                                        "(a group-by)",
                                        p.name, d.processes[d.links[outs[reached[j]]].to].name,
                                        d.processes[d.links[outs[k]].to].name, d.processes[j].name));
          reached[j] = static_cast<int>(k);
          for (size_t l : d.outputs_of(j)) todo.push_back(d.links[l].to);
        }
      }
    }
    if (restarts_on_failure(d, p) && d.checkpoint_interval_ms == 0)
      return at.error(path + ".split", "split",
                      fmt::format("process '{}': split: key with restart: on-failure needs "
                                  "checkpoint_interval_ms: its accounts of what went to the other "
                                  "links are state a restart would lose, and each sink would count "
                                  "those tuples filtered", p.name));
  }
  return {};
}

// ------------------------------------------------ guarantees and restarts

// Under at-least-once or exactly-once, a key given beside the guarantee
// wins only where it keeps the promise: every link with acks (an async
// send queue cannot carry them), every process restarted, snapshots on.
// The error names the key given, the guarantee and what to set. Checked
// before validate, whose own checks of acks say less.
Status validate_guarantee(const Deployment& d, const Places& at, const std::vector<Places>& link_at,
                          const std::vector<Places>& process_at) {
  if (d.guarantee == Guarantee::kNone) return {};
  const std::string given = at.at("guarantee");
  const std::string g = fmt::format("guarantee: {} ({})", guarantee_name(d.guarantee),
                                    !at.of.count("guarantee")     ? std::string("the default")
                                    : given.rfind("--set ", 0) == 0 ? given
                                                                  : "at " + given);
  const std::string or_none = "; or set guarantee: none, which promises nothing";
  // A link's key: where the link set it, else where the top level did.
  auto link_error = [&](size_t l, const std::string& key, const std::string& msg) {
    const std::string text = link_name(d, l) + ": " + msg;
    if (link_at[l].of.count(key))
      return link_at[l].error(fmt::format("links.{}.{}", l, key), key, text);
    return at.error(key, d.chain ? msg : text);
  };
  for (size_t l = 0; l < d.links.size(); ++l) {
    const LinkOptions& o = d.links[l].options;
    if (!o.acks)
      return link_error(l, "acks",
                        fmt::format("acks: off breaks {}: a sender without acks keeps nothing to send "
                                    "again, so a death loses what was in flight; leave acks out (the "
                                    "guarantee sets it on){}",
                                    g, or_none));
    if (o.transport == "tcp" && o.tcp.async_send) {
      const bool own = link_at[l].of.count("send_queue") || link_at[l].of.count("preset");
      const std::string key = (own ? link_at[l] : at).of.count("send_queue") ? "send_queue" : "preset";
      const std::string what = key == "send_queue" ? std::string("send_queue: async")
                                                   : fmt::format("preset: {} (send_queue: async)",
                                                                 own ? d.links[l].preset : d.preset);
      const std::string msg = fmt::format(
          "{} cannot carry the acks that {} needs (an async send queue's thread reads the credits, "
          "and the acknowledgements with them); set send_queue: sync beside it{}",
          what, g, or_none);
      if (own) return link_at[l].error(fmt::format("links.{}.{}", l, key), key, link_name(d, l) + ": " + msg);
      return at.error(key, d.chain ? msg : link_name(d, l) + ": " + msg);
    }
  }
  for (size_t i = 0; i < d.processes.size(); ++i) {
    const ProcessConfig& p = d.processes[i];
    if (restarts_on_failure(d, p)) continue;
    if (process_at[i].of.count("restart"))
      return process_at[i].error(
          fmt::format("processes.{}.restart", i), "restart",
          fmt::format("process '{}': restart: never breaks {}: its death would end the run; leave "
                      "its restart out (the guarantee sets on-failure){}",
                      p.name, g, or_none));
    return at.error("restart", fmt::format("restart: never breaks {}: a process's death would end "
                                           "the run; leave restart out (the guarantee sets "
                                           "on-failure){}",
                                           g, or_none));
  }
  for (const ProcessConfig& p : d.processes)
    if (!p.kafka_topic.empty() && d.guarantee == Guarantee::kExactlyOnce && d.kafka_transactions == "off")
      return at.error("kafka_transactions",
                      fmt::format("kafka_transactions: off breaks {}: sink '{}', restarted, writes to "
                                  "Kafka again the rows it wrote after its last snapshot; leave it out "
                                  "(auto commits them with each snapshot), or set guarantee: "
                                  "at-least-once",
                                  g, p.name));
  if (d.restart_limit == 0)
    return at.error("restart_limit",
                    fmt::format("restart_limit: 0 breaks {}: no process would be started again; give "
                                "it at least 1 (3 unless set){}",
                                g, or_none));
  if (d.checkpoint_interval_ms == 0)
    return at.error("checkpoint_interval_ms",
                    fmt::format("checkpoint_interval_ms: 0 breaks {}: a sink, or an operator that keeps "
                                "state, started again without a snapshot would start its counts or "
                                "its state over; leave it out (the guarantee sets {}) or give it a "
                                "positive value{}",
                                g, kGuaranteeCheckpointMs, or_none));
  return {};
}

// Whatever the guarantee, a process with restart: on-failure must be able
// to go on once started again: its links have acks (its neighbours replay
// what it lost; without, its death breaks them too, and the run fails at
// the first death anyway), and a sink or an operator that keeps state has
// snapshots to restore (restart_loses_state). Said when the file is read,
// not found out at the first death. The error is given where restart was.
Status validate_restarts(const Deployment& d, const Places& at, const std::vector<Places>& link_at,
                         const std::vector<Places>& process_at) {
  (void)link_at;
  const std::string or_default = "; or leave acks, restart and checkpoint_interval_ms to the "
                                 "guarantee (at-least-once or exactly-once sets all three)";
  for (size_t i = 0; i < d.processes.size(); ++i) {
    const ProcessConfig& p = d.processes[i];
    if (!restarts_on_failure(d, p)) continue;
    auto err = [&](const std::string& msg) {
      if (process_at[i].of.count("restart"))
        return process_at[i].error(fmt::format("processes.{}.restart", i), "restart", msg);
      if (at.of.count("restart")) return at.error("restart", msg);
      return Status::Error(fmt::format("{}: process '{}': {}", p.source_line, p.name, msg));
    };
    std::vector<size_t> touching = d.inputs_of(i);
    for (size_t l : d.outputs_of(i)) touching.push_back(l);
    for (size_t l : touching)
      if (!d.links[l].options.acks)
        return err(fmt::format(
            "process '{}' has restart: on-failure, but {} has acks: off: without acks its neighbours "
            "keep nothing to send again, so its death loses what was in flight and breaks their "
            "links (they fail in turn); set acks: on, or restart: never{}",
            p.name, link_name(d, l), or_default));
    if (Status st = restart_loses_state(d, i); !st)
      return err(fmt::format("process '{}' has restart: on-failure, but {}; or set restart: never{}",
                             p.name, st.message(), or_default));
  }
  return {};
}

// ---------------------------------------------------------------- validate

namespace {

Status validate_graph(const Deployment& d, const Places& at) {
  const auto& ps = d.processes;
  const auto& ls = d.links;
  // A chain's links have no lines of their own: its errors name the process.
  auto link_error = [&](size_t l, const std::string& key, const std::string& msg) {
    if (d.chain) {
      const ProcessConfig& p = ps[key == "to" ? ls[l].to : ls[l].from];
      return Status::Error(fmt::format("{}: process '{}': {} (with no links:, the processes form "
                                       "a chain in the order listed: loadgen, node..., sink)",
                                       p.source_line, p.name, msg));
    }
    const std::string k = fmt::format("links.{}{}", l, key.empty() ? "" : "." + key);
    return Status::Error(fmt::format("{}: key '{}': {}", ls[l].source_line, k, msg));
  };
  auto process_error = [&](size_t i, const std::string& msg) {
    return Status::Error(fmt::format("{}: process '{}' (role {}) {}{}", ps[i].source_line, ps[i].name,
                                     role_name(ps[i].role), msg,
                                     d.chain ? " (with no links:, the processes form a chain in the "
                                               "order listed: loadgen, node..., sink)"
                                             : ""));
  };
  if (ps.size() < 2)
    return at.error("processes", fmt::format("a pipeline needs at least a loadgen and a sink, got {} "
                                             "process{}", ps.size(), ps.size() == 1 ? "" : "es"));
  for (size_t l = 0; l < ls.size(); ++l) {
    const ProcessConfig& f = ps[ls[l].from];
    const ProcessConfig& t = ps[ls[l].to];
    if (ls[l].from == ls[l].to)
      return link_error(l, "to", fmt::format("a link from '{}' to itself", f.name));
    if (is_end(f.role))
      return link_error(l, "from", fmt::format("'{0}' is a {1}; a {1} has no downstream", f.name,
                                               role_name(f.role)));
    if (is_source(t.role))
      return link_error(l, "to", fmt::format("'{0}' is a {1}; a {1} has no upstream", t.name,
                                             role_name(t.role)));
    for (size_t m = 0; m < l; ++m)
      if (ls[m].from == ls[l].from && ls[m].to == ls[l].to)
        return link_error(l, "", fmt::format("the link {} -> {} is given twice (first at {})",
                                             f.name, t.name, ls[m].source_line));
  }
  size_t loadgens = 0, sinks = 0;
  for (size_t i = 0; i < ps.size(); ++i) {
    const size_t in = d.inputs_of(i).size(), out = d.outputs_of(i).size();
    loadgens += is_source(ps[i].role);
    sinks += is_end(ps[i].role);
    if (!is_source(ps[i].role) && in == 0) return process_error(i, "has no upstream link");
    if (!is_end(ps[i].role) && out == 0) return process_error(i, "has no downstream link");
  }
  if (loadgens == 0 || sinks == 0)
    return at.error("processes", "a pipeline needs at least one source (a loadgen or a publisher) "
                                 "and one end (a sink or a subscriber)");
  // A cycle: depth-first, naming the processes around it.
  std::vector<int> state(ps.size(), 0);  // 0 new, 1 on the path, 2 done
  std::vector<size_t> path;
  std::function<Status(size_t)> visit = [&](size_t i) -> Status {
    state[i] = 1;
    path.push_back(i);
    for (size_t l : d.outputs_of(i)) {
      const size_t j = ls[l].to;
      if (state[j] == 1) {
        std::string names;
        auto it = std::find(path.begin(), path.end(), j);
        for (; it != path.end(); ++it) names += ps[*it].name + " -> ";
        return link_error(l, "", fmt::format("the links form a cycle: {}{}", names, ps[j].name));
      }
      if (state[j] == 0)
        if (Status st = visit(j); !st) return st;
    }
    path.pop_back();
    state[i] = 2;
    return {};
  };
  for (size_t i = 0; i < ps.size(); ++i)
    if (state[i] == 0)
      if (Status st = visit(i); !st) return st;
  return {};
}

// An END as a sender writes it: how many streams it names and which
// accounts each carries (EndOfStream's flags), sized by the code's own
// EndOfStream::end_wire_bytes.
struct EndSize {
  uint32_t streams = 0;
  uint32_t flags = 0;
  size_t bytes() const { return EndOfStream::end_wire_bytes(streams, flags); }
  // "8 + 56 x 100 streams, each with the accounts of a key split upstream"
  std::string how() const {
    const size_t base = EndOfStream::end_wire_bytes(0, flags);
    const size_t each = EndOfStream::end_wire_bytes(1, flags) - base;
    const char* whose = !(flags & kEndAccounts)      ? ""
                        : (flags & kEndPartitioned) ? ", each with the accounts of a key split upstream"
                                                    : ", each with the accounts of operators upstream";
    return fmt::format("{} + {} x {} streams{}", base, each, streams, whose);
  }
};

// The END each link carries, and each process writes after its operators
// (`out[i]`), as the code builds them: a load generator names its streams;
// a process with one upstream link passes its END on, one with several
// merges theirs (NetSource::merge_end: their streams, and accounts if any
// had them, the partitioned count dropped); an operator that consumes its
// input adds the accounts and its derived stream (StreamAccounts::add_to,
// EventWriter::end); a key split sends every link every stream with the
// accounts and the partitioned count, a split by stream each link its
// share, a copy everything (NetDestination::end). A share assumes the
// streams' ids spread evenly over the links (they are consecutive).
void end_sizes(const Deployment& d, std::vector<EndSize>* out, std::vector<EndSize>* on_link) {
  out->assign(d.processes.size(), {});
  on_link->assign(d.links.size(), {});
  const std::vector<size_t> order = d.start_order();  // downstream first
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const size_t i = *it;
    const ProcessConfig& p = d.processes[i];
    EndSize& e = (*out)[i];
    if (p.role == Role::kLoadgen) {
      e.streams = d.streams;
    } else {
      const std::vector<size_t> in = d.inputs_of(i);
      for (size_t l : in) {
        e.streams += (*on_link)[l].streams;
        e.flags |= in.size() == 1 ? (*on_link)[l].flags : (*on_link)[l].flags & kEndAccounts;
      }
      for (const OperatorConfig& op : p.operators) {
        const OperatorSpec* spec = find_operator_spec(op.kind);
        if (!spec || !spec->emits) continue;
        e.flags |= kEndAccounts;
        ++e.streams;
      }
    }
    e.streams = std::min<uint32_t>(e.streams, kMaxStreams);
    const std::vector<size_t> outs = d.outputs_of(i);
    const uint32_t k = static_cast<uint32_t>(outs.size());
    for (size_t l : outs) {
      EndSize& c = (*on_link)[l];
      c = e;
      if (k > 1 && p.split == Split::kKey) c.flags |= kEndAccounts | kEndPartitioned;
      if (k > 1 && p.split == Split::kStream) c.streams = (e.streams + k - 1) / k;
    }
  }
}

}  // namespace

// `link_at[l]`: where link l and the keys it set itself were given;
// `process_at[i]` the same for process i.
Status validate(const Deployment& d, const Places& at, const std::vector<Places>& link_at,
                const std::vector<Places>& process_at) {
  if (d.tuple_bytes < kMinTupleBytes)
    return at.error("tuple_bytes", fmt::format("must be at least {} (sequence and key), got {}",
                                               kMinTupleBytes, d.tuple_bytes));
  if (d.ring_slots < 2 || (d.ring_slots & (d.ring_slots - 1)) != 0)
    return at.error("ring_slots", fmt::format("must be a power of two >= 2, got {}", d.ring_slots));
  if (d.loadgen_slots < 1) return at.error("loadgen_slots", "must be at least 1");
  if (d.instances < 1) return at.error("instances", "must be at least 1");
  if (d.streams < 1 || d.streams > kMaxStreams)
    return at.error("streams", fmt::format("must be 1..{}, got {}", kMaxStreams, d.streams));
  if (d.duration_s <= 0 && d.tuples == 0)
    return at.error(at.of.count("duration_s") ? "duration_s" : "tuples",
                    "the load generator needs duration_s > 0 or tuples > 0");
  if (d.clock_ghz <= 0) return at.error("clock_ghz", "must be greater than 0");
  if (!(d.app_wait_s > 0) || d.app_wait_s > 4e6)
    return at.error("app_wait_s", fmt::format("must be greater than 0 and at most 4e6 s, got {}", d.app_wait_s));
  if (d.metrics && d.metrics_port != 0 && d.metrics_port + d.processes.size() - 1 > 65535)
    return at.error("metrics_port",
                    fmt::format("process {} ('{}') would serve metrics on port {}, beyond 65535; "
                                "lower metrics_port, or 0 for any free port",
                                d.processes.size() - 1, d.processes.back().name,
                                d.metrics_port + d.processes.size() - 1));
  if (d.burst_events > 0 && d.burst_ms <= 0)
    return at.error("burst_ms", "must be greater than 0 when burst_events is set");
  if (Status st = validate_graph(d, at); !st) return st;

  uint64_t all_streams = 0;
  for (size_t i = 0; i < d.processes.size(); ++i)
    if (is_source(d.processes[i].role)) all_streams += d.streams;
  if (all_streams > kMaxStreams)
    return at.error("streams", fmt::format("{} load generators x {} streams = {} streams, more than "
                                           "the {} a pipeline carries",
                                           all_streams / d.streams, d.streams, all_streams,
                                           kMaxStreams));
  const uint32_t tpe = tuples_per_event(d.tuple_bytes, d.event_bytes);
  const size_t wire = event_wire_bytes(d.tuple_bytes, tpe, d.data_bytes);
  std::vector<EndSize> end_out, end_on;
  end_sizes(d, &end_out, &end_on);
  for (size_t l = 0; l < d.links.size(); ++l) {
    const LinkOptions& o = d.links[l].options;
    const std::string name = link_name(d, l);
    // The key `key` of link l is wrong: named where the link set it, else
    // where the top level did, else at the link's line (the top-level map's
    // for a chain).
    auto err = [&](const std::string& key, const std::string& msg) {
      if (link_at[l].of.count(key) || (!d.chain && !at.of.count(key)))
        return link_at[l].error(fmt::format("links.{}.{}", l, key), key, name + ": " + msg);
      return at.error(key, name + ": " + msg);
    };
    if (o.slots < 1) return err("slots", "must be at least 1");
    if (o.slot_bytes < 1) return err("slot_bytes", "must be at least 1");
    if (o.tcp.read_bytes < 1) return err("read_bytes", "must be at least 1");
    if (o.tcp.rto_max_ms && (o.tcp.rto_max_ms < 1000 || o.tcp.rto_max_ms > 120000))
      return err("tcp_rto_max_ms", fmt::format("{} is outside 1000-120000 (the kernel's range; 0 keeps "
                                               "the system's)", o.tcp.rto_max_ms));
    if (o.tcp.keepalive_s > 7200)
      return err("tcp_keepalive_s", fmt::format("{} is beyond 7200 (the system's own idle time; 0 turns "
                                                "it off)", o.tcp.keepalive_s));
    if (d.checkpoint_interval_ms && !o.acks)
      return err("acks", "checkpoint_interval_ms needs acks: on on every link (a snapshot "
                         "releases what upstreams keep for replay; without acks they keep nothing)");
    if (o.acks && o.transport == "tcp" && o.tcp.async_send)
      return err("acks", "acks: on needs send_queue: sync (an async send queue's thread reads "
                         "the credits, and the acknowledgements with them)");
    if (wire + sizeof(FrameHeader) > o.slot_bytes) {
      const std::string msg = fmt::format(
          "an event does not fit a slot: {} tuples of {} bytes + {}-byte header + {} data bytes "
          "= {} bytes, plus a {}-byte frame header, is more than slot_bytes {}; raise slot_bytes "
          "or lower event_bytes",
          tpe, d.tuple_bytes, kEventHeaderBytes, d.data_bytes, wire, sizeof(FrameHeader),
          o.slot_bytes);
      if (link_at[l].of.count("slot_bytes")) return err("slot_bytes", msg);
      // The link has the top level's slot: name the top-level key given (on
      // a chain every link has that slot, so no link is named).
      std::string key = "event_bytes";
      if (!at.of.count("event_bytes")) {
        if (at.of.count("data_bytes")) key = "data_bytes";
        else if (at.of.count("slot_bytes")) key = "slot_bytes";
      }
      return at.error(key, d.chain ? msg : name + ": " + msg);
    }
    const EndSize& e = end_on[l];
    if (e.bytes() > o.slot_bytes)
      return err("slot_bytes", fmt::format("the end of the stream it carries is {} bytes ({}), "
                                           "more than slot_bytes {}; raise slot_bytes to at least "
                                           "{} or lower streams",
                                           e.bytes(), e.how(), o.slot_bytes, e.bytes()));
  }
  // A process that rewrites END (merging its upstreams', adding its
  // operators') writes it into the slot END came in: one of its receive
  // pool's, as large as its largest input link's.
  for (size_t i = 0; i < d.processes.size(); ++i) {
    const std::vector<size_t> in = d.inputs_of(i);
    if (in.empty()) continue;
    size_t widest = in[0];
    for (size_t l : in)
      if (d.links[l].options.slot_bytes > d.links[widest].options.slot_bytes) widest = l;
    const EndSize& e = end_out[i];
    const uint32_t slot = d.links[widest].options.slot_bytes;
    if (e.bytes() <= slot) continue;
    const std::string msg = fmt::format(
        "process '{}': the end of the stream after its {} is {} bytes ({}), more than its slot of "
        "{} bytes (the largest slot_bytes of its input links); raise slot_bytes of {} to at least "
        "{}",
        d.processes[i].name, in.size() > 1 ? "merge and operators" : "operators", e.bytes(),
        e.how(), slot, link_name(d, widest), e.bytes());
    if (link_at[widest].of.count("slot_bytes") || (!d.chain && !at.of.count("slot_bytes")))
      return link_at[widest].error(fmt::format("links.{}.slot_bytes", widest), "slot_bytes", msg);
    return at.error("slot_bytes", msg);
  }
  // Every link's receiver listens on its own port for each instance. An
  // error names where the port came from: the link's own `port`, else its
  // receiver's `port`, else the receiver (base_port + 100 * its place).
  auto port_at = [&](size_t l) {
    const size_t to = d.links[l].to;
    if (link_at[l].of.count("port")) return link_at[l].at("port");
    if (process_at[to].of.count("port")) return process_at[to].at("port");
    return d.chain ? d.processes[to].source_line : link_at[l].root;
  };
  // One host's ports: a wildcard address (0.0.0.0, ::) takes the port on
  // every address of the host, so it clashes with a specific address there
  // too. Without `hosts:`, or with the local launcher, every process runs on
  // this machine; else on its host (its own namespace or machine).
  auto wildcard = [](const std::string& a) { return a == "0.0.0.0" || a == "::" || a == "[::]"; };
  const bool one_machine = d.hosts.empty() || d.launcher == "local";
  auto host_of = [&](size_t i) { return one_machine ? std::string() : d.processes[i].host_name; };
  struct Listener {
    std::string address;
    size_t link;
    uint32_t instance;
  };
  std::map<std::pair<std::string, uint32_t>, std::vector<Listener>> on_host;
  std::map<std::pair<std::string, uint32_t>, std::pair<size_t, uint32_t>> used;
  for (size_t l = 0; l < d.links.size(); ++l) {
    const size_t to = d.links[l].to;
    const ProcessConfig& t = d.processes[to];
    auto err = [&](const std::string& msg) {
      if (link_at[l].of.count("port"))
        return link_at[l].error(fmt::format("links.{}.port", l), "port", msg);
      if (process_at[to].of.count("port"))
        return process_at[to].error(fmt::format("processes.{}.port", to), "port",
                                    fmt::format("process '{}': {}", t.name, msg));
      return Status::Error(fmt::format("{}: process '{}': {}", t.source_line, t.name, msg));
    };
    for (uint32_t k = 0; k < d.instances; ++k) {
      const uint32_t port = wide_link_port(d, l, k);
      const std::string instance = fmt::format(", instance {}", k);
      if (port > 65535)
        return err(fmt::format("{} would listen on port {}, beyond 65535 (lower base_port, or the "
                               "port of '{}' or of the link)",
                               link_name(d, l, instance), port, t.name));
      auto [it, fresh] = used.emplace(std::make_pair(host_of(to) + " " + t.bind_address(), port),
                                      std::make_pair(l, k));
      if (!fresh) {
        const auto [m, mk] = it->second;
        const std::string first_at = ", at " + port_at(m);
        return err(fmt::format("{} and {} would both listen on {}:{}; give a process or a link its "
                               "own port",
                               link_name(d, m, fmt::format(", instance {}{}", mk, first_at)),
                               link_name(d, l, instance), t.bind_address(), port));
      }
      std::vector<Listener>& here = on_host[{host_of(to), port}];
      for (const Listener& o : here) {
        if (o.address == t.bind_address() ||
            (!wildcard(o.address) && !wildcard(t.bind_address())))
          continue;
        const ProcessConfig& f = d.processes[d.links[o.link].to];
        return err(fmt::format(
            "process '{}' (at {}) listens on {}:{} for {} and process '{}' (at {}) on {}:{} for {}; "
            "a wildcard address takes the port on every address of {}, so the second cannot "
            "bind; give a process or a link its own port",
            f.name, f.source_line, o.address, port,
            link_name(d, o.link, fmt::format(", instance {}, port at {}", o.instance, port_at(o.link))),
            t.name, t.source_line, t.bind_address(), port, link_name(d, l, instance),
            one_machine ? std::string("this machine") : "host '" + host_of(to) + "'"));
      }
      here.push_back({t.bind_address(), l, k});
    }
  }
  return {};
}

}  // namespace sluice::cfg
