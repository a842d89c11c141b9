"""Every C++ target loads the precompiled header its sources need
(third_party/pch.bzl): TORCH_PCH_COPTS where they reach LibTorch's headers
(directly, or through a project header that includes them), else
SERVICE_PCH_COPTS where they reach a generated message (proto/*.pb.h),
else neither. A unit without its header still builds, only 4-30 s slower
on 2 cores; one with a header it does not need pays a second or two to
load it. This test names both. The one exception is listed with its
reason.

It reads the source tree itself (the folder the layers.bzl runfile points
into), so its target is tagged "external": never cached.
"""
import os
import re
import sys
import unittest

# Targets that must not force-include a header: GCC would refuse the .gch
# (its flags differ) and parse the whole header instead.
EXCEPTIONS = {
    # Built with -DNDEBUG to match LibTorch's RecordFunction layout; the
    # precompiled header is built without it.
    ("workers/gpu", "kernel_recorder"),
}

INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^">]+)[">]', re.M)
RULE = re.compile(r'^(?:cc_library|cc_test|cc_binary)\(\n(.*?)^\)\n', re.S | re.M)
LIBTORCH = ("torch/", "ATen/", "c10/")
MESSAGE = re.compile(r"^proto/[a-z_]+(\.grpc)?\.pb\.h$")

# What a target's copts name, by what its sources reach.
TORCH, SERVICE, NONE = "TORCH_PCH_COPTS", "SERVICE_PCH_COPTS", "no precompiled header"


class Tree:
    def __init__(self, root):
        self.root = root
        self.memo = {}

    def reaches(self, path, seen=()):
        """(LibTorch, a generated message): whether `path` includes each,
        itself or through the project's headers."""
        if path in self.memo:
            return self.memo[path]
        full = os.path.join(self.root, path)
        torch = message = False
        if path not in seen and os.path.exists(full):
            with open(full, errors="replace") as f:
                for kind, included in INCLUDE.findall(f.read()):
                    torch = torch or included.startswith(LIBTORCH)
                    message = message or bool(MESSAGE.match(included))
                    if kind == '"' and not (torch and message):
                        t, m = self.reaches(included, seen + (path,))
                        torch, message = torch or t, message or m
        self.memo[path] = (torch, message)
        return torch, message

    def reaches_libtorch(self, path):
        return self.reaches(path)[0]

    def needs(self, paths):
        """The copts a target compiling `paths` should have."""
        found = [self.reaches(p) for p in paths]
        if any(t for t, _ in found):
            return TORCH
        if any(m for _, m in found):
            return SERVICE
        return NONE

    def targets(self):
        """(package, name, the copts its sources need, the copts it has)
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
                needs = self.needs([os.path.join(package, f) for f in files])
                has = [c for c in (TORCH, SERVICE) if c in body] or [NONE]
                yield package, name, needs, " and ".join(has)


class PchTest(unittest.TestCase):
    root = None

    def test_every_unit_loads_the_header_it_needs(self):
        wrong = []
        for package, name, needs, has in Tree(self.root).targets():
            if (package, name) in EXCEPTIONS:
                needs = NONE
            if needs != has:
                wrong.append("//%s:%s has %s, needs %s" % (package, name, has, needs))
        self.assertEqual(wrong, [])

    def test_the_checker_follows_project_headers(self):
        tree = Tree(self.root)
        # The model's header includes <torch/torch.h>; the model config's
        # does not, and is what LibTorch-free code (hptctl) includes.
        self.assertTrue(tree.reaches_libtorch("models/st_transformer.h"))
        self.assertTrue(tree.reaches_libtorch("models/st_transformer.cc"))
        self.assertEqual(tree.reaches("models/model_config.h"), (False, True))
        self.assertEqual(tree.reaches("data/text_file.h"), (False, False))
        # The tensor codec's header includes the work messages; the
        # coordinator's job service reaches them through its own header.
        self.assertEqual(tree.reaches("common/tensor_codec.h"), (False, True))
        self.assertEqual(tree.needs(["coordinator/job_service.cc"]), SERVICE)
        self.assertEqual(tree.needs(["models/model_config.cc", "models/st_transformer.cc"]), TORCH)
        found = {(p, n): (needs, has) for p, n, needs, has in tree.targets()}
        self.assertEqual(found[("models", "st_transformer")], (TORCH, TORCH))
        self.assertEqual(found[("models", "model_config")], (SERVICE, SERVICE))
        self.assertEqual(found[("data", "text_file")], (NONE, NONE))
        self.assertEqual(found[("coordinator", "job_service")], (SERVICE, SERVICE))


if __name__ == "__main__":
    PchTest.root = os.path.dirname(os.path.realpath(sys.argv.pop(1)))
    unittest.main()
