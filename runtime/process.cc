#include "runtime/process.h"
#include "runtime/exporter.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "base/file.h"
#include "graph/checkpoint.h"
#include "loadgen/file_source.h"
#include "loadgen/generator.h"
#include "loadgen/kafka_source.h"
#include "sink/kafka_rows.h"
#include "node/node.h"
#include "sink/verifier.h"

namespace sluice {
namespace {

std::atomic<bool> g_stop{false};
// The process's main thread sleeps on this eventfd until an instance is done
// or a signal asks it to stop (write() is async-signal-safe).
std::atomic<int> g_wake_fd{-1};
void on_signal(int) {
  g_stop.store(true);
  const int fd = g_wake_fd.load();
  const uint64_t one = 1;
  if (fd >= 0) (void)!::write(fd, &one, sizeof one);
}

// SIGTERM (sluice-deploy stopping a run that failed or timed out, a
// supervisor that died, `kill`). A node or a sink stops at once, without
// the stream's END (draining is the load generator's SIGINT); a load
// generator first gives its END a second to drain, as Ctrl-C does, and
// stops at once only if it did not. Either way the process writes its
// summary of what it counted; one stopped at once then dies of the
// signal, so whoever waits for it sees the exit it saw before, and one
// that ended in time exits as it would have. (Nodes and sinks died at once
// with no summary: a run whose node-a was killed reported "0 tuples" for
// a sink that had counted 998,070.) A send stage waiting for credit from
// a peer that reads nothing is woken (Instance::stop interrupts its
// links). Stopping may still not take longer than kTermGraceS (a thread
// blocked where nothing wakes it): then, or at a second SIGTERM, the
// signal's own action ends it.
constexpr unsigned kTermGraceS = 2;
std::atomic<bool> g_term{false};
std::atomic<bool> g_stopped_at_once{false};  // the instances were stopped at once for it
void die_of_sigterm(int) {
  signal(SIGTERM, SIG_DFL);
  raise(SIGTERM);
}
void on_term(int sig) {
  if (g_term.exchange(true)) die_of_sigterm(sig);
  signal(SIGALRM, die_of_sigterm);
  alarm(kTermGraceS);
  on_signal(sig);
}

// A load generator that a supervisor may restart, with acks on its links
// (one, or several split by stream or copied) and no operators: every
// 200 ms it writes how many of its events are safe downstream
// (events_safe_downstream: with several links, every event before it
// acknowledged on each link it went to) and its clock to a position file
// in state_dir,
// NAME.K.position.{0,1} (graph/checkpoint.h's format and token, no
// operators); restarted, it makes its stream from there instead of from the
// start (Generator::resume_at). What it had sent after that position comes
// again, and the sink drops what it already counted, as for any replay.
// Without it a load generator killed at 15 s of a 20 s run made its whole
// stream again: 35 s, and 15 s of it duplicates for the sink to drop.
// A file source (source: file) keeps its position the same way, with the
// file's offset and line after those events (FileSource::position).
struct Position {
  Generator* gen = nullptr;  // one of these two
  FileSource* file = nullptr;
  const NetDestination* dest = nullptr;
  Split split = Split::kStream;  // how its events go to its links
  std::vector<uint64_t> acked;   // per link, since this start (scratch)
  std::unique_ptr<SnapshotFiles> files;
  uint64_t base_events = 0;   // where this start resumed
  double base_s = 0;          // and its clock then
  uint64_t written = UINT64_MAX, number = 0;
  bool failed = false;        // a write failed (said once)
  uint32_t first_stream() const { return gen ? gen->first_stream() : file->stream(); }
  uint32_t streams() const { return gen ? gen->streams() : 1; }
};
constexpr double kPositionEveryS = 0.2;
// A claiming sink that nothing upstream waits on: the least time between
// two snapshots it takes because it went idle (build(), checkpoint_hold).
constexpr uint64_t kUnwatchedSinkGapNs = 4000000;
// A sink with a Kafka output: each snapshot first waits for the broker
// (a flush, or a transaction's commit), so fewer of them.
constexpr uint64_t kKafkaSinkGapNs = 10000000;

std::string encode_position(const std::string& token, uint64_t number, uint64_t events, double elapsed_s,
                            const std::string& source = "") {
  SnapshotOut pos;
  pos.put(events);
  pos.put(elapsed_s);
  pos.bytes(source.data(), source.size());  // a file source's: where its file stands
  CheckpointState cs;
  cs.number = number;
  cs.process = pos.data();
  OperatorChain none;
  SnapshotOut scratch;
  std::string out;
  encode_snapshot(token, none, cs, &scratch, &out);
  return out;
}

// A Kafka source and the links it feeds: the main thread commits its
// offsets as they are acknowledged (KafkaSource::commit).
struct KafkaFeed {
  KafkaSource* source = nullptr;
  const NetDestination* dest = nullptr;
  bool acks = false;
  std::vector<uint64_t> acked;  // scratch
};
constexpr double kKafkaCommitEveryS = 0.1;

struct Built;
void commit_kafka(Built& b, bool sync);

struct Built {
  std::vector<std::unique_ptr<Instance>> instances;
  std::vector<Generator*> generators;
  std::vector<KafkaFeed> kafka;
  std::vector<FileSource*> files;
  std::vector<Verifier*> verifiers;
  std::vector<Position> positions;
  std::vector<NetSource*> net_sources;          // per instance, null where none
  std::vector<NetDestination*> net_destinations;  // likewise
};

// Commits each Kafka source's offsets of the events acknowledged on its
// links (without acks: handed on). A failed commit is said, not fatal: the
// next one carries the same offsets or later ones, and a restart would
// only make more events again.
void commit_kafka(Built& b, bool sync) {
  for (KafkaFeed& kf : b.kafka) {
    if (kf.acks && !kf.dest->acked_events(&kf.acked)) continue;
    if (!kf.acks) kf.acked.clear();
    if (Status st = kf.source->commit(kf.acked, sync); !st) spdlog::warn("{}", st.message());
  }
}

// Instance k of process `index`: its receive stage over its upstream links
// (or a generator, a Kafka source, or a publisher's application), its
// operators, its send stage over its downstream links (or a verifier, or a
// subscriber's application).
Status build_instance(const Deployment& d, size_t index, uint32_t k, TransportContext& ctx, Built* b,
                      std::function<void()> on_first, const std::vector<unsigned>& process_cpus,
                      const std::atomic<bool>* stop, bool may_restart, uint32_t restarted, AppEnd* app) {
  const ProcessConfig& pc = d.processes[index];
  {
    Status st;
    OperatorChain chain;
    st = OperatorChain::make(pc.operators, pc.in_schema, &chain);
    if (!st.ok()) return Status::Error(fmt::format("{}: {}", pc.name, st.message()));
    // split: key over several links: the partition operator ends the chain.
    std::shared_ptr<PartitionTally> tally;
    const size_t outs = d.outputs_of(index).size();
    if (pc.role != Role::kSink && pc.split == Split::kKey && outs > 1) {
      tally = std::make_shared<PartitionTally>(static_cast<uint32_t>(outs));
      auto op = make_partition(pc.out_schema, pc.split_key, tally, &st);
      if (!op) return Status::Error(fmt::format("{}: {}", pc.name, st.message()));
      chain.append(&partition_spec(), std::move(op));
    }
    std::unique_ptr<Source> source;
    Generator* remaker = nullptr;
    NetSource* ledger = nullptr;
    const std::vector<size_t> out_links = d.outputs_of(index);
    const bool all_acked = !out_links.empty() && std::all_of(out_links.begin(), out_links.end(), [&](size_t l) {
      return d.link_options(l, k).acks;
    });
    KafkaSource* kafka = nullptr;
    if (is_app(pc.role) != (app != nullptr))
      return Status::Error(fmt::format("{}: a {} is {}", pc.name, role_name(pc.role),
                                       app ? "no application's end" : "an application's end, not a program"));
    if (pc.role == Role::kPublisher) {
      if (!app->source) return Status::Error(fmt::format("{}: a publisher without its source", pc.name));
      source = std::move(app->source);
    } else if (pc.role == Role::kLoadgen && pc.source == "kafka") {
      // Its links keep each event's slot until it is acknowledged (a
      // record cannot be made again from a header).
      auto ks = std::make_unique<KafkaSource>(d, index, k, d.first_stream(index), all_acked, restarted);
      ks->set_links(static_cast<uint32_t>(out_links.size()), pc.split);
      if (out_links.size() > 1 && pc.split == Split::kKey)
        return Status::Error(fmt::format("{}: a Kafka source splits by stream or copies, not by key", pc.name));
      kafka = ks.get();
      source = std::move(ks);
    } else if (pc.role == Role::kLoadgen && pc.source == "file") {
      // Its links keep each event's slot until it is acknowledged: a file's
      // records are not made again from a header.
      auto f = std::make_unique<FileSource>(d, k, d.first_stream(index), pc.out_schema, pc.record_format);
      b->files.push_back(f.get());
      source = std::move(f);
    } else if (pc.role == Role::kLoadgen) {
      // Its events reach its links as made: with acks they may keep them
      // by header (loadgen_backup: headers).
      const bool as_made = chain.size() == 0 && !d.handover_copy;
      auto g = std::make_unique<Generator>(d, k, d.first_stream(index), d.loadgen_schema(index), as_made);
      b->generators.push_back(g.get());
      if (g->remakes()) remaker = g.get();
      source = std::move(g);
    } else {
      std::vector<LinkOptions> in;
      for (size_t l : d.inputs_of(index)) in.push_back(d.link_options(l, k));
      auto ns = NetSource::make(in, ctx, &st, d.handover_copy ? 0 : chain.emit_slots());
      if (!ns) return st;
      ledger = ns.get();
      source = std::move(ns);
    }
    // The send stage works on the received slots, or (handover: copy) on the
    // process stage's copies of them.
    std::unique_ptr<HandoverPool> handover;
    if (d.handover_copy)
      handover = std::make_unique<HandoverPool>(source->pool().slots(), source->pool().slot_bytes());
    SlotPool& send_pool = handover ? handover->pool : source->pool();
    std::unique_ptr<Destination> dest;
    NetDestination* net_dest = nullptr;
    if (pc.role == Role::kSubscriber) {
      if (!app->destination)
        return Status::Error(fmt::format("{}: a subscriber without its destination", pc.name));
      dest = app->destination(send_pool, ledger, &st);
      if (!dest) return st;
    } else if (pc.role == Role::kSink) {
      auto v = std::make_unique<Verifier>(send_pool);
      for (size_t l : d.inputs_of(index)) v->dedupe(v->dedupes() || d.link_options(l, k).acks);
      if (d.burst_events > 0)
        v->track_bursts(static_cast<uint64_t>(d.burst_ms * 1e6),
                        d.burst_head_events ? d.burst_head_events
                                            : std::max<uint32_t>(1, d.burst_events / 10));
      if (!pc.kafka_topic.empty()) {
        // auto: transactions where the sink snapshots, unless the run promises
        // at-least-once only (the idempotent producer, flushed before each snapshot).
        const bool txn = d.kafka_transactions == "on" ||
                         (d.kafka_transactions == "auto" && d.checkpoint_interval_ms &&
                          d.guarantee != Guarantee::kAtLeastOnce);
        if (txn && !d.checkpoint_interval_ms)
          return Status::Error(fmt::format("{}: kafka_transactions: on commits a transaction with each snapshot; "
                                           "set checkpoint_interval_ms",
                                           pc.name));
        auto rows = KafkaRows::make(d, index, k, pc.out_schema, txn, restarted, &st);
        if (!rows) return Status::Error(fmt::format("{}: {}", pc.name, st.message()));
        v->write_kafka(std::move(rows));
      }
      if (!pc.results.empty()) {
        std::string path = pc.results;
        if (auto at = path.find("{instance}"); at != std::string::npos)
          path.replace(at, 10, std::to_string(k));
        RecordFormat format = RecordFormat::kCsv;
        parse_record_format(pc.results_format, &format);  // checked by the parser
        if (st = v->write_results(path, pc.out_schema, format, pc.results_fields); !st) return st;
      }
      b->verifiers.push_back(v.get());
      dest = std::move(v);
    } else {
      std::vector<LinkOptions> out;
      for (size_t l : d.outputs_of(index)) {
        out.push_back(d.link_options(l, k));
        out.back().stop = stop;  // a stop before it connected ends it at once
        if (stop == &g_stop) out.back().abort = &g_term;  // and SIGTERM a reconnect
        if (app) out.back().abort = stop;  // an application's stop is at once
      }
      // A node that only forwards keeps no copies with acks: its upstream's
      // backup covers what it sends (node_backup: upstream, AckLedger).
      // (Operators that keep no state take no snapshots, whatever
      // checkpoint_interval_ms says.)
      const bool no_copies = ledger && forwards_without_copies(d, index, chain);
      auto nd = std::make_unique<NetDestination>(std::move(out), pc.split, send_pool, ctx, tally);
      if (no_copies) {
        ledger->claim_frames();
        nd->set_ledger(ledger);
      }
      if (remaker) nd->set_remaker(remaker);
      net_dest = nd.get();
      if (kafka) b->kafka.push_back({kafka, nd.get(), all_acked, {}});
      if (pc.role == Role::kLoadgen && !kafka && may_restart && chain.size() == 0 && !d.handover_copy && all_acked &&
          (out_links.size() == 1 || pc.split != Split::kKey)) {
        Position pos;
        if (pc.source == "file") pos.file = b->files.back();
        else pos.gen = b->generators.back();
        pos.dest = nd.get();
        pos.split = pc.split;
        pos.files = std::make_unique<SnapshotFiles>(
            fmt::format("{}/{}.{}.position", d.state_dir.empty() ? std::string(".") : d.state_dir, pc.name, k));
        b->positions.push_back(std::move(pos));
      }
      dest = std::move(nd);
    }
    InstanceConfig ic;
    bool first_out = true;
    for (size_t l : d.outputs_of(index)) {
      const LinkOptions lo = d.link_options(l, k);
      ic.emit_capacity = ic.emit_capacity ? std::min(ic.emit_capacity, lo.slot_bytes) : lo.slot_bytes;
      // One send stage serves every downstream link: it holds nothing
      // longer than the tightest of their bounds.
      ic.max_delay_us = first_out ? lo.max_delay_us : std::min(ic.max_delay_us, lo.max_delay_us);
      first_out = false;
    }
    ic.index = k;
    // pin_stages: stage t = 3k + j on CPU t mod n of the list (its own, else
    // the CPUs the process runs on: its host's cores, or all it may use).
    if (pc.pin_stages) {
      const std::vector<unsigned>& cpus = !pc.stage_cpus.empty() ? pc.stage_cpus : process_cpus;
      for (int j = 0; j < Instance::kStages && !cpus.empty(); ++j)
        ic.stage_cpu[j] = static_cast<int>(cpus[(k * Instance::kStages + j) % cpus.size()]);
    }
    // Operator snapshots: a node whose operators keep state that they save,
    // and a sink (its verifier's counts and positions).
    // (An application's state is its own: its ends take no snapshots.)
    if (d.checkpoint_interval_ms && pc.role != Role::kLoadgen && !is_app(pc.role)) {
      bool keeps = false;
      for (size_t i = 0; i < chain.size(); ++i) {
        const Operator::State state = chain.op(i).state();
        if (state == Operator::State::kUnsaved)
          return Status::Error(fmt::format(
              "{}: operator {} ({}) keeps state it cannot snapshot; checkpoint_interval_ms "
              "covers the built-in operators (groupby, correlate, join, moving_avg) only",
              pc.name, i, chain.op(i).name()));
        keeps = keeps || state == Operator::State::kSaved;
      }
      keeps = keeps || pc.role == Role::kSink;
      if (keeps) {
        const std::string dir = d.state_dir.empty() ? std::string(".") : d.state_dir;
        ic.checkpoint_path = fmt::format("{}/{}.{}.snapshot", dir, pc.name, k);
        ic.checkpoint_token = d.run_token;
        ic.checkpoint_ms = d.checkpoint_interval_ms;
        ic.checkpoint_sync = d.snapshot_sync == "on";
        uint32_t least = UINT32_MAX;
        for (size_t l : d.inputs_of(index)) least = std::min(least, d.link_options(l, k).slots);
        // Descriptors held before a snapshot. A node with operators drains
        // and stops for each one: half its input window. A sink does not
        // stop (its cuts, node/node.cc), and what it holds is its
        // upstream's window, shrunk by each hold: an eighth (half cost a
        // fifth of the tuples/s of acks off on 16 cores; an eighth, a few
        // percent, for several times the snapshots).
        // A sink whose links all have acks holds no slots: it claims its
        // input frames (InstanceConfig::input_ledger), so what waits for a
        // snapshot is the acknowledgement alone, and a sender may have 4 x
        // slots frames unacknowledged (Receiver::window). Half its slots
        // apart, the snapshots leave it most of that window, a quarter as
        // many as an eighth would.
        // Where nothing upstream waits on those acknowledgements but for
        // room in its replay log (load generators and nodes that only
        // forward: upstream_waits_for_snapshots), half the window apart
        // and, idle, at most one each 4 ms: each snapshot costs about
        // 40 us of CPU beyond its write (both bounds together; either alone
        // leaves the other to cut as often). A node that snapshots its own
        // state waits for its outputs' acknowledgements, so behind one the
        // sink keeps to 1 ms: at 4 ms the esper example's node-b waits on
        // the sink's snapshots several times as long.
        bool all_acks = true;
        for (size_t l : d.inputs_of(index)) all_acks = all_acks && d.link_options(l, k).acks;
        const bool claims = pc.role == Role::kSink && ledger && !d.handover_copy && all_acks;
        if (claims) {
          ledger->claim_frames();
          ic.input_ledger = ledger;
        }
        const bool unwatched = claims && !upstream_waits_for_snapshots(d, index);
        // A sink with a Kafka output flushes or commits a transaction before
        // each snapshot (a few ms with the broker's round trips): half a
        // window apart, and when idle at most every kKafkaSinkGapNs.
        const bool kafka_out = pc.role == Role::kSink && !pc.kafka_topic.empty() && claims;
        const uint32_t share = chain.empty() && !claims ? 8 : 2;
        const uint32_t hold = unwatched || kafka_out ? least * kAckWindowPerSlot / 2 : least / share;
        ic.checkpoint_hold = std::max<uint32_t>(1, least == UINT32_MAX ? 1 : hold);
        if (unwatched) ic.checkpoint_idle_gap_ns = kUnwatchedSinkGapNs;
        if (kafka_out) ic.checkpoint_idle_gap_ns = std::max(ic.checkpoint_idle_gap_ns, kKafkaSinkGapNs);
        if (pc.role == Role::kSink && k == 0)
          spdlog::info("snapshots every {} input frames and, when idle, at most every {} ms{}",
                       ic.checkpoint_hold,
                       std::min<uint64_t>(ic.checkpoint_idle_gap_ns / 1000000, d.checkpoint_interval_ms),
                       unwatched ? " (nothing upstream waits on them but for room in its replay log)"
                       : claims  ? " (a process upstream waits on them)"
                                 : " (they hold its input slots)");
      }
    }
    ic.wait = d.wait;
    parse_threads(d.threads_of(index), &ic.threads);  // checked by the parser
    ic.ring_slots = d.ring_slots;
    ic.operators = pc.operators;
    b->instances.push_back(std::make_unique<Instance>(ic, std::move(source), std::move(dest),
                                                      std::move(chain), on_first,
                                                      std::move(handover)));
    b->net_sources.push_back(ledger);
    b->net_destinations.push_back(net_dest);
  }
  return {};
}

// Every instance of process `index`, as build_instance makes each.
Status build(const Deployment& d, size_t index, TransportContext& ctx, Built* b,
             std::function<void()> on_first, const std::vector<unsigned>& process_cpus,
             const std::atomic<bool>* stop, bool may_restart, uint32_t restarted) {
  for (uint32_t k = 0; k < d.instances; ++k)
    if (Status st = build_instance(d, index, k, ctx, b, on_first, process_cpus, stop, may_restart, restarted,
                                   nullptr);
        !st)
      return st;
  return {};
}

// Started again after a death (--restarted), without snapshots: what the
// process it replaces counted or kept in its operators died with it, so a
// sink would count every tuple before as lost and a group-by would start
// its groups empty. Refused (exit 2: the supervisor does not try again),
// not run to a wrong result.
Status refuse_restart(const Deployment& d, size_t index, uint32_t restarted) {
  if (!restarted) return {};
  if (Status st = restart_loses_state(d, index); !st)
    return Status::Error(
        fmt::format("{}: started again after a death, but {}", d.processes[index].name, st.message()));
  return {};
}

// --starts FILE: this process's starts, counted in FILE, for a supervisor
// that starts it again without saying so. Kubernetes restarts a container
// in its pod, whose emptyDir (and FILE on it) outlives the container: a
// start that finds N in the file is restart N (written atomically: a death
// mid-write leaves the old count or the new one).
Status count_start(const std::string& path, uint32_t* restarted) {
  uint64_t before = 0;
  if (std::ifstream in(path); in) {
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    size_t used = 0;
    try {
      before = std::stoull(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (text.empty() || used != text.size() || before >= UINT32_MAX)
      return Status::Error(fmt::format(
          "--starts {}: holds '{}', not a count of starts; remove it to start afresh", path,
          text.substr(0, 40)));
  } else if (std::error_code ec; std::filesystem::exists(path, ec)) {
    return Status::Error(fmt::format("--starts {}: cannot read it", path));
  }
  if (Status st = write_atomically(path, std::to_string(before + 1) + "\n"); !st)
    return Status::Error(fmt::format("--starts {}: {}", path, st.message()));
  *restarted = std::max<uint32_t>(*restarted, static_cast<uint32_t>(before));
  return {};
}

}  // namespace

Status build_app_instance(const Deployment& d, size_t index, uint32_t instance, TransportContext& ctx,
                          AppEnd end, std::function<void()> on_first, const std::atomic<bool>* stop,
                          AppInstance* out) {
  if (index >= d.processes.size() || !is_app(d.processes[index].role))
    return Status::Error("build_app_instance: not an application's end");
  if (instance >= d.instances)
    return Status::Error(fmt::format("{}: instance {} of {} (instances: {})", d.processes[index].name,
                                     instance, d.instances, d.instances));
  Built b;
  if (Status st = build_instance(d, index, instance, ctx, &b, std::move(on_first), thread_cpu_list(), stop,
                                 false, 0, &end);
      !st)
    return st;
  out->instance = std::move(b.instances.front());
  out->in = b.net_sources.front();
  out->out = b.net_destinations.front();
  return {};
}

Status run_process(const Deployment& d, size_t index, const std::atomic<bool>* stop,
                   ProcessSummary* out, const std::string& bursts_path, uint32_t restarted,
                   bool may_restart) {
  const ProcessConfig& pc = d.processes[index];
  ProcessSummary& s = *out;
  s.name = pc.name;
  s.role = role_name(pc.role);
  s.instances = d.instances;
  s.cores = d.cores_of(index);
  s.clock_ghz = d.clock_ghz;
  s.peak_watts = d.peak_watts;

  // The measured interval starts at the first event any instance sees.
  std::atomic<bool> started{false};
  std::mutex start_mu;
  double t0 = 0;
  CpuTimes cpu0;
  std::atomic<Exporter*> exporter_seen{nullptr};
  auto on_first = [&] {
    if (started.exchange(true)) return;
    std::lock_guard lk(start_mu);
    t0 = now_s();
    cpu0 = CpuTimes::process();
    if (Exporter* e = exporter_seen.load()) e->measure_started();
  };

  // Pinned to its host's cores before any thread starts (every thread it
  // makes inherits them). The local and netns launchers start it pinned
  // already; over ssh this is what pins it.
  if (const HostConfig* h = d.host_of(index); h && !h->cpus.empty()) {
    if (Status pin = pin_thread(h->cpus); !pin) {
      s.ok = false;
      s.error = fmt::format("host '{}' cores {}: {}", h->name, cpu_list_name(h->cpus), pin.message());
      return Status::Error(s.error);
    }
  }
  const std::vector<unsigned> process_cpus = thread_cpu_list();

  TransportContext ctx;
  Built b;
  Status st;
  // The metrics endpoint first (a port in use fails the set-up before any
  // link is made); it reads the instances, so it goes before them (~Built
  // runs after ~Exporter: `exporter` is declared after `b`).
  std::unique_ptr<Exporter> exporter;
  if (d.metrics) {
    const ExporterIdentity id{pc.name, s.role, s.cores, d.clock_ghz, d.peak_watts};
    const uint16_t port = d.metrics_port ? static_cast<uint16_t>(d.metrics_port + index) : 0;
    // Loopback unless the file sets metrics_address ("host": the address its
    // links bind, so a Prometheus that reaches the host reaches its metrics).
    const std::string& address = metrics_bind_address(d, pc);
    exporter = Exporter::start(address, port, id, &st);
    if (!exporter) {
      s.ok = false;
      s.error = st.message();
      return st;
    }
  }
  st = build(d, index, ctx, &b, on_first, process_cpus, stop, may_restart || restarted > 0, restarted);
  if (!st.ok()) {
    s.ok = false;
    s.error = st.message();
    return st;
  }
  // A load generator's position (Position): read back when restarted. A
  // file that cannot be read is no wrong result here, only a longer one:
  // the stream is made again from its start and the sinks drop what they
  // already counted, as before positions.
  for (Position& p : b.positions) {
    if (Status ps = p.files->prepare(); !ps) {
      spdlog::warn("{}; without a position a restart makes the stream again from its start", ps.message());
      p.failed = true;
      continue;
    }
    if (!restarted) continue;
    std::string bytes, where;
    bool found = false;
    Status rs = p.files->read_newest(d.run_token, &bytes, &where, &found);
    OperatorChain none;
    CheckpointState cs;
    bool stale = false;
    if (rs && found) rs = decode_snapshot(bytes.data(), bytes.size(), where, d.run_token, none, &cs, &stale);
    SnapshotIn pos(cs.process.data(), cs.process.size());
    const uint64_t events = pos.get<uint64_t>();
    const double elapsed = pos.get<double>();
    if (rs && found && !stale && (!pos.ok() || (p.gen && pos.left() != 0)))
      rs = Status::Error(fmt::format("{}: a position of {} bytes, not 16", where, cs.process.size()));
    if (rs && found && !stale && p.file)
      if (Status fs = p.file->resume(events, elapsed, pos); !fs)
        rs = Status::Error(fmt::format("{}: {}", where, fs.message()));
    if (!rs) {
      spdlog::warn("{}; making the stream again from its start (the sinks drop what they already counted)",
                   rs.message());
      continue;
    }
    if (!found || stale) {
      spdlog::info("no position of this run in {}.0 or .1: making the stream again from its start",
                   p.files->path());
      continue;
    }
    if (p.gen) p.gen->resume_at(events, elapsed);
    p.base_events = p.written = events;
    p.base_s = p.gen ? p.gen->resumed_s() : elapsed;
    p.number = cs.number;
    spdlog::info("resuming from {}: its first {} events were acknowledged downstream; making the "
                 "stream from there, {:.3f} s into it",
                 where, events, p.base_s);
  }
  if (exporter) {
    std::vector<const Instance*> watched;
    for (auto& in : b.instances) watched.push_back(in.get());
    exporter->watch(std::move(watched));
    exporter_seen.store(exporter.get());
    s.metrics_url = exporter->url();
    spdlog::info("metrics at {}", s.metrics_url);
  }
  // The main thread sleeps until an instance is done, a signal comes or a
  // progress line is due: no timer of its own while the pipeline idles (a
  // 20 ms poll here woke every process 50 times a second, and on a small
  // host each wake-up can delay a tuple on its way through).
  Fd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake.valid()) {
    s.ok = false;
    s.error = fmt::format("eventfd failed: {}", strerror(errno));
    return Status::Error(s.error);
  }
  for (auto& in : b.instances) in->set_done_fd(wake.get());
  if (stop == &g_stop) g_wake_fd.store(wake.get());
  struct Unpublish {
    const std::atomic<bool>* stop;
    ~Unpublish() {
      if (stop == &g_stop) g_wake_fd.store(-1);
    }
  } unpublish{stop};
  for (auto& in : b.instances) in->start();

  const double start = now_s();
  double last_print = start, last_position = start, last_commit = start;
  ProgressCounts last;
  const bool has_in = !d.inputs_of(index).empty(), has_out = !d.outputs_of(index).empty();
  bool stopping = false;
  double term_at = -1;  // SIGTERM: when the instances stop at once
  for (;;) {
    bool all_done = true;
    for (auto& in : b.instances) all_done = all_done && in->done();
    if (all_done) break;
    if (stop && stop->load() && !stopping) {
      stopping = true;
      for (auto* g : b.generators) g->stop();
      for (auto& kf : b.kafka) kf.source->stop();
      for (auto* f : b.files) f->stop();
      if (!b.generators.empty() || !b.kafka.empty() || !b.files.empty()) {
        spdlog::info("stopping: the stream ends after the events already made");
        // SIGTERM: END has a second to drain (it cannot if what is
        // downstream died), then the generator stops as a node does.
        if (stop == &g_stop && g_term.load()) term_at = now_s() + 1.0;
      } else if (stop == &g_stop && g_term.load()) {
        term_at = now_s();
      }
    }
    if (term_at >= 0 && now_s() >= term_at) {
      term_at = -1;
      g_stopped_at_once.store(true);
      spdlog::info("stopping (SIGTERM): at once, with a summary of what was counted");
      for (auto& in : b.instances)
        in->stop(Status::Error("stopped by SIGTERM before the stream's END; the counts are up to then"));
    }
    int timeout_ms = -1;
    if (d.progress_s > 0) timeout_ms = std::max(1, int((last_print + d.progress_s - now_s()) * 1e3) + 1);
    // A stop flag that no signal handler sets is looked at now and then.
    if (stop && stop != &g_stop && !stopping && (timeout_ms < 0 || timeout_ms > 20)) timeout_ms = 20;
    if (term_at >= 0) {
      const int left = std::max(1, int((term_at - now_s()) * 1e3) + 1);
      timeout_ms = timeout_ms < 0 ? left : std::min(timeout_ms, left);
    }
    if (!b.positions.empty()) {
      const int left = std::max(1, int((last_position + kPositionEveryS - now_s()) * 1e3) + 1);
      timeout_ms = timeout_ms < 0 ? left : std::min(timeout_ms, left);
    }
    if (!b.kafka.empty()) {
      const int left = std::max(1, int((last_commit + kKafkaCommitEveryS - now_s()) * 1e3) + 1);
      timeout_ms = timeout_ms < 0 ? left : std::min(timeout_ms, left);
    }
    pollfd pfd{wake.get(), POLLIN, 0};
    if (::poll(&pfd, 1, timeout_ms) > 0) {
      uint64_t n;
      (void)!::read(wake.get(), &n, sizeof n);
    }
    double now = now_s();
    if (d.progress_s > 0 && now - last_print >= d.progress_s) {
      ProgressCounts now_counts;
      LiveInstance li;
      for (auto& in : b.instances) {
        in->live(&li);
        now_counts.events_in += li.in.events;
        now_counts.events_out += li.out.events;
        now_counts.bytes_in += li.in.bytes;
        now_counts.bytes_out += li.out.bytes;
      }
      spdlog::info("{}", progress_line(now - start, now - last_print, now_counts, last, has_in, has_out));
      last_print = now;
      last = now_counts;
    }
    if (!b.kafka.empty() && now - last_commit >= kKafkaCommitEveryS) {
      last_commit = now;
      commit_kafka(b, false);
    }
    if (!b.positions.empty() && now - last_position >= kPositionEveryS) {
      last_position = now;
      double ran = 0;
      if (started) {
        std::lock_guard lk(start_mu);
        ran = now - t0;
      }
      for (Position& p : b.positions) {
        if (p.failed || !p.dest->acked_events(&p.acked)) continue;
        const uint64_t at =
            events_safe_downstream(p.split, p.first_stream(), p.streams(), p.base_events, p.acked);
        if (at == p.written) continue;
        SnapshotOut where;
        if (p.file && !p.file->position(at, &where)) continue;  // not kept: the next one will be
        ++p.number;
        if (Status w = p.files->write(p.number, encode_position(d.run_token, p.number, at, p.base_s + ran, where.data()));
            !w) {
          spdlog::warn("position not written: {}; a restart would make the stream again from its start",
                       w.message());
          p.failed = true;
          continue;
        }
        p.written = at;
      }
    }
  }
  for (auto& in : b.instances) in->join();
  // The last acknowledgements (END's included) are in: the last commit
  // waits for the broker's answer.
  commit_kafka(b, true);
  const double t1 = now_s();
  const CpuTimes cpu1 = CpuTimes::process();

  LatencyHistogram lat;
  std::string errors;
  for (auto& in : b.instances) {
    LiveInstance li;
    in->live(&li);
    s.events_in += li.in.events;
    s.tuples_in += li.in.tuples;
    s.bytes_in += li.in.bytes;
    s.events_out += li.out.events;
    s.tuples_out += li.out.tuples;
    s.bytes_out += li.out.bytes;
    in->report(s);
    Status ist = in->status();
    if (!ist.ok()) errors += (errors.empty() ? "" : "; ") + ist.message();
  }
  // The stream ended whole: no restart will read the positions.
  if (errors.empty())
    for (Position& p : b.positions) p.files->remove();
  std::optional<BurstStats> bursts;
  for (auto* v : b.verifiers) {
    lat.merge(v->latency());
    if (!v->counts().end_seen && errors.empty()) errors = "stream ended without END";
    if (const BurstStats* bs = v->bursts()) {
      if (!bursts) bursts.emplace(*bs);
      else bursts->merge(*bs);
    }
  }
  if (bursts) {
    bursts->report(s);
    if (!bursts_path.empty()) {
      std::ofstream f(bursts_path);
      f << bursts->histogram_tsv();
      if (!f) spdlog::error("cannot write the burst histograms to {}", bursts_path);
    }
  }
  // A load generator counts what it makes as events out, not in.
  if (pc.role == Role::kLoadgen) {
    s.events_in = s.tuples_in = s.bytes_in = 0;
  }
  if (pc.role == Role::kSink) {
    s.events_out = s.tuples_out = s.bytes_out = 0;
  }
  if (started) {
    s.wall_s = t1 - t0;
    CpuTimes c = cpu1 - cpu0;
    s.user_s = c.user_s;
    s.sys_s = c.sys_s;
    s.ctx_voluntary = c.voluntary;
    s.ctx_involuntary = c.involuntary;
  }
  s.latency_p50_us = lat.percentile(50) / 1e3;
  s.latency_p99_us = lat.percentile(99) / 1e3;
  s.latency_max_us = lat.max() / 1e3;
  s.rss_max_bytes = rss_max_bytes();
  s.cpus = thread_cpus();
  s.last_cpu = last_cpu(gettid());
  s.compute();
  s.ok = errors.empty();
  s.error = errors;
  return s.ok ? Status() : Status::Error(errors);
}

// Started by sluice-deploy as its child (SLUICE_SUPERVISOR_PID, which its
// local and netns launchers set): when the supervisor dies, even by SIGKILL
// with no chance to stop anything, the kernel sends this process SIGTERM,
// which ends its part of the stream as Ctrl-C does. Without it the
// processes ran on, unsupervised, holding their ports (and, with netns,
// their namespaces) for the rest of their duration. A supervisor already
// gone by now is an error. ok without the variable (started by hand, over
// ssh or srun, by Kubernetes).
namespace {
Status follow_supervisor() {
  const char* v = std::getenv(kSupervisorPidEnv);
  if (!v || !*v) return {};
  char* end = nullptr;
  const long want = std::strtol(v, &end, 10);
  if (*end || want <= 1) return Status::Error(fmt::format("{}='{}' is not a pid", kSupervisorPidEnv, v));
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0)
    return Status::Error(fmt::format("prctl(PR_SET_PDEATHSIG): {}", std::strerror(errno)));
  if (getppid() != static_cast<pid_t>(want))
    return Status::Error(fmt::format("started by sluice-deploy (pid {}), which is gone: not running "
                                     "without its supervisor",
                                     want));
  return {};
}

// Started over ssh or srun (SLUICE_LIFELINE=stdin, which those launchers
// set): the program is no child of sluice-deploy, so no PR_SET_PDEATHSIG;
// its stdin is passed on by the ssh client or srun from a pipe that
// sluice-deploy holds and never writes to (deploy/executor.h, Lifeline).
// When sluice-deploy dies, even by SIGKILL, the pipe closes, the client
// passes the end of file on, and this thread sends the process SIGTERM.
// Without it the remote programs ran on for the rest of their duration,
// holding their ports on the hosts, and the next run failed there.
// Checked first thing; the thread starts once the log has its name (its line
// must not race the logger's set-up: a closed stdin is read at once).
Status check_lifeline() {
  const char* v = std::getenv(kLifelineEnv);
  if (!v || !*v || std::string_view(v) == "stdin") return {};
  return Status::Error(fmt::format("{}='{}': the only value is 'stdin'", kLifelineEnv, v));
}
void follow_lifeline() {
  const char* v = std::getenv(kLifelineEnv);
  if (!v || std::string_view(v) != "stdin") return;
  std::thread([] {
    char buf[256];
    for (;;) {
      const ssize_t r = ::read(0, buf, sizeof buf);
      if (r > 0 || (r < 0 && errno == EINTR)) continue;
      break;
    }
    spdlog::warn("stdin (sluice-deploy's connection, {}=stdin) closed: its supervisor is gone; "
                 "stopping",
                 kLifelineEnv);
    ::kill(::getpid(), SIGTERM);
  }).detach();
}
}  // namespace

int process_main(Role role, int argc, char** argv) {
  // First thing: a Ctrl-C (or sluice-deploy down) that comes while the file
  // is still being read must end the stream, not kill the load generator
  // before it has a log line (seen with `down` 100 ms after `up`).
  if (role == Role::kLoadgen) {
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_term);
  }
  for (Status (*follow)() : {follow_supervisor, check_lifeline}) {
    if (Status st = follow(); !st) {
      spdlog::error("{}", st.message());
      return 1;
    }
  }
  const std::string prog = fmt::format("sluice-{}", role_name(role));
  CLI::App app{fmt::format(
      "{}: the {} of a sluice pipeline.\n"
      "Reads its settings from a deployment file (as sluice-deploy starts it), or runs "
      "standalone from flags.\n"
      "Exit status:\n"
      "  0  ok, or --help\n"
      "  1  the run failed\n"
      "  2  a bad option or value, a deployment file that cannot be read or is invalid,\n"
      "     no such process in it, an unreadable --starts file, or (--restarted, --starts)\n"
      "     state a restart cannot bring back{}",
      prog, role == Role::kLoadgen ? "load generator" : role == Role::kSink ? "sink" : "node",
      std::string(role == Role::kSink ? "\n  3  the stream ended, and the sink counted lost, duplicated or corrupt tuples"
                                      : "") +
          (role == Role::kLoadgen
               ? "\nSignals: SIGINT ends the stream after the events already made (END drains through);\n"
                 "SIGTERM does too, but stops at once after a second; either way the summary is written."
               : "\nSignals: SIGTERM stops it at once, without the stream's END: it writes its summary of\n"
                 "what it counted and then dies of the signal (a second SIGTERM, or 2 s, ends it at once)."))};
  app.failure_message([prog](const CLI::App*, const CLI::Error& e) {
    return fmt::format("{}: {}\nRun with --help for more information.\n", prog, e.what());
  });
  std::string deployment, process, summary, listen, connect;
  std::vector<std::string> sets;
  app.add_option("--deployment", deployment, "deployment file (YAML)");
  app.add_option("--process", process, "this process's name in the deployment file")
      ->needs("--deployment");
  app.add_option("--set", sets, "override a deployment key: key=value (repeatable)");
  app.add_option("--summary", summary, "write the JSON summary to this file");
  uint32_t restarted = 0;
  app.add_option("--restarted", restarted,
                 "times this process was started again after a death (sluice-deploy's restart: "
                 "on-failure sets it); without snapshots a restarted sink or stateful node refuses to run; "
                 "a restarted load generator with acks resumes from its position in the state directory");
  std::string starts;
  app.add_option("--starts", starts,
                 "count this process's starts in FILE: a start after the first is a restart, as with "
                 "--restarted (for a supervisor that restarts it without saying so: Kubernetes, "
                 "systemd; render --k8s sets it)");
  if (role != Role::kLoadgen)
    app.add_option("--listen", listen, "standalone: HOST:PORT to receive on");
  if (role != Role::kSink)
    app.add_option("--connect", connect, "standalone: HOST:PORT of the downstream process");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help prints and exits 0; any other parse error exits 2, like every
    // other bad input below (not CLI11's own codes, 105 and up).
    return app.exit(e) == 0 ? 0 : 2;
  }
  spdlog::set_default_logger(spdlog::stderr_color_mt(process.empty() ? prog : process));
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e [%n] %l: %v");
  follow_lifeline();

  Deployment d;
  Status st;
  if (!deployment.empty()) {
    st = load_deployment(deployment, sets, &d);
  } else {
    // Standalone: a two- or three-process chain around this one, from flags.
    auto split = [](const std::string& hp, std::string* host, std::string* port) {
      auto c = hp.rfind(':');
      if (c == std::string::npos) return false;
      *host = hp.substr(0, c);
      *port = hp.substr(c + 1);
      return !host->empty() && !port->empty();
    };
    std::string lh, lp, ch, cp;
    if (role != Role::kLoadgen && !split(listen, &lh, &lp)) {
      fmt::print(stderr, "{}: give --deployment FILE --process NAME, or --listen HOST:PORT\n", prog);
      return 2;
    }
    if (role != Role::kSink && !split(connect, &ch, &cp)) {
      fmt::print(stderr, "{}: give --deployment FILE --process NAME, or --connect HOST:PORT\n", prog);
      return 2;
    }
    // No supervisor restarts a program started by hand: it promises nothing
    // unless --set guarantee=... (or acks=on) says otherwise, and writes no
    // snapshots into the directory it was started in.
    std::string yaml = "guarantee: none\nprocesses:\n";
    if (role != Role::kLoadgen) yaml += "  - {name: upstream, role: loadgen}\n";
    yaml += fmt::format("  - {{name: {}, role: {}{}}}\n", role_name(role), role_name(role),
                        role != Role::kLoadgen ? fmt::format(", host: '{}', port: {}", lh, lp) : "");
    if (role != Role::kSink)
      yaml += fmt::format("  - {{name: downstream, role: sink, host: '{}', port: {}}}\n", ch, cp);
    st = parse_deployment(yaml, "(command line)", sets, &d);
    // Standalone programs chain without a shared file: each sees only its own
    // links, so every link is link 0 and a sender does not name the receiver.
    d.standalone = true;
    process = role_name(role);
  }
  if (!st.ok()) {
    spdlog::error("{}", st.message());
    return 2;
  }
  if (process.empty()) {
    for (const auto& p : d.processes)
      if (p.role == role) {
        if (!process.empty()) {
          spdlog::error("{}: several {} processes in {}; name one with --process", prog,
                        role_name(role), d.file);
          return 2;
        }
        process = p.name;
      }
  }
  int index = d.process_index(process);
  if (index < 0) {
    spdlog::error("no process '{}' in {}", process, d.file);
    return 2;
  }
  if (d.processes[index].role != role) {
    spdlog::error("process '{}' in {} has role {}, but this is {}", process, d.file,
                  role_name(d.processes[index].role), prog);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  signal(SIGTERM, on_term);

  ProcessSummary s;
  // A sink's burst histograms go beside its summary (NAME.json -> NAME.bursts.tsv).
  std::string bursts_path;
  if (!summary.empty() && role == Role::kSink) {
    bursts_path = summary;
    if (bursts_path.size() > 5 && bursts_path.ends_with(".json")) bursts_path.resize(bursts_path.size() - 5);
    bursts_path += ".bursts.tsv";
  }
  // A sink's relative `results:` file goes beside its summary, in the run's
  // directory, not wherever the program happened to be started.
  if (std::string& r = d.processes[index].results;
      !summary.empty() && !r.empty() && r.front() != '/') {
    r = (std::filesystem::path(summary).parent_path() / r).string();
  }
  // Snapshots go beside the summary, in the run's directory, unless the file
  // names a state_dir; the summary's path names the run they belong to.
  // With run_id too: a run directory used again (sluice-deploy run
  // --run-dir X twice) held the last run's final snapshots under the same
  // path, and the next run's sink restored them as its own.
  d.run_token = d.run_id;
  if (!summary.empty()) {
    d.run_token += (d.run_id.empty() ? "" : " ") + std::filesystem::absolute(summary).string();
    if (d.state_dir.empty()) d.state_dir = std::filesystem::path(summary).parent_path().string();
  }
  if (d.state_dir.empty()) d.state_dir = ".";
  if (!starts.empty()) {
    if (st = count_start(starts, &restarted); !st.ok()) {
      spdlog::error("{}", st.message());
      return 2;
    }
    if (restarted) spdlog::info("restart {} (--starts {})", restarted, starts);
  }
  if (st = refuse_restart(d, static_cast<size_t>(index), restarted); !st.ok()) {
    spdlog::error("{}", st.message());
    return 2;
  }
  st = run_process(d, static_cast<size_t>(index), &g_stop, &s, bursts_path, restarted,
                   restarts_on_failure(d, d.processes[index]) || !starts.empty());
  // Whole or not at all: a process killed while writing it (at the end of
  // a run, once the sinks have ended) left a torn file the supervisor
  // could not read, and failed the run for it.
  if (!summary.empty())
    if (Status w = write_atomically(summary, s.to_json() + "\n"); !w)
      spdlog::error("cannot write summary to {}: {}", summary, w.message());
  if (g_stopped_at_once.load()) {
    spdlog::info("stopped by SIGTERM: summary written; ending as the signal does");
    if (summary.empty()) fmt::print("{}\n", s.to_json());
    std::fflush(stdout);
    spdlog::shutdown();
    die_of_sigterm(SIGTERM);
  }
  if (g_term.load()) alarm(0);  // it ended in time, as it would have without the signal
  // A load generator asked to end its stream (Ctrl-C, sluice-deploy down)
  // before it had begun it, still connecting: it sent nothing, so nothing
  // is lost. Its own exit code (kExitStoppedBeforeStream), so that the
  // supervisor stops the rest, which wait for a stream that never comes,
  // instead of failing the run (seen: `down` 20 ms after `up`).
  if (!st.ok() && role == Role::kLoadgen && g_stop.load() && !g_term.load() && s.events_out == 0) {
    spdlog::warn("stopped before its stream began (asked to stop while it connected): {}", st.message());
    return kExitStoppedBeforeStream;
  }
  if (!st.ok()) {
    spdlog::error("{}", st.message());
    return 1;
  }
  spdlog::info("done: {} events in, {} out, {:.3f} s, CPE_p {:.0f}, lost {}, duplicated {}, corrupt {}",
               s.events_in, s.events_out, s.wall_s, s.cpe_p, s.lost, s.duplicated, s.corrupt);
  if (summary.empty()) fmt::print("{}\n", s.to_json());
  // A verdict, not a failure: the stream ran to its end (the supervisor
  // does not restart a process that exits 3).
  return (s.lost || s.duplicated || s.corrupt) ? 3 : 0;
}

}  // namespace sluice
