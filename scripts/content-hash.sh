#!/usr/bin/env bash
# Print a stable hash of what the wheel ships: the package, validators/, hooks/, agents/, each CI
# component's templates/<name>/template.yml, and pyproject.toml, README.md and LICENSE (the wheel's metadata: dependencies, description,
# licence). Each file counts by its path, its run bit and its bytes; mtimes, ownership and the
# order files are found in do not.
# In a git checkout the files are git's tracked and untracked-but-not-ignored ones (the same
# selection the wheel build makes); elsewhere, every regular file outside __pycache__.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C

payload=(pyproject.toml README.md LICENSE pairgate validators hooks agents templates/*/template.yml)

list_payload() {
  if [[ "$(git rev-parse --show-toplevel 2>/dev/null)" == "$PWD" ]]; then
    git ls-files -z --cached --others --exclude-standard -- "${payload[@]}"
  else
    find "${payload[@]}" \( -type f -o -type l \) ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 2>/dev/null || true
  fi
}

if command -v sha256sum >/dev/null; then sha256() { sha256sum "$@"; }; else sha256() { shasum -a 256 "$@"; }; fi

files=()
while IFS= read -r -d '' path; do
  # A tracked file deleted from the work tree is not shipped. A symlink to a file ships as its
  # target's bytes and mode (so -f, -x and sha256sum follow it); one to a directory does not ship.
  [[ -f $path ]] && files+=("$path")
done < <(list_payload | sort -zu)

if ((${#files[@]} == 0)); then
  echo "content-hash.sh: nothing to hash in $PWD" >&2
  exit 2
fi

{
  for path in "${files[@]}"; do
    if [[ -x $path ]]; then echo "755 $path"; else echo "644 $path"; fi
  done
  sha256 -- "${files[@]}"
} | sha256 | cut -c1-12
