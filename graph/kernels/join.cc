#include "graph/kernels/join.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

namespace sluice::kernels {

namespace {

inline uint64_t fastrange(uint64_t h32, uint64_t n) { return (h32 * n) >> 32; }

bool parse_cell(std::string_view cell, const FieldSpec& f, std::byte* dst) {
  if (f.type == FieldType::kBytes) {
    if (cell.size() > f.width) return false;
    std::memset(dst, 0, f.width);
    std::memcpy(dst, cell.data(), cell.size());
    return true;
  }
  uint64_t bits;
  if (!parse_field_value(cell, f.type, &bits)) return false;
  std::memcpy(dst, &bits, f.width);  // the low bytes: the field's own width
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

void split(std::string_view line, std::vector<std::string_view>* cells) {
  cells->clear();
  size_t b = 0;
  for (;;) {
    size_t e = line.find(',', b);
    cells->push_back(trim(line.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b)));
    if (e == std::string_view::npos) break;
    b = e + 1;
  }
}

uint64_t key_bits(FieldType t, const std::byte* p) {
  switch (t) {
    case FieldType::kI32: { int32_t v; std::memcpy(&v, p, 4); return static_cast<uint64_t>(static_cast<int64_t>(v)); }
    case FieldType::kU32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    default: { uint64_t v; std::memcpy(&v, p, 8); return v; }
  }
}

bool integer_type(FieldType t) {
  return t == FieldType::kI32 || t == FieldType::kI64 || t == FieldType::kU32 ||
         t == FieldType::kU64 || t == FieldType::kTimestamp;
}

// A sentinel for empty slots: a key the table does not hold.
uint64_t pick_empty(const JoinTable& t) {
  uint64_t e = UINT64_MAX;
  for (;;) {
    bool used = false;
    for (size_t r = 0; r < t.rows() && !used; ++r) used = t.key(r) == e;
    if (!used) return e;
    --e;
  }
}

// What both joins share: the stream side (key, copied fields) and the output.
struct Common {
  FieldRef key;
  struct Copy {
    uint32_t src, dst, width;
  };
  std::vector<Copy> copies;  // stream tuple -> output row
  uint32_t payload_off = 0;  // where the table's payload goes in the row
  uint32_t pw = 0;           // payload bytes
  uint32_t slot_bytes = 0;   // 8 + pw
  uint64_t empty = UINT64_MAX;
  Schema out;
  uint64_t matched = 0, unmatched = 0;

  Status make(const Schema& stream, const JoinSpec& spec, const JoinTable& table, const char* who) {
    if (!stream.find(spec.stream_key, &key)) {
      return Status::Error(fmt::format("{}: stream key '{}': schema '{}' has no such field", who,
                                       spec.stream_key, stream.name()));
    }
    if (!integer_type(key.type)) {
      return Status::Error(fmt::format("{}: stream key '{}' is {}; join on an integer field", who,
                                       spec.stream_key, field_type_name(key.type)));
    }
    std::vector<FieldSpec> fields;
    copies.push_back({0, 0, 8});
    uint32_t at = 8;
    for (const auto& name : spec.stream_fields) {
      FieldRef r;
      if (!stream.find(name, &r) || name == "seq") {
        return Status::Error(fmt::format("{}: stream field '{}': schema '{}' has no such field "
                                         "(seq is always copied)", who, name, stream.name()));
      }
      fields.push_back({name, r.type, r.width});
      Copy& last = copies.back();
      if (last.src + last.width == r.offset && last.dst + last.width == at) {
        last.width += r.width;  // adjacent in both: one copy
      } else {
        copies.push_back({r.offset, at, r.width});
      }
      at += r.width;
    }
    payload_off = at;
    for (const auto& f : table.payload_fields()) fields.push_back(f);
    pw = table.payload_bytes();
    slot_bytes = 8 + pw;
    const uint32_t bytes = at + pw < 12 ? 12 : at + pw;  // at least seq and 4 bytes
    Status st = Schema::make("join", std::move(fields), bytes, &out);
    if (!st.ok()) return Status::Error(fmt::format("{}: output: {}", who, st.message()));
    empty = pick_empty(table);
    return {};
  }

  uint64_t stream_key(const std::byte* t) const { return key_bits(key.type, t + key.offset); }

