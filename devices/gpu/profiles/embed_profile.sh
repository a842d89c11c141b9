#!/bin/sh
# embed_profile.sh PROFILE OUT.cc: the calibrated H200 profile as the
# string kH200Profile, which the h100 preset parses (devices/gpu/roofline.cc).
# Used by //devices:h200_profile_cc and tools/fuzz.sh.
set -eu
{
  printf '// Generated from %s by devices/gpu/profiles/embed_profile.sh.\n' "$1"
  printf 'namespace hpt {\nextern const char kH200Profile[];\n'
  printf 'const char kH200Profile[] = R"PROFILE(\n'
  cat "$1"
  printf ')PROFILE";\n}  // namespace hpt\n'
} >"$2"
