"""The layer map holds: no package includes a header of a package in its own
layer or above (layers.bzl). Bazel's visibility check already fails a BUILD
dependency that runs upward; this test covers what Bazel does not see here:
an #include of a header whose target is not a declared dependency (the build
runs unsandboxed, so such an include would compile).

It reads the source tree itself (the real folder that the layers.bzl runfile
points into), so its target is tagged "external": never cached.
"""
import ast
import os
import re
import sys
import tempfile
import unittest

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def read_layers(path):
    """LAYERS from layers.bzl, as a list of lists of package names."""
    tree = ast.parse(read(path), path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.targets[0].id == "LAYERS":
            return [[p[2:] for p in layer] for layer in ast.literal_eval(node.value)]
    raise ValueError(path + " has no LAYERS")


def package_of(path, packages):
    """The longest listed package that holds `path`, or None."""
    best = None
    for p in packages:
        if path.startswith(p + "/") and (best is None or len(p) > len(best)):
            best = p
    return best


HIDDEN = re.compile(r'dependants\(\s*"//([^"]+)",\s*hidden_from\s*=\s*"//([^"]+)"\s*\)')
VISIBILITY = re.compile(r'^\s*(?:default_)?visibility\s*=\s*(.*)$', re.M)


def hidden_from(root, layers):
    """{package: the package tree it is hidden from}, read from each BUILD's
    dependants(..., hidden_from = ...)."""
    out = {}
    for layer in layers:
        for p in layer:
            build = os.path.join(root, p, "BUILD")
            if os.path.exists(build):
                for pkg, hidden in HIDDEN.findall(read(build)):
                    if pkg == p:
                        out[p] = hidden
    return out


def under(package, tree):
    return package == tree or package.startswith(tree + "/")


def violations(root, layers, hidden=None):
    """Every include that runs sideways or upward, or into a package hidden
    from the includer, as readable lines."""
    hidden = hidden_from(root, layers) if hidden is None else hidden
    layer_of = {p: i for i, layer in enumerate(layers) for p in layer}
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith((".", "bazel-"))]
        for name in filenames:
            if not name.endswith((".cc", ".h")):
                continue
            path = os.path.relpath(os.path.join(dirpath, name), root)
            src = package_of(path, layer_of)
            if src is None:
                continue
            text = read(os.path.join(root, path))
            for included in INCLUDE.findall(text):
                dst = package_of(included, layer_of)
                if dst is None or dst == src:
                    continue
                if layer_of[dst] >= layer_of[src]:
                    found.append("%s (layer %d, //%s) includes %s (layer %d, //%s)" % (
                        path, layer_of[src], src, included, layer_of[dst], dst))
                elif dst in hidden and under(src, hidden[dst]):
                    found.append("%s (//%s) includes %s (//%s, hidden from //%s)" % (
                        path, src, included, dst, hidden[dst]))
    return found


def visible_to_hidden(root, hidden):
    """Visibility lines in a hidden package's BUILD that open a target to the
    tree it is hidden from: a dependants() without hidden_from, a public
    one, or one naming that tree."""
    out = []
    for pkg, tree in sorted(hidden.items()):
        for line in VISIBILITY.findall(read(os.path.join(root, pkg, "BUILD"))):
            if ("dependants(" in line and "hidden_from" not in line) or \
                    "//visibility:public" in line or '"//%s' % tree in line:
                out.append("//%s: visibility = %s" % (pkg, line.strip()))
    return out


def public_packages(root, layers):
    """Layered packages whose BUILD makes every target public."""
    out = []
    for layer in layers:
        for p in layer:
            build = os.path.join(root, p, "BUILD")
            if os.path.exists(build) and '"//visibility:public"' in read(build):
                out.append(p)
    return out


def plant(root, files):
    """Writes {path: text} under root, making the folders."""
    for path, text in files.items():
        os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(root, path), "w") as f:
            f.write(text)


