// The Python module `sluice`: the client library (include/sluice/,
// docs/API.md) for Python programs, its tuples as numpy structured arrays.
//
//   1. Publisher(...) / Subscriber(...) open the end a run directory, a
//      deployment file or an address names, with the GIL released while the
//      links connect. `dtype` is the stream's schema as a numpy dtype: `seq`
//      (u64) first, every field at its offset, itemsize = tuple_bytes.
//   2. Publisher.send(array) checks the array's dtype against the schema
//      (refused naming both), then copies it straight into claimed slots,
//      one event per max_tuples; claim(n) hands out the slot itself as a
//      writable array (no copy at all) to commit.
//   3. Subscriber.poll(handler) calls handler(tuples, event) with a read-only
//      array over the slot the event arrived in (valid inside the call; a
//      copy with copy=True); iterating a Subscriber yields copies until END.
//   4. Back pressure is a return value (send: how many tuples went; claim:
//      None; flush: False); errors are sluice.Error carrying the library's
//      message. Every wait runs with the GIL released, in slices, so other
//      threads run and Ctrl-C interrupts it; a call that need not wait keeps
//      the GIL throughout.
//
// What runs per event is kept to C calls: an array over a slot is one call
// of numpy's PyArray_NewFromDescr, an event's place a struct sequence, the
// handler a vectorcall, and send recognises an array's dtype by identity
// once it was found equal to the schema's. numpy is reached without its
// headers: its Python API, the buffer protocol, and three entries of the C
// API table it exports at run time (places they have held from numpy 1.7
// through 2.x; another ABI version is refused at import, by name).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <sluice/publisher.h>
#include <sluice/subscriber.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace pybind11::literals;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

namespace {

// The module's exception types and numpy's functions, set once at import.
struct Globals {
  PyObject* error = nullptr;         // sluice.Error(RuntimeError)
  PyObject* schema_error = nullptr;  // sluice.SchemaError(sluice.Error, TypeError)
  PyObject* closed_error = nullptr;  // sluice.ClosedError(sluice.Error)
  py::object np_dtype, np_ascontiguousarray;
  py::object dtype_name;             // "dtype", interned
  PyTypeObject* event_type = nullptr;  // sluice.Event, a struct sequence
  // numpy's C API table (numpy/_core/include/numpy/__multiarray_api.h
  // names the places): the array type, PyArray_NewFromDescr (it takes the
  // descriptor's reference) and PyArray_SetBaseObject (it takes the base's).
  PyTypeObject* array_type = nullptr;
  PyObject* (*new_from_descr)(PyTypeObject*, PyObject* descr, int nd, Py_intptr_t* dims, Py_intptr_t* strides,
                              void* data, int flags, PyObject* obj) = nullptr;
  int (*set_base)(PyObject* array, PyObject* base) = nullptr;
};
Globals* g = nullptr;
constexpr int kNpyWriteable = 0x0400;  // NPY_ARRAY_WRITEABLE

// numpy's C API table, from the capsule numpy exports (numpy 2:
// numpy._core._multiarray_umath, numpy 1: numpy.core._multiarray_umath).
void load_numpy_api() {
  py::object m;
  for (const char* name : {"numpy._core._multiarray_umath", "numpy.core._multiarray_umath"}) {
    try {
      m = py::module_::import(name);
      break;
    } catch (py::error_already_set&) {
    }
  }
  if (!m || !py::hasattr(m, "_ARRAY_API"))
    throw py::import_error("sluice: numpy exports no C API table (_ARRAY_API) in numpy._core._multiarray_umath");
  void** api = static_cast<void**>(PyCapsule_GetPointer(m.attr("_ARRAY_API").ptr(), nullptr));
  if (!api) throw py::error_already_set();
  // Place 0, PyArray_GetNDArrayCVersion: the ABI version, 0x01...... for
  // numpy 1, 0x02...... for 2.
  const unsigned abi = reinterpret_cast<unsigned (*)()>(api[0])();
  if (abi >> 24 != 1 && abi >> 24 != 2)
    throw py::import_error("sluice: numpy's C ABI version 0x" + [&] {
      char b[16];
      std::snprintf(b, sizeof b, "%x", abi);
      return std::string(b);
    }() + " is not one this module knows (numpy 1.x: 0x01..., 2.x: 0x02...)");
  g->array_type = static_cast<PyTypeObject*>(api[2]);
  g->new_from_descr = reinterpret_cast<decltype(g->new_from_descr)>(api[94]);
  g->set_base = reinterpret_cast<decltype(g->set_base)>(api[282]);
}

[[noreturn]] void throw_error(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  throw py::error_already_set();
}

// An end left open is closed by its destructor, which may wait (END, the
// links): without the GIL, unless the interpreter is shutting down.
bool interpreter_running() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

// A wait: seconds, None (no limit) or 0 (do not wait).
struct Wait {
  bool forever = false;
  Clock::time_point deadline;
  explicit Wait(std::optional<double> seconds) {
    if (!seconds) {
      forever = true;
    } else {
      if (*seconds < 0) throw py::value_error("timeout: expected seconds >= 0 or None");
      deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*seconds));
    }
  }
  // The next slice to wait, at most 100 ms (signals are checked between
  // slices); 0 once the deadline passed.
  milliseconds slice() const {
    if (forever) return milliseconds(100);
    const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now());
    return std::clamp(left, milliseconds(0), milliseconds(100));
  }
  bool over() const { return !forever && Clock::now() >= deadline; }
};

