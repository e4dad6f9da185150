# Tests of train/ (tune-train). Fast cases use small synthetic data sets; the two
# accuracy cases train on the real Fashion-MNIST for 2 epochs (label `slow`, still run in
# CI) and skip when Debian's dataset-fashion-mnist is not installed.
tune_add_test_exe(test_train SOURCES ${CMAKE_SOURCE_DIR}/tests/test_train.c
                  LIBS tune_train tune_trial TIMEOUT 120)
add_dependencies(test_train tune-train)
set_tests_properties(train.mlp_accuracy train.cnn_accuracy PROPERTIES LABELS slow TIMEOUT 900)
