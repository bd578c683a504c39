// Operators in a deployment: schemas through operators, the groupby rename,
// test-only operators, each operator's keys against its declaration and schema.

#include "graph/config_test_util.h"
#include "graph/operator.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

const char* kSchemaFile = R"(schema: trades
schemas:
  trades:
    fields:
      - {name: sym, type: u32, gen: {uniform: 16}}
      - {name: price, type: i64, gen: {zipf: 100, s: 1.1}}
      - {name: tag, type: bytes, width: 6}
processes:
  - {name: gen, role: loadgen}
  - name: mid
    role: node
    operators:
      - filter: {field: price, op: ge, value: 10}
      - groupby: {group_by: sym, aggregates: 'count, sum(price)', window: count, size: 100}
  - {name: end, role: sink}
)";

TEST(ConfigSchemas, NamedSchemaFlowsThroughOperatorsAndIntoTheHandshake) {
  Deployment d;
  ASSERT_TRUE(parse_deployment(kSchemaFile, "s.yaml", {}, &d).ok());
  ASSERT_EQ(d.schemas.size(), 1u);
  EXPECT_EQ(d.tuple_bytes, 8u + 4 + 8 + 6);
  EXPECT_EQ(d.schemas[0].gens[1].kind, FieldGen::Kind::kZipf);
  EXPECT_EQ(d.schemas[0].gens[2].kind, FieldGen::Kind::kRandom);
  // Link 0 carries trades, link 1 the aggregate's rows.
  EXPECT_EQ(d.link_options(0, 0).schema, "trades{seq:u64,sym:u32,price:i64,tag:bytes[6];tuple_bytes=26}");
  EXPECT_EQ(d.link_options(1, 0).schema, d.processes[1].out_schema.describe());
  EXPECT_EQ(d.link_options(1, 0).tuple_bytes, 40u);
  EXPECT_EQ(d.processes[1].operators[1].derived_stream, 1u);  // after the loadgen's stream 0
  // Dumped and parsed again: the same schema.
  Deployment e;
  ASSERT_TRUE(parse_deployment(dump_deployment(d), "dump", {}, &e).ok()) << dump_deployment(d);
  EXPECT_EQ(e.link_options(0, 0).schema, d.link_options(0, 0).schema);
  EXPECT_EQ(e.schemas[0].gens[1].cardinality, 100u);
}

TEST(ConfigSchemas, ErrorsNameFileLineKeyAndOperator) {
  Deployment d;
  std::string y = kSchemaFile;
  auto err = [&](const std::string& from, const std::string& to) {
    std::string t = y;
    t.replace(t.find(from), from.size(), to);
    Status st = parse_deployment(t, "s.yaml", {}, &d);
    EXPECT_FALSE(st.ok()) << t;
    return st.message();
  };
  EXPECT_HAS(err("type: u32", "type: u31"), "s.yaml:5: key 'schemas.trades.fields.0.type': invalid value 'u31'");
  EXPECT_HAS(err("{uniform: 16}", "{uniformm: 16}"), "did you mean 'uniform'");
  EXPECT_HAS(err("field: price", "field: prise"),
             "s.yaml:13: key 'processes.1.operators.0.filter.field': process 'mid', operator 0 "
             "(filter): no field 'prise' in schema trades");
  EXPECT_HAS(err("size: 100", "sise: 100"),
             "unknown key 'processes.1.operators.1.groupby.sise' (did you mean 'size'?)");
  EXPECT_HAS(err("size: 100", "size: many"),
             "key 'processes.1.operators.1.groupby.size': expected an unsigned integer, got 'many'");
  // After the group-by, the stream is its rows: a filter on price no longer fits.
  EXPECT_HAS(err("size: 100}", "size: 100}\n      - filter: {field: price}"),
             "operator 2 (filter): no field 'price' in schema aggregate");
}

// One group-by operator: `aggregate` is refused with the groupby to write.
TEST(ConfigSchemas, AggregateIsNowGroupBy) {
  std::string y = kSchemaFile;
  const std::string gb = "groupby: {group_by: sym, aggregates: 'count, sum(price)', window: count, size: 100}";
  y.replace(y.find(gb), gb.size(), "aggregate: {group_by: sym, sum: price, window: 100}");
  Deployment d;
  Status st = parse_deployment(y, "s.yaml", {}, &d);
  ASSERT_FALSE(st.ok());
  EXPECT_HAS(st.message(), "s.yaml:14: key 'processes.1.operators.1.aggregate': 'aggregate' is now "
                           "'groupby' (one group-by operator): write {groupby: {group_by: FIELD, "
                           "aggregates: \"count, sum(FIELD)\"");
  EXPECT_EQ(find_operator_spec("aggregate"), nullptr);
}

// Test-only operators are in no shipped program's registry: a test binary
// registers its own, and only then may a deployment name it.
TEST(ConfigSchemas, TestOnlyOperatorsAreRegisteredByTheTestBinary) {
  EXPECT_EQ(find_operator_spec("miscount"), nullptr);
  const std::string y = "processes:\n  - {name: g, role: loadgen}\n"
                        "  - {name: n, role: node, operators: [{passthrough_for_test: {}}]}\n"
                        "  - {name: s, role: sink}\n";
  Deployment d;
  EXPECT_FALSE(parse_deployment(y, "t.yaml", {}, &d).ok());
  OperatorSpec spec{"passthrough_for_test", "test only", {}};
  spec.output = [](const OperatorConfig&, const Schema& in, Schema* out) {
    *out = in;
    return Status();
  };
  ASSERT_TRUE(register_operator(spec));
  EXPECT_FALSE(register_operator(spec));  // once
  Status st = parse_deployment(y, "t.yaml", {}, &d);
  EXPECT_TRUE(st.ok()) << st.message();
}

