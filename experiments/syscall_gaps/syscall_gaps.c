// syscall_gaps.so: LD_PRELOAD it into a process to see how much user time
// each thread spends between its network system calls, by pair (the end of
// one call to the start of the next): a node's recvmsg -> sendmsg is the
// user time on a hop's critical path, a load generator's nanosleep ->
// sendmsg its time from waking to sending. Each call costs two vDSO clock
// reads (~40 ns); the kernel's own time is not in the gaps. At exit each
// process writes $SLUICE_GAPS_DIR/PID.txt (default /tmp/syscall-gaps):
// one line per thread and pair seen at least 200 times (or
// $SLUICE_GAPS_MIN_COUNT), p50/p90/p99 in us.
// experiments/syscall_gaps/gaps.py runs a pipeline and the plain relays
// with it; docs in experiments/README.md.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { SENDMSG, RECVMSG, SENDTO, RECVFROM, SEND, RECV, READ, WRITE, NANOSLEEP, CLOCK_NANOSLEEP, POLL, NCALLS };
static const char* const kNames[NCALLS] = {"sendmsg", "recvmsg", "sendto", "recvfrom", "send", "recv",
                                           "read", "write", "nanosleep", "clock_nanosleep", "poll"};
enum { kMaxGaps = 1 << 19, kMaxThreads = 64, kMinCount = 200 };

// Per thread, fixed size: nothing is allocated per call.
typedef struct {
  int prev;
  uint64_t prev_end;
  uint32_t n;
  uint8_t pair_from[kMaxGaps], pair_to[kMaxGaps];
  uint32_t gap_ns[kMaxGaps];
} Thread;

static Thread* threads[kMaxThreads];
static int nthreads;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static __thread Thread* self;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static Thread* me(void) {
  if (!self) {
    self = calloc(1, sizeof(Thread));
    if (!self) abort();
    self->prev = -1;
    pthread_mutex_lock(&mu);
    if (nthreads < kMaxThreads) threads[nthreads++] = self;
    pthread_mutex_unlock(&mu);
  }
  return self;
}

static void enter(int c) {
  Thread* t = me();
  if (t->prev < 0 || t->n == kMaxGaps) return;
  const uint64_t gap = now_ns() - t->prev_end;
  t->pair_from[t->n] = (uint8_t)t->prev;
  t->pair_to[t->n] = (uint8_t)c;
  t->gap_ns[t->n] = gap > UINT32_MAX ? UINT32_MAX : (uint32_t)gap;
  ++t->n;
}

static void leave(int c) {
  self->prev = c;
  self->prev_end = now_ns();
}

#define WRAP(ret, name, id, params, args)                        \
  ret name params {                                              \
    static ret(*real) params;                                    \
    if (!real) real = (ret(*) params)dlsym(RTLD_NEXT, #name);    \
    enter(id);                                                   \
    ret r = real args;                                           \
    leave(id);                                                   \
    return r;                                                    \
  }

WRAP(ssize_t, sendmsg, SENDMSG, (int fd, const struct msghdr* m, int f), (fd, m, f))
WRAP(ssize_t, recvmsg, RECVMSG, (int fd, struct msghdr* m, int f), (fd, m, f))
WRAP(ssize_t, sendto, SENDTO,
     (int fd, const void* b, size_t l, int f, const struct sockaddr* a, socklen_t al), (fd, b, l, f, a, al))
WRAP(ssize_t, recvfrom, RECVFROM, (int fd, void* b, size_t l, int f, struct sockaddr* a, socklen_t* al),
     (fd, b, l, f, a, al))
WRAP(ssize_t, send, SEND, (int fd, const void* b, size_t l, int f), (fd, b, l, f))
WRAP(ssize_t, recv, RECV, (int fd, void* b, size_t l, int f), (fd, b, l, f))
WRAP(ssize_t, read, READ, (int fd, void* b, size_t l), (fd, b, l))
WRAP(ssize_t, write, WRITE, (int fd, const void* b, size_t l), (fd, b, l))
WRAP(int, nanosleep, NANOSLEEP, (const struct timespec* a, struct timespec* b), (a, b))
WRAP(int, clock_nanosleep, CLOCK_NANOSLEEP, (clockid_t c, int f, const struct timespec* a, struct timespec* b),
     (c, f, a, b))
WRAP(int, poll, POLL, (struct pollfd* p, nfds_t n, int ms), (p, n, ms))

static int by_value(const void* a, const void* b) {
  const uint32_t x = *(const uint32_t*)a, y = *(const uint32_t*)b;
  return x < y ? -1 : x > y;
}

__attribute__((destructor)) static void report(void) {
  const char* dir = getenv("SLUICE_GAPS_DIR");
  char path[512], exe[256] = {0};
  snprintf(path, sizeof path, "%s/%d.txt", dir && *dir ? dir : "/tmp/syscall-gaps", (int)getpid());
  FILE* f = fopen(path, "w");
  if (!f) return;
  if (readlink("/proc/self/exe", exe, sizeof exe - 1) < 0) exe[0] = 0;
  fprintf(f, "exe %s\ncmd", exe);
  FILE* c = fopen("/proc/self/cmdline", "r");
  if (c) {
    int ch;
    while ((ch = fgetc(c)) != EOF) fputc(ch ? ch : ' ', f);
    fclose(c);
  }
  fputc('\n', f);
  const char* min_env = getenv("SLUICE_GAPS_MIN_COUNT");
  const uint32_t min_count = min_env && *min_env ? (uint32_t)strtoul(min_env, NULL, 10) : kMinCount;
  static uint32_t v[kMaxGaps];
  for (int i = 0; i < nthreads; ++i) {
    const Thread* t = threads[i];
    for (int a = 0; a < NCALLS; ++a)
      for (int b = 0; b < NCALLS; ++b) {
        uint32_t k = 0;
        for (uint32_t j = 0; j < t->n; ++j)
          if (t->pair_from[j] == a && t->pair_to[j] == b) v[k++] = t->gap_ns[j];
        if (k == 0 || k < min_count) continue;
        qsort(v, k, sizeof v[0], by_value);
        fprintf(f, "thread %d %s -> %s n=%u p50=%.2f p90=%.2f p99=%.2f\n", i, kNames[a], kNames[b], k,
                v[k / 2] / 1e3, v[(uint64_t)k * 9 / 10] / 1e3, v[(uint64_t)k * 99 / 100] / 1e3);
      }
  }
  fclose(f);
}
