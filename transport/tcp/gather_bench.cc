// Does the tcp carrier's raw gather I/O earn its keep against Asio? The same
// batch of pieces goes over a loopback TCP connection (a reader thread
// drains it) with one raw sendmsg() of every iovec (looping on partial
// writes), or with asio::write() of a std::vector<asio::const_buffer>. Two
// shapes:
//   events76B:   512 one-tuple events of 76 bytes, a 16-byte frame header every
//                64 (520 pieces, what a loadgen sends for 12-byte tuples);
//   events32KiB: 4 frames of [16-byte header, 32 KiB event] (8 pieces).
//
// Asio 1.22's asio::write() is narrower than its max_iov_len suggests (that
// is IOV_MAX, 1024, on Linux): consuming_buffers prepares at most 16 buffers
// per write_some (detail/consuming_buffers.hpp, prepared_buffers), and
// transfer_all caps each write_some at 64 KiB (default_max_transfer_size).
// strace -c agrees: about 33 sendmsg calls per 520-piece batch and 3 per
// 128 KiB batch, against 1 raw sendmsg for either.
//
// Run: flock /tmp/cpu.lock build/transport/tcp/gather_bench
//        --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
// 2-core VM shared with other builds, 2026-11-22, medians of 3:
//   events76B:   raw 16.7 us/batch (2.18 GB/s, 31.2 M pieces/s),
//                asio 80.7 us (0.46 GB/s, 6.4 M pieces/s): raw/asio 4.8x;
//   events32KiB: raw 49.6 us/batch (2.46 GB/s, 161 k pieces/s),
//                asio 83.8 us (1.46 GB/s, 95 k pieces/s): raw/asio 1.7x.
// So the data path keeps raw gather I/O; Asio handles connection set-up only.
#define ASIO_STANDALONE 1
#include <asio.hpp>
#include <benchmark/benchmark.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <atomic>
#include <thread>
#include <vector>

namespace {

using asio::ip::tcp;

struct Pair {
  asio::io_context io;
  tcp::socket tx{io}, rx{io};
  std::thread reader;
  std::atomic<bool> stop{false};
  Pair() {
    tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    tx.connect(a.local_endpoint());
    a.accept(rx);
    tx.set_option(tcp::no_delay(true));
    reader = std::thread([this] {
      std::vector<char> buf(1 << 20);
      asio::error_code ec;
      while (!ec) rx.read_some(asio::buffer(buf), ec);
    });
  }
  ~Pair() {
    asio::error_code ec;
    tx.shutdown(tcp::socket::shutdown_send, ec);
    reader.join();
  }
};

struct Shape {
  std::vector<std::vector<char>> store;
  std::vector<iovec> iov;
  size_t bytes = 0;
  void add(size_t n) {
    store.emplace_back(n, 'x');
    bytes += n;
  }
  void done() {
    for (auto& s : store) iov.push_back({s.data(), s.size()});
  }
};

Shape shape(int which) {
  Shape s;
  if (which == 0) {
    for (int i = 0; i < 512; ++i) {
      if (i % 64 == 0) s.add(16);
      s.add(76);
    }
  } else {
    for (int i = 0; i < 4; ++i) {
      s.add(16);
      s.add(32768);
    }
  }
  s.done();
  return s;
}

void BM_RawSendmsg(benchmark::State& state) {
  Pair p;
  Shape s = shape(state.range(0));
  std::vector<iovec> iov(s.iov);
  const int fd = p.tx.native_handle();
  for (auto _ : state) {
    iov = s.iov;
    size_t i = 0;
    while (i < iov.size()) {
      msghdr m{};
      m.msg_iov = iov.data() + i;
      m.msg_iovlen = iov.size() - i;
      ssize_t r = ::sendmsg(fd, &m, MSG_NOSIGNAL);
      if (r < 0) {
        state.SkipWithError("sendmsg failed");
        return;
      }
      size_t left = r;
      while (i < iov.size() && left >= iov[i].iov_len) left -= iov[i++].iov_len;
      if (left) {
        iov[i].iov_base = static_cast<char*>(iov[i].iov_base) + left;
        iov[i].iov_len -= left;
      }
    }
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * s.bytes);
  state.SetItemsProcessed(int64_t(state.iterations()) * s.iov.size());
}

void BM_AsioWrite(benchmark::State& state) {
  Pair p;
  Shape s = shape(state.range(0));
  std::vector<asio::const_buffer> bufs;
  for (auto& v : s.iov) bufs.emplace_back(v.iov_base, v.iov_len);
  for (auto _ : state) {
    asio::error_code ec;
    asio::write(p.tx, bufs, ec);
    if (ec) {
      state.SkipWithError("asio::write failed");
      return;
    }
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * s.bytes);
  state.SetItemsProcessed(int64_t(state.iterations()) * s.iov.size());
}

BENCHMARK(BM_RawSendmsg)->Arg(0)->ArgName("events76B")->UseRealTime();
BENCHMARK(BM_AsioWrite)->Arg(0)->ArgName("events76B")->UseRealTime();
BENCHMARK(BM_RawSendmsg)->Arg(1)->ArgName("events32KiB")->UseRealTime();
BENCHMARK(BM_AsioWrite)->Arg(1)->ArgName("events32KiB")->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
