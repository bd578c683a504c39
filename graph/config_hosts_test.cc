// hosts: processes placed on named hosts, their addresses, cores, rates and
// CPU lists, pin_stages, and the errors that name file, line and key.

#include "graph/config_test_util.h"

#include <gtest/gtest.h>

#include <thread>

namespace sluice {
namespace {

// ---------------------------------------------------------------- hosts

// Four hosts, each process on its own (the study's cluster).
const char* kHosts = R"(launcher: netns
host_rate: 10gbit
hosts:
  - {name: h1, address: 10.77.0.1, cores: 0-1}
  - {name: h2, address: 10.77.0.2, cores: [0, 2-3], rate: 1gbit}
  - name: h3
    address: 10.77.0.3
    ssh_user: me
    ssh_port: 2222
processes:
  - {name: loadgen, role: loadgen, host: h1}
  - {name: node-a, role: node, host: h2}
  - {name: node-b, role: node, host: h2}
  - {name: sink, role: sink, host: h3}
)";

// pin_stages: off by default, on (spread), or CPUs; a CPU its host's cores
// lack is an error at the key; the dump reads back the same.
TEST(ConfigHosts, PinStages) {
  Deployment d = parse_ok(kHosts, {"processes.1.pin_stages=on", "processes.2.pin_stages=[0, 3]"});
  EXPECT_FALSE(d.processes[0].pin_stages);
  EXPECT_TRUE(d.processes[1].pin_stages);
  EXPECT_TRUE(d.processes[1].stage_cpus.empty());
  EXPECT_TRUE(d.processes[2].pin_stages);
  EXPECT_EQ(d.processes[2].stage_cpus, (std::vector<unsigned>{0, 3}));
  Deployment back;
  ASSERT_TRUE(parse_deployment(dump_deployment(d), "dump", {}, &back).ok());
  EXPECT_EQ(back.processes[1].pin_stages, true);
  EXPECT_EQ(back.processes[2].stage_cpus, (std::vector<unsigned>{0, 3}));
  EXPECT_EQ(back.processes[3].pin_stages, false);
  EXPECT_HAS(parse_err(kHosts, {"processes.2.pin_stages=1"}),
             "CPU 1 is not one of its host 'h2''s cores (0,2-3)");
  EXPECT_HAS(parse_err(kHosts, {"processes.0.pin_stages=sometimes"}),
             "--set processes.0.pin_stages=sometimes: expected off, on");
}

TEST(ConfigHosts, ProcessesNameTheirHostAndAreReachedAtItsAddress) {
  Deployment d = parse_ok(kHosts);
  EXPECT_EQ(d.launcher, "netns");
  ASSERT_EQ(d.hosts.size(), 3u);
  EXPECT_EQ(d.hosts[0].cpus, (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(d.hosts[1].cpus, (std::vector<unsigned>{0, 2, 3}));
  EXPECT_EQ(d.hosts[0].rate_bps, 10'000'000'000u);  // host_rate
  EXPECT_EQ(d.hosts[1].rate_bps, 1'000'000'000u);   // its own
  EXPECT_EQ(d.hosts[2].ssh_user, "me");
  EXPECT_EQ(d.hosts[2].ssh_port, 2222);
  EXPECT_EQ(d.processes[1].host_name, "h2");
  EXPECT_EQ(d.processes[1].host, "10.77.0.2");
  EXPECT_EQ(d.processes[1].bind_address(), "10.77.0.2");
  EXPECT_EQ(d.host_of(3)->name, "h3");
  EXPECT_EQ(d.link_options(0, 0).host, "10.77.0.2");  // loadgen connects to node-a's host
  EXPECT_EQ(d.link_options(2, 0).host, "10.77.0.3");
}

TEST(ConfigHosts, CoresAreCountedPerHost) {
  Deployment d = parse_ok(kHosts);
  EXPECT_DOUBLE_EQ(d.cores_of(0), 2.0);  // h1 pins to 2 CPUs, one process on it
  EXPECT_DOUBLE_EQ(d.cores_of(1), 1.5);  // h2: 3 CPUs, two processes
  EXPECT_DOUBLE_EQ(d.cores_of(2), 1.5);
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  EXPECT_DOUBLE_EQ(d.cores_of(3), std::max(0.25, double(hw)));  // h3: not pinned, alone
}

TEST(ConfigHosts, DumpParsesToTheSame) {
  Deployment d = parse_ok(kHosts);
  Deployment again = parse_ok(dump_deployment(d));
  expect_same(d, again);
  EXPECT_HAS(dump_deployment(d), "host: \"h2\"");
}

TEST(ConfigHosts, FilesWithoutHostsAreAsBefore) {
  Deployment d = parse_ok(kChain);
  EXPECT_TRUE(d.hosts.empty());
  EXPECT_EQ(d.launcher, "local");
  EXPECT_EQ(d.processes[0].host, "127.0.0.1");
  EXPECT_EQ(d.processes[0].host_name, "");
  EXPECT_EQ(d.host_of(0), nullptr);
}

TEST(ConfigHosts, TopLevelHostNamesTheDefaultHost) {
  Deployment d = parse_ok(R"(host: h1
hosts: [{name: h1, address: 10.0.0.1}, {name: h2, address: 10.0.0.2}]
processes:
  - {name: loadgen, role: loadgen}
  - {name: sink, role: sink, host: h2}
)");
  EXPECT_EQ(d.processes[0].host, "10.0.0.1");
  EXPECT_EQ(d.processes[1].host, "10.0.0.2");
}

// ucx-opt with two processes on h1 and the sink on h2.
const char* kUcxTwoHosts = R"(preset: ucx-opt
hosts: [{name: h1, address: 10.0.0.1}, {name: h2, address: 10.0.0.2}]
processes:
  - {name: loadgen, role: loadgen, host: h1}
  - {name: node, role: node, host: h1}
  - {name: sink, role: sink, host: h2}
)";

// ucx_tls: auto (the default) is shared memory between two processes of one
// host and tcp between hosts; both ends of a link resolve it alike, and a
// link that names its transports keeps them.
TEST(ConfigHosts, UcxTlsAutoIsSharedMemoryOnOneHostAndTcpBetweenHosts) {
  Deployment d = parse_ok(kUcxTwoHosts);
  EXPECT_EQ(d.links[0].options.msg.ucx_tls, "auto");
  EXPECT_EQ(d.link_options(0, 0).msg.ucx_tls, "sm");
  EXPECT_EQ(d.link_options(1, 0).msg.ucx_tls, "tcp");
  EXPECT_EQ(parse_ok(kUcxTwoHosts, {"links.0.ucx_tls=tcp"}).link_options(0, 0).msg.ucx_tls, "tcp");
  EXPECT_EQ(parse_ok(kUcxTwoHosts, {"ucx_tls=posix"}).link_options(1, 0).msg.ucx_tls, "posix");
  // Without hosts: every process is on 127.0.0.1.
  Deployment one = parse_ok("preset: ucx-opt\nprocesses:\n  - {name: l, role: loadgen}\n"
                            "  - {name: s, role: sink}\n");
  EXPECT_EQ(one.link_options(0, 0).msg.ucx_tls, "sm");
  // A standalone program does not know its peer's address.
  one.standalone = true;
  EXPECT_EQ(one.link_options(0, 0).msg.ucx_tls, "tcp");
}

// threads: auto (the default) is shared for a process whose every link is
// over shared memory, adaptive for one with a link that crosses the kernel;
// a process's own threads, or the top-level one, wins.
TEST(ConfigHosts, ThreadsAutoIsSharedWhereEveryLinkIsSharedMemory) {
  Deployment d = parse_ok(kUcxTwoHosts);
  EXPECT_EQ(d.threads, "auto");
  EXPECT_EQ(d.threads_of(0), "shared");    // loadgen -> node: sm
  EXPECT_EQ(d.threads_of(1), "adaptive");  // node -> sink: tcp between hosts
  EXPECT_EQ(d.threads_of(2), "adaptive");
  EXPECT_EQ(parse_ok(kUcxTwoHosts, {"ucx_tls=posix"}).threads_of(1), "shared");
  EXPECT_EQ(parse_ok(kUcxTwoHosts, {"threads=dedicated"}).threads_of(0), "dedicated");
  EXPECT_EQ(parse_ok(kUcxTwoHosts, {"processes.0.threads=adaptive"}).threads_of(0), "adaptive");
  const char* kOneHost = "processes:\n  - {name: l, role: loadgen}\n  - {name: s, role: sink}\n";
  EXPECT_EQ(parse_ok(kOneHost).threads_of(0), "adaptive");  // tcp-opt
  EXPECT_EQ(parse_ok(kOneHost, {"preset=fabric-opt"}).threads_of(1), "adaptive");  // fabric tcp
  EXPECT_EQ(parse_ok(kOneHost, {"preset=fabric-opt", "fabric_provider=shm"}).threads_of(1), "shared");
  EXPECT_EQ(parse_ok(kOneHost, {"preset=ucx-opt"}).threads_of(1), "shared");
}

TEST(ConfigHosts, OverridesReachHosts) {
  Deployment d = parse_ok(kHosts, {"hosts.2.address=10.77.0.9", "processes.3.host=h1",
                                   "launcher=local", "hosts.0.rate=0"});
  EXPECT_EQ(d.hosts[2].address, "10.77.0.9");
  EXPECT_EQ(d.processes[3].host, "10.77.0.1");
  EXPECT_EQ(d.launcher, "local");
  EXPECT_EQ(d.hosts[0].rate_bps, 0u);
  EXPECT_EQ(parse_err(kHosts, {"hosts.0.adress=x"}),
            "--set hosts.0.adress=x: unknown key 'hosts.0.adress' (did you mean 'address'?)");
}

TEST(ConfigHosts, ErrorsNameFileLineAndKey) {
  auto with = [](const std::string& from, const std::string& to) {
    std::string y = kHosts;
    const size_t at = y.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return y.replace(at, from.size(), to);
  };
  // A process naming an unknown host: at its `host` key.
  EXPECT_EQ(parse_err(with("host: h3}", "host: h4}")),
            "test.yaml:14: key 'processes.3.host': process 'sink': no host 'h4' in hosts: (h1, "
            "h2, h3) (did you mean 'h1'?)");
  EXPECT_HAS(parse_err(with("host: h3}", "host: 10.77.0.3}")),
             "(that is the address of 'h3': name the host)");
  // Two hosts with one address: at the second's `address`, naming the first's.
  EXPECT_EQ(parse_err(with("address: 10.77.0.3", "address: 10.77.0.1")),
            "test.yaml:7: key 'hosts.2.address': hosts 'h1' and 'h3' have one address, 10.77.0.1 "
            "(first at test.yaml:4); each host is reached at its own");
  EXPECT_EQ(parse_err(with("name: h3", "name: h1")),
            "test.yaml:6: key 'hosts.2.name': duplicate host name 'h1' (first at test.yaml:4)");
  EXPECT_HAS(parse_err(with("cores: 0-1", "cores: 1-0")), "test.yaml:4: key 'hosts.0.cores': expected the CPUs");
  EXPECT_HAS(parse_err(with("cores: 0-1", "cores: [0, 0]")), "key 'hosts.0.cores'");
  EXPECT_HAS(parse_err(with("rate: 1gbit", "rate: 1gb")),
             "test.yaml:5: key 'hosts.1.rate': expected a rate like 10gbit");
  EXPECT_HAS(parse_err(with("host_rate: 10gbit", "host_rate: fast")),
             "test.yaml:2: key 'host_rate': expected a rate");
  EXPECT_HAS(parse_err(with("launcher: netns", "launcher: sssh")),
             "test.yaml:1: key 'launcher': invalid value 'sssh' (allowed: local, netns, ssh, slurm)");
  // The ssh launcher's keys, and their round trip.
  Deployment ssh = parse_ok(with("launcher: netns", "launcher: ssh"),
                            {"ssh_key=/k/id", "ssh_options=-o Port=2 -q", "remote_dir=/opt/sluice",
                             "copy_binaries=on"});
  EXPECT_EQ(ssh.launcher, "ssh");
  EXPECT_EQ(ssh.ssh_options, "-o Port=2 -q");
  EXPECT_TRUE(ssh.copy_binaries);
  Deployment back = parse_ok(dump_deployment(ssh));
  EXPECT_EQ(back.ssh_key, "/k/id");
  EXPECT_EQ(back.ssh_options, "-o Port=2 -q");
  EXPECT_EQ(back.remote_dir, "/opt/sluice");
  EXPECT_TRUE(back.copy_binaries);
  EXPECT_HAS(parse_err(kHosts, {"copy_binaries=yes"}), "copy_binaries");
  EXPECT_HAS(parse_err(with("ssh_port: 2222", "ssh_port: 70000")), "key 'hosts.2.ssh_port'");
  EXPECT_HAS(parse_err(with("{name: h1, address: 10.77.0.1, cores: 0-1}", "{name: h1}")),
             "test.yaml:4: hosts.0 ('h1'): missing required key 'address'");
  EXPECT_HAS(parse_err(with("{name: h1,", "{name: 'h 1',")),
             "key 'hosts.0.name': 'h 1': a host name may hold only");
  EXPECT_HAS(parse_err(std::string("subnet: 10.77.0.0\n") + kHosts),
             "test.yaml:1: key 'subnet': expected an IPv4 subnet a.b.c.d/n");
  // With hosts:, a process that names none.
  EXPECT_HAS(parse_err(with("{name: sink, role: sink, host: h3}", "{name: sink, role: sink}")),
             "test.yaml:14: process 'sink': names no host; with hosts:, every process names one "
             "(h1, h2, h3)");
}

TEST(ConfigHosts, RatesAndCpuLists) {
  uint64_t bps = 0;
  EXPECT_TRUE(parse_rate("10gbit", &bps));
  EXPECT_EQ(bps, 10'000'000'000u);
  EXPECT_TRUE(parse_rate("2.5Gbit", &bps));
  EXPECT_EQ(bps, 2'500'000'000u);
  EXPECT_TRUE(parse_rate("1000000", &bps));
  EXPECT_EQ(bps, 1'000'000u);
  EXPECT_TRUE(parse_rate("0", &bps));
  EXPECT_EQ(bps, 0u);
  for (const char* bad : {"", "10gb", "-1gbit", "gbit", "1bit", "inf"})
    EXPECT_FALSE(parse_rate(bad, &bps)) << bad;
  EXPECT_EQ(rate_name(10'000'000'000u), "10gbit");
  EXPECT_EQ(rate_name(2'500'000'000u), "2500mbit");
  std::vector<unsigned> c;
  EXPECT_TRUE(parse_cpu_list("4,0-2", &c));
  EXPECT_EQ(c, (std::vector<unsigned>{0, 1, 2, 4}));
  EXPECT_EQ(cpu_list_name(c), "0-2,4");
  for (const char* bad : {"", "a", "1-", "3-1", "1,1", "1024", "0,,1"})
    EXPECT_FALSE(parse_cpu_list(bad, &c)) << bad;
}

}  // namespace
}  // namespace sluice
