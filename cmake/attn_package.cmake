# Packaging attn: the library is position-independent and versioned, and `cmake --install`
# puts the headers under include/attn/, the library, a CMake package (find_package(attn) gives
# attn::attn) and a pkg-config file (attn.pc) under the prefix.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# PIC in the static build too: the Python module (a shared object) links the static library.
# The ABI may change with every 0.x release, so the soname carries major and minor.
set_target_properties(attn PROPERTIES
  POSITION_INDEPENDENT_CODE ON
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
# The public headers use C++20 (std::span), so users compile as C++20 at least.
target_compile_features(attn PUBLIC cxx_std_20)

# The CLI's bench command sets OpenMP's thread count itself, and libattn keeps OpenMP private.
if(TARGET attn_cli)
  target_link_libraries(attn_cli PRIVATE OpenMP::OpenMP_CXX)
  # An installed CLI finds an installed shared libattn beside it.
  set_target_properties(attn_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
endif()

if(NOT ATTN_INSTALL)
  return()
endif()

set(ATTN_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/attn")
install(TARGETS attn EXPORT attn-targets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/attn" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET attn_cli)
  install(TARGETS attn_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

install(EXPORT attn-targets NAMESPACE attn:: DESTINATION "${ATTN_CMAKE_DIR}")
# The config needs to know whether a static libattn was installed: its private dependencies
# (fmt, OpenMP, liblzma, zlib, SentencePiece) must then be found by the user's project too.
set(ATTN_INSTALLED_SHARED ${BUILD_SHARED_LIBS})
configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/attn-config.cmake.in"
  "${PROJECT_BINARY_DIR}/attn-config.cmake" INSTALL_DESTINATION "${ATTN_CMAKE_DIR}")
# 0.x: only the same minor version promises the same API.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/attn-config-version.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/attn-config.cmake" "${PROJECT_BINARY_DIR}/attn-config-version.cmake"
  DESTINATION "${ATTN_CMAKE_DIR}")

# pkg-config: the paths are relative to the prefix the package is installed under (${pcfiledir}),
# so the file stays right when the prefix is moved.
file(RELATIVE_PATH ATTN_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" ATTN_PC_TO_PREFIX "${ATTN_PC_TO_PREFIX}")
if(BUILD_SHARED_LIBS)
  set(ATTN_PC_LIBS_PRIVATE "")
else()
  string(JOIN " " ATTN_PC_LIBS_PRIVATE -lfmt -llzma -lz -lsentencepiece -lsentencepiece_train ${OpenMP_CXX_FLAGS})
endif()
configure_file("${CMAKE_CURRENT_LIST_DIR}/attn.pc.in" "${PROJECT_BINARY_DIR}/attn.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/attn.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
