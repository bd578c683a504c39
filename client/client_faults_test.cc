// Bad input and faults at the library's ends: another schema, a wrong
// token, a publisher ahead of its credits, a subscriber whose handler does
// not return, and node-a killed between a publisher and a subscriber with
// acks on. Each is a clear error or back pressure; nothing grows, nothing is
// lost or repeated.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "client/client_test_util.h"
#include "sluice/publisher.h"
#include "sluice/subscriber.h"

namespace sluice::client {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string pair_yaml(uint16_t port, const std::string& more = "") {
  return fmt::format("guarantee: none\nbase_port: {}\nmetrics: off\nprogress_s: 0\nevent_bytes: 4096\n{}"
                     "processes:\n  - {{name: pub, role: publisher}}\n  - {{name: sub, role: subscriber}}\n",
                     port, more);
}

Connect at(const std::string& file, const std::string& process, std::vector<std::string> set = {}) {
  Connect c;
  c.deployment = file;
  c.process = process;
  c.set = std::move(set);
  return c;
}

// Sends n full events and closes; the subscriber's counts must then say
// they all came.
void send_events(Publisher& pub, int n) {
  for (int i = 0; i < n; ++i) {
    Claim c;
    Code got;
    while ((got = pub.claim(pub.max_tuples(), &c, 1000ms)) == Code::kBackPressured) {
    }
    ASSERT_EQ(got, Code::kOk) << pub.error();
    ASSERT_EQ(pub.commit(c), Code::kOk) << pub.error();
  }
}

// Polls on a thread of its own until END (or an error): the tuples it got.
class Drain {
 public:
  explicit Drain(Subscriber& sub)
      : t_([this, &sub] {
          for (;;) {
            last_ = sub.poll([&](const EventView& e) { tuples_ += e.count; }, 64, 200ms);
            if (last_ != Code::kOk) break;
          }
        }) {}
  ~Drain() {
    if (t_.joinable()) t_.join();
  }
  uint64_t tuples() {
    t_.join();
    return tuples_;
  }
  Code last() const { return last_; }