// Runs call(ms) once without waiting, GIL held; while it says
// kBackPressured and the wait allows, again in slices with the GIL released.
template <class F>
sluice::Code waiting(const Wait& w, F&& call) {
  sluice::Code c = call(milliseconds(0));
  while (c == sluice::Code::kBackPressured && !w.over()) {
    const milliseconds slice = w.slice();
    {
      py::gil_scoped_release unlocked;
      c = call(slice);
    }
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
  return c;
}

// ---- dtypes -------------------------------------------------------------

const char* numpy_format(const sluice::Field& f, std::string* buf) {
  switch (f.type) {
    case sluice::Type::kI32: return "<i4";
    case sluice::Type::kI64: return "<i8";
    case sluice::Type::kU32: return "<u4";
    case sluice::Type::kU64:
    case sluice::Type::kTimestamp: return "<u8";
    case sluice::Type::kF64: return "<f8";
    case sluice::Type::kBytes: *buf = "S" + std::to_string(f.width); return buf->c_str();
  }
  return "V8";
}

// The layout as a numpy dtype: the same names, formats and offsets,
// itemsize = tuple_bytes, so an array of it is the slot's memory.
py::object dtype_of(const sluice::Layout& l) {
  py::list names, formats, offsets;
  for (const sluice::Field& f : l.fields()) {
    std::string buf;
    names.append(f.name);
    formats.append(numpy_format(f, &buf));
    offsets.append(f.offset);
  }
  return g->np_dtype(py::dict("names"_a = names, "formats"_a = formats, "offsets"_a = offsets,
                              "itemsize"_a = l.tuple_bytes()));
}

// One field of a numpy dtype as a schema's type; false: none fits.
bool field_of(const std::string& name, py::handle sub, uint32_t offset, sluice::Field* out) {
  const std::string kind = py::str(sub.attr("kind"));
  const int size = sub.attr("itemsize").cast<int>();
  const std::string order = py::str(sub.attr("byteorder"));
  const bool little = order == "<" || order == "|" || (order == "=" && PY_LITTLE_ENDIAN);
  out->name = name;
  out->offset = offset;
  out->width = static_cast<uint32_t>(size);
  if ((kind == "S" || kind == "V") && sub.attr("names").is_none()) {
    out->type = sluice::Type::kBytes;
    return true;
  }
  if (!little) return false;
  if (kind == "i" && size == 4) out->type = sluice::Type::kI32;
  else if (kind == "i" && size == 8) out->type = sluice::Type::kI64;
  else if (kind == "u" && size == 4) out->type = sluice::Type::kU32;
  else if (kind == "u" && size == 8) out->type = sluice::Type::kU64;
  else if (kind == "f" && size == 8) out->type = sluice::Type::kF64;
  else return false;
  return true;
}

// A dtype in the words of Layout::describe ("array{seq:u64,price:f64;
// tuple_bytes=16}"), a field's offset added where it is not the packed
// one, a field no schema type fits spelled as numpy spells it.
std::string describe_dtype(py::handle dt) {
  if (dt.attr("names").is_none()) return "array of " + std::string(py::str(dt)) + " (not a structured dtype)";
  std::string s = "array{";
  uint32_t packed = 0;
  bool first = true;
  py::object fields = dt.attr("fields");
  for (py::handle n : dt.attr("names")) {
    const std::string name = py::str(n);
    py::tuple ft = fields[n];
    const uint32_t off = ft[1].cast<uint32_t>();
    sluice::Field f;
    s += first ? "" : ",";
    first = false;
    if (field_of(name, ft[0], off, &f)) {
      s += name + ":" + sluice::type_name(f.type);
      if (f.type == sluice::Type::kBytes) s += "[" + std::to_string(f.width) + "]";
    } else {
      s += name + ":" + std::string(py::str(ft[0].attr("str")));
    }
    if (off != packed) s += "@" + std::to_string(off);
    packed = off + ft[0].attr("itemsize").cast<uint32_t>();
  }
  return s + ";tuple_bytes=" + std::string(py::str(dt.attr("itemsize"))) + "}";
}

// A dtype the application means to write or read, as Connect's fields.
void declare(py::handle dtype_arg, sluice::Connect* c) {
  py::object dt = g->np_dtype(dtype_arg);
  if (dt.attr("names").is_none())
    throw_error(g->schema_error, "dtype: " + describe_dtype(dt) + ": a stream's tuples are a structured dtype");
  py::object fields = dt.attr("fields");
  for (py::handle n : dt.attr("names")) {
    py::tuple ft = fields[n];
    sluice::Field f;
    if (!field_of(py::str(n), ft[0], ft[1].cast<uint32_t>(), &f))
      throw_error(g->schema_error, "dtype: field '" + std::string(py::str(n)) + "' is " +
                                 std::string(py::str(ft[0].attr("str"))) +
                                 ": a stream's fields are little-endian i4, i8, u4, u8, f8 or bytes (S, V)");
    c->fields.push_back(f);
  }
  c->tuple_bytes = dt.attr("itemsize").cast<uint32_t>();
}

// ---- zero-copy arrays -----------------------------------------------------

// `count` tuples of `dtype` at `data` (a slot's memory) as a numpy array
// whose base is `owner`, the end (Publisher or Subscriber) that owns the
// slot's pool, alive while the array lives. Read-only arrays stay so: their
// base exports no writable buffer, so numpy refuses writeable=True.
py::object array_over(std::byte* data, uint32_t count, uint32_t tuple_bytes, bool readonly, py::handle owner,
                      py::handle dtype) {
  Py_intptr_t dims[1] = {count};
  Py_intptr_t strides[1] = {tuple_bytes};
  Py_INCREF(dtype.ptr());  // new_from_descr's, even when it fails
  PyObject* a = g->new_from_descr(g->array_type, dtype.ptr(), 1, dims, strides, data, readonly ? 0 : kNpyWriteable,
                                  nullptr);
  if (!a) throw py::error_already_set();
  Py_INCREF(owner.ptr());  // set_base's, even when it fails
  if (g->set_base(a, owner.ptr()) != 0) {
    Py_DECREF(a);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(a);
}

sluice::Connect connect_of(std::optional<std::string> run_dir, std::optional<std::string> process,
                           std::optional<std::string> deployment, std::optional<std::string> address,
                           std::optional<std::string> token, std::vector<std::string> set, uint32_t instance,
                           py::object dtype, std::optional<std::string> summary) {
  sluice::Connect c;
  c.run_dir = run_dir.value_or("");
  c.process = process.value_or("");
  c.deployment = deployment.value_or("");
  c.address = address.value_or("");
  c.token = token.value_or("");
  c.set = std::move(set);
  c.instance = instance;
  c.summary = summary.value_or("");
  if (!dtype.is_none()) declare(dtype, &c);
  return c;
}

// After open: the application's dtype, where it gave one, is the layout's
// (the library compared fields and widths; this compares offsets too).
void check_declared(py::handle wanted, const py::object& actual, const sluice::Layout& l, const char* what) {
  if (wanted.is_none()) return;
  py::object dt = g->np_dtype(wanted);
  if (!dt.equal(actual))
    throw_error(g->schema_error, std::string(what) + ": the dtype " + describe_dtype(dt) + " is not the stream's schema " +
                               l.describe());
}

// One thread at a time in an end's calls (the library's rule): a second
// thread's call, while the first waits with the GIL released, is refused.
class Busy {
 public:
  Busy(bool& flag, const char* what) : flag_(flag) {
    if (flag_) throw_error(g->error, std::string(what) + ": another call on this end is in progress (one thread per end)");
    flag_ = true;
  }
  ~Busy() { flag_ = false; }

 private:
  bool& flag_;
};

// ---- Publisher --------------------------------------------------------------

struct PyPublisher {
  std::unique_ptr<sluice::Publisher> p;
  py::object dtype;
  py::object accepted, accepted_names;  // the last other dtype send found equal to it, and its names
  bool busy = false;
  bool closed = false;
  ~PyPublisher() {
    if (!p) return;
    if (interpreter_running()) {
      py::gil_scoped_release unlocked;
      p.reset();
    } else {
      p.reset();
    }
  }
  sluice::Publisher& open_end(const char* what) {
    if (closed) throw_error(g->closed_error, std::string(what) + ": the publisher is closed");
    return *p;
  }
  [[noreturn]] void fail(sluice::Code c, const char* what) {
    if (c == sluice::Code::kClosed) throw_error(g->closed_error, std::string(what) + ": the publisher is closed");
    throw_error(g->error, std::string(what) + ": " + p->error());
  }
};

struct PyClaim {
  py::object owner;  // the Publisher
  PyPublisher* pub = nullptr;
  sluice::Claim c;
  py::object tuples;
  bool open = false;
  ~PyClaim() {
    if (open && pub->p) pub->p->abort(c);
  }
};

std::shared_ptr<PyPublisher> publisher_open(std::optional<std::string> run_dir, std::optional<std::string> process,
                                            std::optional<std::string> deployment,
                                            std::optional<std::string> address, std::optional<std::string> token,
                                            std::vector<std::string> set, uint32_t instance, py::object dtype,
                                            std::optional<std::string> summary) {
  const sluice::Connect c = connect_of(run_dir, process, deployment, address, token, std::move(set), instance, dtype,
                                       summary);
  auto self = std::make_shared<PyPublisher>();
  sluice::Result r;
  {
    py::gil_scoped_release unlocked;
    r = sluice::Publisher::open(c, &self->p);
  }
  if (!r) throw_error(g->error, r.message);
  self->dtype = dtype_of(self->p->layout());
  check_declared(dtype, self->dtype, self->p->layout(), "Publisher");
  return self;
}

// Whether an array's dtype is the stream's schema: the end's own dtype, or
// the last other one found equal, are known by identity (the latter with
// the same names: numpy lets a dtype's names be set in place); any other
// is compared, and kept when equal.
bool is_schema(PyPublisher& self, PyObject* dt) {
  if (dt == self.dtype.ptr()) return true;
  py::object names = py::reinterpret_steal<py::object>(PyObject_GetAttrString(dt, "names"));
  if (!names) throw py::error_already_set();
  if (dt == self.accepted.ptr() && names.ptr() == self.accepted_names.ptr()) return true;
  const int eq = PyObject_RichCompareBool(dt, self.dtype.ptr(), Py_EQ);
  if (eq < 0) throw py::error_already_set();
  if (eq == 0) return false;
  self.accepted = py::reinterpret_borrow<py::object>(dt);
  self.accepted_names = std::move(names);
  return true;
}

size_t publisher_send(py::handle self_obj, py::handle array_arg, std::optional<double> timeout, uint32_t stream) {
  PyPublisher& self = self_obj.cast<PyPublisher&>();
  sluice::Publisher& p = self.open_end("send");
  Busy busy(self.busy, "send");
  py::object array = py::reinterpret_borrow<py::object>(array_arg);
  py::object dt = py::reinterpret_steal<py::object>(PyObject_GetAttr(array.ptr(), g->dtype_name.ptr()));
  if (!dt) {
    PyErr_Clear();
    throw_error(g->schema_error, "send: expected a numpy array of the stream's dtype " + p.layout().describe() +
                                     ", got " + std::string(py::str(array.get_type().attr("__name__"))));
  }
  if (!is_schema(self, dt.ptr()))
    throw_error(g->schema_error, "send: the array's dtype " + describe_dtype(dt) + " is not the stream's schema " +
                               p.layout().describe() + " (make arrays with publisher.dtype)");
  const uint32_t tb = p.layout().tuple_bytes();
  Py_buffer view;
  if (PyObject_GetBuffer(array.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) {
    PyErr_Clear();  // strided: one contiguous copy first
    array = g->np_ascontiguousarray(array);
    if (PyObject_GetBuffer(array.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) throw py::error_already_set();
  }
  struct Release {
    Py_buffer* v;
    ~Release() { PyBuffer_Release(v); }
  } release{&view};
  if (view.len % tb != 0)
    throw_error(g->schema_error, "send: the array holds " + std::to_string(view.len) + " bytes, not whole tuples of " +
                                     std::to_string(tb) + " bytes (" + p.layout().describe() + ")");
  const size_t total = static_cast<size_t>(view.len) / tb;
  const auto* src = static_cast<const std::byte*>(view.buf);
  const Wait w(timeout);
  size_t done = 0;
  while (done < total) {
    const uint32_t n = static_cast<uint32_t>(std::min<size_t>(p.max_tuples(), total - done));
    sluice::Claim room;
    const sluice::Code got = waiting(w, [&](milliseconds t) { return p.claim(n, &room, t, stream); });
    if (got == sluice::Code::kBackPressured) break;
    if (got != sluice::Code::kOk) self.fail(got, "send");
    std::memcpy(room.tuples, src + done * tb, size_t{n} * tb);
    if (const sluice::Code c = p.commit(room); c != sluice::Code::kOk) self.fail(c, "send");
    done += n;
  }
  return done;
}

py::object publisher_claim(py::object self_obj, uint32_t n, std::optional<double> timeout, uint32_t stream) {
  PyPublisher& self = self_obj.cast<PyPublisher&>();
  sluice::Publisher& p = self.open_end("claim");
  Busy busy(self.busy, "claim");
  auto cl = std::make_unique<PyClaim>();
  const sluice::Code got = waiting(Wait(timeout), [&](milliseconds t) { return p.claim(n, &cl->c, t, stream); });
  if (got == sluice::Code::kBackPressured) return py::none();
  if (got != sluice::Code::kOk) self.fail(got, "claim");
  cl->owner = self_obj;
  cl->pub = &self;
  cl->open = true;
  cl->tuples = array_over(cl->c.tuples, cl->c.capacity, cl->c.tuple_bytes, false, self_obj, self.dtype);
  return py::cast(std::move(cl));
}

void claim_commit(PyClaim& cl, std::optional<uint32_t> n) {
  if (!cl.open) throw_error(g->error, "commit: the claim was committed or aborted already");
  PyPublisher& self = *cl.pub;
  sluice::Publisher& p = self.open_end("commit");
  cl.open = false;
  if (const sluice::Code c = p.commit(cl.c, n.value_or(UINT32_MAX)); c != sluice::Code::kOk) self.fail(c, "commit");
}

void claim_abort(PyClaim& cl) {
  if (!cl.open) return;
  cl.open = false;
  cl.pub->p->abort(cl.c);
}

bool publisher_flush(PyPublisher& self, std::optional<double> timeout) {
  sluice::Publisher& p = self.open_end("flush");
  Busy busy(self.busy, "flush");
  const sluice::Code c = waiting(Wait(timeout), [&](milliseconds t) { return p.flush(t); });
  if (c == sluice::Code::kBackPressured) return false;
  if (c != sluice::Code::kOk) self.fail(c, "flush");
  return true;
}

void publisher_close(PyPublisher& self, double timeout) {
  if (self.closed) return;
  Busy busy(self.busy, "close");
  self.closed = true;
  sluice::Result r;
  {
    py::gil_scoped_release unlocked;
    r = self.p->close(std::chrono::duration_cast<milliseconds>(std::chrono::duration<double>(std::max(0.0, timeout))));
  }
  if (!r) throw_error(g->error, r.message);
}

// ---- Subscriber -------------------------------------------------------------

struct PySubscriber {
  std::unique_ptr<sluice::Subscriber> s;
  py::object dtype;
  bool busy = false;
  bool closed = false;
  bool ended = false;  // the last poll said END: nothing more comes
  ~PySubscriber() {
    if (!s) return;
    if (interpreter_running()) {
      py::gil_scoped_release unlocked;
      s.reset();
    } else {
      s.reset();
    }
  }
};

std::shared_ptr<PySubscriber> subscriber_open(std::optional<std::string> run_dir, std::optional<std::string> process,
                                              std::optional<std::string> deployment,
                                              std::optional<std::string> address, std::optional<std::string> token,
                                              std::vector<std::string> set, uint32_t instance, py::object dtype,
                                              std::optional<std::string> summary, bool manual_acks,
                                              std::vector<std::tuple<uint32_t, uint64_t, uint64_t>> resume) {
  const sluice::Connect c = connect_of(run_dir, process, deployment, address, token, std::move(set), instance, dtype,
                                       summary);
  sluice::SubscriberOptions o;
  o.manual_acks = manual_acks;
  for (const auto& [stream, event_seq, seq] : resume) o.resume.push_back({stream, event_seq, seq});
  auto self = std::make_shared<PySubscriber>();
  sluice::Result r;
  {
    py::gil_scoped_release unlocked;
    r = sluice::Subscriber::open(c, &self->s, o);
  }
  if (!r) throw_error(g->error, r.message);
  self->dtype = dtype_of(self->s->layout());
  check_declared(dtype, self->dtype, self->s->layout(), "Subscriber");
  return self;
}

// What a poll's handler is given, and whether it must take the GIL back
// (the poll waited with it released).
struct PollContext {
  py::handle owner;  // the Subscriber
  PySubscriber* self;
  bool copy;
  PyThreadState* released = nullptr;  // the poll waits without the GIL: the first event takes it back
  PyObject* handler;                  // handler(tuples, event), or
  std::vector<py::object>* taken;     // copies kept (iteration)
};

// The GIL released for a poll that waits, until the first event (or the
// end of the poll) takes it back: a poll that handles many events takes
// it once.
class Unlocked {
 public:
  explicit Unlocked(PollContext& c) : c_(c) { c_.released = PyEval_SaveThread(); }
  ~Unlocked() {
    if (c_.released) PyEval_RestoreThread(c_.released);
    c_.released = nullptr;
  }

 private:
  PollContext& c_;
};

// An event's place in its stream as a sluice.Event.
py::object event_of(const sluice::EventView& e) {
  py::object ev = py::reinterpret_steal<py::object>(PyStructSequence_New(g->event_type));
  if (!ev) throw py::error_already_set();
  const unsigned long long v[4] = {e.stream, e.count, e.first_seq, e.event_seq};
  for (int i = 0; i < 4; ++i) {
    PyObject* n = PyLong_FromUnsignedLongLong(v[i]);
    if (!n) throw py::error_already_set();
    PyStructSequence_SetItem(ev.ptr(), i, n);  // takes n
  }
  return ev;
}

void on_event(void* context, const sluice::EventView& e) {
  auto* c = static_cast<PollContext*>(context);
  if (c->released) {
    PyEval_RestoreThread(c->released);
    c->released = nullptr;
  }
  py::object tuples = array_over(const_cast<std::byte*>(e.tuples), e.count, e.tuple_bytes, true, c->owner,
                                 c->self->dtype);
  if (c->copy) tuples = tuples.attr("copy")();
  if (c->taken) {
    c->taken->push_back(std::move(tuples));
    return;
  }
  // An exception leaves through the library's poll to the caller: the
  // events after this one stay for the next poll.
  py::object ev = event_of(e);
  PyObject* args[2] = {tuples.ptr(), ev.ptr()};
#if PY_VERSION_HEX >= 0x03090000
  PyObject* r = PyObject_Vectorcall(c->handler, args, 2, nullptr);
#else
  PyObject* r = _PyObject_Vectorcall(c->handler, args, 2, nullptr);
#endif
  if (!r) throw py::error_already_set();
  Py_DECREF(r);
}

// Polls until at least one event, END, or the wait is over.
int subscriber_poll_into(PySubscriber& self, PollContext& ctx, int limit,
                         std::optional<double> timeout) {
  if (self.closed) throw_error(g->closed_error, "poll: the subscriber is closed");
  if (limit < 1) throw py::value_error("poll: limit must be at least 1");
  Busy busy(self.busy, "poll");
  int handled = 0;
  sluice::Code c = self.s->poll(on_event, &ctx, limit, milliseconds(0), &handled);
  const Wait w(timeout);
  while (c == sluice::Code::kOk && handled == 0 && !w.over()) {
    const milliseconds slice = w.slice();
    {
      Unlocked unlocked(ctx);
      c = self.s->poll(on_event, &ctx, limit, slice, &handled);
    }
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
  if (c == sluice::Code::kClosed) self.ended = true;
  else if (c == sluice::Code::kError) throw_error(g->error, "poll: " + self.s->error());
  return handled;
}

int subscriber_poll(py::object owner, py::object handler, int limit, std::optional<double> timeout, bool copy) {
  PySubscriber& self = owner.cast<PySubscriber&>();
  PollContext ctx{owner, &self, copy, nullptr, handler.ptr(), nullptr};
  return subscriber_poll_into(self, ctx, limit, timeout);
}

py::object subscriber_next(py::object owner) {
  PySubscriber& self = owner.cast<PySubscriber&>();
  std::vector<py::object> taken;
  PollContext ctx{owner, &self, true, nullptr, nullptr, &taken};
  while (taken.empty()) {
    if (self.ended) throw py::stop_iteration();
    subscriber_poll_into(self, ctx, 1, std::nullopt);
  }
  return taken.front();
}

void subscriber_close(PySubscriber& self) {
  if (self.closed) return;
  Busy busy(self.busy, "close");
  self.closed = true;
  sluice::Result r;
  {
    py::gil_scoped_release unlocked;
    r = self.s->close();
  }
  if (!r) throw_error(g->error, r.message);
}

py::dict counts_of(const sluice::Counts& k) {
  return py::dict("events"_a = k.events, "tuples"_a = k.tuples, "lost"_a = k.lost, "duplicated"_a = k.duplicated,
                  "corrupt"_a = k.corrupt, "deduplicated"_a = k.deduplicated, "ended"_a = k.ended);
}

PyObject* new_exception(py::module_& m, const char* name, PyObject* bases, const char* doc) {
  PyObject* t = PyErr_NewExceptionWithDoc((std::string("sluice.") + name).c_str(), doc, bases, nullptr);
  if (!t) throw py::error_already_set();
  m.add_object(name, py::handle(t));  // the module's reference; t lives as long as the module
  return t;
}

}  // namespace

#include "docstrings.h"

PYBIND11_MODULE(sluice, m) {
  m.doc() = doc::kModule;
  g = new Globals;  // for the life of the interpreter
  py::module_ np = py::module_::import("numpy");
  g->np_dtype = np.attr("dtype");
  g->np_ascontiguousarray = np.attr("ascontiguousarray");
  g->dtype_name = py::reinterpret_steal<py::object>(PyUnicode_InternFromString("dtype"));
  load_numpy_api();
  g->error = new_exception(m, "Error", PyExc_RuntimeError, doc::kError);
  {
    py::tuple bases = py::make_tuple(py::handle(g->error), py::handle(PyExc_TypeError));
    g->schema_error = new_exception(m, "SchemaError", bases.ptr(), doc::kSchemaError);
  }
  g->closed_error = new_exception(m, "ClosedError", g->error, doc::kClosedError);

  py::class_<PyClaim>(m, "Claim", doc::kClaim)
      .def_readonly("tuples", &PyClaim::tuples, doc::kClaimTuples)
      .def_property_readonly("stream", [](const PyClaim& c) { return c.c.stream; })
      .def("commit", &claim_commit, "n"_a = py::none(), doc::kClaimCommit)
      .def("abort", &claim_abort, doc::kClaimAbort)
      .def("__enter__", [](py::object c) { return c; })
      .def("__exit__", [](PyClaim& c, py::object type, py::object, py::object) {
        if (type.is_none()) claim_commit(c, std::nullopt);
        else claim_abort(c);
      });

  py::class_<PyPublisher, std::shared_ptr<PyPublisher>>(m, "Publisher", doc::kPublisher)
      .def(py::init(&publisher_open), "run_dir"_a = py::none(), "process"_a = py::none(), py::kw_only(),
           "deployment"_a = py::none(), "address"_a = py::none(), "token"_a = py::none(),
           "set"_a = std::vector<std::string>{}, "instance"_a = 0, "dtype"_a = py::none(), "summary"_a = py::none())
      .def_readonly("dtype", &PyPublisher::dtype, doc::kDtype)
      .def_property_readonly("schema", [](const PyPublisher& s) { return s.p->layout().describe(); }, doc::kSchema)
      .def_property_readonly("max_tuples", [](const PyPublisher& s) { return s.p->max_tuples(); })
      .def_property_readonly("streams", [](const PyPublisher& s) { return s.p->streams(); })
      .def_property_readonly("committed", [](const PyPublisher& s) { return s.p->committed(); })
      .def_property_readonly("sent", [](const PyPublisher& s) { return s.p->sent(); })
      .def_property_readonly("acknowledged", [](const PyPublisher& s) { return s.p->acknowledged(); })
      .def_property_readonly("closed", [](const PyPublisher& s) { return s.closed; })
      .def("send", &publisher_send, "array"_a, "timeout"_a = py::none(), "stream"_a = 0, doc::kSend)
      .def("claim", &publisher_claim, "n"_a, "timeout"_a = py::none(), "stream"_a = 0, doc::kClaimCall)
      .def("flush", &publisher_flush, "timeout"_a = py::none(), doc::kFlush)
      .def("close", &publisher_close, "timeout"_a = 30.0, doc::kPublisherClose)
      .def("__enter__", [](py::object s) { return s; })
      .def("__exit__", [](PyPublisher& s, py::object, py::object, py::object) { publisher_close(s, 30.0); });

  {
    // sluice.Event: a struct sequence (a named tuple of C), made per event
    // without the binding's type lookups.
    static PyStructSequence_Field fields[] = {{"stream", "The stream it belongs to."},
                                              {"count", "Its tuples."},
                                              {"first_seq", "The first tuple's seq."},
                                              {"event_seq", "The event's number in its stream."},
                                              {nullptr, nullptr}};
    static PyStructSequence_Desc desc = {"sluice.Event", doc::kEvent, fields, 4};
    g->event_type = PyStructSequence_NewType(&desc);
    if (!g->event_type) throw py::error_already_set();
    m.add_object("Event", py::handle(reinterpret_cast<PyObject*>(g->event_type)));
  }

  py::class_<PySubscriber, std::shared_ptr<PySubscriber>>(m, "Subscriber", doc::kSubscriber)
      .def(py::init(&subscriber_open), "run_dir"_a = py::none(), "process"_a = py::none(), py::kw_only(),
           "deployment"_a = py::none(), "address"_a = py::none(), "token"_a = py::none(),
           "set"_a = std::vector<std::string>{}, "instance"_a = 0, "dtype"_a = py::none(), "summary"_a = py::none(),
           "manual_acks"_a = false, "resume"_a = std::vector<std::tuple<uint32_t, uint64_t, uint64_t>>{})
      .def_readonly("dtype", &PySubscriber::dtype, doc::kDtype)
      .def_property_readonly("schema", [](const PySubscriber& s) { return s.s->layout().describe(); }, doc::kSchema)
      .def_property_readonly("ended", [](const PySubscriber& s) { return s.ended || s.s->counts().ended; },
                             doc::kEnded)
      .def_property_readonly("closed", [](const PySubscriber& s) { return s.closed; })
      .def("poll", &subscriber_poll, "handler"_a, "limit"_a = 64, "timeout"_a = py::none(), "copy"_a = false,
           doc::kPoll)
      .def("counts", [](const PySubscriber& s) { return counts_of(s.s->counts()); }, doc::kCounts)
      .def("acknowledge", [](PySubscriber& s) {
        if (s.closed) throw_error(g->closed_error, "acknowledge: the subscriber is closed");
        if (s.s->acknowledge() != sluice::Code::kOk) throw_error(g->error, s.s->error());
      }, doc::kAcknowledge)
      .def("close", &subscriber_close, doc::kSubscriberClose)
      .def("__iter__", [](py::object s) { return s; })
      .def("__next__", &subscriber_next, doc::kNext)
      .def("__enter__", [](py::object s) { return s; })
      .def("__exit__", [](PySubscriber& s, py::object, py::object, py::object) { subscriber_close(s); });
}
