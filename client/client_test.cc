// The library's ends on every carrier: a Publisher and a Subscriber (one
// process, the link between them over the carrier under test) move tuples
// of a schema with typed fields, every one once and in order, with acks
// off and on. The carriers are the conformance suite's own list
// (transport/carrier_cases.h), every mode of it: a carrier added there runs
// here too.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "client/client_test_util.h"
#include "sluice/publisher.h"
#include "transport/carrier_cases.h"
#include "sluice/subscriber.h"

namespace sluice::client {
namespace {

using namespace std::chrono_literals;

// Every mode of the conformance suite (transport/carrier_cases.h), selected
// as an application selects it: by the deployment's keys.
using sluice::testing::CarrierCase;
using sluice::testing::kCarriers;

class ClientCarriers : public ::testing::TestWithParam<std::tuple<CarrierCase, bool>> {};

// Tuples of the quote schema, as the test writes them: every field a
// function of the stream and the seq, so the subscriber checks each.
struct Expect {
  std::vector<uint64_t> next_seq, next_event;
  uint64_t tuples = 0, events = 0, wrong = 0;
  std::string first_wrong;
};

TEST_P(ClientCarriers, EveryTupleArrivesOnceInOrderWithItsFields) {
  const auto& [carrier, acks] = GetParam();
  TempDir dir;
  size_t index = 0;
  while (std::string(kCarriers[index].name) != carrier.name) ++index;
  const uint16_t port = static_cast<uint16_t>(11000 + 20 * index + (acks ? 10 : 0));
  const std::string file = dir.write("quotes.yaml", fmt::format(
      "{}guarantee: none\nacks: {}\nbase_port: {}\nmetrics: off\nprogress_s: 0\nevent_bytes: 4096\nstreams: 2\n"
      "schema: q\nschemas:\n  q:\n    fields:\n      - {{name: key, type: u32}}\n"
      "      - {{name: price, type: f64}}\n      - {{name: tag, type: bytes, width: 6}}\n"
      "    tuple_bytes: 40\n"
      "processes:\n  - {{name: pub, role: publisher}}\n  - {{name: sub, role: subscriber}}\n",
      carrier.keys, acks ? "on" : "off", port));
  Connect at;
  at.deployment = file;
  at.process = "sub";
  std::unique_ptr<Subscriber> sub;
  Result r = Subscriber::open(at, &sub);
  if (acks && std::string(carrier.keys).find("send_queue: async") != std::string::npos) {
    // The async queue's thread reads the credits, and acknowledgements
    // would come with them: refused, naming the link and the fix.
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.message.find("link 0 (pub -> sub): acks: on needs send_queue: sync"), std::string::npos)
        << r.message;
    return;
  }
  ASSERT_TRUE(r.ok()) << r.message;
  at.process = "pub";
  std::unique_ptr<Publisher> pub;
  r = Publisher::open(at, &pub);
  ASSERT_TRUE(r.ok()) << r.message;
  const Layout& l = pub->layout();
  ASSERT_EQ(l.describe(), "q{seq:u64,key:u32,price:f64,tag:bytes[6];tuple_bytes=40}");
  const Field& key = *l.field("key");
  const Field& price = *l.field("price");
  const Field& tag = *l.field("tag");
  TypedField<double> typed_price;
  TypedField<int32_t> not_price;
  ASSERT_TRUE(l.typed("price", &typed_price));
  EXPECT_EQ(typed_price.offset, price.offset);
  EXPECT_FALSE(l.typed("price", &not_price));  // f64, not i32
  EXPECT_FALSE(l.typed("nothing", &typed_price));
  ASSERT_EQ(pub->streams(), 2u);
  ASSERT_EQ(pub->max_tuples(), (4096u - 64) / 40);

