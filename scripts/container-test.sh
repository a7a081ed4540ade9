#!/usr/bin/env bash
# Build the container image from ./Dockerfile with podman and prove it works:
#
#   1. scripts/container-base.sh makes the local base images (no registry pulls)
#   2. `podman build -t mailshelf .` with the Dockerfile unchanged
#   3. run it with samples/ mounted read-only at /mail, a fresh named volume at
#      /data and port 8080 published on a free 127.0.0.1 port
#   4. poll GET /api/status until ready (bounded), require messages > 0
#   5. require the image's HEALTHCHECK (`mailshelf healthcheck`) to report healthy
#   6. require the server to run as a non-root user, /data to be writable and
#      /mail to be read-only
#   7. print the image size and the build time, then remove the container
#
# Exits non-zero on any failure. Must run as root (rootful podman).
#
# Environment:
#   IMAGE           tag to build (default: mailshelf)
#   BUILD_NETWORK   value for `podman build --network`; set BUILD_NETWORK=host
#                   when the default container network cannot reach crates.io
#                   (the dependency download happens inside the build)
#   NO_CACHE=1      build without reusing cached layers (cold build timing)
#   READY_TIMEOUT   seconds to wait for readiness and health (default: 60)
#   CONTAINERS_CONF podman settings (default: scripts/containers.conf)
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$SCRIPT_DIR/.." && pwd)
cd "$REPO_DIR"

export CONTAINERS_CONF="${CONTAINERS_CONF:-$SCRIPT_DIR/containers.conf}"
# Podman's default image format (OCI) cannot carry HEALTHCHECK; build Docker
# format images so the Dockerfile's HEALTHCHECK is kept, as `docker build` does.
export BUILDAH_FORMAT=docker

IMAGE=${IMAGE:-mailshelf}
READY_TIMEOUT=${READY_TIMEOUT:-60}
EXPECTED_UID=10001
RUN_ID="$$-$(date +%s)"
CONTAINER="mailshelf-test-$RUN_ID"
VOLUME="mailshelf-test-data-$RUN_ID"
WORK=$(mktemp -d /var/tmp/mailshelf-test.XXXXXX)
STARTED=0

log() { printf '[container-test] %s\n' "$*"; }
fail() { printf '[container-test] FAIL: %s\n' "$*" >&2; exit 1; }

cleanup() {
    local rc=$?
    if [ "$STARTED" = 1 ]; then
        if [ "$rc" -ne 0 ]; then
            log "container logs:"
            podman logs --tail 50 "$CONTAINER" 2>&1 || true
        fi
        podman rm -f -t 5 "$CONTAINER" >/dev/null 2>&1 || true
        podman volume rm -f "$VOLUME" >/dev/null 2>&1 || true
    fi
    rm -rf "$WORK"
    if [ "$rc" -eq 0 ]; then
        log "PASS"
    else
        log "FAILED (exit $rc)"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" -eq 0 ] || fail "must run as root (rootful podman)"
command -v curl >/dev/null 2>&1 || fail "curl is required"

# --- 1. base images -----------------------------------------------------------
"$SCRIPT_DIR/container-base.sh"

# --- 2. build -----------------------------------------------------------------
build_flags=()
[ -n "${BUILD_NETWORK:-}" ] && build_flags+=("--network=$BUILD_NETWORK")
[ "${NO_CACHE:-0}" = 1 ] && build_flags+=("--no-cache")
log "podman build ${build_flags[*]} -t $IMAGE ."
build_start=$(date +%s)
podman build "${build_flags[@]}" -t "$IMAGE" . 2>&1 | tee "$WORK/build.log" \
    || fail "podman build failed"
build_seconds=$(( $(date +%s) - build_start ))
log "build finished in ${build_seconds}s"

healthcheck=$(podman image inspect --format '{{json .Config.Healthcheck}}' "$IMAGE")
case "$healthcheck" in
    *mailshelf*healthcheck*) log "image HEALTHCHECK: $healthcheck" ;;
    *) fail "image has no 'mailshelf healthcheck' HEALTHCHECK (got: $healthcheck)" ;;
esac

# --- 3. run -------------------------------------------------------------------
podman volume create "$VOLUME" >/dev/null
STARTED=1
if ! podman run -d --name "$CONTAINER" \
        -v "$REPO_DIR/samples:/mail:ro" \
        -v "$VOLUME:/data" \
        -p 127.0.0.1::8080 \
        "$IMAGE" >/dev/null 2>"$WORK/run.err"; then
    cat "$WORK/run.err" >&2
    fail "podman run failed"
fi
# Without systemd, podman cannot set up its periodic health-check timer and
# says so on stderr; that is expected here (step 5 runs the check directly).
if grep -q 'systemd connection' "$WORK/run.err"; then
    log "no systemd: podman's periodic health timer is unavailable, checks run via 'podman healthcheck run'"
