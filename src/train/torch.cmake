# Finds PyTorch 2.x's libtorch the way PyTorch's C++ extensions do: from a Python environment's
# torch (a module, a conda env, a container's, or the project venv of scripts/torch-venv), and
# defines sweepbench::torch, the one target bench-train and bench-infer link for it.
#
# Where torch comes from, first match wins:
#   -DTorch_DIR=<prefix>/share/cmake/Torch, or a prefix in CMAKE_PREFIX_PATH holding
#     share/cmake/Torch (what `torch.utils.cmake_prefix_path` prints);
#   -DSWEEPBENCH_PYTHON=<python> (or the environment variable): that interpreter's torch;
#   the project venv <source>/.venv (scripts/torch-venv), else python3 on PATH.
# The interpreter is asked where torch is (importlib, no `import torch`: the project venv holds
# libtorch only, and Python's torch would load CUDA libraries a CPU run lacks).
#
# CPU or CUDA (SWEEPBENCH_CUDA: AUTO, ON, OFF):
#   CUDA links libtorch_cuda through Torch's own CMake config (find_package(Torch)), with the CUDA
#     toolkit and NCCL: the GPU build.
#   CPU links libtorch_cpu and libc10 alone, as a CppExtension does, even from a CUDA wheel: a
#     CPU run then needs of the wheel's CUDA libraries only the runtime and CUPTI, which
#     libtorch_cpu itself names.
#   AUTO is CUDA when torch is a CUDA build, a CUDA compiler is found, and every library
#   libtorch_cuda.so needs resolves here (ldd); else CPU, and it says why.
#
# Refuses libtorch 1.x and the pre-C++11 ABI. Sets SWEEPBENCH_TORCH_VERSION, SWEEPBENCH_TORCH_PREFIX, SWEEPBENCH_TORCH_CUDA (ON/OFF).

# The oldest torch CI builds and tests (scripts/torch-venv's pin); older 2.x may work, unchecked.
set(SWEEPBENCH_TORCH_TESTED 2.15.0)

set(SWEEPBENCH_PYTHON "$ENV{SWEEPBENCH_PYTHON}" CACHE FILEPATH
    "Python interpreter whose torch 2.x to build against (default: <source>/.venv, else python3)")
set(SWEEPBENCH_CUDA AUTO CACHE STRING "Build the CUDA path: AUTO, ON or OFF")
set_property(CACHE SWEEPBENCH_CUDA PROPERTY STRINGS AUTO ON OFF)

function(sweepbench_torch_fail what)
  message(FATAL_ERROR "sweepbench: ${what}\n"
    "Run scripts/install-deps (it makes the project venv .venv with torch ${SWEEPBENCH_TORCH_TESTED}), "
    "or point at a PyTorch 2.x you have: -DSWEEPBENCH_PYTHON=$(command -v python) or "
    "-DCMAKE_PREFIX_PATH=$(python -c 'import torch; print(torch.utils.cmake_prefix_path)'); "
    "-DSWEEPBENCH_BUILD_TRAIN=OFF builds the tools that need no torch (cmake --preset notrain).")
endfunction()

# 1. The prefix: <site-packages>/torch, holding include/, lib/ and share/cmake/Torch.
set(_prefix "")
if(Torch_DIR)
  get_filename_component(_prefix "${Torch_DIR}/../../.." ABSOLUTE)
  set(_from "Torch_DIR")
else()
  foreach(_p IN LISTS CMAKE_PREFIX_PATH)
    foreach(_sub "" "share/cmake/" "torch/share/cmake/")
      if(EXISTS "${_p}/${_sub}Torch/TorchConfig.cmake")
        get_filename_component(_prefix "${_p}/${_sub}Torch/../../.." ABSOLUTE)
        set(_from "CMAKE_PREFIX_PATH")
        break()
      endif()
    endforeach()
    if(_prefix)
      break()
    endif()
  endforeach()
endif()
if(NOT _prefix)
  set(_python "${SWEEPBENCH_PYTHON}")
  if(NOT _python)
    if(EXISTS "${PROJECT_SOURCE_DIR}/.venv/bin/python")
      set(_python "${PROJECT_SOURCE_DIR}/.venv/bin/python")
    else()
      find_program(SWEEPBENCH_PYTHON3 python3)
      set(_python "${SWEEPBENCH_PYTHON3}")
    endif()
  endif()
  if(NOT _python)
    sweepbench_torch_fail("no Python to ask where torch is (no .venv, no python3 on PATH)")
  endif()
  execute_process(
    COMMAND "${_python}" -c
      "import importlib.util as u; s = u.find_spec('torch'); print(list(s.submodule_search_locations)[0] if s else '')"
    OUTPUT_VARIABLE _prefix ERROR_VARIABLE _err RESULT_VARIABLE _rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _rc EQUAL 0)
    sweepbench_torch_fail("${_python} failed to say where torch is: ${_err}")
  endif()
  if(NOT _prefix)
    sweepbench_torch_fail("${_python} has no torch")
  endif()
  set(_from "${_python}")