  void copy_stream(const std::byte* t, std::byte* row) const {
    for (const Copy& c : copies) {
      const std::byte* src = t + c.src;
      std::byte* dst = row + c.dst;
      const uint32_t w = c.width;
      // Fixed-size moves, overlapping at the end, instead of a memcpy call.
      if (w >= 8 && w <= 16) {
        std::memcpy(dst, src, 8);
        std::memcpy(dst + w - 8, src + w - 8, 8);
      } else if (w > 16 && w <= 32) {
        std::memcpy(dst, src, 16);
        std::memcpy(dst + w - 16, src + w - 16, 16);
      } else {
        std::memcpy(dst, src, w);
      }
    }
  }
  void copy_payload(const std::byte* slot, std::byte* row) const {
    switch (pw) {
      case 4: std::memcpy(row + payload_off, slot + 8, 4); break;
      case 8: std::memcpy(row + payload_off, slot + 8, 8); break;
      default: std::memcpy(row + payload_off, slot + 8, pw);
    }
  }
};

// One open-addressing region: cap slots of slot_bytes at base.
// Returns the slot holding k, or nullptr.
inline const std::byte* probe(const std::byte* base, uint64_t cap, uint32_t slot_bytes,
                              uint64_t empty, uint64_t k, uint64_t h32) {
  uint64_t s = fastrange(h32, cap);
  for (;;) {
    const std::byte* p = base + s * slot_bytes;
    uint64_t sk;
    std::memcpy(&sk, p, 8);
    if (sk == k) return k == empty ? nullptr : p;
    if (sk == empty) return nullptr;
    if (++s == cap) s = 0;
  }
}

// Inserts; false if k is already there.
bool insert(std::byte* base, uint64_t cap, uint32_t slot_bytes, uint64_t empty, uint64_t k,
            uint64_t h32, const std::byte* payload, uint32_t pw) {
  uint64_t s = fastrange(h32, cap);
  for (;;) {
    std::byte* p = base + s * slot_bytes;
    uint64_t sk;
    std::memcpy(&sk, p, 8);
    if (sk == k) return false;
    if (sk == empty) {
      std::memcpy(p, &k, 8);
      std::memcpy(p + 8, payload, pw);
      return true;
    }
    if (++s == cap) s = 0;
  }
}

// Load 0.6: (8 + payload) / 0.6 bytes a row (20 for a 4-byte payload), and
// about 1.75 slots read per successful probe with linear probing.
uint64_t capacity_for(uint64_t rows) { return rows + rows * 2 / 3 + 1; }

void fill_empty(std::byte* base, uint64_t slots, uint32_t slot_bytes, uint64_t empty) {
  for (uint64_t s = 0; s < slots; ++s) std::memcpy(base + s * slot_bytes, &empty, 8);
}

constexpr size_t kBlockRows = 256;

}  // namespace

// ---- JoinTable ----

Status JoinTable::make(std::vector<FieldSpec> columns, std::string key,
                       std::vector<std::string> payload, JoinTable* out) {
  JoinTable t;
  bool found_key = false;
  for (size_t i = 0; i < columns.size(); ++i) {
    auto& c = columns[i];
    if (c.type != FieldType::kBytes) c.width = field_type_width(c.type);
    if (c.type == FieldType::kBytes && c.width == 0) {
      return Status::Error(fmt::format("table: column '{}' is bytes with no width", c.name));
    }
    if (c.name == key) {
      if (!integer_type(c.type)) {
        return Status::Error(fmt::format("table: key column '{}' is {}; it must be an integer",
                                         key, field_type_name(c.type)));
      }
      t.key_col_ = i;
      t.key_type_ = c.type;
      found_key = true;
    }
  }
  if (!found_key) return Status::Error(fmt::format("table: no key column '{}'", key));
  for (const auto& p : payload) {
    size_t i = 0;
    while (i < columns.size() && columns[i].name != p) ++i;
    if (i == columns.size()) return Status::Error(fmt::format("table: no payload column '{}'", p));
    t.payload_cols_.push_back(i);
    t.payload_fields_.push_back(columns[i]);
    t.payload_bytes_ += columns[i].width;
  }
  t.columns_ = std::move(columns);
  *out = std::move(t);
  return {};
}

std::string JoinTable::where(size_t row) const {
  if (from_csv_) return fmt::format("{}:{}", source_, row + 2);
  return fmt::format("{} row {}", source_, row);
}

void JoinTable::add_row(uint64_t key, const std::byte* payload) {
  keys_.push_back(key);
  payload_.insert(payload_.end(), payload, payload + payload_bytes_);
}

Status JoinTable::load_csv(const std::string& path, size_t max_rows) {
  std::ifstream in(path);
  if (!in) return Status::Error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  source_ = path;
  from_csv_ = true;
  keys_.clear();
  payload_.clear();
  std::string line;
  if (!std::getline(in, line)) return Status::Error(fmt::format("{}:1: empty file, expected a header", path));
  std::vector<std::string_view> cells;
  split(line, &cells);
  std::vector<size_t> col_of(columns_.size());  // declared column -> CSV position
  for (size_t c = 0; c < columns_.size(); ++c) {
    size_t i = 0;
    while (i < cells.size() && cells[i] != columns_[c].name) ++i;
    if (i == cells.size()) {
      return Status::Error(fmt::format("{}:1: the header has no column '{}' (it has: {})", path,
                                       columns_[c].name, line));
    }
    col_of[c] = i;
  }
  const size_t ncells = cells.size();
  std::vector<std::byte> row(payload_bytes_ + 8);
  size_t lineno = 1;
  bool blank_seen = false;
  while (std::getline(in, line)) {
    ++lineno;
    if (trim(line).empty()) {
      blank_seen = true;
      continue;
    }
    if (blank_seen) {
      return Status::Error(fmt::format("{}:{}: a row after a blank line (blank lines only at the end)",
                                       path, lineno - 1));
    }
    if (max_rows && keys_.size() == max_rows) {
      return Status::Error(fmt::format("{}:{}: more than max_rows={} rows", path, lineno, max_rows));
    }
    split(line, &cells);
    if (cells.size() != ncells) {
      return Status::Error(fmt::format("{}:{}: {} fields, the header has {}", path, lineno,
                                       cells.size(), ncells));
    }
    std::byte kbuf[8];
    const FieldSpec& kc = columns_[key_col_];
    if (!parse_cell(cells[col_of[key_col_]], kc, kbuf)) {
      return Status::Error(fmt::format("{}:{}: column '{}': '{}' is not a {}", path, lineno, kc.name,
                                       cells[col_of[key_col_]], field_type_name(kc.type)));
    }
    uint32_t at = 0;
    for (size_t p = 0; p < payload_cols_.size(); ++p) {
      const FieldSpec& f = columns_[payload_cols_[p]];
      std::string_view cell = cells[col_of[payload_cols_[p]]];
      if (!parse_cell(cell, f, row.data() + at)) {
        return Status::Error(fmt::format(
            "{}:{}: column '{}': '{}' is not a {}{}", path, lineno, f.name, cell,
            field_type_name(f.type),
            f.type == FieldType::kBytes ? fmt::format(" of at most {} bytes", f.width) : ""));
      }
      at += f.width;
    }
    add_row(key_bits(key_type_, kbuf), row.data());
  }
  return {};
}

void JoinTable::generate(size_t rows, uint64_t seed) {
  source_ = "generated table";
  from_csv_ = false;
  keys_.resize(rows);
  for (size_t i = 0; i < rows; ++i) keys_[i] = i + 1;
  std::mt19937_64 rng(seed);
  for (size_t i = rows; i > 1; --i) std::swap(keys_[i - 1], keys_[rng() % i]);
  payload_.resize(rows * payload_bytes_);
  for (size_t i = 0; i < payload_.size(); ++i) payload_[i] = static_cast<std::byte>(rng());
}

// ---- HashJoin ----

struct HashJoin::Impl {
  Common c;
  uint64_t cap = 0;
  BigBuffer slots;
  std::unique_ptr<std::byte[]> rows;  // kBlockRows output rows
};

HashJoin::HashJoin() = default;
HashJoin::~HashJoin() = default;
HashJoin::HashJoin(HashJoin&&) noexcept = default;
HashJoin& HashJoin::operator=(HashJoin&&) noexcept = default;

Status HashJoin::make(const Schema& stream, const JoinSpec& spec, const JoinTable& table,
                      HashJoin* out) {
  auto s = std::make_unique<Impl>();
  Status st = s->c.make(stream, spec, table, "hash join");
  if (!st.ok()) return st;
  if (table.rows() >= (uint64_t{1} << 31)) return Status::Error("hash join: more than 2^31 table rows");
  s->cap = capacity_for(table.rows());
  const uint32_t sb = s->c.slot_bytes;
  s->slots = BigBuffer(s->cap * sb);
  fill_empty(s->slots.get(), s->cap, sb, s->c.empty);
  for (size_t r = 0; r < table.rows(); ++r) {
    const uint64_t k = table.key(r);
    if (!insert(s->slots.get(), s->cap, sb, s->c.empty, k, hash_key(k) & 0xffffffffu,
                table.payload(r), s->c.pw)) {
      return Status::Error(fmt::format("hash join: {}: key {} appears twice in the table", table.where(r), k));
    }
  }
  s->rows.reset(new std::byte[kBlockRows * s->c.out.tuple_bytes()]());
  out->impl_ = std::move(s);
  return {};
}

const Schema& HashJoin::output_schema() const { return impl_->c.out; }
uint32_t HashJoin::row_bytes() const { return impl_->c.out.tuple_bytes(); }
size_t HashJoin::index_bytes() const { return impl_->cap * impl_->c.slot_bytes; }
size_t HashJoin::bytes_held() const { return sizeof(Impl) + index_bytes() + kBlockRows * row_bytes(); }
uint64_t HashJoin::matched() const { return impl_->c.matched; }
uint64_t HashJoin::unmatched() const { return impl_->c.unmatched; }

void HashJoin::consume(const std::byte* tuples, size_t n, uint32_t stride, RowEmit emit) {
  Impl& s = *impl_;
  const Common& c = s.c;
  const uint32_t rb = c.out.tuple_bytes();
  const std::byte* base = s.slots.get();
  size_t staged = 0;
  uint64_t hits = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::byte* t = tuples + i * stride;
    const uint64_t k = c.stream_key(t);
    const std::byte* hit = probe(base, s.cap, c.slot_bytes, c.empty, k, hash_key(k) & 0xffffffffu);
    if (!hit) continue;
    std::byte* row = s.rows.get() + staged * rb;
    c.copy_stream(t, row);
    c.copy_payload(hit, row);
    ++hits;
    if (++staged == kBlockRows) {
      emit(s.rows.get(), staged);
      staged = 0;
    }
  }
  if (staged) emit(s.rows.get(), staged);
  s.c.matched += hits;
  s.c.unmatched += n - hits;
}

