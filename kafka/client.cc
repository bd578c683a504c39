#include "kafka/client.h"

#include <fmt/format.h>

namespace sluice::kafka {

void HandleFree::operator()(rd_kafka_t* rk) const {
  if (!rk) return;
  // A consumer leaves its group (none here: partitions are assigned, not
  // subscribed) and stops fetching; a producer's close is its owner's flush.
  if (rd_kafka_type(rk) == RD_KAFKA_CONSUMER) rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
}

Handle Config::make(rd_kafka_type_t type, const std::string& what, Status* st) const {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  for (const auto& [k, v] : kv_) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      *st = Status::Error(fmt::format("{}: setting {}={}: {}", what, k, v, err));
      return nullptr;
    }
  }
  if (dr_) rd_kafka_conf_set_dr_msg_cb(conf, dr_);
  if (opaque_) rd_kafka_conf_set_opaque(conf, opaque_);
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err);  // owns conf when it succeeds
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    *st = Status::Error(fmt::format("{}: rd_kafka_new: {}", what, err));
    return nullptr;
  }
  return Handle(rk);
}

Status error(const std::string& call, const std::string& what, rd_kafka_resp_err_t err) {
  return Status::Error(fmt::format("{} on {}: {} ({})", call, what, rd_kafka_err2str(err), rd_kafka_err2name(err)));
}

Status error(const std::string& call, const std::string& what, const rd_kafka_error_t* err) {
  return Status::Error(fmt::format("{} on {}: {} ({}{})", call, what, rd_kafka_error_string(err),
                                   rd_kafka_error_name(err),
                                   rd_kafka_error_is_fatal(err) ? ", fatal" : ""));
}

Status partition_count(rd_kafka_t* rk, const std::string& topic, int timeout_ms, int32_t* n) {
  rd_kafka_topic_t* t = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  if (!t) return error("rd_kafka_topic_new", "topic " + topic, rd_kafka_last_error());
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, t, &md, timeout_ms);
  rd_kafka_topic_destroy(t);
  if (err) return error("rd_kafka_metadata", "topic " + topic, err);
  Status st;
  if (md->topic_cnt != 1 || md->topics[0].err) {
    const rd_kafka_resp_err_t e = md->topic_cnt ? md->topics[0].err : RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
    st = Status::Error(fmt::format("topic {}: {} ({}); create it first (scripts/kafka.sh topic {} PARTITIONS)",
                                   topic, rd_kafka_err2str(e), rd_kafka_err2name(e), topic));
  } else {
    *n = md->topics[0].partition_cnt;
  }
  rd_kafka_metadata_destroy(md);
  return st;
}

}  // namespace sluice::kafka
