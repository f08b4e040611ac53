// attn-mpi sdpa: attn sdpa with Q, K and V split along the sequence over the ranks (ring
// attention). Rank 0 reads the inputs and sends each rank its rows; rank 0 collects the output
// and writes it (atomically, like attn). No masks but --causal: a mask [L, S] would have to be
// split both ways.
#include <fmt/format.h>

#include <exception>
#include <memory>

#include "attn/error.hpp"
#include "attn/sdpa.hpp"
#include "cli_common.hpp"
#include "file_roles.hpp"
#include "distributed/agree.hpp"
#include "distributed/ring_attention.hpp"
#include "distributed/row_exchange.hpp"
#include "distributed/session.hpp"
#include "mpi_commands.hpp"

namespace attn::cli {

namespace {

struct ring_sdpa_args {
  std::string query, key, value, output, scale = "sqrt";
  bool causal = false;
};

// Each rank holds two chunks of at least one row: fewer rows than 2K leave a rank nothing.
void check_rows(const std::string& path, const char* what, int64_t rows, int K) {
  if (rows < 2 * K)
    throw_input(path,
                fmt::format("{} rank(s) need at least {} {} rows (two chunks each), got {}", K,
                            2 * K, what, rows),
                "dimension 2");
}

void run(const ring_sdpa_args& args) {
  sdpa_options options;
  options.causal = args.causal;
  options.scale = scale_spec::parse(args.scale);
  const int K = dist::ranks();
  tensor q, k, v;
  dist::on_root([&] {
    q = read_float_npy(args.query, "the query");
    k = read_float_npy(args.key, "the key");
    v = read_float_npy(args.value, "the value");
    for (auto [t, path, name] :
         {std::tuple{&q, args.query, "the query"}, std::tuple{&k, args.key, "the key"},
          std::tuple{&v, args.value, "the value"}})
      if (t->rank() != 4)
        throw_input(path, fmt::format("{} must have rank 4 ([B, H, L, D] / [B, Hkv, S, D]), got {}",
                                      name, shape_to_string(t->shape())));
    try {
      check_sdpa_shapes(q, k, v, nullptr);
    } catch (const error& e) {
      throw_input(args.query, e.problem(), e.where());
    }
    if (args.causal && q.dim(2) != k.dim(2))
      throw_input(args.query,
                  fmt::format("--causal across ranks needs as many queries as keys, got L = {}, "
                              "S = {}",
                              q.dim(2), k.dim(2)),
                  "dimension 2");
    check_rows(args.query, "query", q.dim(2), K);
    check_rows(args.key, "key", k.dim(2), K);
  });
  tensor out;
  try {
    const shape_t qs = dist::broadcast_shape(q.shape()), ks = dist::broadcast_shape(k.shape()),
                  vs = dist::broadcast_shape(v.shape());
    const dist::zigzag queries{qs[2], K}, keys{ks[2], K};
    const tensor q_local = dist::scatter_rows(q, qs, queries);
    const tensor k_local = dist::scatter_rows(k, ks, keys);
    const tensor v_local = dist::scatter_rows(v, vs, keys);
    q = k = v = tensor();  // rank 0 keeps only its own rows from here
    out = dist::gather_rows(dist::ring_sdpa(q_local, k_local, v_local, queries, keys, options),
                            queries);
  } catch (const std::exception& e) {
    // Only this rank knows; the others are inside the ring and would wait for it forever.
    dist::abort_all(e.what(), 2);
  }
  dist::on_root([&] { write_output(args.output, encode_npy(out)); });
}

}  // namespace

void add_ring_sdpa_command(CLI::App& app) {
  auto args = std::make_shared<ring_sdpa_args>();
  CLI::App* sub = app.add_subcommand(
      "sdpa",
      "Scaled dot-product attention split along the sequence over the ranks (ring attention)");
  reads(sub->add_option("--query", args->query, "Query .npy, float32 [B, H, L, D]"))->required();
  reads(sub->add_option("--key", args->key, "Key .npy [B, Hkv, S, D] (Hkv divides H)"))->required();
  reads(sub->add_option("--value", args->value, "Value .npy [B, Hkv, S, Dv]"))->required();
  sub->add_flag("--causal", args->causal,
                "Causal mask, top-left aligned (PyTorch's is_causal); needs L = S");
  sub->add_option("--scale", args->scale, "Score scale: a number, sqrt (1/√D, default) or none");
  writes(sub->add_option("-o,--output", args->output, "Output .npy [B, H, L, Dv]"))->required();
  sub->callback([args, sub] {
    check_file_roles(*sub);
    run(*args);
  });
}

}  // namespace attn::cli
