#!/usr/bin/env bash
# Create, on a host that cannot pull from any container registry, the two local
# base images that the Dockerfile uses by default:
#
#   localhost/debian:bookworm-slim      Debian 12 root filesystem made with
#                                       debootstrap (minbase), security updates
#                                       applied, docs/man pages/locales dropped.
#                                       Public equivalent: debian:bookworm-slim
#   localhost/mailshelf-builder:latest  the image above plus gcc, libc6-dev,
#                                       ca-certificates, this host's CA bundle
#                                       and this host's Rust toolchain.
#                                       Public equivalent: rust:1-bookworm
#
# Idempotent: an image that already exists is left alone (FORCE=1 rebuilds
# both). Missing tools (podman, runc, debootstrap) are installed with apt-get.
# Must run as root.
#
# Environment:
#   CONTAINERS_CONF  podman settings (default: scripts/containers.conf)
#   RUNTIME_BASE     name of the runtime base image (default above)
#   BUILDER_BASE     name of the builder base image (default above)
#   DEBIAN_MIRROR    Debian mirror for debootstrap (default http://deb.debian.org/debian)
#   BUILD_NETWORK    value for `podman build --network` (e.g. host) when the
#                    default container network cannot reach the Debian mirror
#   FORCE=1          rebuild the images even if they exist
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export CONTAINERS_CONF="${CONTAINERS_CONF:-$SCRIPT_DIR/containers.conf}"

RUNTIME_BASE=${RUNTIME_BASE:-localhost/debian:bookworm-slim}
BUILDER_BASE=${BUILDER_BASE:-localhost/mailshelf-builder:latest}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DEBIAN_SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
SUITE=bookworm
FORCE=${FORCE:-0}

