#include "sink/kafka_rows.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include "kafka/client.h"

namespace sluice {

namespace {
constexpr int kTxnTimeoutMs = 120000;  // a commit waits this long for a broker that is away
constexpr int kQueuedRows = 200000;     // rows waiting in librdkafka, at most
void die(const std::string& why) {
  // Before the snapshot is written, so nothing Kafka lacks is acknowledged
  // upstream: the supervisor restarts the sink from its last snapshot.
  spdlog::critical("{}; ending the process before its snapshot is written", why);
  spdlog::shutdown();
  std::_Exit(1);
}
}  // namespace

struct KafkaRows::Impl {
  std::string topic, what, txn_id, position_group, token;
  std::string bootstrap;
  kafka::Handle rk;
  rd_kafka_topic_t* rkt = nullptr;
  std::vector<rd_kafka_message_t> msgs;  // an event's batch, reused
  uint32_t restarted = 0;
  std::atomic<uint64_t> failed{0};
  std::string first_failure;
  std::mutex fail_mu;
  ~Impl() {
    if (rkt) rd_kafka_topic_destroy(rkt);
  }
};

std::unique_ptr<KafkaRows> KafkaRows::make(const Deployment& d, size_t index, uint32_t instance,
                                           const Schema& schema, bool transactions, uint32_t restarted,
                                           Status* st) {
  const ProcessConfig& pc = d.processes[index];
  auto k = std::unique_ptr<KafkaRows>(new KafkaRows);
  k->impl_ = std::make_unique<Impl>();
  Impl& m = *k->impl_;
  m.topic = pc.kafka_topic;
  m.bootstrap = d.kafka_bootstrap;
  m.what = fmt::format("the Kafka output of {} (topic {})", pc.name, m.topic);
  const std::string run = d.run_id.empty() ? std::string("norun") : d.run_id;
  m.txn_id = fmt::format("sluice-{}-{}-{}", run, pc.name, instance);
  m.position_group = m.txn_id + "-position";
  m.token = d.run_token;
  m.restarted = restarted;
  k->transactions_ = transactions;
  const auto& fs = schema.fields();
  for (size_t i = 1; i < fs.size(); ++i) {  // seq is the stream's numbering, not the row's
    if (fs[i].type == FieldType::kBytes) continue;
    FieldRef r;
    schema.find(fs[i].name, &r);
    if (fs[i].name == pc.kafka_key) k->key_field_ = static_cast<int>(k->fields_.size());
    k->fields_.push_back(r);
  }
  if (!pc.kafka_key.empty() && k->key_field_ < 0) {
    *st = Status::Error(fmt::format("{}: kafka_key '{}' is no numeric field of its rows", m.what, pc.kafka_key));
    return nullptr;
  }
  if (k->fields_.empty()) {
    *st = Status::Error(m.what + ": the rows have no numeric field to write");
    return nullptr;
  }
  return k;
}

KafkaRows::~KafkaRows() = default;

namespace {
void on_delivery(rd_kafka_t*, const rd_kafka_message_t* msg, void* opaque) {
  auto* self = static_cast<std::atomic<uint64_t>*>(msg->_private);
  if (msg->err) {
    auto* failed = static_cast<std::atomic<uint64_t>*>(opaque);
    failed->fetch_add(1);
    spdlog::error("a row was not delivered: {} ({})", rd_kafka_err2str(msg->err), rd_kafka_err2name(msg->err));
  }
  if (self) self->fetch_sub(1, std::memory_order_acq_rel);
}
}  // namespace

Status KafkaRows::start() {
  Impl& m = *impl_;
  Status st;
  kafka::Config conf(m.bootstrap);
  conf.set("client.id", "sluice-" + m.txn_id)
      .set("enable.idempotence", "true")
      .set("acks", "all")
      .set("linger.ms", "5")
      // Bounded: at most this much waits in librdkafka; a full queue is back pressure.
      // (rows, not bytes: a row's text is bounded by its schema).
      .set("queue.buffering.max.kbytes", "2097151")
      .set("queue.buffering.max.messages", std::to_string(kQueuedRows))
      .set("batch.size", "1000000")
      .set("message.timeout.ms", "300000")
      // A keyed record's partition (kafka_key), as the Java producer's.
      .set("partitioner", "murmur2_random");
  if (transactions_) conf.set("transactional.id", m.txn_id).set("transaction.timeout.ms", "300000");
  // Each delivery report: a failure counted in the handle's opaque, and
  // (without transactions) the row's count of pending rows taken down.
  conf.on_delivery(on_delivery, &m.failed);
  m.rk = conf.make(RD_KAFKA_PRODUCER, m.what, &st);
  if (!m.rk) return st;
  m.rkt = rd_kafka_topic_new(m.rk.get(), m.topic.c_str(), nullptr);
  if (!m.rkt) return kafka::error("rd_kafka_topic_new", m.what, rd_kafka_last_error());
  int32_t parts = 0;
  if (st = kafka::partition_count(m.rk.get(), m.topic, 30000, &parts); !st) return Status::Error(m.what + ": " + st.message());
  partitions_ = std::max<int32_t>(1, parts);
  if (!transactions_) return {};
  if (kafka::Error e = kafka::retry_txn([&] { return rd_kafka_init_transactions(m.rk.get(), kTxnTimeoutMs); },
                                        kTxnTimeoutMs))
    return kafka::error("rd_kafka_init_transactions", m.what, e.get());
  // Where an earlier life of this sink got to: the position its last
  // committed transaction carried (none on a first start).
  if (m.restarted) {
    kafka::Config cc(m.bootstrap);
    cc.set("group.id", m.position_group).set("isolation.level", "read_committed").set("enable.auto.commit", "false");
    kafka::Handle c = cc.make(RD_KAFKA_CONSUMER, m.what + "'s position", &st);
    if (!c) return st;
    kafka::Partitions list(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(list.get(), m.topic.c_str(), 0);
    if (rd_kafka_resp_err_t err = rd_kafka_committed(c.get(), list.get(), 30000))
      return kafka::error("rd_kafka_committed", m.what + ", group " + m.position_group, err);
    const rd_kafka_topic_partition_t& p = list->elems[0];
    const std::string meta(static_cast<const char*>(p.metadata ? p.metadata : ""), p.metadata_size);
    size_t streams = 0;
    if (p.offset >= 0 && meta.rfind("sluice1 ", 0) == 0) {
      const char* at = meta.c_str() + 8;
      unsigned s = 0;
      unsigned long long e = 0;
      int used = 0;
      while (std::sscanf(at, "%u:%llu%n", &s, &e, &used) == 2) {
        if (s < kMaxStreams) committed_event_[s] = e;
        ++streams;
        at += used;
      }
    }
    spdlog::info("{}: restarted; its committed transactions hold the rows of {} stream(s) up to {}", m.what,
                 streams, meta.empty() ? std::string("(none)") : meta);
  }
  if (kafka::Error e(rd_kafka_begin_transaction(m.rk.get())); e)
    return kafka::error("rd_kafka_begin_transaction", m.what, e.get());
  return {};
}

Status KafkaRows::event(const std::byte* p, const EventHeader& h) {
  Impl& m = *impl_;
  std::lock_guard lk(mu_);
  const uint32_t stream = h.stream < kMaxStreams ? h.stream : kMaxStreams - 1;
  if (transactions_ && h.event_seq < committed_event_[stream]) {
    skipped_ += h.tuple_count;  // an earlier life committed these rows
    return {};
  }
  // The event's rows as text, back to back (buffers reused: they grow to
  // the largest event once), then one rd_kafka_produce_batch for them all.
  const uint32_t n = h.tuple_count;
  text_.clear();
  spans_.resize(n);
  const std::byte* t = p + kEventHeaderBytes;
  for (uint32_t i = 0; i < n; ++i, t += h.tuple_bytes) {
    RowSpan& sp = spans_[i];
    sp.at = text_.size();
    for (size_t f = 0; f < fields_.size(); ++f) {
      const FieldRef& r = fields_[f];
      if (f) text_.push_back(',');
      if (static_cast<int>(f) == key_field_) sp.key_at = text_.size();
      char num[32];
      std::to_chars_result e{};
      if (r.type == FieldType::kF64) {
        fmt::format_to(std::back_inserter(text_), "{}", load_f64(t, r));
        e.ptr = num;
      } else if (r.type == FieldType::kU64 || r.type == FieldType::kTimestamp) {
        e = std::to_chars(num, num + sizeof num, static_cast<uint64_t>(load_i64(t, r)));
      } else {
        e = std::to_chars(num, num + sizeof num, load_i64(t, r));
      }
      text_.append(num, e.ptr);
      if (static_cast<int>(f) == key_field_) sp.key_end = text_.size();
    }
    sp.end = text_.size();
  }
  // Unkeyed: the stream's partition; keyed: the key's (the partitioner's).
  const int32_t partition = key_field_ < 0 ? static_cast<int32_t>(h.stream % static_cast<uint32_t>(partitions_))
                                           : RD_KAFKA_PARTITION_UA;
  m.msgs.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    rd_kafka_message_t& msg = m.msgs[i];
    msg = rd_kafka_message_t{};
    msg.partition = partition;
    msg.payload = text_.data() + spans_[i].at;
    msg.len = spans_[i].end - spans_[i].at;
    if (key_field_ >= 0) {
      msg.key = text_.data() + spans_[i].key_at;
      msg.key_len = spans_[i].key_end - spans_[i].key_at;
    }
    msg._private = transactions_ ? nullptr : &pending_;
  }
  // Room for them all first: a batch refused in part could be enqueued out
  // of order (a later row taken once deliveries made room). Only this
  // thread produces, so the room found stays.
  for (size_t room_for = std::min<size_t>(n, kQueuedRows);
       rd_kafka_outq_len(m.rk.get()) + room_for > static_cast<size_t>(kQueuedRows);)
    rd_kafka_poll(m.rk.get(), 10);  // back pressure: wait for deliveries
  pending_.fetch_add(n, std::memory_order_acq_rel);
  for (uint32_t done = 0; done < n;) {
    for (uint32_t i = done; i < n; ++i) m.msgs[i].err = RD_KAFKA_RESP_ERR_NO_ERROR;
    const int got = rd_kafka_produce_batch(m.rkt, partition, RD_KAFKA_MSG_F_COPY | RD_KAFKA_MSG_F_PARTITION,
                                           m.msgs.data() + done, static_cast<int>(n - done));
    uint32_t ok = 0;
    while (done + ok < n && m.msgs[done + ok].err == RD_KAFKA_RESP_ERR_NO_ERROR) ++ok;
    if (ok < n - done && m.msgs[done + ok].err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      pending_.fetch_sub(n - done - static_cast<uint32_t>(got), std::memory_order_acq_rel);
      return kafka::error("rd_kafka_produce_batch", m.what, m.msgs[done + ok].err);
    }
    if (static_cast<uint32_t>(got) != ok) {
      // Some taken past a refused one: their order is lost. Cannot happen
      // with the room made above; said rather than written out of order.
      pending_.fetch_sub(n - done - static_cast<uint32_t>(got), std::memory_order_acq_rel);
      return Status::Error(m.what + ": librdkafka's queue refused rows of an event in part");
    }
    done += ok;
    rows_ += ok;
    in_txn_ += ok;
    if (done < n) rd_kafka_poll(m.rk.get(), 10);
  }
  next_event_[stream] = h.event_seq + 1;
  rd_kafka_poll(m.rk.get(), 0);
  if (m.failed.load()) return Status::Error(m.what + ": rows were not delivered (see the log)");
  return {};
}

// With transactions: the open one, committed with the position; then the
// next begins. Without: every row delivered.
Status KafkaRows::commit_locked() {
  Impl& m = *impl_;
  if (!transactions_) {
    while (pending_.load(std::memory_order_acquire) != 0) {
      rd_kafka_flush(m.rk.get(), 100);
      if (m.failed.load()) return Status::Error(m.what + ": rows were not delivered (see the log)");
    }
    if (in_txn_) ++commits_;
    in_txn_ = 0;
    return {};
  }
  if (in_txn_ == 0) return {};
  std::string meta = "sluice1";
  for (uint32_t s = 0; s < kMaxStreams; ++s)
    if (next_event_[s]) meta += fmt::format(" {}:{}", s, next_event_[s]);
  kafka::Partitions offsets(rd_kafka_topic_partition_list_new(1));
  rd_kafka_topic_partition_t* p = rd_kafka_topic_partition_list_add(offsets.get(), m.topic.c_str(), 0);
  p->offset = static_cast<int64_t>(rows_);
  p->metadata = std::malloc(meta.size());  // the list frees it
  std::memcpy(p->metadata, meta.data(), meta.size());
  p->metadata_size = meta.size();
  rd_kafka_consumer_group_metadata_t* cgmd = rd_kafka_consumer_group_metadata_new(m.position_group.c_str());
  kafka::Error e = kafka::retry_txn(
      [&] { return rd_kafka_send_offsets_to_transaction(m.rk.get(), offsets.get(), cgmd, kTxnTimeoutMs); },
      kTxnTimeoutMs);
  rd_kafka_consumer_group_metadata_destroy(cgmd);
  if (e) return kafka::error("rd_kafka_send_offsets_to_transaction", m.what, e.get());
  e = kafka::retry_txn([&] { return rd_kafka_commit_transaction(m.rk.get(), kTxnTimeoutMs); }, kTxnTimeoutMs);
  if (e) return kafka::error("rd_kafka_commit_transaction", m.what, e.get());
  ++commits_;
  in_txn_ = 0;
  pending_.store(0, std::memory_order_release);
  if (kafka::Error b(rd_kafka_begin_transaction(m.rk.get())); b)
    return kafka::error("rd_kafka_begin_transaction", m.what, b.get());
  return {};
}

void KafkaRows::checkpoint() {
  std::lock_guard lk(mu_);
  if (Status st = commit_locked(); !st) die(st.message());
}

Status KafkaRows::finish() {
  std::lock_guard lk(mu_);
  return commit_locked();
}

}  // namespace sluice
