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


def violations(root, layers):
    """Every include that runs sideways or upward, as readable lines."""
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
    return found


def public_packages(root, layers):
    """Layered packages whose BUILD makes every target public."""
    out = []
    for layer in layers:
        for p in layer:
            build = os.path.join(root, p, "BUILD")
            if os.path.exists(build) and '"//visibility:public"' in read(build):
                out.append(p)
    return out


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
            for path, text in {
                "low/a.h": '#include "high/b.h"\n',
                "mid_a/c.cc": '#include "mid_b/d.h"\n#include "low/a.h"\n',
                "mid_b/d.h": "",
                "high/b.h": '#include "low/a.h"\n',
            }.items():
                os.makedirs(os.path.join(tmp, os.path.dirname(path)), exist_ok=True)
                with open(os.path.join(tmp, path), "w") as f:
                    f.write(text)
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
            for path, text in {
                "workers/sim/fake_executor.cc": '#include "workers/gpu/gpu_session.h"\n',
                "workers/fake_server.cc": '#include "workers/sim/device_executor.h"\n',
                "workers/main/fake_main.cc": ('#include "workers/gpu/gpu_executor.h"\n'
                                              '#include "workers/sim/device_executor.h"\n'
                                              '#include "workers/task_executor.h"\n'),
            }.items():
                os.makedirs(os.path.join(tmp, os.path.dirname(path)), exist_ok=True)
                with open(os.path.join(tmp, path), "w") as f:
                    f.write(text)
            found = violations(tmp, self.layers)
        self.assertEqual(sorted(found), [
            "workers/fake_server.cc (layer 5, //workers) includes workers/sim/device_executor.h"
            " (layer 6, //workers/sim)",
            "workers/sim/fake_executor.cc (layer 6, //workers/sim) includes"
            " workers/gpu/gpu_session.h (layer 6, //workers/gpu)",
        ])


if __name__ == "__main__":
    # argv[1]: the layers.bzl runfile; its real path is in the source tree.
    LayeringTest.root = os.path.dirname(os.path.realpath(sys.argv.pop(1)))
    unittest.main()
