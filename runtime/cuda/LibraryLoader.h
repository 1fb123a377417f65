//===- LibraryLoader.h - find and dlopen an NVIDIA library --------*- C++ -*-===//
//
// Private to runtime/cuda/. mpc links against no CUDA library; cuBLASLt and
// cuDNN are opened at run time from, in order: the path an environment
// variable names (that one or none: the tests point it at host doubles),
// the loader's search path, the toolkit ($CUDA_HOME, /usr/local/cuda), and
// NVIDIA's pip wheels under any Python's site-packages.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_CUDA_LIBRARYLOADER_H
#define MPC_RUNTIME_CUDA_LIBRARYLOADER_H

#include <string>

namespace mpc::rt {

/// dlopen's handle of `soname` (libcublasLt.so.13...), its path in
/// `path`; null with `why` ("libcudnn.so.9 not found (MPC_CUDNN=...)").
void *openNvidiaLibrary(const char *soname, const char *envVar,
                        std::string &path, std::string &why);

} // namespace mpc::rt

#endif // MPC_RUNTIME_CUDA_LIBRARYLOADER_H
