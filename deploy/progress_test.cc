// The live table: figures from two scrapes, and a redraw that goes back over
// the table instead of scrolling.
#include "deploy/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace sluice {
namespace {

std::string scrape(double ev_in, double ev_out, double tuples, double bytes, double user, double sys) {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "# HELP x\n# TYPE sluice_events_total counter\n"
                "sluice_events_total{direction=\"in\"} %g\nsluice_events_total{direction=\"out\"} %g\n"
                "sluice_tuples_total{direction=\"in\"} %g\nsluice_tuples_total{direction=\"out\"} %g\n"
                "sluice_bytes_total{direction=\"in\"} %g\nsluice_bytes_total{direction=\"out\"} %g\n"
                "sluice_cpu_seconds_total{mode=\"user\"} %g\nsluice_cpu_seconds_total{mode=\"system\"} %g\n"
                "sluice_clock_hertz 2000000000\nsluice_cores 1\n",
                ev_in, ev_out, tuples, tuples, bytes, bytes, user, sys);
  return buf;
}

TEST(LiveTable, ParsesTheExposition) {
  auto m = parse_metrics_text(scrape(1, 2, 3, 4, 0.5, 0.25));
  EXPECT_DOUBLE_EQ(m[R"(sluice_events_total{direction="out"})"], 2);
  EXPECT_DOUBLE_EQ(m["sluice_clock_hertz"], 2e9);
  EXPECT_EQ(m.count("# HELP x"), 0u);
}

TEST(LiveTable, ARowIsTheRatesBetweenTwoScrapes) {
  LiveTable t({{"node-a", "node", ""}, {"sink", "sink", ""}});
  t.feed(0, 10.0, scrape(0, 0, 0, 0, 1.0, 1.0));
  // Before a second scrape there is nothing to divide: dashes.
  std::string first = t.render("title");
  EXPECT_NE(first.find("node-a   node"), std::string::npos) << first;
  EXPECT_NE(first.find(" - "), std::string::npos) << first;
  // Over 2 s: 1000 events in and 1000 out, 4e6 tuples, 1e9 bytes, 0.2 s
  // user and 0.6 s system of a 2 GHz clock on one core.
  t.feed(0, 12.0, scrape(1000, 1000, 4e6, 1e9, 1.2, 1.6));
  const std::string s = t.render("title");
  EXPECT_EQ(s.rfind("title\nprocess", 0), 0u) << s;
  // tuples/s 2e6, Gb/s 4, CPE_u = 0.2 x 2e9 / 2000, CPE_s = 0.6 x 2e9 / 2000,
  // CPE_i = (1 x 2 - 0.8) x 2e9 / 2000.
  EXPECT_NE(s.find("     2000000    4.00    800000    200000    600000   1200000"), std::string::npos) << s;
  // The sink was never scraped: its row has no figures.
  EXPECT_NE(s.find("sink     sink"), std::string::npos) << s;
}

TEST(LiveTable, ARedrawGoesBackOverTheTable) {
  LiveTable t({{"a", "node", ""}, {"b", "sink", ""}});
  std::FILE* f = std::tmpfile();
  t.draw(f, "one");
  t.draw(f, "two");
  std::rewind(f);
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  std::fclose(f);
  // Title, header and a row per process: 4 lines, and the second draw first
  // moves 4 lines up, then clears each line it writes.
  const size_t up = out.find("\x1b[4A");
  ASSERT_NE(up, std::string::npos) << out;
  EXPECT_NE(out.find("\r\x1b[2Ktwo\n", up), std::string::npos);
  // The first draw moves nothing: it starts with its first line.
  EXPECT_EQ(out.find("\r\x1b[2Kone\n"), 0u) << out;
  EXPECT_GT(up, out.find("one"));
}

}  // namespace
}  // namespace sluice
