# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "MPC"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.mpc_obj_root, "test")
config.excludes = ["Inputs", "malformed", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]

llvm_config.use_default_substitutions()
# `not`, FileCheck and count live in the LLVM tools dir (Debian puts only
# FileCheck-19 on PATH).
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.mpc_tools_dir, append_path=False)
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"

llvm_config.add_tool_substitutions(["mpc", "mpc-opt"], [config.mpc_tools_dir])
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%mpc_src", config.mpc_src_root))
config.substitutions.append(("%mpc_tools_dir", config.mpc_tools_dir))
config.substitutions.append(("%torch_python", "/usr/bin/python3"))
config.substitutions.append(("%onnx_testdata", "/usr/share/libonnx-testdata/data"))
if config.mpc_asan:
    config.available_features.add("asan")
