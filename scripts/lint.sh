#!/usr/bin/env bash
# lint.sh: the house style and static checks. clang-format (.clang-format) must leave every
# source file as it is; clang-tidy (.clang-tidy) runs over src/ and guest-init/ with the build's
# compile_commands.json and prints what it finds (advice, not a gate: its findings are reviewed,
# not counted). Usage: scripts/lint.sh [--fix-format | --format-only] [BUILD_DIR]  (default build/)
#   --fix-format   reformat the files in place instead of checking them
#   --format-only  check the formatting only (ctest's "format" test)
# Needs clang-format and clang-tidy (Debian: apt-get install clang-format clang-tidy).
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0 format_only=0
case "${1:-}" in
  --fix-format) fix=1; shift ;;
  --format-only) format_only=1; shift ;;
esac
build=${1:-build}
mapfile -t files < <(git ls-files --cached --others --exclude-standard 'src/*.cpp' 'src/*.h' 'guest-init/*.cpp' 'guest-init/*.h' 'tests/unit/*.cpp' 'tests/unit/*.h' 'tests/fuzz/*.cpp')
if [ $fix = 1 ]; then
  clang-format -i "${files[@]}"
  echo "lint: formatted ${#files[@]} files"
  exit 0
fi
bad=$(clang-format --dry-run "${files[@]}" 2>&1 | grep -oE '^[^:]+:[0-9]+:[0-9]+: (warning|error)' | cut -d: -f1 | sort -u || true)
if [ -n "$bad" ]; then
  echo "lint: not formatted as .clang-format says (run scripts/lint.sh --fix-format):" >&2
  echo "$bad" >&2
  exit 1
fi
echo "lint: ${#files[@]} files formatted"
[ $format_only = 1 ] && exit 0
if [ -f "$build/compile_commands.json" ] && command -v run-clang-tidy >/dev/null; then
  run-clang-tidy -quiet -p "$build" 'src/|guest-init/' 2>/dev/null | grep -E 'warning:|error:' | sort -u || true
else
  echo "lint: clang-tidy skipped (configure with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON; needs run-clang-tidy)"
fi