void HashJoin::save(SnapshotOut& out) const {
  out.put<uint64_t>(impl_->c.matched);
  out.put<uint64_t>(impl_->c.unmatched);
}

Status HashJoin::load(SnapshotIn& in) {
  const uint64_t matched = in.get<uint64_t>(), unmatched = in.get<uint64_t>();
  if (!in.ok()) return Status::Error(in.what());
  impl_->c.matched = matched;
  impl_->c.unmatched = unmatched;
  return {};
}

// ---- GraceHashJoin ----

struct GraceHashJoin::Impl {
  Common c;
  uint32_t parts = 1;
  std::vector<uint64_t> part_start;  // first slot of each partition; parts + 1 entries
  BigBuffer slots;
  uint64_t total_slots = 0;
  // the batch
  uint32_t batch = 0;
  uint32_t fill = 0;
  std::unique_ptr<std::byte[]> rows;      // batch * row_bytes: stream part built on arrival
  std::unique_ptr<uint64_t[]> hashes;     // batch: hash of each tuple's key
  std::unique_ptr<uint64_t[]> keys;       // batch
  struct Item {
    uint64_t key;
    uint32_t slot;  // the first slot to probe, an index into all slots
    uint32_t idx;   // the tuple's place in the batch
  };
  uint32_t prefetch = 0;
  std::unique_ptr<Item[]> sorted;         // batch, grouped by partition
  std::unique_ptr<uint32_t[]> hist;       // parts + 1
  std::unique_ptr<uint8_t[]> hit;  // batch: 1 if the tuple matched