endif()
set(_config "${_prefix}/share/cmake/Torch")
if(NOT EXISTS "${_config}/TorchConfig.cmake" OR NOT EXISTS "${_prefix}/lib/libtorch_cpu.so")
  sweepbench_torch_fail("${_prefix} (from ${_from}) is not libtorch: no share/cmake/Torch/TorchConfig.cmake or lib/libtorch_cpu.so")
endif()

# 2. Its version, C++ standard and ABI, read from its CMake files.
file(STRINGS "${_config}/TorchConfigVersion.cmake" _v REGEX "set\\(PACKAGE_VERSION \"")
string(REGEX REPLACE ".*\"([0-9.]+).*" "\\1" _version "${_v}")
# 2.5: scaled_dot_product_attention's enable_gqa; 2.4: autocast by device type, fused AdamW on CPUs.
if(_version VERSION_LESS 2.5)
  sweepbench_torch_fail("torch ${_version} in ${_prefix}: sweepbench needs PyTorch 2.5 or later (libtorch 1.x is no longer supported)")
endif()
if(_version VERSION_LESS SWEEPBENCH_TORCH_TESTED)
  message(WARNING "sweepbench: torch ${_version} is older than the oldest tested (${SWEEPBENCH_TORCH_TESTED}); "
                  "if bench-train fails to build, use a newer PyTorch")
endif()
file(STRINGS "${_config}/TorchConfig.cmake" _std20 REGEX "cxx_std_20")
file(GLOB _caffe2 "${_prefix}/share/cmake/Caffe2/Caffe2Config.cmake")
file(STRINGS "${_config}/TorchConfig.cmake" _abi REGEX "_GLIBCXX_USE_CXX11_ABI=[01]")
if(_caffe2)
  file(STRINGS "${_caffe2}" _abi2 REGEX "_GLIBCXX_USE_CXX11_ABI=[01]")
  list(APPEND _abi ${_abi2})
endif()
if(_abi MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
  # Our own libraries pass std::string across to the torch translation units: one ABI for all.
  sweepbench_torch_fail("torch ${_version} in ${_prefix} is built with the pre-C++11 ABI (_GLIBCXX_USE_CXX11_ABI=0, PyPI's wheels before 2.7); sweepbench needs the C++11 ABI")
endif()

# 3. CPU or CUDA.
set(_cuda OFF)
set(_why "")
if(SWEEPBENCH_CUDA STREQUAL "ON" OR SWEEPBENCH_CUDA STREQUAL "AUTO")
  if(NOT EXISTS "${_prefix}/lib/libtorch_cuda.so")
    set(_why "torch ${_version} is a CPU build")
  else()
    include(CheckLanguage)
    check_language(CUDA)
    if(NOT CMAKE_CUDA_COMPILER)
      set(_why "no CUDA compiler (nvcc) found")
    elseif(SWEEPBENCH_CUDA STREQUAL "AUTO")
      find_program(SWEEPBENCH_LDD ldd)
      execute_process(COMMAND "${SWEEPBENCH_LDD}" "${_prefix}/lib/libtorch_cuda.so"
                      OUTPUT_VARIABLE _ldd ERROR_QUIET)
      string(REGEX MATCHALL "[^\n\t ]+ => not found" _missing "${_ldd}")
      if(_missing)
        string(REPLACE " => not found" "" _missing "${_missing}")
        string(REPLACE ";" ", " _missing "${_missing}")
        set(_why "libtorch_cuda.so's libraries are not all here (${_missing})")
      else()
        set(_cuda ON)
      endif()
    else()
      set(_cuda ON)
    endif()
  endif()
  if(SWEEPBENCH_CUDA STREQUAL "ON" AND NOT _cuda)
    message(FATAL_ERROR "sweepbench: SWEEPBENCH_CUDA=ON, but ${_why} (torch in ${_prefix})")
  endif()
endif()

add_library(sweepbench_torch INTERFACE)
add_library(sweepbench::torch ALIAS sweepbench_torch)
if(_cuda)
  find_package(Torch REQUIRED PATHS "${_config}" NO_DEFAULT_PATH)
  target_link_libraries(sweepbench_torch INTERFACE ${TORCH_LIBRARIES})
  message(STATUS "sweepbench: CUDA build against torch ${_version} in ${_prefix} (from ${_from})")
else()
  target_link_libraries(sweepbench_torch INTERFACE "${_prefix}/lib/libtorch_cpu.so" "${_prefix}/lib/libc10.so")
  if(_std20)
    target_compile_features(sweepbench_torch INTERFACE cxx_std_20)
  else()
    target_compile_features(sweepbench_torch INTERFACE cxx_std_17)
  endif()
  if(_why)
    set(_why " (${_why})")
  endif()
  message(STATUS "sweepbench: CPU build against torch ${_version} in ${_prefix} (from ${_from})${_why}")
endif()
# libtorch's headers are not warning-clean under our flags; they are system headers to us.
target_include_directories(sweepbench_torch SYSTEM INTERFACE
  "${_prefix}/include" "${_prefix}/include/torch/csrc/api/include")

set(SWEEPBENCH_TORCH_VERSION "${_version}")
set(SWEEPBENCH_TORCH_PREFIX "${_prefix}")
set(SWEEPBENCH_TORCH_CUDA "${_cuda}")