  Expect ex;
  ex.next_seq.assign(2, 0);
  ex.next_event.assign(2, 0);
  std::atomic<bool> closed{false};
  std::string poll_error;
  std::thread reader([&] {
    const Field& k = *sub->layout().field("key");
    const Field& p = *sub->layout().field("price");
    const Field& g = *sub->layout().field("tag");
    auto check = [&](const EventView& e) {
      const uint32_t s = e.stream;
      if (s >= 2 || e.event_seq != ex.next_event[s] || e.first_seq != ex.next_seq[s]) {
        if (!ex.wrong++)
          ex.first_wrong = fmt::format("stream {} event {} first_seq {}, expected event {} seq {}", s, e.event_seq,
                                       e.first_seq, s < 2 ? ex.next_event[s] : 0, s < 2 ? ex.next_seq[s] : 0);
        return;
      }
      for (uint32_t i = 0; i < e.count; ++i) {
        const TupleView t = e.tuple(i);
        const uint64_t q = t.seq();
        char want_tag[6] = {'q', char('a' + q % 26), char('0' + s), 0, 0, 0};
        if (q != ex.next_seq[s] + i || t.get<uint32_t>(k) != (q * 7 + s) % 1024 ||
            t.get<double>(p) != double(q) * 0.25 + s || t.get(typed_price) != double(q) * 0.25 + s ||
            std::memcmp(t.bytes(g).data(), want_tag, 6) != 0) {
          if (!ex.wrong++) ex.first_wrong = fmt::format("stream {} tuple {}: fields differ", s, q);
        }
      }
      ex.next_seq[s] += e.count;
      ++ex.next_event[s];
      ex.tuples += e.count;
      ++ex.events;
    };
    for (;;) {
      const Code c = sub->poll(check, 32, 200ms);
      if (c == Code::kClosed) break;
      if (c != Code::kOk) {
        poll_error = sub->error();
        break;
      }
    }
    closed = true;
  });

