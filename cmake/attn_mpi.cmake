# attn-mpi: the CLI whose sdpa and bench run across MPI ranks (the code in src/distributed/ and
# cli/mpi/), built only where MPI is found, so that the plain attn never links MPI nor pays its
# start-up. OpenMPI's own allocations at exit trip LeakSanitizer, so sanitizer builds leave it out.
find_package(MPI COMPONENTS CXX)
if(NOT MPI_CXX_FOUND)
  message(STATUS "attn-mpi: MPI not found, not built (Debian: apt-get install libopenmpi-dev openmpi-bin)")
  return()
endif()
if(ATTN_SANITIZE)
  message(STATUS "attn-mpi: not built with the sanitizers (OpenMPI's exit trips LeakSanitizer)")
  return()
endif()

# The distributed part of the library, behind src/distributed/'s headers (none of which include mpi.h).
file(GLOB ATTN_DISTRIBUTED_SOURCES CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/src/distributed/*.cpp")
add_library(attn_distributed STATIC ${ATTN_DISTRIBUTED_SOURCES})
target_include_directories(attn_distributed PUBLIC "${PROJECT_SOURCE_DIR}/src")
target_link_libraries(attn_distributed PUBLIC attn MPI::MPI_CXX
                      PRIVATE attn_warnings fmt::fmt OpenMP::OpenMP_CXX)

# The plain CLI's files but its main, and the shared subcommands of cli/mpi/.
file(GLOB ATTN_MPI_CLI_SOURCES CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/cli/*.cpp"
     "${PROJECT_SOURCE_DIR}/cli/mpi/*.cpp")
list(FILTER ATTN_MPI_CLI_SOURCES EXCLUDE REGEX "/cli/main\\.cpp$")
add_executable(attn_mpi ${ATTN_MPI_CLI_SOURCES})
set_target_properties(attn_mpi PROPERTIES OUTPUT_NAME attn-mpi)
target_include_directories(attn_mpi PRIVATE "${PROJECT_SOURCE_DIR}/cli")
target_link_libraries(attn_mpi PRIVATE attn_distributed attn attn_warnings CLI11::CLI11
                      nlohmann_json::nlohmann_json fmt::fmt OpenMP::OpenMP_CXX)
