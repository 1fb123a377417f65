# Links mpc's tools against LLVM's static component libraries instead of
# Debian's libLLVM.so. That library holds all of LLVM (every target, 130 MB)
# and its 334k relocations and static constructors cost ~25 ms at every
# process start, ten times what mpc itself needs to start: users run `mpc`
# once per command, and the test suite runs it ~7,000 times. Statically, the
# linker keeps only what mpc uses (Support, Demangle, TableGen for
# mpc-tblgen).
#
# Debian's MLIR libraries are static but were exported against the `LLVM`
# dylib target; each imported MLIR target's link interface is rewritten to
# name the static components instead. Must run after find_package(MLIR) and
# before include(AddLLVM).
set(LLVM_LINK_LLVM_DYLIB OFF)
set(MPC_LLVM_STATIC_COMPONENTS LLVMSupport LLVMDemangle LLVMTableGen)
foreach(target IN LISTS MLIR_EXPORTED_TARGETS)
  if(NOT TARGET ${target})
    continue()
  endif()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY" OR type STREQUAL "EXECUTABLE")
    continue()
  endif()
  get_target_property(libs ${target} INTERFACE_LINK_LIBRARIES)
  if(libs AND "LLVM" IN_LIST libs)
    list(REMOVE_ITEM libs LLVM)
    list(APPEND libs ${MPC_LLVM_STATIC_COMPONENTS})
    set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES "${libs}")
  endif()
endforeach()
