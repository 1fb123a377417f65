"""Writes TensorBoard's event.proto and the files it imports as a
FileDescriptorSet, read from the installed tensorboard package (its wheel
ships the compiled descriptors, not the .proto sources). The build runs
protoc --descriptor_set_in on it, so mpc's event writer is generated from
TensorBoard's own schema.

usage: tensorboard_descriptors.py OUT.pb
"""
import sys

from google.protobuf import descriptor_pb2
from tensorboard.compat.proto import event_pb2

files = {}


def add(fd):
    if fd.name in files:
        return
    for dep in fd.dependencies:
        add(dep)
    proto = descriptor_pb2.FileDescriptorProto()
    fd.CopyToProto(proto)
    files[fd.name] = proto  # dependencies first, as protoc wants


add(event_pb2.DESCRIPTOR)
out = descriptor_pb2.FileDescriptorSet()
out.file.extend(files.values())
open(sys.argv[1], "wb").write(out.SerializeToString())