  uint32_t part_of(uint64_t h) const { return static_cast<uint32_t>(((h >> 32) * parts) >> 32); }

  void run_batch(RowEmit emit) {
    if (fill == 0) return;
    const uint32_t rb = c.out.tuple_bytes();
    // 1. partition the batch (counting sort by partition)
    std::memset(hist.get(), 0, (parts + 1) * sizeof(uint32_t));
    for (uint32_t i = 0; i < fill; ++i) ++hist[part_of(hashes[i]) + 1];
    for (uint32_t p = 0; p < parts; ++p) hist[p + 1] += hist[p];
    for (uint32_t i = 0; i < fill; ++i) {
      const uint64_t h = hashes[i];
      const uint32_t p = part_of(h);
      const uint64_t cap = part_start[p + 1] - part_start[p];
      sorted[hist[p]++] = {keys[i], static_cast<uint32_t>(part_start[p] + fastrange(h & 0xffffffffu, cap)), i};
    }
    // hist[p] is now the end of partition p (the start of p + 1)
    // 2. probe partition pairs; the slots of the items `prefetch` ahead are
    //    asked for now, so the misses overlap instead of queueing.
    const std::byte* base = slots.get();
    const uint32_t sb = c.slot_bytes;
    const uint64_t empty = c.empty;
    uint32_t b = 0;
    for (uint32_t p = 0; p < parts; ++p) {
      const uint32_t e = hist[p];
      const uint64_t lo = part_start[p], hi = part_start[p + 1];
      for (; b < e; ++b) {
        if (prefetch && b + prefetch < fill) __builtin_prefetch(base + uint64_t{sorted[b + prefetch].slot} * sb);
        const Item& it = sorted[b];
        uint8_t found = 0;
        for (uint64_t s = it.slot;;) {
          const std::byte* q = base + s * sb;
          uint64_t sk;
          std::memcpy(&sk, q, 8);
          if (sk == it.key) {
            // Copy the payload now, while its line is in cache.
            found = it.key != empty;
            if (found) c.copy_payload(q, rows.get() + size_t{it.idx} * rb);
            break;
          }
          if (sk == empty) break;
          if (++s == hi) s = lo;
        }
        hit[it.idx] = found;
      }
    }
    // 3. complete the matched rows in stream order, compacting, and emit
    uint32_t kept = 0;
    std::byte* r = rows.get();
    for (uint32_t i = 0; i < fill; ++i) {
      if (!hit[i]) continue;
      if (kept != i) std::memcpy(r + size_t{kept} * rb, r + size_t{i} * rb, rb);
      ++kept;
    }
    c.matched += kept;
    c.unmatched += fill - kept;
    if (kept) emit(r, kept);
    fill = 0;
  }
};

