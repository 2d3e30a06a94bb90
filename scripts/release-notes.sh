#!/bin/sh
# The notes of the release a tag vX.Y.Z makes: CHANGELOG.md's "## X.Y.Z" section, then the
# sha256 of each DIST given. It refuses (exit 1) a tag that is not vX.Y.Z and a commit the CI/CD
# Catalog would not publish (no README.md, no component under templates/), and a CHANGELOG.md
# with no section for the version. The job catalog-release runs it with GitLab's cli image (sh,
# no Python) and hands what it prints to the release: keyword.
#
#   sh scripts/release-notes.sh vX.Y.Z [DIST...] > release-notes.md
set -eu

me=release-notes.sh
if [ $# -lt 1 ]; then
  echo "usage: $me vX.Y.Z [DIST...]" >&2
  exit 2
fi
tag=$1
shift
version=${tag#v}

refuse() {
  echo "$me: refused: $1" >&2
  exit 1
}

if [ "v$version" != "$tag" ] || ! printf '%s\n' "$version" | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+$'; then
  refuse "the tag $tag is not vX.Y.Z; the CI/CD Catalog takes semantic versions only"
fi
[ -f README.md ] || refuse "there is no README.md at the tagged commit; the CI/CD Catalog needs one"
component=$(find templates -maxdepth 2 \( -path 'templates/*.yml' -o -path 'templates/*/template.yml' \) 2>/dev/null | head -n 1)
[ -n "$component" ] || refuse "there is no component under templates/ at the tagged commit"

# The lines after "## X.Y.Z" (a date may follow it) up to the next "## " heading.
notes=$(awk -v v="$version" '
  /^## / { inside = ($2 == v || $2 == "[" v "]") ; next }
  inside { print }
' CHANGELOG.md 2>/dev/null || true)
if [ -z "$(printf '%s' "$notes" | tr -d '[:space:]')" ]; then
  refuse "CHANGELOG.md has no \"## $version\" section, or it is empty; move the Unreleased entries under it (RELEASING.md)"
fi

printf '%s\n' "$notes"
if [ $# -gt 0 ]; then
  printf '\n### Files\n\n'
  for dist in "$@"; do
    [ -f "$dist" ] || refuse "$dist does not exist"
    sum=$(sha256sum "$dist" | cut -d ' ' -f 1)
    # shellcheck disable=SC2016 # the backquotes are Markdown's
    printf -- '- `%s`: sha256 `%s`\n' "$(basename "$dist")" "$sum"
  done
fi
