# Install rules and the CMake/pkg-config package: `cmake --install <build> --prefix <dir>` gives
#   bin/jitexpr, include/jit/*.h*, lib/libjitexpr*.a,
#   lib/cmake/jitexpr/jitexprConfig.cmake (+ Version, + Targets) exporting jitexpr::jitexpr,
#   lib/pkgconfig/jitexpr.pc.
# jitexpr is a static library over internal static libraries (dsl, codegen, backends, run), so the
# export set holds all of them; their source-tree include directories are build-only.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(_jitexpr_internal jitexpr_core jitexpr_dsl jitexpr_codegen jitexpr_run jitexpr_cuda jitexpr_cpu jitexpr_cache)
foreach(t ${_jitexpr_internal})
  get_target_property(_dirs ${t} INTERFACE_INCLUDE_DIRECTORIES)
  if(_dirs)
    set(_wrapped)
    foreach(d ${_dirs})
      if(d MATCHES "^\\$<")   # already a generator expression ($<BUILD_INTERFACE:...>)
        list(APPEND _wrapped "${d}")
      else()
        list(APPEND _wrapped "$<BUILD_INTERFACE:${d}>")
      endif()
    endforeach()
    set_property(TARGET ${t} PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${_wrapped}")
  endif()
endforeach()

install(TARGETS jitexpr ${_jitexpr_internal} jitexpr_warnings jitexpr_xxhash
  EXPORT jitexprTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/jit DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")

set(_jitexpr_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/jitexpr)
install(EXPORT jitexprTargets NAMESPACE jitexpr:: DESTINATION ${_jitexpr_cmake_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/jitexprConfig.cmake.in
  ${PROJECT_BINARY_DIR}/jitexprConfig.cmake
  INSTALL_DESTINATION ${_jitexpr_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/jitexprConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/jitexprConfig.cmake ${PROJECT_BINARY_DIR}/jitexprConfigVersion.cmake
  DESTINATION ${_jitexpr_cmake_dir})

# pkg-config: static libraries, so Libs names all of them (grouped: they refer to each other)
# and what they need: fmt, libdl, threads, libmvec when the CPU kernels use it, and the C++
# runtime for C programs (nothing of CUDA: it is opened at run time). api/devices.cpp registers
# the backends' memory with the arrays; nothing refers to it by name.
set(JITEXPR_PC_LIBS "-Wl,--undefined=jit_devices_registered -Wl,--start-group")
foreach(t jitexpr ${_jitexpr_internal})
  string(APPEND JITEXPR_PC_LIBS " -l${t}")
endforeach()
string(APPEND JITEXPR_PC_LIBS " -Wl,--end-group")
string(APPEND JITEXPR_PC_LIBS " -ldl -lpthread")
if(JITEXPR_HAVE_LIBMVEC)
  string(APPEND JITEXPR_PC_LIBS " -lmvec")
endif()
string(APPEND JITEXPR_PC_LIBS " -lstdc++ -lm")
# The prefix is found relative to the .pc file, so an installed tree can be moved.
set(JITEXPR_PC_PREFIX "\${pcfiledir}")
string(REPLACE "/" ";" _parts "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
foreach(_p ${_parts})
  string(APPEND JITEXPR_PC_PREFIX "/..")
endforeach()
configure_file(${CMAKE_CURRENT_LIST_DIR}/jitexpr.pc.in ${PROJECT_BINARY_DIR}/jitexpr.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/jitexpr.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)


# The C API as a shared library (lib/libjitexpr_c.so, exported as jitexpr::jitexpr_c) for
# FFIs (ctypes, cffi, other languages). Python has its own package: pip install . (python/).
if(TARGET jitexpr_c)
  install(TARGETS jitexpr_c
    EXPORT jitexprTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
