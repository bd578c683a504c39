// `sluice-deploy plan --predict`: what a deployment would do, before it runs,
// from the cost model experiments/costmodel.py calibrates (after Pohl,
// Goetze and Sattler's cost model of a query as the sum of its operators').
//
// 1. load_calibration reads the JSON file costmodel.py writes
//    (experiments/calibration.json): cycles per unit for each cost, the share
//    alpha of the machine's cycles each carrier's pipelines got, the machine's
//    cores N and clock F.
// 2. predict walks the graph: every loadgen emits one event per unit of flow;
//    a node passes on what comes in (split evenly over its outputs), a sink
//    takes it. Each process's cycles per unit are its counts (events sent and
//    received, bytes and tuples in and out, a node's two ring hand-offs, the
//    tuples into each operator, the tuples a loadgen makes and a sink checks)
//    times their costs.
// 3. events/s per loadgen = alpha N F / (sum of every process's cycles), the
//    study's Equation 2; tuples/s at the sinks and each process's CPE_p (its
//    cycles over its events in and out) follow.
//
// Filters are taken to pass every tuple (the calibration runs' filters pass
// all; the model says so rather than guess a selectivity). A stream split
// sends whole events round-robin; a key split sends each output an event
// with its share of every input event's tuples, and pays the `partition`
// operator's cost per tuple (hashing and repacking, as sluice-node runs it).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/config.h"

namespace sluice {

struct Calibration {
  std::string path;
  double clock_ghz = 0;
  double host_cores = 0;
  uint32_t event_header_bytes = 64;
  std::map<std::string, double> coefficients;  // "send_event:tcp-opt" -> cycles
  std::map<std::string, double> alpha;         // carrier -> share of N F
  size_t runs = 0;                             // how many runs it was fit on
};

Status load_calibration(const std::string& path, Calibration* out);

struct ProcessPrediction {
  std::string name;
  std::string role;
  double cycles_per_unit = 0;  // per loadgen event
  double events = 0;           // events in + out per loadgen event
  double cpe_p = 0;            // cycles_per_unit / events
};

struct Prediction {
  std::string carrier;
  double alpha = 0;
  double tuples_per_event = 0;
  double events_per_s = 0;  // per loadgen (one unit of flow)
  double tuples_per_s = 0;  // at the sinks, all instances together
  double cycles_per_unit = 0;
  bool key_split = false;  // some node splits by key
  std::vector<ProcessPrediction> processes;
};

// The carrier a deployment's links use, as the calibration names it: the
// preset. Links with different presets are an error (one alpha per pipeline).
Status predict(const Deployment& d, const Calibration& cal, Prediction* out);

std::string prediction_text(const Deployment& d, const Calibration& cal, const Prediction& p);
// The same as one JSON object (plan --predict --json).
std::string prediction_json(const Deployment& d, const Calibration& cal, const Prediction& p);

}  // namespace sluice
