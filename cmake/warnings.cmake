add_library(kvcs_warnings INTERFACE)
target_compile_options(kvcs_warnings INTERFACE -Wall -Wextra -Wno-missing-field-initializers
  -Wno-unused-parameter)
