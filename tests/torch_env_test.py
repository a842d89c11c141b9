"""tools/torch_env.py: where a machine's own torch is (HPT_TORCH), and which
NCCL headers its build needs. Fake torch installations stand in for the
real ones: what is read is a torch/ folder, its METADATA and an nccl.h."""
import os
import subprocess
import sys
import tempfile
import unittest

TORCH_ENV = os.path.abspath(sys.argv.pop(1))


def make_site(root, nccl_required="2.28.9", nccl_beside="2.29.7"):
    """A site-packages folder with a fake torch built with `nccl_required`
    and the nvidia-nccl headers of `nccl_beside` next to it."""
    site = os.path.join(root, "site-packages")
    os.makedirs(os.path.join(site, "torch", "lib"))
    open(os.path.join(site, "torch", "__init__.py"), "w").close()
    open(os.path.join(site, "torch", "lib", "libtorch_cpu.so"), "w").close()
    info = os.path.join(site, "torch-2.11.0+cu130.dist-info")
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0+cu130\n")
        if nccl_required:
            f.write("Requires-Dist: nvidia-nccl-cu13==%s; platform_system == \"Linux\"\n"
                    % nccl_required)
    if nccl_beside:
        include = os.path.join(site, "nvidia", "nccl", "include")
        os.makedirs(include)
        major, minor, patch = nccl_beside.split(".")
        with open(os.path.join(include, "nccl.h"), "w") as f:
            f.write("#define NCCL_MAJOR %s\n#define NCCL_MINOR %s\n#define NCCL_PATCH %s\n"
                    % (major, minor, patch))
    return site


def locate(site):
    """torch_env.py locate, with a Python that finds the fake torch."""
    env = dict(os.environ, PYTHONPATH=site)
    run = subprocess.run([sys.executable, TORCH_ENV, "locate", sys.executable],
                         capture_output=True, text=True, env=env, timeout=60)
    return run.returncode, dict(l.split("=", 1) for l in run.stdout.split("\n") if "=" in l), \
        run.stderr


class TorchEnvTest(unittest.TestCase):
    def test_headers_of_another_nccl_version_are_not_used(self):
        # The trap measured on an H100: 2.29.7 headers against a libtorch
        # built with 2.28.9 crash ProcessGroupNCCL's destructor.
        with tempfile.TemporaryDirectory() as tmp:
            site = make_site(tmp, nccl_required="2.28.9", nccl_beside="2.29.7")
            code, found, err = locate(site)
            self.assertEqual(code, 0, err)
            self.assertEqual(found["TORCH_SITE"], site)
            self.assertEqual(found["TORCH_VERSION"], "2.11.0+cu130")
            self.assertEqual(found["NCCL_REQUIRED"], "2.28.9")
            self.assertEqual(found["CUDA_MAJOR"], "13")
            self.assertEqual(found["NCCL_HEADERS"], "")

    def test_matching_headers_beside_torch_are_used(self):
        with tempfile.TemporaryDirectory() as tmp:
            site = make_site(tmp, nccl_required="2.28.9", nccl_beside="2.28.9")
            code, found, err = locate(site)
            self.assertEqual(code, 0, err)
            self.assertEqual(found["NCCL_HEADERS"], os.path.join(site, "nvidia", "nccl", "include"))

    def test_a_python_without_torch_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, found, err = locate(tmp)
            self.assertEqual(code, 2)
            self.assertIn("has no LibTorch", err)

    def test_fetched_headers_already_there_are_kept(self):
        with tempfile.TemporaryDirectory() as tmp:
            include = os.path.join(tmp, "nccl-2.28.9", "include")
            os.makedirs(include)
            with open(os.path.join(include, "nccl.h"), "w") as f:
                f.write("#define NCCL_MAJOR 2\n#define NCCL_MINOR 28\n#define NCCL_PATCH 9\n")
            run = subprocess.run([sys.executable, TORCH_ENV, "fetch-nccl", "2.28.9", "13",
                                  os.path.join(tmp, "nccl-2.28.9")],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertEqual(run.stdout.strip(), include)


if __name__ == "__main__":
    unittest.main()
