# The Debian package of the C and C++ library and the CLI: scripts/build-deb.sh configures a
# build with CMAKE_INSTALL_PREFIX=/usr and runs `cpack -G DEB`, which writes
# jitexpr_<version>_amd64.deb holding what `cmake --install` installs (cmake/JitexprInstall.cmake):
# the CLI and its man page, libjitexpr_c.so (the C API), the static C++ libraries, the headers,
# the CMake package and the pkg-config file. The version is the project's.
set(CPACK_PACKAGE_NAME jitexpr)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "array expressions compiled at run time for NVIDIA GPUs and the CPU (library, headers, CLI)")
set(CPACK_PACKAGE_DESCRIPTION
    "jitexpr compiles NumPy-style array expressions to CUDA kernels at run time (NVRTC) or\n evaluates them on the CPU. This package holds the jitexpr command-line tool, the C API as a\n shared library, the C++ library, its headers, CMake package (find_package(jitexpr)) and\n pkg-config file. CUDA is opened at run time: nothing of it is a dependency.")
set(CPACK_PACKAGE_CONTACT "jitexpr developers")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)          # jitexpr_0.2.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
# Run-time dependencies from the binaries (dpkg-shlibdeps: libc6, libstdc++6, libfmt, readline);
# the CMake package's find_dependency(fmt) needs fmt's development files as well.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libfmt-dev")
# libjitexpr_c.so's shlibs file and the ldconfig trigger.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_GENERATOR DEB)
include(CPack)
