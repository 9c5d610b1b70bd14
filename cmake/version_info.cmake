# Build-time generator of heatsolve's provenance source (app/version.hpp declares it). Run by
# the heatsolve_version_info target on every build (app/CMakeLists.txt): it asks git for the
# commit and rewrites OUTPUT only when the text changes, so a new HEAD (or a tree that became
# dirty or clean) recompiles this one file and relinks, and nothing else.
#
#   cmake -DSOURCE_DIR=... -DOUTPUT=....cpp -DVERSION=0.2.0 -DCOMPILER="GNU 12.2.0"
#         [-DCUDA_COMPILER="NVIDIA 13.0.48 (sm_90)"] [-DBUILD_TYPE=Release]
#         [-DGIT_EXECUTABLE=/usr/bin/git] [-DCOMMIT_OVERRIDE=...] -P version_info.cmake
#
# commit: 12 hex digits of HEAD, "-dirty" appended when tracked files differ from it (untracked
# files do not count); "unknown" outside a git checkout (a source tarball: the source directory
# has no .git of its own, so an enclosing repository is not mistaken for ours). COMMIT_OVERRIDE
# (the HEATSOLVE_BUILD_COMMIT cache variable) replaces the lookup, e.g. for packagers.
cmake_minimum_required(VERSION 3.24)

set(commit "unknown")
if(COMMIT_OVERRIDE)
  set(commit "${COMMIT_OVERRIDE}")
elseif(GIT_EXECUTABLE AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE head RESULT_VARIABLE rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(rc EQUAL 0 AND head)
    set(commit "${head}")
    # --no-optional-locks: never take the index lock a concurrent git command may hold.
    execute_process(COMMAND "${GIT_EXECUTABLE}" --no-optional-locks -C "${SOURCE_DIR}" status
                            --porcelain --untracked-files=no
                    OUTPUT_VARIABLE changes RESULT_VARIABLE rc
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(NOT rc EQUAL 0)
      set(commit "${commit}-unknown-state")
    elseif(NOT changes STREQUAL "")
      set(commit "${commit}-dirty")
    endif()
  endif()
endif()

foreach(var VERSION COMPILER CUDA_COMPILER BUILD_TYPE commit)
  string(REPLACE "\\" "\\\\" ${var}_escaped "${${var}}")
  string(REPLACE "\"" "\\\"" ${var}_escaped "${${var}_escaped}")
endforeach()

set(text "// Generated at build time by cmake/version_info.cmake: do not edit.
#include \"app/version.hpp\"

namespace heatsolve {

const BuildInfo& build_info() {
  static const BuildInfo info{\"${VERSION_escaped}\", \"${commit_escaped}\", \"${COMPILER_escaped}\",
                              \"${CUDA_COMPILER_escaped}\", \"${BUILD_TYPE_escaped}\"};
  return info;
}

}  // namespace heatsolve
")

set(old "")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUTPUT}" "${text}")
endif()