log() { printf '[container-base] %s\n' "$*"; }
die() { printf '[container-base] ERROR: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap and rootful podman)"

WORK=$(mktemp -d /var/tmp/mailshelf-base.XXXXXX)
cleanup() { rm -rf --one-file-system "$WORK"; }
trap cleanup EXIT

# --- tools --------------------------------------------------------------------
ensure_tools() {
    local cmd missing=()
    for cmd in podman runc debootstrap tar; do
        command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
    done
    if [ "${#missing[@]}" -eq 0 ]; then
        log "tools present: $(podman --version), $(runc --version | head -n1)"
        return
    fi
    log "missing: ${missing[*]}; installing podman buildah runc debootstrap with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q podman buildah runc debootstrap tar ca-certificates
    log "installed: $(podman --version)"
}

image_exists() { podman image exists "$1"; }

# --- localhost/debian:bookworm-slim -------------------------------------------
make_runtime_base() {
    if [ "$FORCE" != 1 ] && image_exists "$RUNTIME_BASE"; then
        log "skip: $RUNTIME_BASE already exists"
        return
    fi
    local root="$WORK/rootfs"
    log "debootstrap --variant=minbase $SUITE from $DEBIAN_MIRROR (about a minute)"
    debootstrap --variant=minbase --components=main "$SUITE" "$root" "$DEBIAN_MIRROR" \
        >"$WORK/debootstrap.log" 2>&1 || { tail -n 30 "$WORK/debootstrap.log" >&2; die "debootstrap failed"; }

    # Same package sources as the official image, then apply pending updates.
    rm -f "$root/etc/apt/sources.list"
    cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $DEBIAN_MIRROR
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $DEBIAN_SECURITY_MIRROR
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF

    # "slim" settings, as in the official images: keep dpkg from installing
    # docs, man pages and translations, and keep apt caches out of layers.
    cat >"$root/etc/dpkg/dpkg.cfg.d/docker-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
EOF
    cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
    cat >"$root/etc/apt/apt.conf.d/docker-no-languages" <<'EOF'
Acquire::Languages "none";
EOF
    cat >"$root/etc/apt/apt.conf.d/docker-autoremove-suggests" <<'EOF'
Apt::AutoRemove::SuggestsImportant "false";
EOF

    log "applying $SUITE-updates/$SUITE-security updates"
    DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get update -q >>"$WORK/debootstrap.log" 2>&1 \
        || { tail -n 30 "$WORK/debootstrap.log" >&2; die "apt-get update in the new root failed"; }
    DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get -y -q upgrade >>"$WORK/debootstrap.log" 2>&1 \
        || { tail -n 30 "$WORK/debootstrap.log" >&2; die "apt-get upgrade in the new root failed"; }
    chroot "$root" apt-get clean

    # Drop what the excludes above would have kept out, plus host leftovers.
    find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
    find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
    rm -rf "$root"/usr/share/man/* "$root"/usr/share/groff/* "$root"/usr/share/info/* \
        "$root"/usr/share/lintian/* "$root"/usr/share/linda/* "$root"/usr/share/locale/* \
        "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
        "$root"/var/log/* "$root"/tmp/* "$root"/var/tmp/* "$root/debootstrap"
    mkdir -p "$root/var/lib/apt/lists/partial"
    : >"$root/etc/resolv.conf"
    : >"$root/etc/hostname"
    : >"$root/etc/machine-id"

    log "importing root filesystem as $RUNTIME_BASE"
    tar -C "$root" --numeric-owner --xattrs -c . \
        | podman import --quiet \
            --change 'CMD ["bash"]' \
            --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
            --message "debootstrap --variant=minbase $SUITE" \
            - "$RUNTIME_BASE" >/dev/null
    rm -rf --one-file-system "$root"
    log "created $RUNTIME_BASE ($(podman image inspect --format '{{.Size}}' "$RUNTIME_BASE") bytes)"
}

# --- localhost/mailshelf-builder:latest ---------------------------------------
make_builder_base() {
    if [ "$FORCE" != 1 ] && image_exists "$BUILDER_BASE"; then
        log "skip: $BUILDER_BASE already exists"
        return
    fi
    command -v rustc >/dev/null 2>&1 || die "no Rust toolchain on this host (rustc not in PATH)"
    command -v cargo >/dev/null 2>&1 || die "no Rust toolchain on this host (cargo not in PATH)"
    local sysroot ctx="$WORK/builder"
    sysroot=$(rustc --print sysroot)
    [ -x "$sysroot/bin/cargo" ] || die "cargo not found next to rustc in $sysroot/bin"
    log "using host toolchain $sysroot ($(rustc --version))"

    mkdir -p "$ctx/rust"
    # The whole toolchain (rustc, cargo, std, clippy, rustfmt) without its HTML docs.
    tar -C "$sysroot" --exclude=./share/doc -c . | tar -C "$ctx/rust" -x
    # The host's CA bundle: it may trust a TLS-inspecting egress proxy that
    # crates.io downloads have to pass through.
    cp /etc/ssl/certs/ca-certificates.crt "$ctx/ca-certificates.crt"

    cat >"$ctx/Containerfile" <<EOF
FROM $RUNTIME_BASE
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
      ca-certificates gcc libc6-dev \\
 && rm -rf /var/lib/apt/lists/*
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY rust /usr/local/rust
ENV CARGO_HOME=/usr/local/cargo \\
    PATH=/usr/local/cargo/bin:/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \\
    CARGO_HTTP_CAINFO=/etc/ssl/certs/ca-certificates.crt
RUN mkdir -p "\$CARGO_HOME/bin" && rustc --version && cargo --version && gcc --version | head -n1
CMD ["bash"]
EOF
    log "building $BUILDER_BASE${BUILD_NETWORK:+ (--network=$BUILD_NETWORK)}"
    local flags=()
    [ -n "${BUILD_NETWORK:-}" ] && flags+=("--network=$BUILD_NETWORK")
    podman build "${flags[@]}" --format docker -t "$BUILDER_BASE" -f "$ctx/Containerfile" "$ctx" \
        >"$WORK/builder.log" 2>&1 || { tail -n 40 "$WORK/builder.log" >&2; die "building $BUILDER_BASE failed"; }
    rm -rf --one-file-system "$ctx"
    log "created $BUILDER_BASE ($(podman image inspect --format '{{.Size}}' "$BUILDER_BASE") bytes)"
}

ensure_tools
make_runtime_base
make_builder_base
log "base images ready: $RUNTIME_BASE, $BUILDER_BASE"
