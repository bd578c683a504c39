// The presets and launchers (registry.h).
#include "graph/registry.h"

#include <fmt/format.h>

#include "graph/config.h"

namespace sluice {

namespace {

// The study's Borealis-like data path: every event a Cap'n Proto message
// copied into a write buffer drained by its own send thread, 4 KiB reads
// after a select() with a timeout, every slot's credit handed out.
void original(LinkOptions* link) {
  link->transport = "tcp";
  link->tcp.encoding = Encoding::kCapnp;
  link->tcp.async_send = true;
  link->tcp.rx_select = true;
  link->tcp.read_bytes = 4096;
  link->tcp.poll_timeout_us = 1000;
  link->adaptive_credits = false;
}

void tcp_opt(LinkOptions* link) {
  link->transport = "tcp";
  link->tcp.encoding = Encoding::kSg;
  link->tcp.async_send = false;
  link->tcp.rx_select = false;
  link->tcp.read_bytes = 65536;
  link->adaptive_credits = true;
}

void message_opt(LinkOptions* link) {
  link->tcp.encoding = Encoding::kSg;
  link->tcp.async_send = false;
  link->tcp.rx_select = false;
  link->adaptive_credits = true;
}

void fabric_opt(LinkOptions* link) {
  message_opt(link);
  link->transport = "fabric";
}

void ucx_opt(LinkOptions* link) {
  message_opt(link);
  link->transport = "ucx";
}

std::string join(const std::vector<std::string>& names, const char* separator) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : separator) + n;
  return out;
}

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> p = {
      {"original", "the study's Borealis-like path: Cap'n Proto, a send thread, select()", original},
      {"tcp-opt", "scatter-gather sends from the pool slots, blocking sends, no polling loop", tcp_opt},
      {"fabric-opt", "tcp-opt's protocol over a libfabric endpoint", fabric_opt},
      {"ucx-opt", "tcp-opt's protocol over a UCX endpoint", ucx_opt},
  };
  return p;
}

const Preset* find_preset(const std::string& name) {
  for (const Preset& p : presets())
    if (name == p.name) return &p;
  return nullptr;
}

const std::vector<Launcher>& launchers() {
  static const std::vector<Launcher> l = {
      {"local", "every process on this machine"},
      {"netns", "each host of `hosts:` a network namespace of its own, joined by a bridge (root)"},
      {"ssh", "each process on its host over ssh (ssh_key, ssh_options, remote_dir, copy_binaries)"},
      {"slurm", "each process a job step of a Slurm allocation, on the node its host maps to"},
  };
  return l;
}

std::string preset_names(const char* separator) {
  std::vector<std::string> v;
  for (const Preset& p : presets()) v.push_back(p.name);
  return join(v, separator);
}

std::string launcher_names(const char* separator) {
  std::vector<std::string> v;
  for (const Launcher& l : launchers()) v.push_back(l.name);
  return join(v, separator);
}

Status apply_preset(const std::string& preset, LinkOptions* link) {
  const Preset* p = find_preset(preset);
  if (!p) return Status::Error(fmt::format("unknown preset '{}' (known: {})", preset, preset_names()));
  p->apply(link);
  return {};
}

}  // namespace sluice
