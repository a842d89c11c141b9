"""hpt_proto_library: C++ (and gRPC) code from a .proto with the system protoc.

No @com_google_protobuf repository exists offline, so proto_library cannot be
used; this macro runs Debian's protoc and grpc_cpp_plugin in a genrule and
wraps the generated files in a cc_library named after the macro.
"""

def hpt_proto_library(name, srcs, deps = [], grpc = False, visibility = None):
    """Generates <name> (cc_library) from srcs.

    Args:
      name: the cc_library name.
      srcs: .proto files in this package.
      deps: other hpt_proto_library targets whose protos srcs import.
      grpc: also generate gRPC service stubs.
      visibility: of the cc_library.
    """
    outs = []
    for src in srcs:
        base = src[:-len(".proto")]
        outs += [base + ".pb.h", base + ".pb.cc"]
        if grpc:
            outs += [base + ".grpc.pb.h", base + ".grpc.pb.cc"]
    dep_protos = [d + "_protos" for d in deps]
    native.filegroup(
        name = name + "_protos",
        srcs = srcs + dep_protos,
        visibility = visibility,
    )
    cmd = "/usr/bin/protoc -I. --cpp_out=$(GENDIR) "
    if grpc:
        cmd += "--grpc_out=$(GENDIR) --plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin "
    cmd += " ".join(["$(location %s)" % s for s in srcs])
    native.genrule(
        name = name + "_gen",
        srcs = srcs + dep_protos,
        outs = outs,
        cmd = cmd,
    )
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        copts = ["-Wno-unused-parameter"],
        deps = deps + ["//third_party:protobuf"] + (["//third_party:grpc"] if grpc else []),
        visibility = visibility,
    )
