// Vector math for Isa::neon (compiled with its flags only).
#include "vmath/vmath_isa.inc"
