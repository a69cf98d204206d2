// oneDNN: the matmul primitive (created once, outside the timing loop; with its weights reordered
// once into its own layout for the pre-packed comparison) and dnnl_sgemm.
// Debian's oneDNN 2.6 uses the OpenMP runtime: it runs omp_get_max_threads() threads, so the
// thread count is set with omp_set_num_threads before the primitive is created (and restored).
#include <omp.h>

#include <dnnl.hpp>
#include <unordered_map>

#include "peers.hpp"

namespace attn_bench {
namespace {

class OmpThreads {
 public:
  void set(int n) {
    if (!saved_) saved_ = omp_get_max_threads();
    omp_set_num_threads(n);
  }
  ~OmpThreads() {
    if (saved_) omp_set_num_threads(saved_);
  }

 private:
  int saved_ = 0;
};

// The matmul primitive; with packed_weights, its weights in the layout it picks (format_tag::any),
// reordered once in prepare: oneDNN's form of a pre-packed weight (as PyTorch's prepacked linear).
class OnednnMatmul final : public PeerGemm {
 public:
  explicit OnednnMatmul(bool packed_weights) : packed_weights_(packed_weights) {}
  std::string prepare(const GemmProblem& p, int threads) override {
    threads_.set(threads);
    try {
      using dt = dnnl::memory::data_type;
      using dims = dnnl::memory::dims;
      const auto m = static_cast<dnnl::memory::dim>(p.m), n = static_cast<dnnl::memory::dim>(p.n),
                 k = static_cast<dnnl::memory::dim>(p.k);
      const dnnl::memory::desc a_md(dims{m, k}, dt::f32, dims{k, 1});
      const dnnl::memory::desc b_md(dims{k, n}, dt::f32, p.trans_b ? dims{1, k} : dims{n, 1});
      const dnnl::memory::desc c_md(dims{m, n}, dt::f32, dims{n, 1});
      const dnnl::memory::desc w_md =
          packed_weights_ ? dnnl::memory::desc(dims{k, n}, dt::f32, dnnl::memory::format_tag::any)
                          : b_md;
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, w_md, c_md), engine_);
      label_ = pd.impl_info_str();
      primitive_ = dnnl::matmul(pd);
      dnnl::memory b_mem(b_md, engine_, const_cast<float*>(p.b));
      if (pd.weights_desc() != b_md) {
        weights_ = dnnl::memory(pd.weights_desc(), engine_);
        dnnl::reorder(b_mem, weights_).execute(stream_, b_mem, weights_);
        stream_.wait();
        label_ += " (weights reordered once)";
      } else {
        weights_ = b_mem;
      }
      args_ = {{DNNL_ARG_SRC, dnnl::memory(a_md, engine_, const_cast<float*>(p.a))},
               {DNNL_ARG_WEIGHTS, weights_},
               {DNNL_ARG_DST, dnnl::memory(c_md, engine_, p.c)}};
    } catch (const dnnl::error& e) {
      return std::string("oneDNN: ") + e.what();
    }
    return {};
  }
  void run() override {
    primitive_.execute(stream_, args_);
    stream_.wait();
  }
  std::string label() const override { return label_; }

 private:
  OmpThreads threads_;
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  dnnl::matmul primitive_;
  bool packed_weights_;
  dnnl::memory weights_;
  std::unordered_map<int, dnnl::memory> args_;
  std::string label_;
};

class OnednnSgemm final : public PeerGemm {
 public:
  std::string prepare(const GemmProblem& p, int threads) override {
    threads_.set(threads);
    p_ = p;
    return {};
  }
  void run() override {
    const auto m = static_cast<dnnl_dim_t>(p_.m), n = static_cast<dnnl_dim_t>(p_.n),
               k = static_cast<dnnl_dim_t>(p_.k);
    dnnl_sgemm('N', p_.trans_b ? 'T' : 'N', m, n, k, 1.0f, p_.a, k, p_.b, p_.trans_b ? k : n, 0.0f,
               p_.c, n);
  }

 private:
  OmpThreads threads_;
  GemmProblem p_;
};

const char* runtime_name(unsigned runtime) {
  switch (runtime) {
    case DNNL_RUNTIME_SEQ:
      return "sequential";
    case DNNL_RUNTIME_OMP:
      return "OpenMP";
    case DNNL_RUNTIME_TBB:
      return "TBB";
    default:
      return "other";
  }
}

const char* isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_sse41:
      return "sse41";
    case dnnl_cpu_isa_avx:
      return "avx";
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
  }
}

}  // namespace

std::unique_ptr<PeerGemm> make_onednn_matmul() {
  return std::make_unique<OnednnMatmul>(false);
}
std::unique_ptr<PeerGemm> make_onednn_matmul_packed() {
  return std::make_unique<OnednnMatmul>(true);
}
std::unique_ptr<PeerGemm> make_onednn_sgemm() {
  return std::make_unique<OnednnSgemm>();
}

std::string onednn_description() {
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + " (" + runtime_name(v->cpu_runtime) + " runtime, ISA " +
         isa_name(dnnl_get_effective_cpu_isa()) + ")";
}

}  // namespace attn_bench
