"""Every C++ target whose sources reach LibTorch's headers (directly, or
through a project header that includes them) loads them precompiled: its
copts are TORCH_PCH_COPTS (third_party/torch/pch.bzl). A new LibTorch unit
without them still builds, only 15-30 s slower on 2 cores; this test names
it. The one exception is listed with its reason.

It reads the source tree itself (the folder the layers.bzl runfile points
into), so its target is tagged "external": never cached.
"""
import os
import re
import sys
import unittest

# Targets that must not force-include the header: GCC would refuse the .gch
# (its flags differ) and parse the whole of <torch/torch.h> instead.
EXCEPTIONS = {
    # Built with -DNDEBUG to match LibTorch's RecordFunction layout; the
    # precompiled header is built without it.
    ("workers/gpu", "kernel_recorder"),
}

INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^">]+)[">]', re.M)
RULE = re.compile(r'^(?:cc_library|cc_test|cc_binary)\(\n(.*?)^\)\n', re.S | re.M)
LIBTORCH = ("torch/", "ATen/", "c10/")


class Tree:
    def __init__(self, root):
        self.root = root
        self.memo = {}

    def reaches_libtorch(self, path, seen=()):
        """Whether `path` includes a LibTorch header, itself or through the
        project's headers."""
        if path in self.memo:
            return self.memo[path]
        full = os.path.join(self.root, path)
        found = False
        if path not in seen and os.path.exists(full):
            with open(full, errors="replace") as f:
                for kind, included in INCLUDE.findall(f.read()):
                    if included.startswith(LIBTORCH) or (
                            kind == '"' and self.reaches_libtorch(included, seen + (path,))):
                        found = True
                        break
        self.memo[path] = found
        return found

    def targets(self):
        """(package, name, sources reaching LibTorch, has TORCH_PCH_COPTS)
        for every C++ rule with sources."""
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = [d for d in dirnames
                           if not d.startswith((".", "bazel-")) and d != "third_party"]
            if "BUILD" not in filenames:
                continue
            package = os.path.relpath(dirpath, self.root)
            with open(os.path.join(dirpath, "BUILD")) as f:
                text = f.read()
            for rule in RULE.finditer(text):
                body = rule.group(0)
                name = re.search(r'name = "([^"]+)"', body).group(1)
                srcs = re.search(r'^    srcs = (\[.*?\]|"[^"]*")', body, re.S | re.M)
                if not srcs:
                    continue
                files = re.findall(r'"([^":/]+\.(?:cc|h))"', srcs.group(1))
                uses = [s for s in files if self.reaches_libtorch(os.path.join(package, s))]
                yield package, name, uses, "TORCH_PCH_COPTS" in body


class TorchPchTest(unittest.TestCase):
    root = None

    def test_every_libtorch_unit_loads_the_precompiled_header(self):
        missing, needless = [], []
        for package, name, uses, has in Tree(self.root).targets():
            if (package, name) in EXCEPTIONS:
                if has:
                    needless.append("//%s:%s is an exception but has TORCH_PCH_COPTS" % (package, name))
            elif uses and not has:
                missing.append("//%s:%s (%s): add copts = TORCH_PCH_COPTS" % (
                    package, name, ", ".join(uses)))
            elif has and not uses:
                needless.append("//%s:%s has TORCH_PCH_COPTS but no LibTorch unit" % (package, name))
        self.assertEqual(missing, [])
        self.assertEqual(needless, [])

    def test_the_checker_follows_project_headers(self):
        tree = Tree(self.root)
        # The model's header includes <torch/torch.h>; the model config's
        # does not, and is what LibTorch-free code (hptctl) includes.
        self.assertTrue(tree.reaches_libtorch("models/st_transformer.h"))
        self.assertTrue(tree.reaches_libtorch("models/st_transformer.cc"))
        self.assertFalse(tree.reaches_libtorch("models/model_config.h"))
        found = {(p, n): (bool(u), h) for p, n, u, h in tree.targets()}
        self.assertEqual(found[("models", "st_transformer")], (True, True))
        self.assertEqual(found[("models", "model_config")], (False, False))


if __name__ == "__main__":
    TorchPchTest.root = os.path.dirname(os.path.realpath(sys.argv.pop(1)))
    unittest.main()
