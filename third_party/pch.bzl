"""Headers precompiled once per build configuration.

Bazel 4 has no precompiled-header support, so `precompiled_header`
compiles a header into a GCC `.gch` with the C++ toolchain's own compile
line for this configuration (the same features, --copt/--cxxopt, PIC,
defines and include paths a cc_library gets; an opt build, which compiles
some units without PIC, gets a second `.gch` without it), and puts the
header and its `.gch` in a folder on the quote-include path under the
name `include_as`. A unit built with the matching copts force-includes
that header first; GCC then loads the `.gch` where its flags match, and
where they do not (another compiler, a macro the header was built with
and the unit lacks) it reads the header itself and warns
(-Winvalid-pch), so a mismatch costs time, never correctness: the
headers inside the `.gch` are the unit's declared inputs too.

Two are built, and a unit loads at most one (GCC takes one `.gch` per
unit):
- `//third_party:torch_pch`, LibTorch's C++ API (`<torch/torch.h>` takes
  20-30 s to parse on the project's 2-core VMs), for units that include
  LibTorch: `copts = TORCH_PCH_COPTS`;
- `//proto:service_pch`, the standard library, Abseil, protobuf, gRPC and
  the project's generated messages (about 170,000 lines, 2-5 s a unit),
  for the other units that include a generated message:
  `copts = SERVICE_PCH_COPTS`.

GCC's dependency file for such a unit lists neither the `.gch` nor the
headers inside it (-fpch-deps adds nothing in GCC 12), and Bazel keeps
only the files a unit's dependency file lists as its inputs. So each
`.gch` comes with a second header, `<include_as>_id.h`, force-included
after it, that holds the `.gch`'s SHA-256: being read as text it is
listed, and when anything inside the `.gch` changes (a generated
message, a LibTorch header) its digest changes and every unit that
loads it is compiled again. Without it a changed `.proto` could link
objects built against the old message layout.

tests/pch_test checks that every target takes the one its sources need.
A unit with the service header sees every generated message, so a type of
its own named like a message in `namespace hpt` collides with it (GCC
names both); name it otherwise.
"""

load("@bazel_tools//tools/build_defs/cc:action_names.bzl", "CPP_COMPILE_ACTION_NAME")
load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")

# The names the two headers are force-included by; one name each for the
# copts and the rule.
TORCH_PCH = "hpt_torch_pch.h"
SERVICE_PCH = "hpt_service_pch.h"

def _id_header(include_as):
    """The name of the header that holds the digest of include_as's `.gch`."""
    return include_as[:-len(".h")] + "_id.h"

# For a cc_library or cc_test whose sources include LibTorch's C++ API.
TORCH_PCH_COPTS = ["-include", TORCH_PCH, "-include", _id_header(TORCH_PCH), "-Winvalid-pch"]

# For one whose sources include a generated message (proto/*.pb.h) and no
# LibTorch.
SERVICE_PCH_COPTS = ["-include", SERVICE_PCH, "-include", _id_header(SERVICE_PCH), "-Winvalid-pch"]

def _compile_header(ctx, features, cc_toolchain, context, header, gch, use_pic):
    """Compiles `header` into the `.gch` file `gch`, as PIC or not."""
    variables = cc_common.create_compile_variables(
        feature_configuration = features,
        cc_toolchain = cc_toolchain,
        user_compile_flags = ctx.fragments.cpp.copts + ctx.fragments.cpp.cxxopts,
        include_directories = context.includes,
        quote_include_directories = context.quote_includes,
        system_include_directories = context.system_includes,
        preprocessor_defines = context.defines,
        use_pic = use_pic,
    )
    flags = cc_common.get_memory_inefficient_command_line(
        feature_configuration = features,
        action_name = CPP_COMPILE_ACTION_NAME,
        variables = variables,
    )
    env = cc_common.get_environment_variables(
        feature_configuration = features,
        action_name = CPP_COMPILE_ACTION_NAME,
        variables = variables,
    )
    ctx.actions.run(
        executable = cc_common.get_tool_for_action(
            feature_configuration = features,
            action_name = CPP_COMPILE_ACTION_NAME,
        ),
        arguments = flags + ["-x", "c++-header", header.path, "-o", gch.path],
        env = env,
        inputs = depset([header], transitive = [context.headers, cc_toolchain.all_files]),
        outputs = [gch],
        mnemonic = "CppPrecompileHeader",
        progress_message = "Precompiling %s for %s%s" % (
            ctx.file.header.short_path,
            ctx.label,
            "" if use_pic else " (no PIC)",
        ),
    )