 private:
  uint64_t tuples_ = 0;
  Code last_ = Code::kOk;
  std::thread t_;
};

TEST(ClientFaults, APublisherOfAnotherSchemaIsRefusedAtTheHandshakeNamingBoth) {
  TempDir dir;
  const std::string file = dir.write("d.yaml", pair_yaml(11500));
  std::unique_ptr<Subscriber> sub;
  ASSERT_TRUE(Subscriber::open(at(file, "sub"), &sub).ok());
  Connect wrong = at(file, "pub");
  wrong.fields = {{"price", Type::kF64}};
  std::unique_ptr<Publisher> pub;
  const Result r = Publisher::open(wrong, &pub);
  EXPECT_EQ(r.code, Code::kError);
  EXPECT_FALSE(pub);
  EXPECT_NE(r.message.find("handshake rejected"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("app{seq:u64,price:f64;tuple_bytes=16}"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("receiver expects 'sluice.tuple'/128-byte tuples"), std::string::npos) << r.message;
  // The subscriber kept waiting for its real upstream, which then gets through.
  ASSERT_TRUE(Publisher::open(at(file, "pub"), &pub).ok());
  Drain drain(*sub);
  send_events(*pub, 10);
  ASSERT_TRUE(pub->close().ok());
  EXPECT_EQ(drain.tuples(), 10u * pub->max_tuples());
  EXPECT_EQ(drain.last(), Code::kClosed);
  EXPECT_TRUE(sub->close().ok());
}

TEST(ClientFaults, ASubscriberOfAnotherSchemaIsRefusedWhenItOpens) {
  TempDir dir;
  const std::string file = dir.write("d.yaml", pair_yaml(11520));
  Connect wrong = at(file, "sub");
  wrong.fields = {{"key", Type::kU64}};
  std::unique_ptr<Subscriber> sub;
  const Result r = Subscriber::open(wrong, &sub);
  EXPECT_EQ(r.code, Code::kError);
  EXPECT_EQ(r.message, "schema mismatch: the application reads app{seq:u64,key:u64;tuple_bytes=16}, but 'pub' "
                       "sends default{seq:u64,key:u32;tuple_bytes=128} to 'sub'");
  // The graph's own layout, declared, is no mismatch.
  Connect same = at(file, "sub");
  same.fields = {{"key", Type::kU32}};
  same.tuple_bytes = 128;
  ASSERT_TRUE(Subscriber::open(same, &sub).ok());
  EXPECT_TRUE(sub->close().code == Code::kError);  // closed before any END
}

TEST(ClientFaults, AWrongTokenIsRefusedAtTheHandshake) {
  TempDir dir;
  const std::string file = dir.write("d.yaml", pair_yaml(11540));
  std::unique_ptr<Subscriber> sub;
  ASSERT_TRUE(Subscriber::open(at(file, "sub", {"token=right"}), &sub).ok());
  std::unique_ptr<Publisher> pub;
  const Result r = Publisher::open(at(file, "pub", {"token=wrong"}), &pub);
  EXPECT_EQ(r.code, Code::kError);
  EXPECT_NE(r.message.find("link pub -> sub"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("token does not match the receiver's"), std::string::npos) << r.message;
  EXPECT_EQ(r.message.find("right"), std::string::npos) << "a token is never printed: " << r.message;
  ASSERT_TRUE(Publisher::open(at(file, "pub", {"token=right"}), &pub).ok());
  Drain drain(*sub);
  send_events(*pub, 3);
  ASSERT_TRUE(pub->close().ok());
  EXPECT_EQ(drain.tuples(), 3u * pub->max_tuples());
}

TEST(ClientFaults, BadCallsAreErrorsThatSayWhat) {
  TempDir dir;
  const std::string file = dir.write("d.yaml", pair_yaml(11560));
  std::unique_ptr<Publisher> pub;
  Result r = Publisher::open(at(file, "sub"), &pub);
  EXPECT_EQ(r.message, fmt::format("process 'sub' in {} is a subscriber, not a publisher", file));
  r = Publisher::open(at(file, "nobody"), &pub);
  EXPECT_EQ(r.message, fmt::format("no process 'nobody' in {}", file));
  Connect none;
  r = Publisher::open(none, &pub);
  EXPECT_EQ(r.code, Code::kError);
  r = Publisher::open([] {
    Connect c;
    c.run_dir = "/nonexistent/run";
    c.process = "pub";
    return c;
  }(), &pub);
  EXPECT_NE(r.message.find("cannot read /nonexistent/run/apps/pub.json"), std::string::npos) << r.message;
  std::unique_ptr<Subscriber> sub;
  ASSERT_TRUE(Subscriber::open(at(file, "sub"), &sub).ok());
  EXPECT_EQ(sub->acknowledge(), Code::kError);  // manual_acks is off
  EXPECT_EQ(sub->error(), "acknowledge: this subscriber acknowledges by itself (manual_acks off)");
  ASSERT_TRUE(Publisher::open(at(file, "pub"), &pub).ok());
  Drain drain(*sub);
  Claim c;
  EXPECT_EQ(pub->claim(pub->max_tuples() + 1, &c), Code::kError);
  EXPECT_EQ(pub->error(), fmt::format("claim of {} tuples: an event holds 1 to {} (event_bytes 4096)",
                                      pub->max_tuples() + 1, pub->max_tuples()));
  EXPECT_EQ(pub->claim(1, &c, 0ms, 1), Code::kError);
  EXPECT_EQ(pub->error(), "claim on stream 1: this publisher writes streams 0 to 0 (streams: 1)");
  const std::vector<std::byte> odd(100);
  EXPECT_EQ(pub->offer(odd), Code::kError);
  EXPECT_EQ(pub->error(), "offer of 100 bytes: not a whole number of 128-byte tuples");
  EXPECT_EQ(pub->commit(c), Code::kError);  // holds no room
  ASSERT_TRUE(pub->close().ok());
  EXPECT_EQ(pub->claim(1, &c), Code::kClosed);
  EXPECT_EQ(drain.tuples(), 0u);
  EXPECT_EQ(drain.last(), Code::kClosed);
  EXPECT_TRUE(sub->counts().ended);
}

// A handler that does not return holds its slots: the upstream runs out of
// credit and the publisher's pool fills, so claim says kBackPressured after
// at most what the pool and the receiver's slots hold; once the handler
// returns everything comes, once.
TEST(ClientFaults, AHandlerThatDoesNotReturnBackPressuresThePublisher) {
  TempDir dir;
  const std::string file = dir.write("d.yaml", pair_yaml(11580));
  std::unique_ptr<Subscriber> sub;
  ASSERT_TRUE(Subscriber::open(at(file, "sub"), &sub).ok());
  std::unique_ptr<Publisher> pub;
  ASSERT_TRUE(Publisher::open(at(file, "pub"), &pub).ok());
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  uint64_t got = 0;
  std::atomic<bool> in_handler{false};
  std::thread reader([&] {
    for (;;) {
      const Code c = sub->poll([&](const EventView& e) {
        in_handler = true;
        std::unique_lock lk(mu);
        cv.wait(lk, [&] { return release; });
        got += e.count;
      }, 64, 200ms);
      if (c != Code::kOk) break;
    }
  });
  uint64_t committed = 0;
  Code last = Code::kOk;
  const uint64_t bound = 256 /* the pool: 1 MiB of 4 KiB events */ + 64 * 16 /* the receiver's slots */ + 64;
  while (committed <= bound) {
    Claim c;
    last = pub->claim(pub->max_tuples(), &c, 50ms);
    if (last != Code::kOk) break;
    ASSERT_EQ(pub->commit(c), Code::kOk);
    ++committed;
  }
  EXPECT_EQ(last, Code::kBackPressured) << code_name(last) << " after " << committed << " events";
  EXPECT_TRUE(in_handler.load());
  EXPECT_GT(committed, 64u);  // it ran until the slots were full, not less
  // It stays so, a claim at a time, while the handler is stuck.
  for (int i = 0; i < 5; ++i) {
    Claim c;
    EXPECT_EQ(pub->claim(1, &c, 20ms), Code::kBackPressured);
  }
  {
    std::lock_guard lk(mu);
    release = true;
  }
  cv.notify_all();
  send_events(*pub, 100);
  ASSERT_TRUE(pub->close().ok());
  reader.join();
  const Counts k = sub->counts();
  EXPECT_EQ(got, (committed + 100) * pub->max_tuples());
  EXPECT_EQ(k.lost + k.duplicated + k.corrupt, 0u);
  EXPECT_TRUE(k.ended);
  EXPECT_TRUE(sub->close().ok());
}

// The same, with the handler stuck past the publisher's close: close gives
// up within its timeout and says why; the subscriber, released later, is
// told the stream was cut short.
TEST(ClientFaults, ACloseThatTheReceiverDoesNotTakeEndsWithinItsTimeout) {
  TempDir dir;
  const std::string file = dir.write("d.yaml", pair_yaml(11600));
  std::unique_ptr<Subscriber> sub;
  ASSERT_TRUE(Subscriber::open(at(file, "sub"), &sub).ok());
  std::unique_ptr<Publisher> pub;
  ASSERT_TRUE(Publisher::open(at(file, "pub"), &pub).ok());
  std::atomic<bool> release{false};
  Code end = Code::kOk;
  std::string why;
  std::thread reader([&] {
    for (;;) {
      end = sub->poll([&](const EventView&) {
        while (!release) std::this_thread::sleep_for(1ms);
      }, 64, 200ms);
      if (end != Code::kOk) break;
    }
    why = sub->error();
  });
  for (;;) {
    Claim c;
    if (pub->claim(pub->max_tuples(), &c, 50ms) != Code::kOk) break;
    ASSERT_EQ(pub->commit(c), Code::kOk);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const Result r = pub->close(300ms);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  EXPECT_EQ(r.code, Code::kError);
  EXPECT_NE(r.message.find("within 300 ms"), std::string::npos) << r.message;
  release = true;
  reader.join();
  EXPECT_EQ(end, Code::kError);
  EXPECT_NE(why.find("pub -> sub"), std::string::npos) << why;
  EXPECT_EQ(sub->close().code, Code::kError);
}

// With acks on, node-a killed between a publisher and a subscriber (the
// real nodes, started by sluice-deploy, restart: on-failure): the
// publisher's links connect again and send what was not acknowledged, the
// subscriber drops what came twice; every tuple arrives once, in order.
TEST(ClientFaults, KillingNodeAWithAcksLosesAndRepeatsNothing) {
  TempDir dir;
  const std::string run = dir.path() + "/run";
  const pid_t deploy = fork();
  if (deploy == 0) {
    ::setpgid(0, 0);
    const std::string log = dir.path() + "/deploy.log";
    if (!std::freopen(log.c_str(), "w", stderr) ||
        !std::freopen((dir.path() + "/report.json").c_str(), "w", stdout))
      _exit(126);
    execl(SLUICE_DEPLOY, SLUICE_DEPLOY, "run", SLUICE_SOURCE_DIR "/deploy/examples/app.yaml", "--run-dir",
          run.c_str(), "--set", "acks=on", "--set", "restart=on-failure", "--set", "base_port=11700", "--set",
          "progress_s=0", "--set", "metrics=off", "--json", nullptr);
    _exit(127);
  }
  ASSERT_GT(deploy, 0);
  for (int i = 0; i < 300 && !fs::exists(run + "/apps/publisher.json"); ++i) std::this_thread::sleep_for(50ms);
  Connect c;
  c.run_dir = run;
  c.process = "subscriber";
  std::unique_ptr<Subscriber> sub;
  ASSERT_TRUE(Subscriber::open(c, &sub).ok());
  c.process = "publisher";
  std::unique_ptr<Publisher> pub;
  Result r = Publisher::open(c, &pub);
  ASSERT_TRUE(r.ok()) << r.message;
  uint64_t next = 0, wrong = 0, tuples = 0;
  std::thread reader([&] {
    for (;;) {
      const Code k = sub->poll([&](const EventView& e) {
        for (uint32_t i = 0; i < e.count; ++i) wrong += e.tuple(i).seq() != next + i;
        next += e.count;
        tuples += e.count;
      }, 64, 200ms);
      if (k != Code::kOk) break;
    }
  });
  // node-a, as sluice-deploy started it.
  auto node_a = [&]() -> pid_t {
    for (const auto& e : fs::directory_iterator("/proc")) {
      std::ifstream in(e.path() / "cmdline");
      std::string cl((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::replace(cl.begin(), cl.end(), '\0', ' ');
      if (cl.find(run + "/") != std::string::npos && cl.find("--process node-a ") != std::string::npos &&
          cl.find("--restarted") == std::string::npos)
        return static_cast<pid_t>(std::stoi(e.path().filename().string()));
    }
    return -1;
  };
  const pid_t victim = node_a();
  ASSERT_GT(victim, 0);
  uint64_t sent = 0;
  const auto t0 = std::chrono::steady_clock::now();
  bool killed = false;
  while (std::chrono::steady_clock::now() - t0 < 3s) {
    if (!killed && std::chrono::steady_clock::now() - t0 > 1s) {
      ::kill(victim, SIGKILL);
      killed = true;
    }
    Claim cl;
    const Code got = pub->claim(pub->max_tuples(), &cl, 100ms);
    if (got == Code::kBackPressured) continue;
    ASSERT_EQ(got, Code::kOk) << pub->error();
    ASSERT_EQ(pub->commit(cl), Code::kOk) << pub->error();
    sent += pub->max_tuples();
    std::this_thread::sleep_for(200us);
  }
  ASSERT_EQ(pub->flush(60s), Code::kOk) << pub->error();
  EXPECT_EQ(pub->acknowledged(), pub->committed());
  r = pub->close(30s);
  EXPECT_TRUE(r.ok()) << r.message;
  reader.join();
  const Counts k = sub->counts();
  EXPECT_TRUE(k.ended);
  EXPECT_EQ(tuples, sent);
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(k.lost + k.duplicated + k.corrupt, 0u);
  r = sub->close();
  EXPECT_TRUE(r.ok()) << r.message;
  int st = 0;
  for (int i = 0; i < 600 && waitpid(deploy, &st, WNOHANG) == 0; ++i) std::this_thread::sleep_for(100ms);
  if (waitpid(deploy, &st, WNOHANG) == 0) {
    ::kill(-deploy, SIGKILL);
    waitpid(deploy, &st, 0);
    FAIL() << "sluice-deploy run did not end; its log:\n" << dir.read("deploy.log");
  }
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << dir.read("deploy.log");
  const std::string log = dir.read("deploy.log");
  EXPECT_NE(log.find("node-a died (signal KILL); restarting"), std::string::npos) << log;
  const std::string report = dir.read("report.json");
  EXPECT_NE(report.find(fmt::format("\"tuples\":{},", sent)), std::string::npos) << report;
}

}  // namespace
}  // namespace sluice::client
