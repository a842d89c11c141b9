"""The layer map: which package may depend on which.

A package depends only on packages in layers below its own; packages in one
layer never depend on each other. Each BUILD file opens with

    package(default_visibility = dependants("//common"))

so a dependency that runs sideways or upward fails the build (Bazel's
visibility check), and tests/layering_test checks every #include against
the same list. This file is also read as Python by that test: keep it to
plain lists, strings and the one function.
"""

LAYERS = [
    # 0: the system libraries, each wrapped once.
    ["//third_party"],
    # 1: the messages every process shares (generated from proto/).
    ["//proto"],
    # 2: status, gRPC and tensor plumbing shared by every process.
    ["//common"],
    # 3: the device models (cost and numerics) and the data sets.
    ["//devices", "//data"],
    # 4: the spatio-temporal transformer and LoRA.
    ["//models"],
    # 5: the worker's service, server, task book and executor interface;
    # the work record, its costing and the report.
    ["//workers", "//cost"],
    # 6: the worker backends (LibTorch on a GPU; the simulated ReRAM and
    # systolic devices), side by side so neither reaches into the other;
    # the job pages; what a job asks for; how the coordinator reaches its
    # workers.
    ["//workers/gpu", "//workers/sim", "//pages", "//coordinator/spec", "//coordinator/dispatch"],
    # 7: the worker program (a backend behind the server); calibration on a
    # real GPU; one job's training.
    ["//workers/main", "//workers/calibrate", "//coordinator/training"],
    # 8: the jobs.
    ["//coordinator/jobs"],
    # 9: the two programs users run: the coordinator process and hptctl.
    ["//coordinator", "//hptctl"],
    # 10: a cluster in one process: the trainer and job runner over the
    # real backends, which the coordinator never sees, and their tests.
    ["//inprocess"],
    # 11: what measures the rest.
    ["//benchmarks", "//fuzz"],
    # 12: what checks the rest (the docs' flags against every binary's
    # --help, the benchmarks' among them).
    ["//tests"],
]

def dependants(package, hidden_from = ""):
    """The packages in layers above `package`'s, as a visibility list.

    Packages under `hidden_from` (e.g. "//coordinator") are left out: a
    worker backend is hidden from the coordinator, which reaches workers
    only through their gRPC service.
    """
    for i, layer in enumerate(LAYERS):
        if package in layer:
            return [
                p + ":__pkg__"
                for above in LAYERS[i + 1:]
                for p in above
                if not hidden_from or not (p == hidden_from or p.startswith(hidden_from + "/"))
            ]
    fail("package %s is not in layers.bzl's LAYERS" % package)
