@0x976cd9b3d8dc7836;
# sluice's Cap'n Proto messages: the handshake of every link, and the event of
# the capnp encoding (the original Borealis path: serialization for
# heterogeneous peers). The handshake belongs to the protocol core (transport/handshake.h),
# the Event to the tcp carrier's capnp encoding.
#
# On a tcp link the handshake travels as
#   [u32 magic 0x53484C53 "SLHS"][u32 byte length][message: segment table, segments]
# and an Event as the payload of a kCapnpEvent frame (transport/event.h).

# Sender -> receiver, first thing on a new link: what the sender was
# configured with, so the receiver can refuse a link built from another file.
# transport/PROTOCOL.md says what the receiver checks in each field.
struct Hello {
  version @0 :UInt16;       # wire version (transport/event.h kWireVersion)
  linkId @1 :UInt32;        # the link's index in the deployment
  instance @2 :UInt32;      # which copy of the pipeline
  schema @3 :Text;
  tupleBytes @4 :UInt32;
  slotBytes @5 :UInt32;     # the receiver's slot, as the sender was told
  slots @6 :UInt32;         # the receiver's slots, as the sender was told
  carrier @7 :Text;         # the carrier and its wire form: "tcp/sg", "tcp/copy", "tcp/capnp"
  token @8 :Text;
  senderName @9 :Text;
  receiverName @10 :Text;   # whom the sender means to reach ("" = anyone)
  acks @11 :Bool;           # the sender keeps frames until acknowledged (LinkOptions::acks);
                            # the receiver refuses a Hello whose acks differ from its own
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
