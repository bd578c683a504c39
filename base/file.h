// Whole small files (state.json, prometheus.yml, a count of starts) written
// so that a reader, or a death mid-write, sees the old text or the new one,
// never a torn one: into a file beside it, then renamed over it.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "base/status.h"

namespace sluice {

inline Status write_atomically(const std::filesystem::path& path, const std::string& text) {
  // The pid keeps two processes writing one file apart.
  const std::filesystem::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) return Status::Error("cannot write " + tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Status::Error("cannot rename " + tmp.string() + " to " + path.string() + ": " + ec.message());
  return {};
}

}  // namespace sluice