GraceHashJoin::GraceHashJoin() = default;
GraceHashJoin::~GraceHashJoin() = default;
GraceHashJoin::GraceHashJoin(GraceHashJoin&&) noexcept = default;
GraceHashJoin& GraceHashJoin::operator=(GraceHashJoin&&) noexcept = default;

Status GraceHashJoin::make(const Schema& stream, const JoinSpec& spec, const JoinTable& table,
                           const GraceOptions& opt, GraceHashJoin* out) {
  auto s = std::make_unique<Impl>();
  Status st = s->c.make(stream, spec, table, "grace hash join");
  if (!st.ok()) return st;
  if (opt.batch_tuples == 0 || opt.batch_tuples > (1u << 26)) {
    return Status::Error(fmt::format("grace hash join: batch_tuples {} not in 1..2^26", opt.batch_tuples));
  }
  if (opt.partition_bytes < 1024) {
    return Status::Error(fmt::format("grace hash join: partition_bytes {} under 1024", opt.partition_bytes));
  }
  const uint32_t sb = s->c.slot_bytes;
  const uint64_t n = table.rows();
  const uint64_t want = capacity_for(n) * sb / opt.partition_bytes + 1;
  s->parts = static_cast<uint32_t>(want > 65536 ? 65536 : want);
  // Count rows per partition, lay partitions out one after the other.
  std::vector<uint64_t> count(s->parts, 0);
  for (size_t r = 0; r < n; ++r) ++count[s->part_of(hash_key(table.key(r)))];
  s->part_start.assign(s->parts + 1, 0);
  for (uint32_t p = 0; p < s->parts; ++p) s->part_start[p + 1] = s->part_start[p] + capacity_for(count[p]);
  s->total_slots = s->part_start[s->parts];
  s->slots = BigBuffer(s->total_slots * sb);
  fill_empty(s->slots.get(), s->total_slots, sb, s->c.empty);
  for (size_t r = 0; r < n; ++r) {
    const uint64_t k = table.key(r);
    const uint64_t h = hash_key(k);
    const uint32_t p = s->part_of(h);
    if (!insert(s->slots.get() + s->part_start[p] * sb, s->part_start[p + 1] - s->part_start[p], sb,
                s->c.empty, k, h & 0xffffffffu, table.payload(r), s->c.pw)) {
      return Status::Error(
          fmt::format("grace hash join: {}: key {} appears twice in the table", table.where(r), k));
    }
  }
  if (s->total_slots >= (uint64_t{1} << 32)) return Status::Error("grace hash join: more than 2^32 slots");
  s->batch = opt.batch_tuples;
  s->prefetch = opt.prefetch;
  const uint32_t rb = s->c.out.tuple_bytes();
  s->rows.reset(new std::byte[size_t{s->batch} * rb]());
  s->hashes.reset(new uint64_t[s->batch]);
  s->keys.reset(new uint64_t[s->batch]);
  s->sorted.reset(new Impl::Item[s->batch]);
  s->hist.reset(new uint32_t[s->parts + 1]);
  s->hit.reset(new uint8_t[s->batch]);
  out->impl_ = std::move(s);
  return {};
}

