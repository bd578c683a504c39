// kafka/client.h's templates.
#pragma once

#include <chrono>
#include <thread>

namespace sluice::kafka {

template <class F>
Error retry_txn(F&& call, int deadline_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(deadline_ms);
  for (;;) {
    Error e(call());
    if (!e || !rd_kafka_error_is_retriable(e.get()) || std::chrono::steady_clock::now() >= until) return e;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace sluice::kafka
