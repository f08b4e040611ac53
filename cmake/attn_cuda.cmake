# -DATTN_CUDA=ON: the kernels of src/cuda/*.cu (nvcc, C++17: CUDA 11.8's nvcc has no C++20),
# compiled once and linked twice: into libattn (attn::cuda, the CLI's --device cuda) and into
# libattn_cuda.so, a C interface on device pointers for PyTorch through ctypes (tests/cuda/,
# bench/gpu/). The CUDA runtime is linked statically: the binaries need only the driver.
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
file(GLOB ATTN_CUDA_KERNELS CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/src/cuda/*.cu")
add_library(attn_cuda_kernels OBJECT ${ATTN_CUDA_KERNELS})
set_target_properties(attn_cuda_kernels PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON
                      POSITION_INDEPENDENT_CODE ON)
target_include_directories(attn_cuda_kernels PRIVATE "${PROJECT_SOURCE_DIR}/src")
target_compile_options(attn_cuda_kernels PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)

# Linking the kernels' objects makes CUDA one of each target's languages: C++17 for it, as above.
target_sources(attn PRIVATE $<TARGET_OBJECTS:attn_cuda_kernels>)
set_target_properties(attn PROPERTIES CUDA_STANDARD 17)
target_include_directories(attn PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
# cuBLAS (the toolkit's own, linked as a shared library: its static form is hundreds of MB) for
# the training step's products (src/cuda/device_linear.cpp)
target_link_libraries(attn PRIVATE CUDA::cudart_static CUDA::cublas)

add_library(attn_cuda_c SHARED "${PROJECT_SOURCE_DIR}/src/cuda/c_api.cpp" $<TARGET_OBJECTS:attn_cuda_kernels>)
set_target_properties(attn_cuda_c PROPERTIES OUTPUT_NAME attn_cuda CUDA_STANDARD 17)
target_include_directories(attn_cuda_c PRIVATE "${PROJECT_SOURCE_DIR}/src" ${CUDAToolkit_INCLUDE_DIRS})
target_link_libraries(attn_cuda_c PRIVATE CUDA::cudart_static)
