//===- DoctorCommand.cpp - `mpc doctor`: GPU, toolkit, tensor-core use ----===//
//
// Reports the GPU, driver and CUDA toolkit this machine has, and for an
// artifact which kernels contain tensor-core instructions (HMMA/HGMMA in
// the SASS that cuobjdump disassembles): the modern form of looking for
// tensor-core kernel names in a profiler.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Nvrtc.h"

#include "runtime/cuda/CudaDevice.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <set>

using namespace llvm;

namespace mpc {

cl::SubCommand doctorCommand("doctor",
                             "Report GPU, driver and CUDA toolkit, and which "
                             "kernels of an artifact use tensor cores");

static cl::opt<std::string> artifact(cl::Positional, cl::desc("[artifact dir]"),
                                     cl::sub(doctorCommand));

namespace {

/// Runs `tool args...`, returning its stdout+stderr; false on failure.
bool capture(const std::string &tool, std::vector<std::string> args,
             std::string &out) {
  SmallString<128> path;
  sys::fs::createTemporaryFile("mpc-doctor", "txt", path);
  args.insert(args.begin(), tool);
  std::vector<StringRef> argv(args.begin(), args.end());
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(path),
                                          StringRef(path)};
  int rc = sys::ExecuteAndWait(tool, argv, std::nullopt, redirects);
  auto buf = MemoryBuffer::getFile(path);
  out = buf ? (*buf)->getBuffer().str() : "";
  sys::fs::remove(path);
  return rc == 0;
}

/// Tensor-core instruction counts per kernel and arch from `cuobjdump
/// -sass`: an instruction whose name (after an optional predicate) starts
/// with HMMA or HGMMA. (HFMA2.MMA is an ordinary-core instruction.)
std::map<std::string, std::map<std::string, int>>
tensorCoreCounts(StringRef sass, std::set<std::string> &archs) {
  std::map<std::string, std::map<std::string, int>> counts;
  std::string arch, fn;
  SmallVector<StringRef> lines;
  sass.split(lines, '\n');
  for (StringRef line : lines) {
    StringRef t = line.trim();
    if (t.consume_front("arch = ")) {
      arch = t.trim().str();
      archs.insert(arch);
    } else if (t.consume_front("Function : ")) {
      fn = t.trim().str();
      counts[fn][arch] += 0;
    } else if (t.starts_with("/*") && !fn.empty()) {
      size_t end = t.find("*/");
      StringRef insn = end == StringRef::npos ? "" : t.substr(end + 2).trim();
      if (insn.starts_with("@"))
        insn = insn.split(' ').second.trim();
      if (insn.starts_with("HMMA") || insn.starts_with("HGMMA"))
        ++counts[fn][arch];
    }
  }
  return counts;
}

} // namespace

