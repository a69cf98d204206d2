// BLIS's native typed API (bli_sgemm), which no other library exports.
#include <blis.h>

#include "peers.hpp"

namespace attn_bench {
namespace {

class BlisGemm final : public PeerGemm {
 public:
  std::string prepare(const GemmProblem& p, int threads) override {
    p_ = p;
    bli_thread_set_num_threads(threads);
    if (bli_thread_get_num_threads() != threads) return "bli_thread_set_num_threads did not apply";
    return {};
  }
  void run() override {
    float one = 1.0f, zero = 0.0f;
    const auto m = static_cast<dim_t>(p_.m), n = static_cast<dim_t>(p_.n),
               k = static_cast<dim_t>(p_.k);
    // Row-major: row stride = leading dimension, column stride 1.
    bli_sgemm(BLIS_NO_TRANSPOSE, p_.trans_b ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, m, n, k, &one,
              const_cast<float*>(p_.a), k, 1, const_cast<float*>(p_.b), p_.trans_b ? k : n, 1,
              &zero, p_.c, n, 1);
  }
  std::string label() const override { return bli_arch_string(bli_arch_query_id()); }

 private:
  GemmProblem p_;
};

}  // namespace

std::unique_ptr<PeerGemm> make_blis_gemm() {
  return std::make_unique<BlisGemm>();
}

std::string blis_description() {
  return std::string("BLIS ") + bli_info_get_version_str() + " (configuration " +
         bli_arch_string(bli_arch_query_id()) + ")";
}

}  // namespace attn_bench
