// OpenBLAS's cblas_sgemm.
#include <cblas.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "peers.hpp"

namespace attn_bench {
namespace {

class OpenblasGemm final : public PeerGemm {
 public:
  std::string prepare(const GemmProblem& p, int threads) override {
    p_ = p;
    // BLIS exports cblas_sgemm too: make sure the symbol the call binds to is OpenBLAS's.
    Dl_info info{};
    void* sym = dlsym(RTLD_DEFAULT, "cblas_sgemm");
    if (sym && dladdr(sym, &info) && info.dli_fname && !std::strstr(info.dli_fname, "openblas"))
      return std::string("cblas_sgemm resolves to ") + info.dli_fname + ", not OpenBLAS";
    openblas_set_num_threads(threads);
    if (openblas_get_num_threads() != threads) return "openblas_set_num_threads did not apply";
    return {};
  }
  void run() override {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, p_.trans_b ? CblasTrans : CblasNoTrans,
                static_cast<blasint>(p_.m), static_cast<blasint>(p_.n), static_cast<blasint>(p_.k),
                1.0f, p_.a, static_cast<blasint>(p_.k), p_.b,
                static_cast<blasint>(p_.trans_b ? p_.k : p_.n), 0.0f, p_.c,
                static_cast<blasint>(p_.n));
  }
  std::string label() const override { return openblas_get_corename(); }

 private:
  GemmProblem p_;
};

}  // namespace

std::unique_ptr<PeerGemm> make_openblas_gemm() {
  return std::make_unique<OpenblasGemm>();
}

const char* openblas_core() {
  return openblas_get_corename();
}

std::string openblas_description() {
  std::string d = std::string("OpenBLAS (") + openblas_get_config() + ", kernels for " +
                  openblas_get_corename();
  if (const char* forced = std::getenv("OPENBLAS_CORETYPE"))
    d += std::string(", forced by OPENBLAS_CORETYPE=") + forced;
  return d + ")";
}

}  // namespace attn_bench
