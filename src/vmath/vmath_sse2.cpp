// Vector math for Isa::sse2 (compiled with its flags only).
#include "vmath/vmath_isa.inc"
