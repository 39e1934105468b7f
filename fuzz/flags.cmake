# Included by the top-level CMakeLists.txt, before any target, when JITEXPR_FUZZ is ON: every
# library is compiled with libFuzzer's coverage instrumentation and with ASan + UBSan, so the
# fuzzers see (and stop at) memory errors and undefined behaviour anywhere in jitexpr.
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "JITEXPR_FUZZ needs clang and libFuzzer: configure with "
                      "-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ (see fuzz/run.sh)")
endif()
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                    -fno-omit-frame-pointer -g)
add_link_options(-fsanitize=address,undefined)