  // Events of every size from one tuple to a full event, on both streams,
  // by claim and by offer.
  uint64_t sent = 0;
  std::vector<uint64_t> seq(2, 0);
  std::vector<std::byte> buf(size_t{pub->max_tuples()} * 40);
  for (uint32_t e = 0; e < 600; ++e) {
    const uint32_t s = e % 2;
    const uint32_t n = 1 + (e * 37) % pub->max_tuples();
    Claim c;
    TupleRef first(nullptr);
    if (e % 5 == 4) {  // offer: the application's own buffer
      for (uint32_t i = 0; i < n; ++i) {
        TupleRef t(buf.data() + size_t{i} * 40);
        const uint64_t q = seq[s] + i;
        t.set(key, (q * 7 + s) % 1024);
        t.set(price, double(q) * 0.25 + s);
        const char g[6] = {'q', char('a' + q % 26), char('0' + s), 0, 0, 0};
        std::memcpy(t.bytes(tag).data(), g, 6);
      }
      Code got;
      while ((got = pub->offer(std::span<const std::byte>(buf.data(), size_t{n} * 40), 1000ms, s)) ==
             Code::kBackPressured) {
      }
      ASSERT_EQ(got, Code::kOk) << pub->error();
    } else {
      Code got;
      while ((got = pub->claim(n, &c, 1000ms, s)) == Code::kBackPressured) {
      }
      ASSERT_EQ(got, Code::kOk) << pub->error();
      for (uint32_t i = 0; i < n; ++i) {
        TupleRef t = c.tuple(i);
        const uint64_t q = seq[s] + i;
        t.set(key, (q * 7 + s) % 1024);
        t.set(price, double(q) * 0.25 + s);
        const char g[6] = {'q', char('a' + q % 26), char('0' + s), 0, 0, 0};
        std::memcpy(t.bytes(tag).data(), g, 6);
      }
      ASSERT_EQ(pub->commit(c), Code::kOk) << pub->error();
    }
    seq[s] += n;
    sent += n;
  }
  EXPECT_EQ(pub->committed(), 600u);
  ASSERT_EQ(pub->flush(30s), Code::kOk) << pub->error();
  EXPECT_EQ(pub->sent(), 600u);
  if (acks) {
    EXPECT_EQ(pub->acknowledged(), 600u);
  }
  r = pub->close(30s);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(pub->close().code, Code::kClosed);
  reader.join();
  EXPECT_TRUE(poll_error.empty()) << poll_error;
  EXPECT_EQ(ex.wrong, 0u) << ex.first_wrong;
  EXPECT_EQ(ex.tuples, sent);
  EXPECT_EQ(ex.events, 600u);
  const Counts k = sub->counts();
  EXPECT_TRUE(k.ended);
  EXPECT_EQ(k.tuples, sent);
  EXPECT_EQ(k.lost + k.duplicated + k.corrupt, 0u);
  r = sub->close();
  EXPECT_TRUE(r.ok()) << r.message;
}

std::string pair_yaml(uint16_t port, const std::string& more) {
  return fmt::format("guarantee: none\nbase_port: {}\nmetrics: off\nprogress_s: 0\nevent_bytes: 4096\n{}"
                     "processes:\n  - {{name: pub, role: publisher}}\n  - {{name: sub, role: subscriber}}\n",
                     port, more);
}

Code send_full(Publisher& pub) {
  Claim c;
  Code got;
  while ((got = pub.claim(pub.max_tuples(), &c, 1000ms)) == Code::kBackPressured) {
  }
  return got == Code::kOk ? pub.commit(c) : got;
}

// manual_acks: what the subscriber handled is acknowledged upstream only
// when it says so; the publisher's acknowledged progress and flush wait
// for it, and nothing it handled comes again.
TEST(ClientAcks, ManualAcknowledgementsWaitForTheApplication) {
  TempDir dir;
  const std::string file = dir.write("d.yaml", pair_yaml(11800, "acks: on\n"));
  Connect c;
  c.deployment = file;
  c.process = "sub";
  SubscriberOptions manual;
  manual.manual_acks = true;
  std::unique_ptr<Subscriber> sub;
  Result r = Subscriber::open(c, &sub, manual);
  ASSERT_TRUE(r.ok()) << r.message;
  c.process = "pub";
  std::unique_ptr<Publisher> pub;
  ASSERT_TRUE(Publisher::open(c, &pub).ok());
  for (int i = 0; i < 5; ++i) ASSERT_EQ(send_full(*pub), Code::kOk);
  int handled = 0;
  for (int tries = 0; handled < 5 && tries < 50; ++tries) {
    int n = 0;
    ASSERT_EQ(sub->poll([](const EventView&) {}, 64, 100ms, &n), Code::kOk);
    handled += n;
  }
  ASSERT_EQ(handled, 5);
  // Handled, its slots given back, but not acknowledged.
  EXPECT_EQ(pub->flush(300ms), Code::kBackPressured);
  EXPECT_EQ(pub->acknowledged(), 0u);
  EXPECT_EQ(pub->sent(), 5u);
  EXPECT_EQ(sub->acknowledge(), Code::kOk);
  EXPECT_EQ(pub->flush(10s), Code::kOk) << pub->error();
  EXPECT_EQ(pub->acknowledged(), 5u);
  std::thread closing([&] { r = pub->close(10s); });
  Code end;
  while ((end = sub->poll([](const EventView&) {}, 64, 100ms)) == Code::kOk) {
  }
  EXPECT_EQ(end, Code::kClosed);
  closing.join();
  EXPECT_TRUE(r.ok()) << r.message;
  const Counts k = sub->counts();
  EXPECT_EQ(k.tuples, 5u * pub->max_tuples());
  EXPECT_EQ(k.lost + k.duplicated + k.deduplicated, 0u);
  EXPECT_TRUE(sub->close().ok());
}

// A subscriber told where its stream already reached drops the events
// before it (a sink that kept its position across a restart of the graph).
TEST(ClientAcks, ASubscriberResumedAtAPositionDropsWhatCameBefore) {
  TempDir dir;
  const std::string file = dir.write("d.yaml", pair_yaml(11820, ""));
  Connect c;
  c.deployment = file;
  c.process = "sub";
  SubscriberOptions from3;
  from3.resume = {{0, 3, 3 * ((4096u - 64) / 128)}};
  std::unique_ptr<Subscriber> sub;
  ASSERT_TRUE(Subscriber::open(c, &sub, from3).ok());
  c.process = "pub";
  std::unique_ptr<Publisher> pub;
  ASSERT_TRUE(Publisher::open(c, &pub).ok());
  std::vector<uint64_t> seen;
  std::thread reader([&] {
    while (sub->poll([&](const EventView& e) { seen.push_back(e.event_seq); }, 64, 100ms) == Code::kOk) {
    }
  });
  for (int i = 0; i < 5; ++i) ASSERT_EQ(send_full(*pub), Code::kOk);
  ASSERT_TRUE(pub->close().ok());
  reader.join();
  EXPECT_EQ(seen, (std::vector<uint64_t>{3, 4}));
  const Counts k = sub->counts();
  EXPECT_EQ(k.deduplicated, 3u * pub->max_tuples());
  EXPECT_EQ(k.tuples, 2u * pub->max_tuples());
  EXPECT_EQ(k.lost + k.duplicated + k.corrupt, 0u);
  EXPECT_TRUE(sub->close().ok());
}

// No deployment file: a publisher reaches a listener by its address and
// token (here a subscriber's, which listens on it), both declaring the
// tuples they mean; every tuple arrives once with its fields.
TEST(ClientAddress, APublisherReachesAListenerByAddressAndToken) {
  Connect c;
  c.address = "127.0.0.1:11840";
  c.token = "a-shared-secret";
  c.fields = {{"key", Type::kU32}, {"price", Type::kF64}};
  c.tuple_bytes = 64;
  c.set = {"event_bytes=4096", "metrics=off", "progress_s=0"};
  std::unique_ptr<Subscriber> sub;
  Result r = Subscriber::open(c, &sub);
  ASSERT_TRUE(r.ok()) << r.message;
  std::unique_ptr<Publisher> pub;
  r = Publisher::open(c, &pub);
  ASSERT_TRUE(r.ok()) << r.message;
  ASSERT_EQ(pub->layout().tuple_bytes(), 64u);
  const Field* key = pub->layout().field("key");
  const Field* price = sub->layout().field("price");
  ASSERT_TRUE(key && price);
  uint64_t sum_key = 0, tuples = 0, wrong = 0;
  std::thread reader([&] {
    while (sub->poll(
               [&](const EventView& e) {
                 for (uint32_t i = 0; i < e.count; ++i) {
                   const TupleView t = e.tuple(i);
                   sum_key += t.get<uint64_t>(*key);
                   wrong += t.get<double>(*price) != double(t.seq()) * 0.5;
                 }
                 tuples += e.count;
               },
               64, 100ms) == Code::kOk) {
    }
  });
  uint64_t sent = 0, want_sum = 0;
  for (int e = 0; e < 20; ++e) {
    Claim cl;
    Code got;
    while ((got = pub->claim(pub->max_tuples(), &cl, 1000ms)) == Code::kBackPressured) {
    }
    ASSERT_EQ(got, Code::kOk) << pub->error();
    for (uint32_t i = 0; i < cl.capacity; ++i, ++sent) {
      cl.tuple(i).set(*key, sent % 1000);
      cl.tuple(i).set(*price, double(sent) * 0.5);
      want_sum += sent % 1000;
    }
    ASSERT_EQ(pub->commit(cl), Code::kOk) << pub->error();
  }
  r = pub->close(30s);
  ASSERT_TRUE(r.ok()) << r.message;
  reader.join();
  EXPECT_EQ(tuples, sent);
  EXPECT_EQ(sum_key, want_sum);
  EXPECT_EQ(wrong, 0u);
  const Counts k = sub->counts();
  EXPECT_TRUE(k.ended);
  EXPECT_EQ(k.lost + k.duplicated + k.corrupt, 0u);
  EXPECT_TRUE(sub->close().ok());
}

INSTANTIATE_TEST_SUITE_P(Carriers, ClientCarriers,
                         ::testing::Combine(::testing::ValuesIn(kCarriers), ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) +
                                  (std::get<1>(info.param) ? "_acks" : "");
                         });

}  // namespace
}  // namespace sluice::client
