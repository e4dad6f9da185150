# train_gpu: the CUDA backend of tune-train against the CPU backend (tests/test_train_gpu.c).
# Registered only in builds with CUDA; cases that need a device skip (exit 77) without one.
# Labels: "gpu" for cases that need a device, "cuda" for the two that check the CUDA build
# without one (the no-device message and the backend registry).
if(NOT TUNE_HAVE_CUDA)
  return()
endif()

tune_add_test_exe(test_train_gpu
  SOURCES ${CMAKE_SOURCE_DIR}/tests/test_train_gpu.c
  LIBS tune_train CUDA::cudart
  LABELS gpu
  TIMEOUT 180)
set_tests_properties(train_gpu.no_device_message train_gpu.registry_has_cuda
                     PROPERTIES LABELS cuda)