const Schema& GraceHashJoin::output_schema() const { return impl_->c.out; }
uint32_t GraceHashJoin::row_bytes() const { return impl_->c.out.tuple_bytes(); }
uint32_t GraceHashJoin::partitions() const { return impl_->parts; }
size_t GraceHashJoin::index_bytes() const {
  return impl_->total_slots * impl_->c.slot_bytes + impl_->part_start.size() * 8;
}
size_t GraceHashJoin::bytes_held() const {
  const Impl& s = *impl_;
  return sizeof(Impl) + index_bytes() +
         size_t{s.batch} * (row_bytes() + 8 + 8 + sizeof(Impl::Item) + 1) +
         (s.parts + 1) * 4;
}
uint64_t GraceHashJoin::matched() const { return impl_->c.matched; }
uint64_t GraceHashJoin::unmatched() const { return impl_->c.unmatched; }

void GraceHashJoin::consume(const std::byte* tuples, size_t n, uint32_t stride, RowEmit emit) {
  Impl& s = *impl_;
  const uint32_t rb = s.c.out.tuple_bytes();
  size_t i = 0;
  while (i < n) {
    size_t m = n - i;
    if (m > s.batch - s.fill) m = s.batch - s.fill;
    std::byte* r = s.rows.get() + size_t{s.fill} * rb;
    for (size_t j = 0; j < m; ++j) {
      const std::byte* t = tuples + (i + j) * stride;
      const uint64_t k = s.c.stream_key(t);
      s.keys[s.fill + j] = k;
      s.hashes[s.fill + j] = hash_key(k);
      s.c.copy_stream(t, r + j * rb);
    }
    s.fill += static_cast<uint32_t>(m);
    i += m;
    if (s.fill == s.batch) s.run_batch(emit);
  }
}

void GraceHashJoin::flush(RowEmit emit) { impl_->run_batch(emit); }

void GraceHashJoin::save(SnapshotOut& out) const {
  const Impl& s = *impl_;
  const uint32_t rb = s.c.out.tuple_bytes();
  out.put<uint32_t>(s.batch);
  out.put<uint32_t>(rb);
  out.put<uint32_t>(s.fill);
  out.bytes(s.rows.get(), size_t{s.fill} * rb);
  out.bytes(s.keys.get(), size_t{s.fill} * 8);
  out.put<uint64_t>(s.c.matched);
  out.put<uint64_t>(s.c.unmatched);
}

Status GraceHashJoin::load(SnapshotIn& in) {
  Impl& s = *impl_;
  const uint32_t rb = s.c.out.tuple_bytes();
  const uint32_t batch = in.get<uint32_t>(), row_bytes = in.get<uint32_t>(), fill = in.get<uint32_t>();
  if (in.ok() && (batch != s.batch || row_bytes != rb))
    in.fail(fmt::format("holds a grace join of {}-tuple batches and {}-byte rows; this one has {} and {}", batch,
                        row_bytes, s.batch, rb));
  if (in.ok() && fill >= s.batch) in.fail(fmt::format("holds {} buffered tuples; a batch runs at {}", fill, s.batch));
  if (!in.ok()) return Status::Error(in.what());
  in.bytes(s.rows.get(), size_t{fill} * rb);
  in.bytes(s.keys.get(), size_t{fill} * 8);
  const uint64_t matched = in.get<uint64_t>(), unmatched = in.get<uint64_t>();
  if (!in.ok()) {
    s.fill = 0;
    return Status::Error(in.what());
  }
  for (uint32_t i = 0; i < fill; ++i) s.hashes[i] = hash_key(s.keys[i]);
  s.fill = fill;
  s.c.matched = matched;
  s.c.unmatched = unmatched;
  return {};
}

}  // namespace sluice::kernels