class LayeringTest(unittest.TestCase):
    root = None

    def setUp(self):
        self.layers = read_layers(os.path.join(self.root, "layers.bzl"))

    def test_every_include_runs_downward(self):
        self.assertEqual(violations(self.root, self.layers), [])

    def test_no_layered_package_is_public(self):
        self.assertEqual(public_packages(self.root, self.layers), [])

    def test_every_package_with_code_is_in_the_map(self):
        listed = {p for layer in self.layers for p in layer}
        missing = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = [d for d in dirnames
                           if not d.startswith((".", "bazel-")) and d != "third_party"]
            rel = os.path.relpath(dirpath, self.root)
            if rel != "." and "BUILD" in filenames and any(
                    f.endswith((".cc", ".h")) for f in filenames) and rel not in listed:
                missing.append(rel)
        self.assertEqual(missing, [])

    def test_checker_finds_an_upward_include(self):
        # The checker itself can fail: a tree where a lower package includes
        # a higher one's header, and one where two packages of a layer meet.
        layers = [["low"], ["mid_a", "mid_b"], ["high"]]
        with tempfile.TemporaryDirectory() as tmp:
            plant(tmp, {
                "low/a.h": '#include "high/b.h"\n',
                "mid_a/c.cc": '#include "mid_b/d.h"\n#include "low/a.h"\n',
                "mid_b/d.h": "",
                "high/b.h": '#include "low/a.h"\n',
            })
            found = violations(tmp, layers)
        self.assertEqual(sorted(found), [
            "low/a.h (layer 0, //low) includes high/b.h (layer 2, //high)",
            "mid_a/c.cc (layer 1, //mid_a) includes mid_b/d.h (layer 1, //mid_b)",
        ])

    def test_the_backends_cannot_reach_into_each_other(self):
        # With this tree's own map: the simulated backend including the GPU
        # backend's header is refused, and so is the worker's service
        # reaching up into a backend; the program above both may use them.
        with tempfile.TemporaryDirectory() as tmp:
            plant(tmp, {
                "workers/sim/fake_executor.cc": '#include "workers/gpu/gpu_session.h"\n',
                "workers/fake_server.cc": '#include "workers/sim/device_executor.h"\n',
                "workers/main/fake_main.cc": ('#include "workers/gpu/gpu_executor.h"\n'
                                              '#include "workers/sim/device_executor.h"\n'
                                              '#include "workers/task_executor.h"\n'),
            })
            found = violations(tmp, self.layers)
        self.assertEqual(sorted(found), [
            "workers/fake_server.cc (layer 5, //workers) includes workers/sim/device_executor.h"
            " (layer 6, //workers/sim)",
            "workers/sim/fake_executor.cc (layer 6, //workers/sim) includes"
            " workers/gpu/gpu_session.h (layer 6, //workers/gpu)",
        ])

    def test_no_backend_target_is_visible_to_the_coordinator(self):
        hidden = hidden_from(self.root, self.layers)
        self.assertEqual(hidden, {"workers/gpu": "coordinator", "workers/sim": "coordinator"})
        self.assertEqual(visible_to_hidden(self.root, hidden), [])

    def test_checker_finds_a_target_opened_to_the_coordinator(self):
        with tempfile.TemporaryDirectory() as tmp:
            plant(tmp, {"workers/gpu/BUILD": (
                'package(default_visibility = dependants("//workers/gpu",'
                ' hidden_from = "//coordinator"))\n'
                'cc_library(\n    name = "a",\n'
                '    visibility = dependants("//workers/gpu"),\n)\n'
                'cc_library(\n    name = "b",\n'
                '    visibility = ["//coordinator/training:__pkg__"],\n)\n'
                'cc_library(\n    name = "c",\n'
                '    visibility = ["//tests:__pkg__"],\n)\n')})
            found = visible_to_hidden(tmp, {"workers/gpu": "coordinator"})
        self.assertEqual(found, [
            '//workers/gpu: visibility = dependants("//workers/gpu"),',
            '//workers/gpu: visibility = ["//coordinator/training:__pkg__"],',
        ])

    def test_the_coordinator_cannot_include_a_backend(self):
        # An #include that Bazel's visibility would not see (the build runs
        # unsandboxed): the coordinator's trainer including the GPU backend
        # is refused, though the backend's layer is below; //inprocess, above
        # both, may.
        with tempfile.TemporaryDirectory() as tmp:
            plant(tmp, {
                "coordinator/training/fake_trainer.cc": '#include "workers/gpu/gpu_executor.h"\n',
                "coordinator/fake_main.cc": '#include "workers/sim/device_executor.h"\n',
                "inprocess/fake_test.cc": '#include "workers/gpu/gpu_executor.h"\n',
            })
            found = violations(tmp, self.layers, hidden_from(self.root, self.layers))
        self.assertEqual(sorted(found), [
            "coordinator/fake_main.cc (//coordinator) includes workers/sim/device_executor.h"
            " (//workers/sim, hidden from //coordinator)",
            "coordinator/training/fake_trainer.cc (//coordinator/training) includes"
            " workers/gpu/gpu_executor.h (//workers/gpu, hidden from //coordinator)",
        ])


if __name__ == "__main__":
    # argv[1]: the layers.bzl runfile; its real path is in the source tree.
    LayeringTest.root = os.path.dirname(os.path.realpath(sys.argv.pop(1)))
    unittest.main()
