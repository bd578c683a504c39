// The Python module's docstrings (help(sluice.Publisher), ...): the same
// words as its type stub, sluice.pyi, and docs/API.md.
#pragma once

namespace doc {

inline constexpr const char* kModule = R"(sluice: publish into and subscribe from a sluice graph.

A Publisher is the source of a graph's stream, a Subscriber an end of one:
each names a process of a deployment (a run directory that `sluice-deploy up`
made, or a deployment file) or a standalone node's address. A stream's tuples
are numpy structured arrays of its dtype: `seq` (u64, numbered by the
publisher's library) first, then the schema's fields at their offsets,
itemsize = tuple_bytes.

    pub = sluice.Publisher("runs/app", "publisher")
    batch = numpy.zeros(256, pub.dtype)
    batch["price"] = ...
    pub.send(batch)          # how many tuples went; fewer when back pressured
    pub.close()              # END after everything sent

    with sluice.Subscriber("runs/app", "subscriber") as sub:
        for tuples in sub:   # copies, until END
            ...

Back pressure is a return value, never an exception; errors raise
sluice.Error with the library's message. Every wait releases the GIL.)";

inline constexpr const char* kError =
    "An error of the library: its message names what failed, on which link, with which peer.";
inline constexpr const char* kSchemaError =
    "An array, or a declared dtype, that is not the stream's schema: the message names both.";
inline constexpr const char* kClosedError = "A call on a Publisher or Subscriber that was closed.";

inline constexpr const char* kDtype =
    "The stream's tuples as a numpy structured dtype: seq (u64) first, every field at its offset, "
    "itemsize = tuple_bytes. numpy.zeros(n, end.dtype) makes tuples to send.";
inline constexpr const char* kSchema =
    "The stream's schema as the handshake names it: 'quotes{seq:u64,key:u32,...;tuple_bytes=128}'.";

inline constexpr const char* kPublisher = R"(The application as the source of a graph's stream.

Publisher(run_dir=None, process=None, *, deployment=None, address=None,
          token=None, set=[], instance=0, dtype=None, summary=None)

Opens the end: run_dir and process (a run of sluice-deploy), deployment and
process (a deployment file), or address and token (a standalone node's
listener; `set` gives the stream's keys, KEY=VALUE). Returns once every
downstream link is connected (the GIL released meanwhile), or raises
sluice.Error saying why: a receiver's refusal at the handshake (another
schema, both named; a wrong token), a connect timeout naming the address.
`dtype`: the tuples the application means to send; one that is not the
graph's schema is refused at the handshake, naming both.

One thread calls send, claim, flush and close. A with-block closes it.)";

inline constexpr const char* kSend = R"(Sends the tuples of `array`, a numpy array of this publisher's dtype, as
events of up to max_tuples tuples, each copied straight into a claimed slot
of the publisher's pool (one copy; claim() writes there without any). Their
`seq` is numbered by the library. Returns how many tuples went: all of them,
or fewer when no slot came free within `timeout` (back pressure: the graph
gives no credit, or with acks what was sent waits for its acknowledgement);
send the rest again. timeout: seconds for the whole call, None waits without
limit (Ctrl-C interrupts), 0 does not wait; the GIL is released only to
wait. An array of another dtype raises sluice.SchemaError naming both; a
failed link raises sluice.Error. An array of this dtype (or one found equal
to it before) is recognised without comparing fields: refill one array in
place and send it again.)";

inline constexpr const char* kClaimCall = R"(Room for n tuples (1 to max_tuples) inside a slot of the publisher's pool:
Claim.tuples is a writable numpy array over the slot itself (zero copy).
Write the tuples, then commit() (or use it as a with-block: committed at
its end, aborted on an exception). None: no slot came free within
`timeout` (back pressure).)";

inline constexpr const char* kClaim = R"(Room for tuples inside a slot, until committed or aborted.

tuples: a writable numpy array of the publisher's dtype over the slot's
memory; valid until commit() or abort(), after which the slot belongs to
the library again.)";
inline constexpr const char* kClaimTuples = "The claimed tuples, in the slot: a writable numpy array of the dtype.";
inline constexpr const char* kClaimCommit =
    "Sends the first n tuples (all by default) as one event: numbered, checksummed, handed "
    "to the links, no copy.";
inline constexpr const char* kClaimAbort = "Gives the slot back unsent.";

inline constexpr const char* kFlush = R"(Waits until every committed event is acknowledged downstream (acks on) or
sent (acks off): True; False when the timeout ran out first. With acks, a
link that broke meanwhile is connected again and its unacknowledged events
sent again by the library.)";

inline constexpr const char* kPublisherClose = R"(Sends END after everything committed, waits up to `timeout` seconds for the
receivers to take it, then writes the summary. Raises sluice.Error when a
receiver did not take END in time, or the stream had failed. A second close
does nothing.)";

inline constexpr const char* kSubscriber = R"(The application as an end of a graph's stream.

Subscriber(run_dir=None, process=None, *, deployment=None, address=None,
           token=None, set=[], instance=0, dtype=None, summary=None,
           manual_acks=False, resume=[])

Opens the end (binds its links' listeners; the upstreams connect to it).
Every event is checked as the sink checks it (checksum, each stream's
sequence) before the application sees it; with acks, a replay's duplicates
are dropped. `dtype`: the tuples the application means to read; another
schema than the graph's raises sluice.SchemaError naming both.
manual_acks: events are acknowledged upstream only by acknowledge().
resume: (stream, next_event_seq, next_seq) per stream where the
application's output already reached; earlier events are dropped.

Iterating yields each event's tuples as a numpy array (a copy) until END.
One thread calls poll, acknowledge and close. A with-block closes it.)";

inline constexpr const char* kPoll = R"(Calls handler(tuples, event) for at most `limit` events, waiting up to
`timeout` seconds for the first (None: without limit; 0: not at all), the
GIL released while it waits (a poll that finds events keeps it; one that
waited takes it back once, at the first event). `tuples` is a read-only numpy array over the
slot the event arrived in, valid only inside the call (copy=True: a copy
the handler may keep); `event` says its stream, count, first_seq and
event_seq. After the handler returns the slot goes back to its link, and
its credit upstream. Returns how many events were handled: 0 when none
came, or after END (see `ended`). An exception of the handler leaves poll;
the events after it stay for the next poll.)";

inline constexpr const char* kEvent =
    "One event's place in its stream, a named tuple (struct sequence): stream, count, first_seq, event_seq.";
inline constexpr const char* kEnded = "True once END came and every event before it was handled.";
inline constexpr const char* kNext = "The next event's tuples, a copy; waits for it; StopIteration after END.";
inline constexpr const char* kCounts =
    "The sink's counts so far: a dict of events, tuples, lost, duplicated, corrupt, deduplicated "
    "(tuples) and ended.";
inline constexpr const char* kAcknowledge =
    "With manual_acks, every event handled so far is acknowledged upstream.";
inline constexpr const char* kSubscriberClose = R"(Stops if END has not come, then writes the summary. Raises sluice.Error
when the stream failed, or was closed before END. A second close does
nothing.)";

}  // namespace doc