// The query graph's newer operators in a deployment: each key is checked
// against the operator's declaration and each field against the schema
// that reaches it; errors name file:line, the key, the process and the
// operator.
const char* kQueryFile = R"(schema: txns
schemas:
  txns:
    fields:
      - {name: txn, type: u32, gen: {uniform: 16}}
      - {name: event, type: i32, gen: {uniform: 4}}
      - {name: time, type: u64}
      - {name: amount, type: i64, gen: {uniform: 1000}}
processes:
  - {name: gen, role: loadgen}
  - name: mid
    role: node
    operators:
      - OPERATOR
  - {name: end, role: sink}
)";

// The file with one operator at line 14 of process 'mid'.
std::string query_file(const std::string& op) {
  std::string t = kQueryFile;
  t.replace(t.find("OPERATOR"), 8, op);
  return t;
}

const char* kMoving = "moving_avg: {field: amount, window: 8}";
const char* kCorrelate = "correlate: {txn: txn, event: event, time: time, within: 100}";
const char* kGroupBy = "groupby: {group_by: event, aggregates: \"sum(amount), count\", window: count, "
                       "size: 50, having: \"sum(amount) > 10\"}";

// `op` with `from` replaced by `to`, parsed: its error.
std::string query_err(const std::string& op, const std::string& from, const std::string& to) {
  std::string o = op;
  const size_t at = o.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at == std::string::npos) return "";
  o.replace(at, from.size(), to);
  Deployment d;
  Status st = parse_deployment(query_file(o), "q.yaml", {}, &d);
  EXPECT_FALSE(st.ok()) << o;
  return st.message();
}

TEST(ConfigOperators, TheQueryFilesParse) {
  for (const char* op : {kMoving, kCorrelate, kGroupBy}) {
    Deployment d;
    Status st = parse_deployment(query_file(op), "q.yaml", {}, &d);
    ASSERT_TRUE(st.ok()) << op << ": " << st.message();
  }
  Deployment d;
  ASSERT_TRUE(parse_deployment(query_file(kMoving), "q.yaml", {}, &d).ok());
  EXPECT_EQ(d.processes[1].out_schema.name(), "moving_avg");  // the node's stream is its rows
}

TEST(ConfigOperators, AnUnknownKeyGetsFileLineOperatorAndDidYouMean) {
  const std::string e = query_err(kCorrelate, "within: 100", "withn: 100");
  EXPECT_HAS(e, "q.yaml:14:");
  EXPECT_HAS(e, "processes.1.operators.0.correlate.withn");
  EXPECT_HAS(e, "did you mean 'within'?");
  const std::string m = query_err(kMoving, "window: 8", "windo: 8");
  EXPECT_HAS(m, "q.yaml:14:");
  EXPECT_HAS(m, "moving_avg.windo");
  EXPECT_HAS(m, "did you mean 'window'?");
  const std::string g = query_err(kGroupBy, "having:", "havin:");
  EXPECT_HAS(g, "q.yaml:14:");
  EXPECT_HAS(g, "groupby.havin");
  EXPECT_HAS(g, "did you mean 'having'?");
}

TEST(ConfigOperators, AnOperatorKindNotKnownIsNamedWithDidYouMean) {
  const std::string e = query_err(kCorrelate, "correlate:", "corelate:");
  EXPECT_HAS(e, "q.yaml:14:");
  EXPECT_HAS(e, "corelate");
  EXPECT_HAS(e, "did you mean 'correlate'?");
}

TEST(ConfigOperators, AFieldNotInTheInputSchemaIsNamed) {
  const std::string m = query_err(kMoving, "field: amount", "field: amout");
  EXPECT_HAS(m, "q.yaml:14:");
  EXPECT_HAS(m, "process 'mid', operator 0 (moving_avg)");
  EXPECT_HAS(m, "'amout'");
  const std::string c = query_err(kCorrelate, "txn: txn,", "txn: tx,");
  EXPECT_HAS(c, "q.yaml:14:");
  EXPECT_HAS(c, "process 'mid', operator 0 (correlate)");
  EXPECT_HAS(c, "'tx'");
  // An aggregate's field, inside its text.
  const std::string g = query_err(kGroupBy, "sum(amount), count", "sum(amont), count");
  EXPECT_HAS(g, "q.yaml:14:");
  EXPECT_HAS(g, "process 'mid', operator 0 (groupby)");
  EXPECT_HAS(g, "amont");
  const std::string p = query_err("project: {fields: \"txn, amount\"}", "amount", "amonut");
  EXPECT_HAS(p, "process 'mid', operator 0 (project)");
  EXPECT_HAS(p, "amonut");
  // The stream after moving_avg is its rows: `amount` is no longer there.
  const std::string after =
      query_err(kMoving, "window: 8}", "window: 8}\n      - filter: {field: amount, op: ge, value: 1}");
  EXPECT_HAS(after, "operator 1 (filter): no field 'amount' in schema moving_avg");
}

TEST(ConfigOperators, AHavingOverAnAggregateNotListedIsRefused) {
  const std::string e = query_err(kGroupBy, "having: \"sum(amount) > 10\"", "having: \"max(amount) > 10\"");
  EXPECT_HAS(e, "q.yaml:14:");
  EXPECT_HAS(e, "process 'mid', operator 0 (groupby)");
  EXPECT_HAS(e, "max(amount)");
  // And one over a field that is not there at all.
  EXPECT_HAS(query_err(kGroupBy, "having: \"sum(amount) > 10\"", "having: \"sum(nope) > 10\""), "sum(nope)");
}

}  // namespace
}  // namespace sluice
