// kafka/: may include base/, transport/ and graph/.
//
// librdkafka, as sluice's Kafka source (loadgen/kafka_source.h) and sink
// (sink/kafka_rows.h) use it: one place that makes clients from a few
// settings, names every failure after the call and the topic, and owns the
// handles. Only those two .cc files include this header; nothing of
// librdkafka reaches a public interface of sluice's.
//
// Lifecycle of a client:
//   1. Config: the bootstrap servers and the settings its role needs (set()),
//      each refused at once with librdkafka's own message;
//   2. make_consumer / make_producer: the handle (freed by its owner);
//   3. the role's calls; every error becomes a Status naming what failed.
#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace sluice::kafka {

struct HandleFree {
  void operator()(rd_kafka_t* rk) const;
};
using Handle = std::unique_ptr<rd_kafka_t, HandleFree>;

struct PartitionsFree {
  void operator()(rd_kafka_topic_partition_list_t* l) const { rd_kafka_topic_partition_list_destroy(l); }
};
using Partitions = std::unique_ptr<rd_kafka_topic_partition_list_t, PartitionsFree>;

struct ErrorFree {
  void operator()(rd_kafka_error_t* e) const { rd_kafka_error_destroy(e); }
};
using Error = std::unique_ptr<rd_kafka_error_t, ErrorFree>;

// Settings of one client, applied in order (a later one wins).
class Config {
 public:
  explicit Config(std::string bootstrap) { set("bootstrap.servers", std::move(bootstrap)); }
  Config& set(std::string key, std::string value) {
    kv_.emplace_back(std::move(key), std::move(value));
    return *this;
  }
  // A producer's delivery report for each message, with `opaque` (the
  // handle's) and the message's own opaque.
  Config& on_delivery(void (*cb)(rd_kafka_t*, const rd_kafka_message_t*, void*), void* opaque) {
    dr_ = cb;
    opaque_ = opaque;
    return *this;
  }
  // `what` names the client in errors ("the Kafka source of loadgen").
  Handle make(rd_kafka_type_t type, const std::string& what, Status* st) const;

 private:
  std::vector<std::pair<std::string, std::string>> kv_;
  void (*dr_)(rd_kafka_t*, const rd_kafka_message_t*, void*) = nullptr;
  void* opaque_ = nullptr;
};

// "CALL on WHAT: librdkafka's text (ERR_NAME)".
Status error(const std::string& call, const std::string& what, rd_kafka_resp_err_t err);
Status error(const std::string& call, const std::string& what, const rd_kafka_error_t* err);

// The partitions of `topic` (asks the broker; waits at most timeout_ms).
Status partition_count(rd_kafka_t* rk, const std::string& topic, int timeout_ms, int32_t* n);

// A transactional call that may be retried (a broker away for a while):
// retried every 100 ms while librdkafka says retriable, for at most
// deadline_ms. An abortable or fatal error is returned as it is.
template <class F>
Error retry_txn(F&& call, int deadline_ms);

}  // namespace sluice::kafka

#include "kafka/client_inl.h"
