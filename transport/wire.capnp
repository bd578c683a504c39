@0x976cd9b3d8dc7836;
# sluice's Cap'n Proto messages: the handshake of every link, and the event of
# the capnp encoding (the original Borealis path: serialization for
# heterogeneous peers). Owned by the tcp transport work; see transport/tcp/.

struct Hello {
  version @0 :UInt16;
}
