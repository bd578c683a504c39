// transport/PROTOCOL.md states every limit once, in its limits table (a row
// per constant: its name in the code, its value). This test reads that table
// and fails where a value differs from the code's constant, where the table
// names something the code does not have here, where a constant below is
// missing from the table, or where the document's text cites a constant the
// table does not give. A peer written from the document then checks what
// sluice checks.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "transport/handshake.h"
#include "transport/link.h"
#include "transport/tcp/connect.h"
#include "transport/transport.h"

namespace sluice {
namespace {

// The code's side of the table, by the name the table gives.
const std::map<std::string, uint64_t>& code_values() {
  static const std::map<std::string, uint64_t> v = [] {
    const LinkOptions defaults;
    return std::map<std::string, uint64_t>{
        {"kLinkVersion", kLinkVersion},
        {"kWireVersion", kWireVersion},
        {"kHandshakePrefixBytes", kHandshakePrefixBytes},
        {"kMaxHandshakeBytes", kMaxHandshakeBytes},
        {"kHandshakeNestingLimit", static_cast<uint64_t>(kHandshakeNestingLimit)},
        {"kHandshakeTraversalWords", kHandshakeTraversalWords},
        {"sizeof(FrameHeader)", sizeof(FrameHeader)},
        {"kEventHeaderBytes", kEventHeaderBytes},
        {"kMinTupleBytes", kMinTupleBytes},
        {"kMinSlotBytes", kMinSlotBytes},
        {"kMaxStreams", kMaxStreams},
        {"sizeof(EndOfStreamEntry)", sizeof(EndOfStreamEntry)},
        {"kMaxEndBytes", kMaxEndBytes},
        {"sizeof(CreditFrame)", sizeof(CreditFrame)},
        {"kMaxCreditsPerMessage", kMaxCreditsPerMessage},
        {"kAckWindowPerSlot", kAckWindowPerSlot},
        {"sizeof(RmaNote)", sizeof(RmaNote)},
        {"kReconnectBackoffMs", kReconnectBackoffMs},
        {"kReconnectBackoffMaxMs", kReconnectBackoffMaxMs},
        {"tcp::kSettleMs", tcp::kSettleMs},
        {"LinkOptions::slot_bytes", defaults.slot_bytes},
        {"LinkOptions::slots", defaults.slots},
        {"LinkOptions::connect_timeout_ms", defaults.connect_timeout_ms},
        {"LinkOptions::reconnect_timeout_ms", defaults.reconnect_timeout_ms},
    };
  }();
  return v;
}

std::string read_doc() {
  std::ifstream f(SLUICE_PROTOCOL_MD);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" `");
  const auto e = s.find_last_not_of(" `");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// The limits table: the rows after a header row that starts "| name | value |".
// A value is a number, with thousands separated by commas, then anything.
std::map<std::string, uint64_t> doc_table(const std::string& doc, std::string* error) {
  std::map<std::string, uint64_t> rows;
  std::istringstream in(doc);
  std::string line;
  bool in_table = false, found = false;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (!in_table) {
      if (line.rfind("| name | value |", 0) == 0) in_table = found = true;
      continue;
    }
    if (line.rfind("|---", 0) == 0) continue;
    if (line.empty() || line[0] != '|') break;
    std::vector<std::string> cells;
    std::stringstream cs(line.substr(1));
    for (std::string c; std::getline(cs, c, '|');) cells.push_back(trim(c));
    if (cells.size() < 2) {
      *error += "line " + std::to_string(n) + ": a row without a value\n";
      continue;
    }
    std::string digits;
    for (char c : cells[1]) {
      if (c == ',') continue;
      if (c < '0' || c > '9') break;
      digits += c;
    }
    if (digits.empty()) {
      *error += "line " + std::to_string(n) + ": '" + cells[1] + "' is not a number\n";
      continue;
    }
    if (!rows.emplace(cells[0], std::stoull(digits)).second)
      *error += "line " + std::to_string(n) + ": " + cells[0] + " twice\n";
  }
  if (!found) *error += "no table whose header starts '| name | value |'\n";
  return rows;
}

TEST(ProtocolDocument, TheLimitsTableGivesTheCodesValues) {
  const std::string doc = read_doc();
  ASSERT_FALSE(doc.empty()) << "cannot read " << SLUICE_PROTOCOL_MD;
  std::string error;
  const auto rows = doc_table(doc, &error);
  EXPECT_EQ(error, "");
  for (const auto& [name, value] : rows) {
    auto it = code_values().find(name);
    if (it == code_values().end()) {
      ADD_FAILURE() << "PROTOCOL.md's limits table gives " << name
                    << ", which this test does not know: add it to code_values()";
      continue;
    }
    EXPECT_EQ(value, it->second) << name << ": PROTOCOL.md says " << value << ", the code "
                                 << it->second;
  }
  for (const auto& [name, value] : code_values())
    EXPECT_TRUE(rows.count(name)) << name << " (" << value << ") is not in PROTOCOL.md's limits table";
}

// The text refers to limits by the table's names; a name it cites that the
// table does not give is a limit stated somewhere else, or nowhere.
TEST(ProtocolDocument, EveryConstantTheTextCitesIsInTheTable) {
  const std::string doc = read_doc();
  std::string error;
  const auto rows = doc_table(doc, &error);
  const std::regex cited("`((?:tcp::)?k[A-Z][A-Za-z0-9]*|sizeof\\([A-Za-z]+\\)|LinkOptions::[a-z_]+)`");
  std::set<std::string> missing;
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), cited); it != std::sregex_iterator(); ++it)
    if (!rows.count((*it)[1].str())) missing.insert((*it)[1].str());
  for (const auto& m : missing) ADD_FAILURE() << "PROTOCOL.md cites " << m << ", which its limits table does not give";
}

}  // namespace
}  // namespace sluice
