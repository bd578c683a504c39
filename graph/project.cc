// project: keeps the named fields (seq always first), in the order given, as
// a new schema; rewrites each event in place (its tuples only shrink), so it
// needs no slot of its own and the sink still checks every sequence number.
#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "graph/operator.h"

namespace sluice {
namespace {

struct Piece {
  uint32_t from, to, width;
};

class Project final : public Operator {
 public:
  Project(std::vector<Piece> pieces, uint32_t out_bytes) : pieces_(std::move(pieces)), out_bytes_(out_bytes) {}
  const char* name() const override { return "project"; }
  size_t state_bytes() const override { return pieces_.capacity() * sizeof(Piece); }

  Result process(std::byte* run, Descriptor& d, Emitter&) override {
    size_t in = 0, out = 0;
    for (uint32_t e = 0; e < d.events; ++e) {
      EventHeader h;
      std::memcpy(&h, run + in, sizeof h);
      const size_t ev_bytes = h.wire_bytes();
      std::byte* src = run + in + kEventHeaderBytes;
      std::byte* dst = run + out + kEventHeaderBytes;
      // Tuple by tuple, front to back: a tuple's new place never lies after
      // its old one, and the pieces of one tuple are copied through a buffer.
      std::byte tmp[256];
      for (uint32_t t = 0; t < h.tuple_count; ++t) {
        const std::byte* s = src + size_t{t} * h.tuple_bytes;
        std::byte* o = dst + size_t{t} * out_bytes_;
        uint32_t at = 0;
        for (const Piece& p : pieces_) {
          std::memcpy(tmp + at, s + p.from, p.width);
          at += p.width;
        }
        std::memmove(o, tmp, out_bytes_);
      }
      if (h.data_bytes)
        std::memmove(dst + size_t{h.tuple_count} * out_bytes_, src + h.tuple_block_bytes(), h.data_bytes);
      h.tuple_bytes = out_bytes_;
      std::memcpy(run + out, &h, sizeof h);
      seal_event(run + out);
      in += ev_bytes;
      out += h.wire_bytes();
    }
    d.bytes = static_cast<uint32_t>(out);
    return kKeep;
  }

 private:
  std::vector<Piece> pieces_;
  uint32_t out_bytes_;
};

Status project_output(const OperatorConfig& cfg, const Schema& in, Schema* out) {
  std::vector<FieldSpec> fields;
  for (const auto& n : cfg.list("fields")) {
    if (n == "seq") continue;
    bool found = false;
    for (const auto& f : in.fields())
      if (f.name == n) {
        fields.push_back(f);
        found = true;
      }
    if (!found)
      return Status::Error(fmt::format("fields: no field '{}' in schema {}", n, in.describe()));
  }
  Status st = Schema::make(cfg.get("name"), fields, 0, out);
  if (st && out->tuple_bytes() > 256)
    return Status::Error(fmt::format("project: its tuples are {} bytes, at most 256", out->tuple_bytes()));
  if (st && out->tuple_bytes() > in.tuple_bytes())
    return Status::Error("project: its tuples would grow");
  return st;
}

std::unique_ptr<Operator> make_project(const OperatorConfig& cfg, const Schema& in, Status* st) {
  Schema out;
  if (*st = project_output(cfg, in, &out); !*st) return nullptr;
  std::vector<Piece> pieces;
  for (const auto& f : out.fields()) {
    FieldRef from, to;
    in.find(f.name, &from);
    out.find(f.name, &to);
    pieces.push_back({from.offset, to.offset, from.width});
  }
  return std::make_unique<Project>(std::move(pieces), out.tuple_bytes());
}

}  // namespace

const OperatorSpec& project_spec() {
  static const OperatorSpec s{
      "project",
      "keeps the named fields (seq always) as a new schema `name`, in place",
      {
          {"fields", ParamType::kFieldList, nullptr, "the fields kept, in order", nullptr},
          {"name", ParamType::kString, "projected", "the new schema's name", nullptr},
      },
      false, 0, 0, project_output, make_project};
  return s;
}

}  // namespace sluice