int runDoctor() {
  rt::CudaInfo gpu = rt::probeCuda();
  if (gpu.available) {
    for (size_t i = 0; i < gpu.devices.size(); ++i)
      outs() << "GPU " << i << ": " << gpu.devices[i] << "\n";
    outs() << format("driver: CUDA %d.%d\n", gpu.driverVersion / 1000,
                     gpu.driverVersion % 1000 / 10);
  } else {
    outs() << "GPU: none (" << gpu.reason << "); mpc runs on the CPU backend\n";
  }
  for (const std::string &line : rt::describeCudaLibraries())
    outs() << line << "\n";
  std::string nvcc = findCudaTool("nvcc");
  std::string version;
  if (!nvcc.empty() && capture(nvcc, {"--version"}, version)) {
    StringRef last = StringRef(version).rtrim().rsplit('\n').second;
    outs() << "CUDA toolkit: " << nvcc << " (" << last.trim() << ")\n";
  } else {
    outs() << "CUDA toolkit: nvcc not found\n";
  }
  std::string why;
  if (const Nvrtc *nvrtc = Nvrtc::open(why))
    outs() << "NVRTC: " << nvrtc->path() << " (" << nvrtc->version()
           << "; compiles the kernels in process)\n";
  else
    outs() << "NVRTC: " << why << " (pip install nvidia-nvfatbin "
           << "nvidia-cuda-nvrtc; until then "
           << (nvcc.empty() ? "kernels.cu is emitted but not compiled)"
                            : "nvcc compiles the kernels)")
           << "\n";
  std::string cuobjdump =
      sys::Process::GetEnv("MPC_CUOBJDUMP").value_or(findCudaTool("cuobjdump"));
  outs() << "cuobjdump: "
         << (cuobjdump.empty() ? "not found (pip install nvidia-cuda-cuobjdump "
                                 "nvidia-cuda-nvdisasm, then put their bin/ "
                                 "on PATH)"
                               : cuobjdump)
         << "\n";
  if (artifact.empty())
    return 0;

  auto summaryBuf = MemoryBuffer::getFile(artifact + "/summary.json");
  if (!summaryBuf)
    return reportError(artifact + " is not an mpc artifact (no summary.json)");
  auto summary = json::parse((*summaryBuf)->getBuffer());
  if (!summary || !summary->getAsObject())
    return reportError(artifact + "/summary.json is not valid JSON");
  json::Object &s = *summary->getAsObject();
  auto names = [&](StringRef key) {
    std::set<std::string> out;
    if (auto *a = s.getArray(key))
      for (auto &v : *a)
        if (auto str = v.getAsString())
          out.insert(str->str());
    return out;
  };
  std::set<std::string> tcGemms = names("tensor_core_gemm_kernels"),
                        fp32Gemms = names("fp32_gemm_kernels"),
                        kernels = names("kernels");
  std::vector<std::string> built;
  for (const std::string &a : names("arch"))
    built.push_back(a);
  outs() << "artifact " << artifact << ": "
         << s.getString("precision").value_or("?") << ", " << kernels.size()
         << " kernels for " << join(built, ",") << "\n";
  if (gpu.available && !rt::archRuns(built, rt::deviceArch(gpu.devices[0])))
    outs() << "  " << artifact << " has no code for this GPU ("
           << rt::deviceArch(gpu.devices[0]) << "): compile it again with "
           << "--arch " << rt::deviceArch(gpu.devices[0]) << " (or native)\n";
  // Its device code: kernels.fatbin, or the kernel cache's modules.
  std::vector<std::string> images;
  std::error_code ec;
  for (sys::fs::directory_iterator it(artifact, ec), end; it != end && !ec;
       it.increment(ec))
    if (sys::path::filename(it->path()).starts_with("kernels") &&
        sys::path::extension(it->path()) == ".fatbin")
      images.push_back(it->path());
  llvm::sort(images);
  if (images.empty())
    return reportError(artifact + " has no device code (compiled without "
                                  "nvcc, or --target cpu)");
  if (cuobjdump.empty())
    return reportError("cuobjdump is needed to read the SASS");
  std::set<std::string> archs;
  std::map<std::string, std::map<std::string, int>> counts;
  for (const std::string &image : images) {
    std::string sass;
    if (!capture(cuobjdump, {"-sass", image}, sass))
      return reportError("cuobjdump failed: " +
                         StringRef(sass).split('\n').first.str());
    // A cached module can hold other models' kernels too: only ours count.
    for (auto &[fn, perArch] : tensorCoreCounts(sass, archs))
      if (kernels.count(fn))
        counts[fn] = perArch;
  }
  int bad = 0, withTc = 0;
  for (auto &[fn, perArch] : counts) {
    bool all = true, any = false;
    std::string detail;
    for (const std::string &a : archs) {
      int n = perArch.count(a) ? perArch.at(a) : 0;
      all &= n > 0;
      any |= n > 0;
      detail += "  " + a + ": " + std::to_string(n);
    }
    withTc += any;
    std::string verdict = any ? "tensor cores" : "-";
    if (tcGemms.count(fn) && !all) {
      verdict = "PROBLEM: a low-precision GEMM without tensor cores";
      ++bad;
    }
    if (fp32Gemms.count(fn) && any) {
      verdict = "PROBLEM: an fp32 GEMM on tensor cores";
      ++bad;
    }
    if (any || tcGemms.count(fn) || fp32Gemms.count(fn))
      outs() << format("  %-32s", fn.c_str()) << " HMMA/HGMMA" << detail
             << "  " << verdict << "\n";
  }
  outs() << withTc << " of " << counts.size()
         << " kernels use tensor cores; " << tcGemms.size()
         << " GEMM/conv kernels are meant to, " << fp32Gemms.size()
         << " fp32 GEMMs are meant not to\n";
  if (bad)
    return reportError(std::to_string(bad) +
                       " kernels do not use tensor cores as intended");
  return 0;
}

} // namespace mpc
