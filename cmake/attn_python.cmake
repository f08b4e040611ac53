# The Python package `attn`: its compiled core attn._attn (python/*.cpp, pybind11) and its
# Python files (python/attn/), put together in build/python/attn/ so that
#   PYTHONPATH=build/python /usr/bin/python3 -c "import attn"
# works. It is Debian's python3 (the one with numpy and torch), not whatever python3 comes first
# on PATH, and the module is built only where pybind11 and that Python's headers are found.
# ATTN_PYTHON_EXECUTABLE: another interpreter to build for (setup.py passes the one building the
# wheel, a virtual environment's, say).
set(ATTN_PYTHON_EXECUTABLE "" CACHE FILEPATH "The Python to build the module for (default: /usr/bin/python3)")
if(ATTN_PYTHON_EXECUTABLE)
  set(ATTN_PYTHON "${ATTN_PYTHON_EXECUTABLE}")
else()
  find_program(ATTN_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
endif()
set(ATTN_PYTHON_FOUND OFF)
if(ATTN_PYTHON)
  set(Python_EXECUTABLE "${ATTN_PYTHON}")
  find_package(Python 3.7 QUIET COMPONENTS Interpreter Development.Module)
  if(Python_FOUND)
    find_package(pybind11 2.6 CONFIG QUIET)
    if(pybind11_FOUND)
      set(ATTN_PYTHON_FOUND ON)
    endif()
  endif()
endif()
# ATTN_BUILD_PYTHON is AUTO, ON or OFF. AUTO (the default) builds the module where pybind11 and
# Python's headers are found, and looks again at every configure: a first configure on a fresh
# machine (`make demo`, before scripts/deps.sh installs pybind11) must not settle the question
# for the next (`make test`), as a cached option OFF did. ON requires the module (`make build`
# and `make test` ask for it, so a suite that was asked for Python fails rather than shrinks);
# OFF leaves it out. AUTO is OFF under the sanitizers: a module built with them cannot be loaded
# into an interpreter that was not started with their runtime.
set(ATTN_BUILD_PYTHON AUTO CACHE STRING "Build the Python module: AUTO (where pybind11 and python3-dev are found), ON or OFF")
set_property(CACHE ATTN_BUILD_PYTHON PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${ATTN_BUILD_PYTHON}" _attn_python_choice)
if(_attn_python_choice STREQUAL "AUTO")
  if(ATTN_SANITIZE OR NOT ATTN_PYTHON_FOUND)
    set(_attn_python_build OFF)
  else()
    set(_attn_python_build ON)
  endif()
  if(NOT ATTN_PYTHON_FOUND)
    message(STATUS "python: pybind11 or Python's headers not found, the module is not built this time "
                   "(Debian: apt-get install pybind11-dev python3-dev; the next configure looks again)")
  endif()
elseif(_attn_python_choice MATCHES "^(ON|YES|TRUE|Y|1)$")
  set(_attn_python_build ON)
elseif(_attn_python_choice MATCHES "^(OFF|NO|FALSE|N|0)$")
  set(_attn_python_build OFF)
else()
  message(FATAL_ERROR "ATTN_BUILD_PYTHON is '${ATTN_BUILD_PYTHON}'; it takes AUTO, ON or OFF")
endif()
if(NOT _attn_python_build)
  return()
endif()
if(NOT ATTN_PYTHON_FOUND)
  message(FATAL_ERROR "ATTN_BUILD_PYTHON is ON, but pybind11 or Python's headers were not found "
                      "(Debian: apt-get install pybind11-dev python3-dev)")
endif()

file(GLOB ATTN_PYTHON_SOURCES CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/python/*.cpp")
# NO_EXTRAS: no link-time optimisation or stripping, which would only slow the build.
pybind11_add_module(attn_python MODULE NO_EXTRAS ${ATTN_PYTHON_SOURCES})
set(ATTN_PYTHON_PACKAGE_DIR "${PROJECT_BINARY_DIR}/python/attn")
set_target_properties(attn_python PROPERTIES
  OUTPUT_NAME _attn
  LIBRARY_OUTPUT_DIRECTORY "${ATTN_PYTHON_PACKAGE_DIR}")
# The package's Python files (and type stubs) beside the core; a change to one reconfigures.
file(GLOB ATTN_PYTHON_FILES CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/python/attn/*.py"
     "${PROJECT_SOURCE_DIR}/python/attn/*.pyi" "${PROJECT_SOURCE_DIR}/python/attn/py.typed")
foreach(_attn_file ${ATTN_PYTHON_FILES})
  get_filename_component(_attn_name "${_attn_file}" NAME)
  configure_file("${_attn_file}" "${ATTN_PYTHON_PACKAGE_DIR}/${_attn_name}" COPYONLY)
endforeach()
target_compile_definitions(attn_python PRIVATE ATTN_VERSION="${PROJECT_VERSION}")
target_link_libraries(attn_python PRIVATE attn attn_warnings fmt::fmt OpenMP::OpenMP_CXX)

if(ATTN_INSTALL)
  include(GNUInstallDirs)
  set(ATTN_PYTHON_INSTALL_DIR
      "${CMAKE_INSTALL_LIBDIR}/python${Python_VERSION_MAJOR}.${Python_VERSION_MINOR}/site-packages"
      CACHE PATH "Where `cmake --install` puts the Python module, relative to the prefix")
  install(TARGETS attn_python LIBRARY DESTINATION "${ATTN_PYTHON_INSTALL_DIR}/attn" COMPONENT python)
  install(FILES ${ATTN_PYTHON_FILES} DESTINATION "${ATTN_PYTHON_INSTALL_DIR}/attn" COMPONENT python)
  # With a shared libattn the module finds it under the same prefix.
  file(RELATIVE_PATH _attn_py_to_lib "/${ATTN_PYTHON_INSTALL_DIR}/attn" "/${CMAKE_INSTALL_LIBDIR}")
  set_target_properties(attn_python PROPERTIES INSTALL_RPATH "$ORIGIN/${_attn_py_to_lib}")
endif()
