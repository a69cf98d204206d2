// The kernel tables of the ISAs under test, for the tests that call table entries directly.
#pragma once

#include <catch2/catch.hpp>

#include "dispatch/kernels.hpp"
#include "support/test_support.hpp"

namespace attn_test {

// fn(isa, kern) for each ISA under test (test_isas) whose kernel table has what `has` asks for;
// returns whether any had it, so that the test can say when none did (a scalar-only run, or a CPU
// without the ISA whose table has the entry).
template <class Has, class Fn>
bool for_each_table_with(Has has, Fn fn) {
  bool any = false;
  for (attn::Isa isa : test_isas()) {
    const attn::detail::Kernels* kern = attn::detail::kernels_for(isa);
    REQUIRE(kern != nullptr);
    if (!has(*kern)) continue;
    any = true;
    fn(isa, kern);
  }
  return any;
}

}  // namespace attn_test
