// The Kafka source and sink against a real broker (scripts/kafka.sh, started
// once for these tests by the CTest fixture `kafka_broker`, and stopped
// after): deploy/examples/kafka.yaml reading records of the esper schema
// from a topic and writing the query's rows to another. What is checked:
// the rows equal those of the same tuples generated (esper.yaml); each of
// the four processes killed mid-run (restart, acks, snapshots) leaves the
// output topic, read with read_committed, exactly as a run without the
// fault; a broker stopped for 5 s mid-run holds the run and loses nothing;
// the same tuples as JSON lines or binary records give the same rows; a
// record that does not decode (in each format) is an error naming topic,
// partition and offset, or (bad_records: reject) a counted rejection; with
// kafka_key the rows spread over the output's partitions by key, each key's
// in one partition in order, exactly once with the sink killed; a topic of
// three partitions is read as three streams, every record once, with the
// source killed too. No timing is asserted.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "graph/config.h"
#include "loadgen/generator.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

const std::string kDeploy = SLUICE_DEPLOY;
const std::string kSource = SLUICE_SOURCE_DIR;
const std::string kKafkaYaml = kSource + "/deploy/examples/kafka.yaml";
const std::string kEsperYaml = kSource + "/deploy/examples/esper.yaml";
const std::string kBrokerDir = SLUICE_KAFKA_TEST_DIR;
constexpr uint64_t kTuples = 1000000;
// Exactly once for a read_committed reader, whatever dies.
const std::string kSafe =
    " --set acks=on --set restart=on-failure --set restart_backoff_ms=200 --set checkpoint_interval_ms=50";

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string bootstrap() {
  std::string port = slurp(fs::path(kBrokerDir) / "port");
  while (!port.empty() && (port.back() == '\n' || port.back() == ' ')) port.pop_back();
  return "127.0.0.1:" + port;
}

rd_kafka_t* client(rd_kafka_type_t type, std::vector<std::pair<std::string, std::string>> kv) {
  rd_kafka_conf_t* c = rd_kafka_conf_new();
  char err[512];
  kv.insert(kv.begin(), {"bootstrap.servers", bootstrap()});
  for (auto& [k, v] : kv) EXPECT_EQ(rd_kafka_conf_set(c, k.c_str(), v.c_str(), err, sizeof err), RD_KAFKA_CONF_OK) << err;
  rd_kafka_t* rk = rd_kafka_new(type, c, err, sizeof err);
  EXPECT_NE(rk, nullptr) << err;
  return rk;
}

void create_topic(const std::string& name, int partitions) {
  rd_kafka_t* rk = client(RD_KAFKA_PRODUCER, {});
  rd_kafka_NewTopic_t* t = rd_kafka_NewTopic_new(name.c_str(), partitions, 1, nullptr, 0);
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_CreateTopics(rk, &t, 1, nullptr, q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 30000);
  ASSERT_NE(ev, nullptr);
  const rd_kafka_CreateTopics_result_t* res = rd_kafka_event_CreateTopics_result(ev);
  size_t n = 0;
  const rd_kafka_topic_result_t** r = rd_kafka_CreateTopics_result_topics(res, &n);
  ASSERT_EQ(n, 1u);
  const rd_kafka_resp_err_t e = rd_kafka_topic_result_error(r[0]);
  EXPECT_TRUE(e == RD_KAFKA_RESP_ERR_NO_ERROR || e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) << rd_kafka_err2str(e);
  rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_NewTopic_destroy(t);
  // Until the partition has a leader, a produce may fail.
  for (int i = 0; i < 100; ++i) {
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, name.c_str(), nullptr);
    bool ok = rd_kafka_metadata(rk, 0, rkt, &md, 5000) == 0 && md->topic_cnt == 1 && !md->topics[0].err &&
              md->topics[0].partition_cnt == partitions && md->topics[0].partitions[0].leader >= 0;
    if (md) rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    if (ok) break;
    std::this_thread::sleep_for(100ms);
  }
  rd_kafka_destroy(rk);
}

