// Vector math for Isa::avx512 (compiled with its flags only).
#include "vmath/vmath_isa.inc"
