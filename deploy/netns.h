// deploy/: the netns executor: each host of the deployment a network
// namespace on this machine, as if it were a machine of its own on one LAN.
//
//   namespace <prefix>-net   a bridge, br0, and one veth end h<i> per host
//   namespace <prefix>-NAME  for host NAME: lo up, and eth0 (the veth's other
//                            end) with the host's address/<prefix length>
//
// <prefix> is sl<pid of sluice-deploy>, so runs side by side do not meet.
// Nothing is made in the namespace sluice-deploy runs in. A host's `rate`
// (else `host_rate`) is a tc tbf qdisc on eth0 (what the host sends) and on
// h<i> (what it receives), like a full-duplex NIC of that speed. Programs run
// under `ip netns exec <prefix>-NAME`, which execs them: the pid started is
// the program's, in its own process group, as with the local executor.
// down() deletes the namespaces, which takes their veths and the bridge
// with them.
#pragma once

#include <cstdio>
#include <memory>

#include "deploy/executor.h"

namespace sluice {

std::unique_ptr<Executor> make_netns_executor(const Deployment& d, std::FILE* progress);

// The namespace names a run of sluice-deploy with pid `pid` makes start with
// this: "sl<pid>-".
std::string netns_prefix(pid_t pid);

}  // namespace sluice