// The esper schema's tuples seq 0..n-1 as the load generator makes them,
// as records of `format` (csv "p0,p1", jsonl, or binary: p0 and p1 as
// little-endian i64).
std::vector<std::string> esper_records(uint64_t n, const std::string& format) {
  sluice::Deployment d;
  EXPECT_TRUE(sluice::load_deployment(kEsperYaml, {}, &d).ok());
  sluice::FieldFiller fill(*d.loadgen_schema(0));
  std::vector<std::string> records;
  records.reserve(n);
  for (uint64_t seq = 0; seq < n; ++seq) {
    const int64_t p0 = static_cast<int64_t>(fill.value(0, seq)), p1 = static_cast<int64_t>(fill.value(1, seq));
    if (format == "jsonl") {
      records.push_back("{\"p1\": " + std::to_string(p1) + ", \"p0\": " + std::to_string(p0) + "}");
    } else if (format == "binary") {
      std::string r(16, '\0');
      std::memcpy(r.data(), &p0, 8);  // the machine is little-endian, as the format
      std::memcpy(r.data() + 8, &p1, 8);
      records.push_back(std::move(r));
    } else {
      records.push_back(std::to_string(p0) + "," + std::to_string(p1));
    }
  }
  return records;
}

// Record i goes to partition i % partitions.
void produce(const std::string& topic, const std::vector<std::string>& records, int32_t partitions = 1) {
  rd_kafka_t* rk = client(RD_KAFKA_PRODUCER, {{"linger.ms", "20"}, {"queue.buffering.max.messages", "1000000"}});
  for (size_t i = 0; i < records.size(); ++i) {
    const std::string& r = records[i];
    const int32_t partition = static_cast<int32_t>(i % static_cast<size_t>(partitions));
    while (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
                             RD_KAFKA_V_VALUE(const_cast<char*>(r.data()), r.size()),
                             RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
      rd_kafka_poll(rk, 10);
  }
  EXPECT_EQ(rd_kafka_flush(rk, 60000), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_destroy(rk);
}

// The records in a partition of `topic` (its high watermark).
int64_t records_in(const std::string& topic, int32_t partition = 0) {
  rd_kafka_t* rk = client(RD_KAFKA_PRODUCER, {});
  int64_t low = 0, high = 0;
  const rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(rk, topic.c_str(), partition, &low, &high, 10000);
  rd_kafka_destroy(rk);
  return e ? 0 : high;
}

// Waits until `topic` holds a record (committed or not) in any of its
// `partitions`: the run is under way, its first rows written (a window's
// end, some way into the stream), and not yet over.
void wait_for_rows(const std::string& topic, int32_t partitions = 1) {
  rd_kafka_t* rk = client(RD_KAFKA_PRODUCER, {});
  for (int i = 0; i < 6000; ++i) {
    int64_t any = 0;
    for (int32_t p = 0; p < partitions; ++p) {
      int64_t low = 0, high = 0;
      if (rd_kafka_query_watermark_offsets(rk, topic.c_str(), p, &low, &high, 1000) == 0) any += high;
    }
    if (any > 0) break;
    std::this_thread::sleep_for(5ms);
  }
  rd_kafka_destroy(rk);
}

// Every record of a partition of `topic`, as a read_committed reader sees
// it; with `keys`, each record's key too.
std::vector<std::string> read_committed(const std::string& topic, int32_t partition = 0,
                                        std::vector<std::string>* keys = nullptr) {
  rd_kafka_t* rk = client(RD_KAFKA_CONSUMER, {{"group.id", "kafka-test-reader"},
                                              {"isolation.level", "read_committed"},
                                              {"enable.partition.eof", "true"},
                                              {"enable.auto.commit", "false"}});
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, topic.c_str(), partition)->offset = RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(rk, l);
  rd_kafka_topic_partition_list_destroy(l);
  std::vector<std::string> rows;
  for (int idle = 0; idle < 300;) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (!m) {
      ++idle;
      continue;
    }
    const bool eof = m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF;
    if (!m->err) rows.emplace_back(static_cast<const char*>(m->payload), m->len);
    if (!m->err && keys) keys->emplace_back(static_cast<const char*>(m->key), m->key_len);
    rd_kafka_message_destroy(m);
    if (eof) break;
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return rows;
}

struct RunResult {
  int code = -1;
  std::string err, dir;
  YAML::Node report;
  YAML::Node process(const std::string& name) const { return YAML::LoadFile(dir + "/" + name + ".json"); }
};

int wait_exit(pid_t pid, int timeout_s) {
  for (int i = 0; i < timeout_s * 20; ++i) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    std::this_thread::sleep_for(50ms);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

pid_t find_process(const std::string& run_dir, const std::string& name) {
  for (int i = 0; i < 200; ++i) {
    for (const auto& e : fs::directory_iterator("/proc")) {
      std::string cl = slurp(e.path() / "cmdline");
      std::replace(cl.begin(), cl.end(), '\0', ' ');
      if (cl.find(run_dir + "/") != std::string::npos && cl.find("--process " + name + " ") != std::string::npos &&
          cl.find("sluice-") != std::string::npos)
        return std::stoi(e.path().filename());
    }
    std::this_thread::sleep_for(50ms);
  }
  return -1;
}

// Runs `yaml` with `sets`; `during` (if any) runs once the source has
// begun reading its topic.
template <class F>
RunResult run(const std::string& name, const std::string& yaml, const std::string& sets, F during) {
  const fs::path dir = fs::temp_directory_path() / ("sluice-kafka-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  RunResult r;
  r.dir = (dir / "run").string();
  const std::string cmd = kDeploy + " run " + yaml + " --json --run-dir " + r.dir + " --set progress_s=0 " +
                          "--set kafka_bootstrap=" + bootstrap() + " " + sets + " >" + (dir / "out").string() +
                          " 2>" + (dir / "err").string();
  const pid_t d = fork();
  if (d == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  if constexpr (!std::is_same_v<F, std::nullptr_t>) {
    for (int i = 0; i < 400 && slurp(r.dir + "/source.log").find("partition(s) from") == std::string::npos; ++i)
      std::this_thread::sleep_for(50ms);
    during(r.dir);
  }
  r.code = wait_exit(d, 120);
  r.err = slurp(dir / "err");
  try {
    r.report = YAML::Load(slurp(dir / "out"));
  } catch (const YAML::Exception&) {
  }
  return r;
}
RunResult run(const std::string& name, const std::string& yaml, const std::string& sets) {
  return run(name, yaml, sets, nullptr);
}

class KafkaPipeline : public ::testing::Test {
 protected:
  // The input once for every test: the esper schema's tuples as the load
  // generator makes them (seq 0..kTuples-1), as CSV records "p0,p1".
  static void SetUpTestSuite() {
    ASSERT_TRUE(fs::exists(fs::path(kBrokerDir) / "port"))
        << "no broker in " << kBrokerDir << ": these tests need the kafka_broker fixture (ctest starts it)";
    const std::vector<std::string> records = esper_records(kTuples, "csv");
    // Each test is a process of its own (gtest_discover_tests): the
    // first makes the topic, the others find it.
    create_topic("in", 1);
    if (records_in("in") == 0) produce("in", records);
    ASSERT_EQ(records_in("in"), static_cast<int64_t>(kTuples));
  }

  // The rows of a run without faults, once (a later test process reads them).
  static const std::vector<std::string>& reference() {
    static std::vector<std::string> rows = [] {
      create_topic("out-ref", 1);
      if (records_in("out-ref") > 0) return read_committed("out-ref");
      RunResult r = run("ref", kKafkaYaml, "--set tuples=" + std::to_string(kTuples) + kSafe +
                                         " --set processes.3.kafka_topic=out-ref");
      EXPECT_EQ(r.code, 0) << r.err;
      return read_committed("out-ref");
    }();
    return rows;
  }
};

// Equal, or where they part.
::testing::AssertionResult same_rows(const std::vector<std::string>& got, const std::vector<std::string>& want) {
  if (got == want) return ::testing::AssertionSuccess();
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  return ::testing::AssertionFailure() << got.size() << " rows where " << want.size() << " were wanted; row " << i
                                       << ": '" << (i < got.size() ? got[i] : "(none)") << "' where '"
                                       << (i < want.size() ? want[i] : "(none)") << "' was wanted";
}

TEST_F(KafkaPipeline, TheRowsAreThoseOfTheSameTuplesGenerated) {
  RunResult gen = run("esper", kEsperYaml, "--set tuples=" + std::to_string(kTuples));
  ASSERT_EQ(gen.code, 0) << gen.err;
  // esper.yaml's CSV has a header and the seq column first; a Kafka row is
  // the fields after seq.
  std::vector<std::string> want;
  std::istringstream csv(slurp(gen.dir + "/esper-results.csv"));
  std::string line;
  std::getline(csv, line);
  while (std::getline(csv, line)) want.push_back(line.substr(line.find(',') + 1));
  ASSERT_GT(want.size(), 10u);
  EXPECT_TRUE(same_rows(reference(), want));
}

TEST_F(KafkaPipeline, EachProcessKilledMidRunLeavesTheRowsOfARunWithoutTheFault) {
  const std::vector<std::string>& ref = reference();
  ASSERT_FALSE(ref.empty());
  for (const char* victim : {"source", "node-a", "node-b", "sink"}) {
    SCOPED_TRACE(victim);
    const std::string topic = std::string("out-kill-") + victim;
    create_topic(topic, 1);
    RunResult r = run(std::string("kill-") + victim, kKafkaYaml,
                "--set tuples=" + std::to_string(kTuples) + kSafe + " --set processes.3.kafka_topic=" + topic,
                [&](const std::string& dir) {
                  wait_for_rows(topic);
                  const pid_t v = find_process(dir, victim);
                  ASSERT_GT(v, 0);
                  kill(v, SIGKILL);
                });
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.report["lost"].as<uint64_t>(), 0u);
    EXPECT_EQ(r.report["duplicated"].as<uint64_t>(), 0u);
    int restarts = 0;
    for (const auto& p : r.report["processes"]) restarts += p["restarts"].as<int>(0);
    EXPECT_EQ(restarts, 1) << "the kill came after the run had ended";
    EXPECT_TRUE(same_rows(read_committed(topic), ref));
  }
}

TEST_F(KafkaPipeline, ABrokerStoppedForFiveSecondsHoldsTheRunAndLosesNothing) {
  const std::vector<std::string>& ref = reference();
  create_topic("out-stopped", 1);
  const pid_t broker = std::stoi(slurp(fs::path(kBrokerDir) / "pid"));
  RunResult r = run("stopped", kKafkaYaml,
              "--set tuples=" + std::to_string(kTuples) + kSafe + " --set processes.3.kafka_topic=out-stopped",
              [&](const std::string&) {
                wait_for_rows("out-stopped");
                kill(broker, SIGSTOP);
                std::this_thread::sleep_for(5s);
                kill(broker, SIGCONT);
              });
  kill(broker, SIGCONT);  // whatever happened above
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.report["lost"].as<uint64_t>(), 0u);
  for (const auto& p : r.report["processes"]) EXPECT_EQ(p["restarts"].as<int>(0), 0) << p["name"];
  EXPECT_TRUE(same_rows(read_committed("out-stopped"), ref));
}

// Records 1 and 3 do not decode: fail names the first; reject counts both.
TEST_F(KafkaPipeline, ARecordThatDoesNotDecodeIsAnErrorWithItsPlaceOrACountedRejection) {
  create_topic("bad", 1);
  create_topic("out-bad", 1);
  produce("bad", {"1,200", "2,x7", "3,300", "4", "5,500"});
  const std::string sets = "--set tuples=3 --set processes.0.kafka_topic=bad --set processes.3.kafka_topic=out-bad";
  RunResult fail = run("bad-fail", kKafkaYaml, sets);
  EXPECT_EQ(fail.code, 1) << fail.err;
  const std::string source_err = fail.process("source")["error"].as<std::string>("");
  EXPECT_NE(source_err.find("the record does not decode: topic bad partition 0 offset 1:3: field p1 (i64): "
                            "'x7' is not an integer"),
            std::string::npos)
      << source_err;

  RunResult reject = run("bad-reject", kKafkaYaml, sets + " --set bad_records=reject");
  ASSERT_EQ(reject.code, 0) << reject.err;
  const YAML::Node src = reject.process("source");
  EXPECT_EQ(src["rejected"].as<uint64_t>(), 2u);
  EXPECT_EQ(src["tuples_out"].as<uint64_t>(), 3u);
  EXPECT_EQ(reject.report["lost"].as<uint64_t>(), 0u);
}

// The same tuples as JSON lines (fields in another order) or as binary
// records: the same rows as the CSV records give.
TEST_F(KafkaPipeline, JsonlAndBinaryRecordsGiveTheRowsOfTheSameTuplesAsCsv) {
  const std::vector<std::string>& ref = reference();
  ASSERT_FALSE(ref.empty());
  for (const char* format : {"jsonl", "binary"}) {
    SCOPED_TRACE(format);
    const std::string in = std::string("in-") + format, out = std::string("out-") + format;
    create_topic(in, 1);
    create_topic(out, 1);
    if (records_in(in) == 0) produce(in, esper_records(kTuples, format));
    ASSERT_EQ(records_in(in), static_cast<int64_t>(kTuples));
    RunResult r = run(std::string("format-") + format, kKafkaYaml,
                      "--set tuples=" + std::to_string(kTuples) + " --set processes.0.record_format=" + format +
                          " --set processes.0.kafka_topic=" + in + " --set processes.3.kafka_topic=" + out);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.process("source")["tuples_out"].as<uint64_t>(), kTuples);
    EXPECT_TRUE(same_rows(read_committed(out), ref));
  }
}

// In each format, records 1 and 3 do not decode (jsonl: a field missing,
// then a value that is no number; binary: a record a byte short, then one
// a byte long): fail names the first with its topic, partition and offset;
// reject counts both and passes the others on.
TEST_F(KafkaPipeline, AJsonlOrBinaryRecordThatDoesNotDecodeIsAnErrorWithItsPlaceOrACountedRejection) {
  std::vector<std::string> bin = esper_records(5, "binary");
  bin[1].pop_back();
  bin[3].push_back('\0');
  struct Case {
    const char* format;
    std::vector<std::string> records;
    std::vector<std::string> first_error;  // each in the message
  } cases[] = {
      {"jsonl",
       {R"({"p0": 1, "p1": 200})", R"({"p0": 2})", R"({"p0": 3, "p1": 300})", R"({"p0": 4, "p1": true})",
        R"({"p0": 5, "p1": 500})"},
       {"the record does not decode: topic bad-jsonl partition 0 offset 1:", "no field 'p1' in the object"}},
      {"binary", bin, {"the record does not decode: topic bad-binary partition 0 offset 1: a record of 15 bytes, not 16"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.format);
    const std::string in = std::string("bad-") + c.format, out = std::string("out-bad-") + c.format;
    create_topic(in, 1);
    create_topic(out, 1);
    if (records_in(in) == 0) produce(in, c.records);
    const std::string sets = std::string("--set tuples=3 --set processes.0.record_format=") + c.format +
                             " --set processes.0.kafka_topic=" + in + " --set processes.3.kafka_topic=" + out;
    RunResult fail = run(std::string("bad-fail-") + c.format, kKafkaYaml, sets);
    EXPECT_EQ(fail.code, 1) << fail.err;
    const std::string source_err = fail.process("source")["error"].as<std::string>("");
    for (const std::string& part : c.first_error) EXPECT_NE(source_err.find(part), std::string::npos) << source_err;

    RunResult reject = run(std::string("bad-reject-") + c.format, kKafkaYaml, sets + " --set bad_records=reject");
    ASSERT_EQ(reject.code, 0) << reject.err;
    const YAML::Node src = reject.process("source");
    EXPECT_EQ(src["rejected"].as<uint64_t>(), 2u);
    EXPECT_EQ(src["tuples_out"].as<uint64_t>(), 3u);
    EXPECT_EQ(reject.report["lost"].as<uint64_t>(), 0u);
  }
}

// A topic of three partitions, read as a stream per partition (streams: 3)
// through a filter to a one-partition topic: every record that passes the
// filter comes out once, in a run without faults and in one whose source is
// killed mid-run (its snapshots hold an offset per partition, and the
// restarted source goes on from each), read with read_committed. The
// streams merge at node-a in arrival order, so the rows are compared as a
// multiset, and each partition's rows in the order they were produced.
TEST_F(KafkaPipeline, APartitionedTopicIsReadAsAStreamPerPartitionExactlyOnce) {
  constexpr uint64_t kRecords = 300000;
  constexpr int32_t kPartitions = 3;
  // Record i is "i,p1": each one different (p0 = i), p1 in 0..299 so
  // that node-a's filter keeps about two thirds.
  std::vector<std::string> records;
  for (uint64_t i = 0; i < kRecords; ++i) records.push_back(std::to_string(i) + "," + std::to_string(i * 7919 % 300));
  create_topic("in-3", kPartitions);
  if (records_in("in-3") == 0) produce("in-3", records, kPartitions);
  for (int32_t p = 0; p < kPartitions; ++p)
    ASSERT_EQ(records_in("in-3", p), static_cast<int64_t>(kRecords / kPartitions)) << "partition " << p;
  // What passes node-a's filter ("p0,p1", as the sink writes a row), and
  // each record's partition.
  std::vector<std::string> want;
  std::map<std::string, int32_t> partition_of_row;
  for (size_t i = 0; i < records.size(); ++i) {
    if (i * 7919 % 300 < 100) continue;
    want.push_back(records[i]);
    partition_of_row[records[i]] = static_cast<int32_t>(i % kPartitions);
  }
  ASSERT_GT(want.size(), kRecords / 4);
  const fs::path yaml = fs::temp_directory_path() / ("sluice-kafka-partitions-" + std::to_string(getpid()) + ".yaml");
  std::ofstream(yaml) << "preset: tcp-opt\nschema: esper\nschemas:\n  esper:\n    fields:\n"
                         "      - {name: p0, type: i64}\n      - {name: p1, type: i64}\n"
                         "event_bytes: 0\nstreams: 3\nprocesses:\n"
                         "  - {name: source, role: loadgen, source: kafka, kafka_topic: in-3, record_format: csv}\n"
                         "  - {name: node-a, role: node, operators: [{filter: {where: \"p1 >= 100\"}}]}\n"
                         "  - {name: node-b, role: node}\n"
                         "  - {name: sink, role: sink}\n";
  for (const char* victim : {"", "source"}) {
    SCOPED_TRACE(*victim ? std::string("source killed") : std::string("no fault"));
    const std::string out = std::string("out-3") + (*victim ? "-killed" : "");
    create_topic(out, 1);
    // 100,000 events/s (a tuple each): the run lasts 3 s, the kill comes
    // once the first rows are out.
    const std::string sets = "--set tuples=" + std::to_string(kRecords) + " --set rate=100000" + kSafe +
                             " --set processes.3.kafka_topic=" + out;
    RunResult r = *victim ? run(std::string("partitions-") + victim, yaml.string(), sets,
                                [&](const std::string& dir) {
                                  wait_for_rows(out);
                                  const pid_t v = find_process(dir, victim);
                                  ASSERT_GT(v, 0);
                                  kill(v, SIGKILL);
                                })
                          : run("partitions", yaml.string(), sets);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.report["lost"].as<uint64_t>(), 0u);
    EXPECT_EQ(r.report["duplicated"].as<uint64_t>(), 0u);
    int restarts = 0;
    for (const auto& p : r.report["processes"]) restarts += p["restarts"].as<int>(0);
    EXPECT_EQ(restarts, *victim ? 1 : 0) << "a kill that came after the run had ended";
    const std::vector<std::string> got = read_committed(out);
    std::vector<std::string> got_sorted = got, want_sorted = want;
    std::sort(got_sorted.begin(), got_sorted.end());
    std::sort(want_sorted.begin(), want_sorted.end());
    EXPECT_TRUE(same_rows(got_sorted, want_sorted));
    // Each partition's rows in the order it holds them.
    std::vector<std::vector<std::string>> by_partition(kPartitions), want_by_partition(kPartitions);
    for (const std::string& row : want) want_by_partition[partition_of_row[row]].push_back(row);
    for (const std::string& row : got)
      if (const auto at = partition_of_row.find(row); at != partition_of_row.end())
        by_partition[at->second].push_back(row);
    for (int32_t p = 0; p < kPartitions; ++p)
      EXPECT_TRUE(same_rows(by_partition[p], want_by_partition[p])) << "partition " << p;
  }
  fs::remove(yaml);
}

// kafka_key: each row, keyed by its group key, goes to that key's
// partition of a 4-partition topic. With the sink killed mid-run
// (transactions over several partitions), a read_committed reader finds
// each key's rows in one partition, in order, and they are the rows of a
// run without the fault.
TEST_F(KafkaPipeline, KeyedRowsSpreadOverThePartitionsByKeyExactlyOnce) {
  const std::vector<std::string>& ref = reference();
  ASSERT_FALSE(ref.empty());
  create_topic("out-keyed", 4);
  RunResult r = run("keyed", kKafkaYaml,
                    "--set tuples=" + std::to_string(kTuples) + kSafe +
                        " --set processes.3.kafka_topic=out-keyed --set processes.3.kafka_key=key",
                    [&](const std::string& dir) {
                      wait_for_rows("out-keyed", 4);
                      const pid_t v = find_process(dir, "sink");
                      ASSERT_GT(v, 0);
                      kill(v, SIGKILL);
                    });
  ASSERT_EQ(r.code, 0) << r.err;
  int restarts = 0;
  for (const auto& p : r.report["processes"]) restarts += p["restarts"].as<int>(0);
  EXPECT_EQ(restarts, 1) << "the kill came after the run had ended";
  // A row is "window_end,key,sum_p1".
  auto key_of = [](const std::string& row) {
    const size_t a = row.find(','), b = row.rfind(',');
    return row.substr(a + 1, b - a - 1);
  };
  std::map<std::string, std::vector<std::string>> want, got;
  for (const std::string& row : ref) want[key_of(row)].push_back(row);
  std::map<std::string, int32_t> partition_of;
  int used = 0;
  for (int32_t p = 0; p < 4; ++p) {
    std::vector<std::string> keys;
    const std::vector<std::string> rows = read_committed("out-keyed", p, &keys);
    used += rows.empty() ? 0 : 1;
    ASSERT_EQ(keys.size(), rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(keys[i], key_of(rows[i])) << rows[i];
      const auto at = partition_of.emplace(keys[i], p).first;
      EXPECT_EQ(at->second, p) << "key " << keys[i] << " in partitions " << at->second << " and " << p;
      got[keys[i]].push_back(rows[i]);
    }
  }
  EXPECT_GT(used, 1) << "every key in one partition";
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [key, rows] : want) {
    SCOPED_TRACE("key " + key);
    EXPECT_TRUE(same_rows(got[key], rows));
  }
}

}  // namespace
