"""Every flag the documentation names is one a program of this repository
takes, as its --help lists it, or one of the few outside tools' flags the
docs show (listed below with the tool). A renamed or removed flag left in a
doc fails here, naming the file and line.

Usage: doc_flags_test.py --binaries B1 B2 ... --docs D1 D2 ...
The binaries print their flags with --helpfull (Abseil) or --help
(argparse: deploy/launch.py, run with python3).
"""
import re
import subprocess
import sys
import unittest

# Flags of tools that are not ours, as the docs use them.
OUTSIDE = {
    # bazel
    "--config", "--test_output", "--test_filter", "--test_env", "--jobs",
    "--disk_cache", "--compilation_mode", "--copt", "--cxxopt", "--keep_going",
    # docker / docker compose
    "--build", "--env-file", "--profile", "--no-build", "--gpus",
    # pip
    "--no-deps", "--index-url",
    # the linker (docs/building.md)
    "--no-as-needed", "--as-needed", "--push-state", "--pop-state",
    # chromium, kubernetes-validate, NeuroSim's own flag (docs/devices.md)
    "--headless", "--screenshot", "--strict", "--vari",
    # kubectl
    "--from-file",
    # Slurm: sbatch, srun (docs/slurm.md)
    "--partition", "--nodes", "--ntasks", "--ntasks-per-node", "--gres", "--gpus-per-node",
    "--time", "--account", "--mem", "--export", "--overlap", "--nodelist", "--no-kill",
    "--requeue", "--cpus-per-task",
    # ./hpt compose-test; tools/format_check.sh
    "--from-source", "--fix",
    # Abseil's own
    "--help", "--helpfull", "--flagfile",
}

FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9_-]*)")
HELP_FLAG = re.compile(r"^\s+(--[a-z][a-z0-9_]*)", re.M)
ARGPARSE_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9_-]*[a-z0-9_])")


def flags_of(binary):
    """The flags `binary` lists in its help."""
    if binary.endswith(".py"):
        out = subprocess.run(["/usr/bin/python3", binary, "--help"], capture_output=True,
                             text=True, timeout=60).stdout
        return set(ARGPARSE_FLAG.findall(out))
    out = subprocess.run([binary, "--helpfull"], capture_output=True, text=True, timeout=60)
    text = out.stdout + out.stderr
    # The flag list, and flags the usage text names (hptctl takes --set and
    # --grid, which repeat, before Abseil parses the rest).
    found = set(HELP_FLAG.findall(text))
    usage = text.split("\n  Flags from")[0]
    found |= set(ARGPARSE_FLAG.findall(usage))
    # Abseil takes --noFLAG for a boolean FLAG.
    return found | {"--no" + f[2:] for f in found}


def code_lines(path):
    """(line number, text) of the parts a reader types: `spans` and fenced
    blocks."""
    with open(path, errors="replace") as f:
        lines = f.read().split("\n")
    fenced = False
    for number, line in enumerate(lines, 1):
        if line.strip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            yield number, line
        else:
            for span in re.findall(r"`([^`]+)`", line):
                yield number, span


def unknown_flags(docs, known):
    found = []
    for doc in docs:
        for number, text in code_lines(doc):
            for flag in FLAG.findall(text):
                flag = flag.rstrip("-")
                # "--reram_*": a family of flags, known if one starts so.
                if flag.endswith("_") and any(k.startswith(flag) for k in known):
                    continue
                if flag not in known:
                    found.append("%s:%d: %s" % (doc, number, flag))
    return found


class DocFlagsTest(unittest.TestCase):
    binaries = []
    docs = []

    def test_every_documented_flag_exists(self):
        known = set(OUTSIDE)
        for binary in self.binaries:
            flags = flags_of(binary)
            self.assertGreater(len(flags), 0, binary + " listed no flags")
            known |= flags
        self.assertEqual(unknown_flags(self.docs, known), [])

    def test_a_stale_flag_is_found(self):
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
            f.write("Run `hpt_devsim --word_bytes=2`, or\n```\nhptctl --watch\n```\n")
        self.assertEqual(unknown_flags([f.name], {"--watch"}), [f.name + ":1: --word_bytes"])


if __name__ == "__main__":
    args = sys.argv[1:]
    DocFlagsTest.binaries = args[args.index("--binaries") + 1:args.index("--docs")]
    DocFlagsTest.docs = args[args.index("--docs") + 1:]
    del sys.argv[1:]
    unittest.main()
