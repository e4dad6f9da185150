# tpe: the TPE searcher (search/tpe.c; parzen.c and its fast forms, special.c, kde.c):
# densities against Optuna 3.1 and statsmodels, the rung rule, determinism and the
# suggestions' shape.
tune_add_test_exe(test_tpe SOURCES ${CMAKE_SOURCE_DIR}/tests/test_tpe.c LIBS tune_search ${MATH_LIB}
                  LABELS search TIMEOUT 60)
