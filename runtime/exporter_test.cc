// The metrics endpoint: what a scrape over HTTP returns, and set-up errors.
#include "runtime/exporter.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <regex>
#include <string>

namespace sluice {
namespace {

// GET path from 127.0.0.1:port; the whole response.
std::string http_get(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return "";
  }
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: x\r\n\r\n";
  (void)!write(fd, req.data(), req.size());
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, n);
  close(fd);
  return out;
}

int port_of(const std::string& url) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(url, m, std::regex(R"(^http://127\.0\.0\.1:(\d+)/metrics$)"))) << url;
  return m.empty() ? 0 : std::stoi(m[1]);
}

TEST(Exporter, AScrapeNamesTheProcessAndItsCpu) {
  Status st;
  auto e = Exporter::start("127.0.0.1", 0, {"node-a", "node", 0.5, 2.6, 200}, &st);
  ASSERT_TRUE(e) << st.message();
  const std::string body = http_get(port_of(e->url()), "/metrics");
  EXPECT_NE(body.find("200 OK"), std::string::npos) << body;
  EXPECT_NE(body.find(R"(sluice_info{process="node-a",role="node"} 1)"), std::string::npos) << body;
  EXPECT_NE(body.find(R"(sluice_cpu_seconds_total{mode="user"})"), std::string::npos) << body;
  EXPECT_NE(body.find("# TYPE sluice_cpu_seconds_total counter"), std::string::npos) << body;
  EXPECT_NE(body.find("sluice_clock_hertz 2600000000"), std::string::npos) << body;
  EXPECT_NE(body.find("sluice_cores 0.5"), std::string::npos) << body;
  // Before the first event the measured interval has not begun.
  EXPECT_NE(body.find("sluice_measured_seconds 0\n"), std::string::npos) << body;
  // A node has both directions; nothing has moved yet.
  EXPECT_NE(body.find(R"(sluice_events_total{direction="in"} 0)"), std::string::npos) << body;
  EXPECT_NE(body.find(R"(sluice_events_total{direction="out"} 0)"), std::string::npos) << body;
}

TEST(Exporter, ALoadGeneratorHasNoInAndASinkNoOut) {
  Status st;
  auto g = Exporter::start("127.0.0.1", 0, {"loadgen", "loadgen", 1, 2.6, 200}, &st);
  ASSERT_TRUE(g) << st.message();
  auto k = Exporter::start("127.0.0.1", 0, {"sink", "sink", 1, 2.6, 200}, &st);
  ASSERT_TRUE(k) << st.message();
  EXPECT_EQ(g->scrape().find(R"(direction="in")"), std::string::npos);
  EXPECT_NE(g->scrape().find(R"(direction="out")"), std::string::npos);
  EXPECT_EQ(k->scrape().find(R"(direction="out")"), std::string::npos);
  EXPECT_NE(k->scrape().find(R"(direction="in")"), std::string::npos);
}

TEST(Exporter, APortInUseIsAnErrorThatNamesTheProcessAndTheAddress) {
  Status st;
  auto a = Exporter::start("127.0.0.1", 0, {"node-a", "node", 1, 2.6, 200}, &st);
  ASSERT_TRUE(a) << st.message();
  const int port = port_of(a->url());
  auto b = Exporter::start("127.0.0.1", static_cast<uint16_t>(port), {"node-b", "node", 1, 2.6, 200}, &st);
  EXPECT_FALSE(b);
  EXPECT_NE(st.message().find("node-b"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("127.0.0.1:" + std::to_string(port)), std::string::npos) << st.message();
}

TEST(Exporter, MeasuredSecondsStartAtTheFirstEvent) {
  Status st;
  auto e = Exporter::start("127.0.0.1", 0, {"sink", "sink", 1, 2.6, 200}, &st);
  ASSERT_TRUE(e) << st.message();
  e->measure_started();
  usleep(20000);
  std::smatch m;
  const std::string text = e->scrape();
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(sluice_measured_seconds ([0-9.e+-]+))"))) << text;
  EXPECT_GE(std::stod(m[1]), 0.015);
}

}  // namespace
}  // namespace sluice
