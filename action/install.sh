#!/usr/bin/env bash
# The GitHub Action's install step (action.yml), usable from any CI: download one pinned dlqctl
# release archive for this machine from the GitHub release that the release workflow made,
# check it against the release's .sha256 file, and put `dlqctl` on PATH.
#
# Environment:
#   DLQCTL_VERSION       the release, X.Y.Z (required: pin it)
#   DLQCTL_REPOSITORY    owner/name on GitHub (default: dlqctl/dlqctl)
#   DLQCTL_RELEASES_URL  where the vX.Y.Z/ directories are
#                        (default: https://github.com/$DLQCTL_REPOSITORY/releases/download)
#   DLQCTL_INSTALL_DIR   where to put the binary (default: $RUNNER_TEMP/dlqctl-bin, else
#                        ~/.local/bin); on GitHub Actions it is added to GITHUB_PATH
set -euo pipefail

PROG=dlqctl-install
die() {
    if [[ ${GITHUB_ACTIONS:-} == true ]]; then
        printf '::error title=dlqctl install::%s\n' "$*"
    else
        printf '%s: error: %s\n' "$PROG" "$*" >&2
    fi
    exit 1
}

version=${DLQCTL_VERSION:-}
version=${version#v}
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]*)?$ ]] \
    || die "DLQCTL_VERSION must be a release version X.Y.Z (got '${DLQCTL_VERSION:-}')"
repo=${DLQCTL_REPOSITORY:-dlqctl/dlqctl}
base=${DLQCTL_RELEASES_URL:-https://github.com/$repo/releases/download}
base=${base%/}

# The archives the release workflow builds (dist-workspace.toml): static musl on Linux.
os=$(uname -s)
arch=$(uname -m)
case $os/$arch in
    Linux/x86_64 | Linux/amd64) target=x86_64-unknown-linux-musl ;;
    Linux/aarch64 | Linux/arm64) target=aarch64-unknown-linux-musl ;;
    Darwin/x86_64) target=x86_64-apple-darwin ;;
    Darwin/arm64 | Darwin/aarch64) target=aarch64-apple-darwin ;;
    MINGW*/* | MSYS*/* | CYGWIN*/* | Windows_NT/*) target=x86_64-pc-windows-msvc ;;
    *) die "no dlqctl release archive for $os/$arch (build from source: cargo install dlqctl --locked)" ;;
esac
case $target in
    *windows*) archive=dlqctl-$target.zip exe=dlqctl.exe ;;
    *) archive=dlqctl-$target.tar.xz exe=dlqctl ;;
esac

if [[ -n ${DLQCTL_INSTALL_DIR:-} ]]; then
    dir=$DLQCTL_INSTALL_DIR
elif [[ -n ${RUNNER_TEMP:-} ]]; then
    dir=$RUNNER_TEMP/dlqctl-bin
else
    dir=$HOME/.local/bin
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
url=$base/v$version/$archive
echo "$PROG: downloading $url" >&2
fetch() { curl --proto '=https,file' -fsSL --retry 3 -o "$2" "$1" || die "cannot download $1"; }
fetch "$url" "$tmp/$archive"
fetch "$url.sha256" "$tmp/$archive.sha256"

# The .sha256 file is "HEX *NAME" (sha256sum's format).
want=$(awk 'NR == 1 { print tolower($1) }' "$tmp/$archive.sha256")
if command -v sha256sum >/dev/null 2>&1; then
    got=$(sha256sum "$tmp/$archive" | awk '{ print $1 }')
else
    got=$(shasum -a 256 "$tmp/$archive" | awk '{ print $1 }')
fi
[[ ${#want} -eq 64 && $got == "$want" ]] \
    || die "checksum mismatch for $archive: expected '$want', got '$got' (a corrupted download, or the wrong release)"

mkdir -p "$tmp/x" "$dir"
case $archive in
    *.zip)
        if command -v unzip >/dev/null 2>&1; then unzip -q "$tmp/$archive" -d "$tmp/x"
        else 7z x -y -o"$tmp/x" "$tmp/$archive" >/dev/null; fi
        ;;
    *) tar -xJf "$tmp/$archive" -C "$tmp/x" ;;
esac
# Tarballs hold dlqctl-TARGET/dlqctl (with the man pages and completions), zips are flat.
bin=$(find "$tmp/x" -type f -name "$exe" | head -n 1)
[[ -n $bin ]] || die "$archive has no $exe"
install -m 755 "$bin" "$dir/$exe" 2>/dev/null || { cp "$bin" "$dir/$exe" && chmod 755 "$dir/$exe"; }

if [[ -n ${GITHUB_PATH:-} ]]; then
    printf '%s\n' "$dir" >>"$GITHUB_PATH"
fi
echo "$PROG: installed $("$dir/$exe" --version | head -n 1) as $dir/$exe" >&2