fi
grep -v 'systemd connection' "$WORK/run.err" >&2 || true
mapping=$(podman port "$CONTAINER" 8080/tcp | head -n1)
PORT=${mapping##*:}
case "$PORT" in ''|*[!0-9]*) fail "could not read the published port (got '$mapping')" ;; esac
BASE_URL="http://127.0.0.1:$PORT"
log "container $CONTAINER started, 8080/tcp published on $BASE_URL"

container_running() {
    [ "$(podman inspect --format '{{.State.Running}}' "$CONTAINER" 2>/dev/null)" = true ]
}

# --- 4. readiness -------------------------------------------------------------
deadline=$(( $(date +%s) + READY_TIMEOUT ))
status_json=""
while :; do
    container_running || fail "container exited before becoming ready"
    if status_json=$(curl -fsS --max-time 5 "$BASE_URL/api/status" 2>/dev/null) \
        && [[ $status_json =~ \"ready\"[[:space:]]*:[[:space:]]*true ]]; then
        break
    fi
    [ "$(date +%s)" -lt "$deadline" ] || fail "GET /api/status not ready within ${READY_TIMEOUT}s (last: ${status_json:-no answer})"
    sleep 1
done
log "GET /api/status: $status_json"
[[ $status_json =~ \"messages\"[[:space:]]*:[[:space:]]*([0-9]+) ]] \
    || fail "no messages count in /api/status"
messages=${BASH_REMATCH[1]}
[ "$messages" -gt 0 ] || fail "messages is $messages, expected > 0"
log "ready with $messages messages"
container_log=$(podman logs "$CONTAINER" 2>&1)
case "$container_log" in
    *"mailshelf serving on http://"*) ;;
    *) fail "startup line 'mailshelf serving on http://...' not in the logs" ;;
esac

# --- 5. health ----------------------------------------------------------------
# The periodic health timer needs systemd, which may be absent; `podman
# healthcheck run` executes the image's HEALTHCHECK command now and records
# the result in the container's health status either way.
health=""
while :; do
    health=$(podman inspect --format '{{.State.Health.Status}}' "$CONTAINER" 2>/dev/null || true)
    [ "$health" = healthy ] && break
    container_running || fail "container exited while waiting for health"
    podman healthcheck run "$CONTAINER" >/dev/null 2>&1 || true
    health=$(podman inspect --format '{{.State.Health.Status}}' "$CONTAINER" 2>/dev/null || true)
    [ "$health" = healthy ] && break
    [ "$(date +%s)" -lt "$deadline" ] || fail "health status is '${health:-none}', not healthy, after ${READY_TIMEOUT}s"
    sleep 2
done
log "health status: $health"

# --- 6. user and mounts -------------------------------------------------------
uid=$(podman exec "$CONTAINER" id -u)
user=$(podman top "$CONTAINER" user,comm | awk 'NR > 1 && $2 ~ /mailshelf/ { print $1; exit }')
[ "$uid" != 0 ] || fail "container runs as root"
[ "$uid" = "$EXPECTED_UID" ] || fail "container runs as uid $uid, expected $EXPECTED_UID"
case "$user" in ''|root) fail "mailshelf process user is '${user:-unknown}'" ;; esac
log "runs as uid $uid (process user: $user)"
podman exec "$CONTAINER" sh -c 'touch /data/.write-probe && rm /data/.write-probe' \
    || fail "/data is not writable by the server's user"
if podman exec "$CONTAINER" sh -c 'touch /mail/.write-probe' 2>/dev/null; then
    fail "/mail is writable; expected a read-only mount"
fi
log "/data writable, /mail read-only"

# --- 6b. PDF ------------------------------------------------------------------
# The image carries Chromium for /message/<id>.pdf: a render inside the container, as its
# unprivileged user, proves the browser starts there (with its sandbox or without).
pdf_file="$WORK/welcome.pdf"
pdf_status=$(curl -sS --max-time 120 -o "$pdf_file" -w '%{http_code}' "$BASE_URL/message/welcome@example.com.pdf" || true)
[ "$pdf_status" = 200 ] || { podman logs --tail 20 "$CONTAINER" >&2 || true; fail "GET /message/welcome@example.com.pdf answered ${pdf_status:-nothing}, expected 200"; }
[ "$(head -c 5 "$pdf_file")" = "%PDF-" ] || fail "the PDF route did not answer a PDF"
log "PDF rendered in the container ($(wc -c <"$pdf_file") bytes)"

# --- 7. report ----------------------------------------------------------------
size_bytes=$(podman image inspect --format '{{.Size}}' "$IMAGE")
log "image $IMAGE: $(podman images --format '{{.Size}}' "$IMAGE" | head -n1) ($size_bytes bytes)"
log "build time: ${build_seconds}s${NO_CACHE:+ (NO_CACHE=$NO_CACHE)}"
podman rm -f -t 5 "$CONTAINER" >/dev/null 2>"$WORK/rm.err" \
    || { cat "$WORK/rm.err" >&2; fail "could not remove container $CONTAINER"; }
podman volume rm -f "$VOLUME" >/dev/null
STARTED=0
log "container removed"
