@0x976cd9b3d8dc7836;
# sluice's Cap'n Proto messages: the handshake of every link, and the event of
# the capnp encoding (the original Borealis path: serialization for
# heterogeneous peers). Owned by the tcp transport work; see transport/tcp/.
#
# On a tcp link the handshake travels as
#   [u32 magic 0x53484C53 "SLHS"][u32 byte length][flat-array words]
# and an Event as the payload of a kCapnpEvent frame (transport/event.h).

enum WireEncoding {
  capnp @0;
  copy @1;
  sg @2;
}

# Sender -> receiver, first thing on a new connection: what the sender was
# configured with, so the receiver can refuse a link built from another file.
struct Hello {
  version @0 :UInt16;
  linkId @1 :UInt32;
  schema @2 :Text;
  tupleBytes @3 :UInt32;
  slotBytes @4 :UInt32;
  slots @5 :UInt32;
  encoding @6 :WireEncoding;
  token @7 :Text;
  senderName @8 :Text;
}

# Receiver -> sender: accepted with the initial credits (one per free slot),
# or refused with the reason.
struct HelloReply {
  accepted @0 :Bool;
  error @1 :Text;
  credits @2 :UInt32;
  slotBytes @3 :UInt32;
  creditBatch @4 :UInt32;
  receiverName @5 :Text;
}

struct Tuple {
  seq @0 :UInt64;
  key @1 :UInt32;
  payload @2 :Data;   # tuple_bytes - 12 bytes
}

# One event, field by field, as the original path serializes it. The receiver
# rebuilds the sluice event from it; checksum is the sender's, so the sink
# verifies the rebuild end to end.
struct Event {
  stream @0 :UInt32;
  firstSeq @1 :UInt64;
  eventSeq @2 :UInt64;
  tupleSpan @3 :UInt32;
  sendTsNs @4 :UInt64;
  checksum @5 :UInt64;
  tupleBytes @6 :UInt32;
  dataBytes @7 :UInt32;
  tuples @8 :List(Tuple);
  data @9 :Data;
  flags @10 :UInt32;
}
