// attn: transformer attention on CPUs. This header includes the whole public API.
#pragma once

#include "attn/attention.hpp"
#include "attn/context.hpp"
#include "attn/export.hpp"
#include "attn/isa.hpp"
#include "attn/mask.hpp"
#include "attn/matmul.hpp"
#include "attn/packed_matrix.hpp"
#include "attn/reference.hpp"
#include "attn/self_attention.hpp"
#include "attn/status.hpp"
#include "attn/version.hpp"
#include "attn/view.hpp"
#include "attn/vmath.hpp"
