// jitexpr — arrays: include/jit/core/array.hpp. The headers of the lowest layer (core)
// live in include/jit/core/; this path stays public and includes the same.
#pragma once

#include <jit/core/array.hpp>
