# find_package(sluice): the imported target sluice::sluice (libsluice.so and
# include/sluice/), C++20.
get_filename_component(_sluice_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET sluice::sluice)
  add_library(sluice::sluice SHARED IMPORTED)
  find_library(_sluice_lib sluice PATHS "${_sluice_prefix}/lib" "${_sluice_prefix}/lib64" NO_DEFAULT_PATH)
  set_target_properties(sluice::sluice PROPERTIES
    IMPORTED_LOCATION "${_sluice_lib}"
    INTERFACE_INCLUDE_DIRECTORIES "${_sluice_prefix}/include"
    INTERFACE_COMPILE_FEATURES cxx_std_20)
endif()
set(sluice_FOUND TRUE)