def _precompiled_header_impl(ctx):
    cc_toolchain = find_cpp_toolchain(ctx)
    features = cc_common.configure_features(
        ctx = ctx,
        cc_toolchain = cc_toolchain,
        requested_features = ctx.features,
        unsupported_features = ctx.disabled_features,
    )
    deps = cc_common.merge_cc_infos(cc_infos = [d[CcInfo] for d in ctx.attr.deps])
    context = deps.compilation_context

    header = ctx.actions.declare_file(ctx.attr.name + "/" + ctx.attr.include_as)
    ctx.actions.expand_template(template = ctx.file.header, output = header, substitutions = {})

    # Bazel compiles every library as PIC (.pic.o), except in an opt build,
    # where a binary's own units are compiled without it; GCC loads a
    # `.gch` only where its flags match. An opt build therefore gets both
    # kinds, as files in a `<include_as>.gch` folder, where GCC tries each.
    gch_name = ctx.attr.name + "/" + ctx.attr.include_as + ".gch"
    if ctx.var["COMPILATION_MODE"] == "opt":
        gchs = [
            ctx.actions.declare_file(gch_name + "/pic"),
            ctx.actions.declare_file(gch_name + "/nopic"),
        ]
    else:
        gchs = [ctx.actions.declare_file(gch_name)]
    for i, gch in enumerate(gchs):
        _compile_header(ctx, features, cc_toolchain, context, header, gch, use_pic = i == 0)

    # The `.gch`s' digest as a header of its own (see the module's doc).
    id_header = ctx.actions.declare_file(ctx.attr.name + "/" + _id_header(ctx.attr.include_as))
    ctx.actions.run_shell(
        command = 'set -e; out="$1"; shift; sum=$(cat "$@" | sha256sum); printf "// %s\\n" "${sum%% *}" > "$out"',
        arguments = [id_header.path] + [g.path for g in gchs],
        inputs = gchs,
        outputs = [id_header],
        mnemonic = "CppPrecompiledHeaderDigest",
        progress_message = "Digesting %s's precompiled header" % ctx.label,
    )
    outputs = gchs + [id_header]

    # The headers inside the `.gch` stay the unit's declared inputs: where
    # GCC cannot load the `.gch` (an opt build compiles binaries' units
    # without PIC, the `.gch` is PIC) it reads them as text.
    compilation_context = cc_common.create_compilation_context(
        headers = depset([header, id_header] + gchs, transitive = [context.headers]),
        includes = context.includes,
        quote_includes = depset([header.dirname], transitive = [context.quote_includes]),
        system_includes = context.system_includes,
        defines = context.defines,
    )
    return [
        DefaultInfo(files = depset(outputs), runfiles = ctx.runfiles(files = outputs)),
        CcInfo(compilation_context = compilation_context),
    ]

precompiled_header = rule(
    implementation = _precompiled_header_impl,
    attrs = {
        "header": attr.label(allow_single_file = [".h"], mandatory = True),
        # The name units force-include it by: TORCH_PCH or SERVICE_PCH.
        "include_as": attr.string(mandatory = True, values = [TORCH_PCH, SERVICE_PCH]),
        "deps": attr.label_list(providers = [CcInfo]),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    },
    fragments = ["cpp"],
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    incompatible_use_toolchain_transition = True,
)
