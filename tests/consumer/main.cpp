// Links attn::attn and checks one small attention against the reference.
#include <attn/attn.hpp>
#include <cmath>
#include <cstdio>

int main() {
  float q[2 * 3] = {1, 0, 0, 0, 1, 0}, k[2 * 3] = {1, 0, 0, 0, 1, 0}, v[2 * 3] = {1, 2, 3, 4, 5, 6};
  float out[2 * 3], ref[2 * 3];
  attn::Context ctx;
  const auto tq = attn::make_bhsd<const float>(q, 1, 1, 2, 3);
  const auto tk = attn::make_bhsd<const float>(k, 1, 1, 2, 3);
  const auto tv = attn::make_bhsd<const float>(v, 1, 1, 2, 3);
  attn::Status s = attn::attention(ctx, tq, tk, tv, attn::make_bhsd(out, 1, 1, 2, 3));
  if (!s.ok()) return std::fprintf(stderr, "attention: %s\n", s.message()), 1;
  s = attn::reference::attention(tq, tk, tv, attn::make_bhsd(ref, 1, 1, 2, 3));
  if (!s.ok()) return std::fprintf(stderr, "reference: %s\n", s.message()), 1;
  for (int i = 0; i < 6; ++i) {
    if (std::fabs(out[i] - ref[i]) > 1e-5f) return std::fprintf(stderr, "mismatch at %d\n", i), 1;
  }
  std::printf("attn %s consumer OK (ISA %s)\n", ATTN_VERSION_STRING, attn::isa_name(ctx.isa()));
  return 0;
}
