#include "loadgen/kafka_source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "base/fd.h"
#include "kafka/client.h"

namespace sluice {

// ------------------------------------------------------------ the source

namespace {

constexpr uint64_t kShortAfterNs = 2'000'000;  // an event goes out short after 2 ms without its partition
constexpr int kPollMs = 100;                    // a poll with nothing open: wake now and then for stop()
constexpr size_t kBatch = 256;                  // records taken from librdkafka at once
constexpr size_t kSentPerLink = 16384;          // events handed on and not yet committed, per link
constexpr int kQueuedRecords = 2'000'000;       // records librdkafka prefetches, at most (start())
constexpr int kQueuedKiB = 256 * 1024;          // and their bytes
constexpr char kEndsMagic[8] = {'S', 'L', 'K', 'E', 'N', 'D', 'S', '1'};

// One event's end as the ring file keeps it.
struct EndEntry {
  uint32_t stream;   // index among this source's streams
  uint32_t tuples;
  int64_t last_offset;
  uint64_t event_seq;
};
static_assert(sizeof(EndEntry) == 24);
struct EndsHeader {
  char magic[8];
  uint64_t token;
  uint64_t capacity;
};

uint64_t fnv(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

struct KafkaSource::Impl {
  // Settings.
  std::string name, topic, group, bootstrap, token, what;
  uint32_t instance = 0, instances = 1, first_stream = 0, streams = 0, restarted = 0;
  uint32_t tuple_bytes = 0, per_event = 0;
  uint64_t limit = 0;  // tuples; 0: duration_s
  double duration_s = 0;
  bool acks = false, reject = false;
  std::string ends_path;
  RecordDecoder decoder;  // codec/record.h; ok once made
  bool decodes = false;
  EventHeader header{};
  Wait wait = Wait::kBlock;

  kafka::Handle rk;
  rd_kafka_queue_t* queue = nullptr;

  // Per stream (one partition each).
  struct Stream {
    int32_t partition = 0;
    uint64_t next_seq = 0, next_event = 0;
    int64_t start_offset = RD_KAFKA_OFFSET_BEGINNING;
    // The event being filled.
    uint32_t slot = kNoSlot, count = 0;
    int64_t first_offset = -1, last_offset = -1;
    uint64_t opened_ns = 0;
    uint64_t replay_tuples = 0;  // tuples of the recorded events still to make again
  };
  std::vector<Stream> s;
  std::vector<int32_t> stream_of;  // partition -> stream index, -1: not ours

  // Records taken from librdkafka and not yet placed (a full pool or a full
  // `out` stopped the last call).
  rd_kafka_message_t* msgs[kBatch];
  size_t msg_at = 0, msg_n = 0;

  // The ring of event ends (mmap'd; see the header).
  EndEntry* ends = nullptr;
  size_t ends_cap = 0, ends_map_bytes = 0;
  void* ends_map = nullptr;

  // Events handed on and not yet committed, per link (a ring each).
  struct Sent {
    uint32_t stream;
    int64_t next_offset;
    uint64_t next_event, next_seq;
  };
  std::mutex mu;
  std::vector<std::vector<Sent>> sent;   // [link][i % kSentPerLink]
  std::vector<uint64_t> pushed, popped;  // per link
  std::vector<Sent> latest;              // per stream: the last acknowledged (main thread)
  std::vector<uint8_t> dirty;            // per stream: latest not committed yet
  uint32_t links = 1;
  Split split = Split::kStream;

  uint64_t taken = 0;     // tuples placed in events, over every life of the stream
  uint64_t reserved = 0;  // tuples of recorded events still to make again
  uint64_t rejected = 0, records = 0, commits = 0, broker_waits = 0;
  uint64_t last_warn_ns = 0;
  double t0 = -1;
  bool ended = false, started = false;
  std::atomic<uint64_t> handed{0};  // events handed on (without acks: what commit() takes)

  ~Impl() {
    for (size_t i = msg_at; i < msg_n; ++i) rd_kafka_message_destroy(msgs[i]);
    if (queue) rd_kafka_queue_destroy(queue);
    if (ends_map) munmap(ends_map, ends_map_bytes);
  }

  Status open_ends(size_t slots);
  const EndEntry* recorded(uint32_t st, uint64_t event_seq) const {
    if (!ends) return nullptr;
    const EndEntry& e = ends[(event_seq * streams + st) % ends_cap];
    return e.stream == st && e.event_seq == event_seq && e.tuples ? &e : nullptr;
  }
  Status take_committed();
  Descriptor close(SlotPool& pool, uint32_t i);
  void push_sent(uint32_t i);
  bool place(SlotPool& pool, rd_kafka_message_t* msg, std::span<Descriptor> out, size_t* k, Status* st);
  size_t close_short(SlotPool& pool, std::span<Descriptor> out, size_t k, uint64_t older_than_ns,
                     bool replaying_too = false);
  void warn_broker(const std::string& text);
  std::string metadata(const Stream& st) const {
    return fmt::format("sluice1 {:x} {} {}", fnv(token), st.next_event, st.next_seq);
  }
};

KafkaSource::KafkaSource(const Deployment& d, size_t index, uint32_t instance, uint32_t first_stream, bool acks,
                         uint32_t restarted)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  const ProcessConfig& pc = d.processes[index];
  m.name = pc.name;
  m.topic = pc.kafka_topic;
  m.bootstrap = d.kafka_bootstrap;
  m.group = d.kafka_group.empty() ? "sluice-" + (d.run_id.empty() ? std::string("norun") : d.run_id) : d.kafka_group;
  m.token = d.run_token;
  m.instance = instance;
  m.instances = d.instances;
  m.first_stream = first_stream;
  m.streams = d.streams;
  m.restarted = restarted;
  m.tuple_bytes = pc.out_schema.tuple_bytes();
  m.per_event = tuples_per_event(m.tuple_bytes, d.event_bytes);
  m.limit = d.tuples;
  m.duration_s = d.duration_s;
  m.acks = acks;
  m.reject = d.bad_records == "reject";
  m.wait = d.wait;
  m.what = fmt::format("the Kafka source {} (topic {})", pc.name, m.topic);
  m.ends_path = fmt::format("{}/{}.{}.kafka-ends", d.state_dir.empty() ? std::string(".") : d.state_dir, pc.name,
                            instance);
  m.header.magic = kEventMagic;
  m.header.version = kWireVersion;
  m.header.header_bytes = kEventHeaderBytes;
  m.header.tuple_bytes = m.tuple_bytes;
  m.header.data_bytes = 0;
  m.header.flags = 0;
  // Every field after seq, in the schema's order: a record has no header.
  RecordFormat format = RecordFormat::kCsv;
  Status st = parse_record_format(pc.record_format, &format)
                  ? RecordDecoder::make(pc.out_schema, format, {}, &m.decoder)
                  : Status::Error(fmt::format("record_format '{}'", pc.record_format));
  // The pool: 1 MiB of events queued, and with acks each link's window of
  // unacknowledged frames (a replay sends the slot again).
  const size_t ev = event_wire_bytes(m.tuple_bytes, m.per_event);
  size_t window = 0;
  for (const LinkConfig& l : d.links)
    if (l.from == index && l.options.acks) window = std::max<size_t>(window, size_t{l.options.slots} * kAckWindowPerSlot);
  const size_t slots = std::min<size_t>(d.loadgen_slots, std::max<size_t>(16, (1u << 20) / ev) + window);
  pool_ = std::make_unique<SlotPool>(std::max<size_t>(slots, 2 * size_t{m.streams} + 1),
                                     std::max(ev, 8 + size_t{m.streams} * sizeof(EndOfStreamEntry)));
  m.decodes = st.ok();
  m.what = st ? m.what : m.what + ": " + st.message();
}

KafkaSource::~KafkaSource() = default;

// The ring file of event ends: a header with the run's token and the
// capacity, then `cap` entries, mapped shared (a store is in the page cache
// at once: it survives the process's death, not the machine's).
Status KafkaSource::Impl::open_ends(size_t slots) {
  ends_cap = std::max<size_t>(1024, size_t{streams} * 2 * (kSentPerLink + slots));
  ends_map_bytes = sizeof(EndsHeader) + ends_cap * sizeof(EndEntry);
  Fd fd(::open(ends_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.valid()) return Status::Error(fmt::format("{}: {}", ends_path, std::strerror(errno)));
  struct stat sb {};
  ::fstat(fd.get(), &sb);
  const bool fresh = size_t(sb.st_size) != ends_map_bytes;
  if (fresh && ::ftruncate(fd.get(), 0) != 0)
    return Status::Error(fmt::format("{}: ftruncate: {}", ends_path, std::strerror(errno)));
  if (::ftruncate(fd.get(), static_cast<off_t>(ends_map_bytes)) != 0)
    return Status::Error(fmt::format("{}: ftruncate: {}", ends_path, std::strerror(errno)));
  ends_map = ::mmap(nullptr, ends_map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (ends_map == MAP_FAILED) {
    ends_map = nullptr;
    return Status::Error(fmt::format("{}: mmap: {}", ends_path, std::strerror(errno)));
  }
  auto* h = static_cast<EndsHeader*>(ends_map);
  ends = reinterpret_cast<EndEntry*>(static_cast<char*>(ends_map) + sizeof(EndsHeader));
  const uint64_t tok = fnv(token);
  if (std::memcmp(h->magic, kEndsMagic, 8) != 0 || h->token != tok || h->capacity != ends_cap) {
    if (!fresh || restarted)
      spdlog::info("{}: not this run's event ends; starting it afresh", ends_path);
    std::memset(ends_map, 0, ends_map_bytes);
    std::memcpy(h->magic, kEndsMagic, 8);
    h->token = tok;
    h->capacity = ends_cap;
  }
  return {};
}

// Where each partition starts: its committed offset (else the topic's
// start), and after a restart of this run the stream's numbers from the
// commit's metadata, and the events recorded after them.
Status KafkaSource::Impl::take_committed() {
  kafka::Partitions list(rd_kafka_topic_partition_list_new(static_cast<int>(s.size())));
  for (const Stream& st : s) rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), st.partition);
  rd_kafka_resp_err_t err = rd_kafka_committed(rk.get(), list.get(), 30000);
  if (err) return kafka::error("rd_kafka_committed", what + ", group " + group, err);
  const std::string mine = fmt::format("sluice1 {:x} ", fnv(token));
  for (int i = 0; i < list->cnt; ++i) {
    const rd_kafka_topic_partition_t& p = list->elems[i];
    Stream& st = s[static_cast<size_t>(stream_of[static_cast<size_t>(p.partition)])];
    if (p.err) return kafka::error("rd_kafka_committed", fmt::format("{}, partition {}", what, p.partition), p.err);
    if (p.offset < 0) continue;  // none: from the start
    st.start_offset = p.offset;
    const std::string meta(static_cast<const char*>(p.metadata ? p.metadata : ""), p.metadata_size);
    unsigned long long e = 0, q = 0;
    if (restarted && meta.rfind(mine, 0) == 0 &&
        std::sscanf(meta.c_str() + mine.size(), "%llu %llu", &e, &q) == 2) {
      st.next_event = e;
      st.next_seq = q;
    } else if (restarted) {
      spdlog::warn("{}: partition {}'s commit in group {} is not this run's ('{}'): numbering the stream "
                   "from 0 at offset {}",
                   what, p.partition, group, meta.substr(0, 60), p.offset);
    }
  }
  for (size_t i = 0; i < s.size(); ++i) {
    Stream& st = s[i];
    taken += st.next_seq;
    for (uint64_t e = st.next_event;; ++e) {
      const EndEntry* r = recorded(static_cast<uint32_t>(i), e);
      if (!r) break;
      st.replay_tuples += r->tuples;
    }
    reserved += st.replay_tuples;
    if (restarted)
      spdlog::info("{}: partition {} from offset {}, event {}, tuple {}{}", what, st.partition,
                   st.start_offset < 0 ? std::string("(start)") : std::to_string(st.start_offset), st.next_event,
                   st.next_seq,
                   st.replay_tuples ? fmt::format("; {} tuples to make again as they went before",
                                                  st.replay_tuples)
                                    : "");
  }
  return {};
}

Status KafkaSource::start() {
  Impl& m = *impl_;
  if (!m.decodes) return Status::Error(m.what);
  if (m.per_event == 0) return Status::Error(m.what + ": event_bytes holds no tuple");
  Status st;
  kafka::Config conf(m.bootstrap);
  conf.set("group.id", m.group)
      .set("client.id", "sluice-" + m.name)
      .set("enable.auto.commit", "false")
      .set("enable.auto.offset.store", "false")
      .set("auto.offset.reset", "earliest")
      .set("isolation.level", "read_committed")
      .set("enable.partition.eof", "false")
      // The prefetch queue, bounded: at most kQueuedRecords records and
      // kQueuedKiB of them (the partitions' queues are forwarded to one, so
      // both bound them all). Large because of how librdkafka 2.0 (Debian
      // 12's) fetches: a queue over either bound takes its partitions off
      // the fetch list, and the broker thread decides again only when it
      // next wakes, up to a second later (fetch.queue.backoff.ms came in
      // 2.3). A queue that holds less than a second of the pipeline's rate
      // runs dry in that second: at librdkafka's default of 100,000
      // records, connectors.py's topic moved at a third of the rate.
      .set("queued.min.messages", std::to_string(kQueuedRecords))
      .set("queued.max.messages.kbytes", std::to_string(kQueuedKiB));
  m.rk = conf.make(RD_KAFKA_CONSUMER, m.what, &st);
  if (!m.rk) return st;
  int32_t parts = 0;
  if (st = kafka::partition_count(m.rk.get(), m.topic, 30000, &parts); !st) return Status::Error(m.what + ": " + st.message());
  // Instance k takes the partitions p with p % instances == k, one stream each.
  m.stream_of.assign(static_cast<size_t>(parts), -1);
  for (int32_t p = 0; p < parts; ++p)
    if (static_cast<uint32_t>(p) % m.instances == m.instance) {
      m.stream_of[static_cast<size_t>(p)] = static_cast<int32_t>(m.s.size());
      m.s.emplace_back().partition = p;
    }
  if (m.s.size() != m.streams)
    return Status::Error(fmt::format("{}: {} partitions, {} of them for instance {} of {}; set streams: {} "
                                     "(one stream per partition)",
                                     m.what, parts, m.s.size(), m.instance, m.instances, m.s.size()));
  if (m.acks) {
    if (st = m.open_ends(pool_->slots()); !st) return Status::Error(m.what + ": " + st.message());
  }
  if (st = m.take_committed(); !st) return st;
  kafka::Partitions assign(rd_kafka_topic_partition_list_new(static_cast<int>(m.s.size())));
  for (const auto& sr : m.s)
    rd_kafka_topic_partition_list_add(assign.get(), m.topic.c_str(), sr.partition)->offset = sr.start_offset;
  if (rd_kafka_resp_err_t err = rd_kafka_assign(m.rk.get(), assign.get()))
    return kafka::error("rd_kafka_assign", m.what, err);
  m.queue = rd_kafka_queue_get_consumer(m.rk.get());
  m.links = std::max<uint32_t>(1, links_);
  m.split = split_;
  m.sent.assign(m.links, std::vector<Impl::Sent>(kSentPerLink));
  m.pushed.assign(m.links, 0);
  m.popped.assign(m.links, 0);
  m.latest.assign(m.s.size(), Impl::Sent{});
  m.dirty.assign(m.s.size(), 0);
  m.started = true;
  spdlog::info("{}: {} partition(s) from {}, group {}, {} tuples of {} bytes per event", m.what, m.s.size(),
               m.bootstrap, m.group, m.per_event, m.tuple_bytes);
  return {};
}


// Closes stream i's open event: its header and checksum, and (acks) its end
// in the ring file before anyone sees it.
Descriptor KafkaSource::Impl::close(SlotPool& pool, uint32_t i) {
  Stream& st = s[i];
  std::byte* p = pool.slot(st.slot);
  EventHeader h = header;
  h.stream = first_stream + i;
  h.first_seq = st.next_seq;
  h.tuple_count = st.count;
  h.tuple_span = st.count;
  h.send_ts_ns = wall_clock_ns();
  h.event_seq = st.next_event;
  std::memcpy(p, &h, sizeof h);
  seal_event(p);
  if (const EndEntry* r = recorded(i, st.next_event)) {
    st.replay_tuples -= std::min<uint64_t>(st.replay_tuples, r->tuples);
    reserved -= std::min<uint64_t>(reserved, r->tuples);
    if (r->last_offset != st.last_offset || r->tuples != st.count)
      spdlog::warn("{}: partition {}'s event {} ends at offset {} with {} tuples; its last life's ended at {} "
                   "with {} (records deleted from the topic since?): the sinks may count it wrong",
                   what, st.partition, st.next_event, st.last_offset, st.count, r->last_offset, r->tuples);
  }
  if (ends) ends[(st.next_event * streams + i) % ends_cap] = EndEntry{i, st.count, st.last_offset, st.next_event};
  const Descriptor d{st.slot, 0, static_cast<uint32_t>(h.wire_bytes()), 1, st.count, 0};
  st.next_seq += st.count;
  ++st.next_event;
  st.slot = kNoSlot;
  st.count = 0;
  push_sent(i);
  handed.fetch_add(1, std::memory_order_relaxed);
  return d;
}

// The event just closed, for commit(): on the link it goes to.
void KafkaSource::Impl::push_sent(uint32_t i) {
  const Stream& st = s[i];
  const size_t link = split == Split::kStream && links > 1 ? (first_stream + i) % links : 0;
  for (;;) {
    {
      std::lock_guard lk(mu);
      if (pushed[link] - popped[link] < kSentPerLink) {
        sent[link][pushed[link] % kSentPerLink] = Sent{i, st.last_offset + 1, st.next_event, st.next_seq};
        ++pushed[link];
        return;
      }
    }
    // Acknowledged and not yet taken by commit(), which runs every 100 ms.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void KafkaSource::Impl::warn_broker(const std::string& text) {
  ++broker_waits;
  const uint64_t now = mono_ns();
  if (now - last_warn_ns < 5'000'000'000ull) return;
  last_warn_ns = now;
  spdlog::warn("{}: {}; waiting for the broker", what, text);
}

// Closes the open events of streams that are not replaying (a replayed
// event ends where it ended before) and were opened before older_than_ns.
size_t KafkaSource::Impl::close_short(SlotPool& pool, std::span<Descriptor> out, size_t k, uint64_t older_than_ns,
                                      bool replaying_too) {
  for (uint32_t i = 0; i < s.size() && k < out.size(); ++i) {
    Stream& st = s[i];
    if (st.slot == kNoSlot || st.count == 0 || st.opened_ns > older_than_ns) continue;
    if (!replaying_too && recorded(i, st.next_event)) continue;
    out[k++] = close(pool, i);
  }
  return k;
}

// Puts one record into its stream's open event. false: it could not now (no
// free slot while `out` holds events: hand those on first).
bool KafkaSource::Impl::place(SlotPool& pool, rd_kafka_message_t* msg, std::span<Descriptor> out, size_t* k,
                              Status* status) {
  if (msg->err) {
    if (msg->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) return true;
    const std::string text = rd_kafka_message_errstr(msg);
    if (msg->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || msg->err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
        msg->err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION || msg->err == RD_KAFKA_RESP_ERR__FATAL)
      *status = Status::Error(fmt::format("{}: {} ({})", what, text, rd_kafka_err2name(msg->err)));
    else
      warn_broker(fmt::format("{} ({})", text, rd_kafka_err2name(msg->err)));
    return true;
  }
  const int32_t part = msg->partition;
  if (part < 0 || static_cast<size_t>(part) >= stream_of.size() || stream_of[static_cast<size_t>(part)] < 0)
    return true;  // not ours (cannot happen with assign)
  const uint32_t i = static_cast<uint32_t>(stream_of[static_cast<size_t>(part)]);
  Stream& st = s[i];
  const EndEntry* r = recorded(i, st.next_event);
  if (!r && limit && taken + reserved >= limit) return true;  // past the stream's end
  if (st.slot == kNoSlot) {
    uint32_t slot = pool.try_acquire();
    if (slot == kNoSlot) {
      if (*k > 0) return false;
      slot = pool.acquire(wait);
      if (slot == kNoSlot) {
        *status = Status::Error(what + ": stopped while waiting for a free slot");
        return true;
      }
    }
    st.slot = slot;
    st.count = 0;
    st.opened_ns = mono_ns();
  }
  ++records;
  std::byte* tuple = pool.slot(st.slot) + kEventHeaderBytes + size_t{st.count} * tuple_bytes;
  // A line-oriented tool's record may end in a line end: not part of it.
  std::string_view rec(static_cast<const char*>(msg->payload), msg->payload ? msg->len : 0);
  if (decoder.format() != RecordFormat::kBinary)
    while (!rec.empty() && (rec.back() == '\n' || rec.back() == '\r')) rec.remove_suffix(1);
  RecordError err;
  if (!decoder.decode(rec, tuple, &err)) {
    // "topic T partition P offset O:COLUMN: field p1 (i64): 'x7' is not an integer"
    const std::string why =
        decoder.explain(err, rec, fmt::format("topic {} partition {} offset {}", topic, part, msg->offset));
    if (!reject) {
      *status = Status::Error(fmt::format("{}: the record does not decode: {} (bad_records: reject passes "
                                          "over such records, counting them)",
                                          what, why));
      return true;
    }
    if (++rejected <= 5)
      spdlog::warn("{}: rejected: {}{}", what, why, rejected == 5 ? " (no more are logged)" : "");
    return true;
  }
  const uint64_t seq = st.next_seq + st.count;
  std::memcpy(tuple + kTupleSeqOffset, &seq, sizeof seq);
  ++st.count;
  ++taken;
  st.last_offset = msg->offset;
  const bool end = r ? (msg->offset >= r->last_offset || st.count >= per_event) : st.count >= per_event;
  if (end) out[(*k)++] = close(pool, i);
  return true;
}

Status KafkaSource::next(std::span<Descriptor> out, size_t* n) {
  Impl& m = *impl_;
  *n = 0;
  waited_ = false;
  if (m.ended) return {};
  if (m.t0 < 0) m.t0 = now_s();
  size_t k = 0;
  Status st;
  for (;;) {
    const bool finished = stop_.load(std::memory_order_relaxed) ||
                          (m.limit ? m.taken >= m.limit && m.reserved == 0 : now_s() - m.t0 >= m.duration_s);
    if (finished) {
      k = m.close_short(*pool_, out, k, UINT64_MAX, true);
      for (const auto& sr : m.s)
        if (sr.slot != kNoSlot && sr.count > 0) {  // no room for it yet in `out`
          *n = k;
          return {};
        }
      if (k < out.size()) {
        uint32_t slot = k ? pool_->try_acquire() : pool_->acquire(m.wait);
        if (slot != kNoSlot) {
          for (auto& sr : m.s)
            if (sr.slot != kNoSlot) {  // opened for records that were all rejected
              (void)pool_->release(sr.slot);
              sr.slot = kNoSlot;
            }
          EndOfStream eos{};
          eos.n_streams = m.streams;
          for (uint32_t i = 0; i < m.streams; ++i)
            eos.streams[i] = {m.first_stream + i, 0, m.s[i].next_seq, m.s[i].next_event};
          write_end(eos, pool_->slot(slot));
          out[k++] = {slot, 0, static_cast<uint32_t>(eos.wire_bytes()), 0, 0, kDescEnd};
          m.ended = true;
          if (m.rejected) spdlog::info("{}: {} records rejected", m.what, m.rejected);
        } else if (k == 0) {
          return Status::Error(m.what + ": stopped while waiting for a free slot");
        }
      }
      *n = k;
      return {};
    }
    if (m.msg_at == m.msg_n) {
      bool open = false;
      for (const auto& sr : m.s) open = open || (sr.slot != kNoSlot && sr.count > 0);
      // One wait for the first record, then what is there already (the
      // batch call, rd_kafka_consume_batch_queue, waits for a whole batch
      // or its timeout: 4x slower here on a busy topic).
      m.msg_at = 0;
      m.msg_n = 0;
      int timeout = k > 0 ? 0 : open ? 1 : kPollMs;
      while (m.msg_n < kBatch) {
        rd_kafka_message_t* msg = rd_kafka_consume_queue(m.queue, timeout);
        if (!msg) break;
        m.msgs[m.msg_n++] = msg;
        timeout = 0;
      }
      if (m.msg_n == 0) {
        if (k > 0) break;  // full events now; the open ones wait for more
        // Nothing for a millisecond: what is open goes out short.
        k = m.close_short(*pool_, out, k, UINT64_MAX);
        if (k > 0) break;
        waited_ = true;
        continue;
      }
    }
    while (m.msg_at < m.msg_n && k < out.size()) {
      if (!m.place(*pool_, m.msgs[m.msg_at], out, &k, &st)) break;
      rd_kafka_message_destroy(m.msgs[m.msg_at++]);
      if (!st) {
        *n = k;
        return st;
      }
    }
    k = m.close_short(*pool_, out, k, mono_ns() - kShortAfterNs);
    if (k == out.size() || (k > 0 && m.msg_at < m.msg_n)) break;
  }
  *n = k;
  return {};
}

Status KafkaSource::commit(std::span<const uint64_t> acked, bool sync) {
  Impl& m = *impl_;
  if (!m.started) return {};
  {
    std::lock_guard lk(m.mu);
    for (size_t j = 0; j < m.pushed.size(); ++j) {
      uint64_t target = m.pushed[j];
      if (!acked.empty()) {
        target = m.split == Split::kStream && acked.size() == m.pushed.size()
                     ? acked[j]
                     : *std::min_element(acked.begin(), acked.end());
      }
      for (; m.popped[j] < std::min(target, m.pushed[j]); ++m.popped[j]) {
        const Impl::Sent& e = m.sent[j][m.popped[j] % kSentPerLink];
        m.latest[e.stream] = e;
        m.dirty[e.stream] = 1;
      }
    }
  }
  kafka::Partitions list(rd_kafka_topic_partition_list_new(static_cast<int>(m.s.size())));
  for (size_t i = 0; i < m.s.size(); ++i) {
    if (!m.dirty[i]) continue;
    m.dirty[i] = 0;
    const Impl::Sent& e = m.latest[i];
    rd_kafka_topic_partition_t* p = rd_kafka_topic_partition_list_add(list.get(), m.topic.c_str(), m.s[i].partition);
    p->offset = e.next_offset;
    const std::string meta = fmt::format("sluice1 {:x} {} {}", fnv(m.token), e.next_event, e.next_seq);
    p->metadata = std::malloc(meta.size());  // the list frees it
    std::memcpy(p->metadata, meta.data(), meta.size());
    p->metadata_size = meta.size();
  }
  if (list->cnt == 0) return {};
  ++m.commits;
  if (rd_kafka_resp_err_t err = rd_kafka_commit(m.rk.get(), list.get(), sync ? 0 : 1))
    return kafka::error("rd_kafka_commit", m.what + ", group " + m.group, err);
  return {};
}

void KafkaSource::shutdown() {
  stop();
  pool_->close();
}

void KafkaSource::report(ProcessSummary& s) const {
  s.rejected += impl_->rejected;
  s.kafka_commits += impl_->commits;
}

}  // namespace sluice
