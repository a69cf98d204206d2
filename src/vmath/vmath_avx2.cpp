// Vector math for Isa::avx2 (compiled with its flags only).
#include "vmath/vmath_isa.inc"
