// Set-up errors of the message carriers: what is not here is named, with
// what is, and nothing crashes.
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "transport/link.h"
#include "transport/transport.h"

namespace sluice {
namespace {

#define EXPECT_HAS(s, sub) EXPECT_NE(std::string(s).find(sub), std::string::npos) << (s)

LinkOptions opts(const std::string& transport) {
  LinkOptions o;
  o.transport = transport;
  o.from = "a";
  o.to = "b";
  o.port = 0;
  o.slots = 4;
  o.connect_timeout_ms = 500;
  return o;
}

TEST(FabricSetup, AMissingProviderListsThePresentOnes) {
  TransportContext ctx;
  SlotPool pool(8, 65536);
  LinkOptions o = opts("fabric");
  o.msg.fabric_provider = "verbs";  // no RDMA device on these machines
  Status st;
  auto l = make_listener(o, pool, 0, ctx, &st);
  if (l) GTEST_SKIP() << "this machine has a verbs device";
  EXPECT_HAS(st.message(), "fabric provider 'verbs' is not available here; present:");
  EXPECT_HAS(st.message(), "tcp");
  EXPECT_HAS(st.message(), "shm");
  EXPECT_FALSE(make_sender(o, pool, ctx, &st));
  EXPECT_HAS(st.message(), "'verbs' is not available here");
}

TEST(FabricSetup, OneDomainPerProviderPerProcess) {
  TransportContext ctx;
  SlotPool pool(8, 65536);
  LinkOptions o = opts("fabric");
  o.msg.fabric_provider = "tcp";
  Status st;
  auto a = make_listener(o, pool, 0, ctx, &st);
  ASSERT_TRUE(a) << st.message();
  int made = 0;
  auto probe = [&](Status*) -> std::shared_ptr<TransportContext::State> {
    ++made;
    return nullptr;
  };
  // The first listener opened "fabric/tcp": a second lookup finds it.
  EXPECT_TRUE(ctx.state("fabric/tcp", probe, &st));
  EXPECT_EQ(made, 0);
  EXPECT_FALSE(ctx.state("fabric/none", probe, &st));
  EXPECT_EQ(made, 1);
}

TEST(UcxSetup, AnUnknownTransportIsAnErrorNotACrash) {
  TransportContext ctx;
  SlotPool pool(8, 65536);
  LinkOptions o = opts("ucx");
  o.msg.ucx_tls = "rc";  // no InfiniBand here: no transport, no lane
  o.to = "b";
  Status st;
  auto l = make_listener(o, pool, 0, ctx, &st);
  ASSERT_TRUE(l) << st.message();  // the control connection binds; UCX opens per connection
  // The receiver opens UCX once a sender shook hands: its error names
  // UCX_TLS; the sender sees the link refused, not a hang.
  o.port = l->port();
  Status rx_st;
  std::unique_ptr<Receiver> rx;
  std::thread t([&] { rx = l->accept(&rx_st); });
  auto s = make_sender(o, pool, ctx, &st);
  t.join();
  if (s && rx) GTEST_SKIP() << "this machine has an rc transport";
  EXPECT_FALSE(s);
  EXPECT_FALSE(rx);
  EXPECT_HAS(rx_st.message(), "UCX_TLS=rc");
  EXPECT_HAS(rx_st.message(), "link a -> b (ucx/rc");
  EXPECT_FALSE(st.ok());
}

}  // namespace
}  // namespace sluice
