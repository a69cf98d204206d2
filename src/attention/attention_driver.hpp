// The attention drivers behind attn::attention and attn::self_attention. Arguments are trusted
// (validated by the callers); scratch comes from the Context arena.
#pragma once

#include <cstddef>

#include "attn/attention.hpp"
#include "core/args.hpp"
#include "dispatch/kernels.hpp"

namespace attn::detail {

struct AttentionCall {
  TensorView<const float> q, k, v;
  TensorView<float> out;
  const AttentionOptions* options;
  AttentionDims dims;
};

std::size_t attention_scratch_bytes(const Kernels& kern, int threads, const AttentionCall& call);

void attention_run(const Kernels& kern, int threads, const AttentionCall& call, void* scratch);

}  // namespace attn::detail
