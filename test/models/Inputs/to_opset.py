"""Converts a model to another opset with onnx's version converter, as a
user upgrading an export would.

usage: to_opset.py VERSION IN.onnx OUT.onnx
"""
import sys

import onnx
from onnx import version_converter

version, src, dst = int(sys.argv[1]), sys.argv[2], sys.argv[3]
model = version_converter.convert_version(onnx.load(src), version)
onnx.checker.check_model(model, full_check=True)
onnx.save(model, dst)
