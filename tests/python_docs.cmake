# docs/python.md's and docs/from-ray-tune.md's code blocks run as whole experiments, some
# with PyTorch trials (tests/python/test_docs.py): a minute or two on a loaded 2-core
# machine, more than python.cmake's 120 s per test allows.
if(TEST python.docs.python_md)
  set_tests_properties(python.docs.python_md python.docs.from_ray_tune_md PROPERTIES TIMEOUT 600
                       LABELS "python;e2e;docs")
endif()
