# cuda.cmake: adds tune-train's CUDA backend (backend_cuda.cu, conv_cuda.cu,
# kernels_cuda.cu, nccl_cuda.cu) to the trainer library; included by
# train/CMakeLists.txt only when TUNE_HAVE_CUDA is ON. Not for: finding CUDA, cuDNN or NCCL (the top-level CMakeLists
# does, honouring CUDNN_HOME, NCCL_HOME, TUNE_CUDA_EXTRA_INCLUDES/_LIBS).
if(NOT TUNE_TRAIN_CUDA_TARGET)
  set(TUNE_TRAIN_CUDA_TARGET tune_train)
endif()
set(_tgt ${TUNE_TRAIN_CUDA_TARGET})

target_sources(${_tgt} PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/backend_cuda.cu
  ${CMAKE_CURRENT_LIST_DIR}/conv_cuda.cu
  ${CMAKE_CURRENT_LIST_DIR}/kernels_cuda.cu
  ${CMAKE_CURRENT_LIST_DIR}/nccl_cuda.cu)
target_include_directories(${_tgt} PRIVATE ${CUDNN_INCLUDE_DIR} ${NCCL_INCLUDE_DIR})
# PUBLIC: the static library's users (tune-train, tests) link the CUDA libraries too.
target_link_libraries(${_tgt} PUBLIC CUDA::cudart CUDA::cublas ${CUDNN_LIBRARY} ${NCCL_LIBRARY})

# Host-side warnings as for C (-Wall -Wextra, -Werror with TUNE_WERROR), and nvcc's own
# warnings as errors too, so CI without a GPU still catches a sloppy GPU path. No fast
# math: the kernels must agree with the CPU oracle (IEEE division and sqrt).
target_compile_options(${_tgt} PRIVATE
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
if(TUNE_WERROR)
  target_compile_options(${_tgt} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Werror>
    $<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings>)
endif()
# Whole-program compilation per .cu file (no device symbols cross files), so no device
# link step is needed and a plain C executable can link the library.
set_target_properties(${_tgt} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF
                                         CUDA_RESOLVE_DEVICE_SYMBOLS OFF)
unset(_tgt)
