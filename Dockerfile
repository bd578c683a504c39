# The sluice image for Kubernetes (`sluice-deploy render --k8s --image IMG`,
# deploy/README.md "Kubernetes"): sluice-loadgen, -node, -sink and -deploy on
# PATH, and only the libraries they load.
#
#   docker build -t registry.example.com/sluice:1.0 .
#
# Stage 1 installs what scripts/setup.sh installs (the same package list, so
# the image builds what CI builds) and builds the four programs; stage 2 is
# Debian 12 slim with their runtime libraries. Not built in this repository's
# CI (no Docker daemon there); the manifests are validated, not run.

FROM debian:12 AS build
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src
# The packages first, in a layer of their own: a source change does not
# install them again.
COPY scripts/setup.sh scripts/setup.sh
RUN scripts/setup.sh --no-build && rm -rf /var/lib/apt/lists/*
COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_BENCH=OFF \
 && cmake --build build --target sluice-loadgen sluice-node sluice-sink sluice-deploy \
 && mkdir -p /out/bin /out/share/sluice \
 && cp build/loadgen/sluice-loadgen build/node/sluice-node build/sink/sluice-sink \
       build/deploy/sluice-deploy /out/bin/ \
 && strip --strip-debug /out/bin/* \
 && cp -r deploy/examples deploy/prometheus /out/share/sluice/

FROM debian:12-slim
ENV DEBIAN_FRONTEND=noninteractive
# What the programs link (ldd), by package: libfabric (opened when a fabric
# link needs it, so ldd does not list it: checked by name below) and UCX for
# the fabric and ucx carriers (with the verbs providers for RDMA NICs), Cap'n Proto,
# spdlog, fmt, prometheus-cpp (the metrics endpoint), yaml-cpp, xxhash.
# bash and getent (libc-bin) are in the base: the pods' init container uses them.
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends \
      libfabric1 libucx0 ibverbs-providers libcapnp-0.9.2 libspdlog1.10 libfmt9 \
      libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 libyaml-cpp0.7 libxxhash0 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/bin/ /usr/local/bin/
COPY --from=build /out/share/sluice/ /usr/share/sluice/
# Fails the build if a library is missing, rather than the first pod.
RUN ! ldd /usr/local/bin/sluice-* | grep 'not found' && ldconfig -p | grep -q 'libfabric\.so\.1 ' \
 && sluice-node --help >/dev/null && sluice-deploy validate /usr/share/sluice/examples/cluster.yaml >/dev/null
# Not root. The pods that ask for an RDMA device run as root (render --k8s
# sets it): a capability a pod adds (IPC_LOCK, to register memory) reaches
# only root's effective set.
RUN useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin sluice \
 && mkdir -p /var/run/sluice && chown 10001 /var/run/sluice
USER 10001
# Where the pods mount an emptyDir for the summaries (and a sink's results).
WORKDIR /var/run/sluice
ENTRYPOINT []
CMD ["sluice-deploy", "--help"]
