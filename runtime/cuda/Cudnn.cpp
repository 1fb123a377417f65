//===- Cudnn.cpp - dlopen cuDNN -------------------------------------------===//

#include "runtime/cuda/Cudnn.h"

#include "runtime/cuda/LibraryLoader.h"

#include <dlfcn.h>
#include <type_traits>

namespace mpc::rt::dnn {

std::string Library::load() {
  if (lib)
    return "";
  std::string why;
  if (!(lib = openNvidiaLibrary("libcudnn.so.9", "MPC_CUDNN", path, why)))
    return why;
  auto sym = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        dlsym(lib, name));
    return fn != nullptr;
  };
  bool ok =
      sym(getVersion, "cudnnGetVersion") &&
      sym(errorString, "cudnnGetErrorString") && sym(create, "cudnnCreate") &&
      sym(destroy, "cudnnDestroy") && sym(setStream, "cudnnSetStream") &&
      sym(createTensor, "cudnnCreateTensorDescriptor") &&
      sym(setTensor4d, "cudnnSetTensor4dDescriptor") &&
      sym(destroyTensor, "cudnnDestroyTensorDescriptor") &&
      sym(createFilter, "cudnnCreateFilterDescriptor") &&
      sym(setFilter4d, "cudnnSetFilter4dDescriptor") &&
      sym(destroyFilter, "cudnnDestroyFilterDescriptor") &&
      sym(createConv, "cudnnCreateConvolutionDescriptor") &&
      sym(setConv2d, "cudnnSetConvolution2dDescriptor") &&
      sym(setConvGroups, "cudnnSetConvolutionGroupCount") &&
      sym(setConvMath, "cudnnSetConvolutionMathType") &&
      sym(destroyConv, "cudnnDestroyConvolutionDescriptor") &&
      sym(forwardAlgorithms, "cudnnGetConvolutionForwardAlgorithm_v7") &&
      sym(forwardWorkspace, "cudnnGetConvolutionForwardWorkspaceSize") &&
      sym(forward, "cudnnConvolutionForward") &&
      sym(addTensor, "cudnnAddTensor") &&
      sym(biasActivationForward, "cudnnConvolutionBiasActivationForward") &&
      sym(createActivation, "cudnnCreateActivationDescriptor") &&
      sym(setActivation, "cudnnSetActivationDescriptor") &&
      sym(destroyActivation, "cudnnDestroyActivationDescriptor") &&
      sym(dataAlgorithms, "cudnnGetConvolutionBackwardDataAlgorithm_v7") &&
      sym(dataWorkspace, "cudnnGetConvolutionBackwardDataWorkspaceSize") &&
      sym(backwardData, "cudnnConvolutionBackwardData") &&
      sym(filterAlgorithms, "cudnnGetConvolutionBackwardFilterAlgorithm_v7") &&
      sym(filterWorkspace, "cudnnGetConvolutionBackwardFilterWorkspaceSize") &&
      sym(backwardFilter, "cudnnConvolutionBackwardFilter");
  if (!ok) {
    dlclose(lib);
    lib = nullptr;
    return path + " lacks a cuDNN convolution entry point";
  }
  return "";
}

std::string Library::describe() const {
  size_t v = getVersion(); // major * 10000 + minor * 100 + patch
  return "cuDNN " + std::to_string(v / 10000) + "." +
         std::to_string(v / 100 % 100) + "." + std::to_string(v % 100) +
         " (" + path + ")";
}

std::string Library::statusName(Status s) const {
  const char *text = errorString ? errorString(s) : nullptr;
  return text ? text : "cuDNN status " + std::to_string(s);
}

Library &library() {
  static Library l;
  return l;
}

} // namespace mpc::rt::dnn
