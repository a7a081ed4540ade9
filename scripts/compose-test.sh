#!/usr/bin/env bash
# Run the set-up of compose.yaml with podman and prove it works, on a host that cannot pull from a
# registry: the two replicas are the image scripts/container-test.sh built (IMAGE), and PostgreSQL
# and nginx are stand-ins built from the local Debian base with Debian's own packages (the
# official postgres:16 and nginx images cannot be pulled here; the stand-in PostgreSQL honours
# the same POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB). Everything mailshelf's side of the
# file says is taken from compose.yaml itself: the replicas' environment, the mount, the
# database's settings and nginx's configuration.
#
#   1. one network; the services under their compose names (network aliases)
#   2. through the balancer: both replicas serve, exactly one of them indexes
#   3. an upload through the balancer from the page's own origin is accepted (and one from
#      another site refused), and every replica finds it
#   4. a replica killed: the balancer goes on answering, and the other replica indexes (whether
#      nginx finds it again once restarted at another address needs nginx 1.27.3's `resolve`,
#      which the stand-in does not have)
#   5. PostgreSQL stopped: 503 with Retry-After (not the balancer's 502), /api/status says the
#      database is unreachable; started again: everything answers by itself
#
# Exits non-zero on any failure. Must run as root (rootful podman).
#
# Environment:
#   IMAGE           the mailshelf image (default: mailshelf, as scripts/container-test.sh tags it)
#   BUILD_NETWORK   value for `podman build --network` for the stand-ins (default: host)
#   CONTAINERS_CONF podman settings (default: scripts/containers.conf)
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$SCRIPT_DIR/.." && pwd)
cd "$REPO_DIR"

export CONTAINERS_CONF="${CONTAINERS_CONF:-$SCRIPT_DIR/containers.conf}"
IMAGE=${IMAGE:-mailshelf}
BUILD_NETWORK=${BUILD_NETWORK:-host}
RUNTIME_BASE=${RUNTIME_BASE:-localhost/debian:bookworm-slim}
PG_IMAGE=localhost/mailshelf-stand-in-postgres:15
LB_IMAGE=localhost/mailshelf-stand-in-nginx:latest
RUN_ID="$$-$(date +%s)"
NET="mailshelf-compose-$RUN_ID"
VOLUME="mailshelf-compose-db-$RUN_ID"
WORK=$(mktemp -d /var/tmp/mailshelf-compose.XXXXXX)
CONTAINERS=()

log() { printf '[compose-test] %s\n' "$*"; }
fail() { printf '[compose-test] FAIL: %s\n' "$*" >&2; exit 1; }

cleanup() {
    local rc=$?
    if [ "$rc" -ne 0 ]; then
        for c in "${CONTAINERS[@]}"; do
            log "logs of $c:"
            podman logs --tail 20 "$c" 2>&1 || true
        done
    fi
    for c in "${CONTAINERS[@]}"; do
        podman rm -f -t 2 "$c" >/dev/null 2>&1 || true
    done
    podman network rm -f "$NET" >/dev/null 2>&1 || true
    podman volume rm -f "$VOLUME" >/dev/null 2>&1 || true
    rm -rf "$WORK"
    if [ "$rc" -eq 0 ]; then log "PASS"; else log "FAILED (exit $rc)"; fi
}
trap cleanup EXIT

podman image exists "$IMAGE" || fail "no image $IMAGE: run scripts/container-test.sh first"
podman image exists "$RUNTIME_BASE" || bash "$SCRIPT_DIR/container-base.sh"
python3 -c 'import yaml' 2>/dev/null || python3 -m pip install -q --disable-pip-version-check pyyaml

# ---- what compose.yaml says --------------------------------------------------------------------
python3 - "$WORK" <<'PY'
import json, re, sys, yaml
work = sys.argv[1]
c = yaml.safe_load(open("compose.yaml"))
def interpolate(v):
    # ${NAME:-default} with nothing set, and $$ for a literal $, as compose reads them.
    v = re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*:-([^}]*)\}", r"\1", str(v))
    return v.replace("$$", "$")
s = c["services"]
replica = s["replica-1"]
assert replica == s["replica-2"], "the two replicas differ"
mount = interpolate(replica["volumes"][0])
out = {
    "replica_env": {k: interpolate(v) for k, v in replica["environment"].items()},
    "mount_target": mount.split(":")[1],
    "postgres_env": {k: interpolate(v) for k, v in s["postgres"]["environment"].items()},
    "postgres_data": s["postgres"]["volumes"][0].split(":")[1],
    "lb_port": s["lb"]["ports"][0].split(":")[-1].strip('"'),
    "lb_conf_target": s["lb"]["configs"][0]["target"],
}
# Debian's nginx (1.22) cannot re-resolve an upstream's names (`resolve`, nginx 1.27.3), and
# podman's DNS is not Docker's 127.0.0.11: the stand-in resolves them once, at start.
conf = interpolate(c["configs"]["nginx"]["content"])
conf = re.sub(r"(?m)^\s*(resolver|zone) [^;]*;\n", "", conf).replace(" resolve ", " ")
open(f"{work}/nginx.conf", "w").write(conf)
for name, env in (("postgres", out.pop("postgres_env")), ("replica", out.pop("replica_env"))):
    open(f"{work}/{name}.env", "w").write("".join(f"{k}={v}\n" for k, v in env.items()))
json.dump(out, open(f"{work}/compose.json", "w"))
PY
field() { python3 -c "import json,sys; print(json.load(open('$WORK/compose.json'))$1)"; }

# ---- stand-ins for the two public images ---------------------------------------------------------
cat > "$WORK/postgres-entry.sh" <<'EOF'
# The official image's first start: a cluster owned by POSTGRES_USER with POSTGRES_PASSWORD, and
# the database POSTGRES_DB; then the server, reachable over the network with a password.
set -e
B=/usr/lib/postgresql/15/bin
D=/var/lib/postgresql/data
if [ ! -s "$D/PG_VERSION" ]; then
  printf '%s\n' "$POSTGRES_PASSWORD" > /tmp/pw
  $B/initdb -D "$D" -U "$POSTGRES_USER" --pwfile=/tmp/pw --auth-local=trust --auth-host=scram-sha-256 -E UTF8 >/dev/null
  rm /tmp/pw
  echo "host all all 0.0.0.0/0 scram-sha-256" >> "$D/pg_hba.conf"
  $B/pg_ctl -D "$D" -w start -o "-c listen_addresses=''" >/dev/null
  psql -U "$POSTGRES_USER" -d postgres -c "CREATE DATABASE \"$POSTGRES_DB\"" >/dev/null
  $B/pg_ctl -D "$D" -w stop >/dev/null
fi
exec $B/postgres -D "$D" -c listen_addresses='*'
EOF
cat > "$WORK/Containerfile.postgres" <<EOF
FROM $RUNTIME_BASE
RUN apt-get update && apt-get install -y --no-install-recommends postgresql-15 && rm -rf /var/lib/apt/lists/*
COPY postgres-entry.sh /usr/local/bin/postgres-entry.sh
USER postgres
ENTRYPOINT ["/bin/bash", "/usr/local/bin/postgres-entry.sh"]
EOF
cat > "$WORK/Containerfile.nginx" <<EOF
FROM $RUNTIME_BASE
RUN apt-get update && apt-get install -y --no-install-recommends nginx && rm -rf /var/lib/apt/lists/* \
 && rm -f /etc/nginx/sites-enabled/default
CMD ["nginx", "-g", "daemon off;"]
EOF
for pair in "$PG_IMAGE:postgres" "$LB_IMAGE:nginx"; do
    name=${pair%:*}; file=${pair##*:}
    if ! podman image exists "$name"; then
        log "building the stand-in $name"
        podman build -q --network "$BUILD_NETWORK" -t "$name" -f "$WORK/Containerfile.$file" "$WORK" >/dev/null \
            || fail "could not build $name"
    fi
done

# ---- the services ----------------------------------------------------------------------------------
podman network create "$NET" >/dev/null
run() { # NAME ALIAS ARGS...
    local name=$1 alias=$2; shift 2
    podman run -d --name "$name" --network "$NET" --network-alias "$alias" "$@" >/dev/null
    CONTAINERS+=("$name")
}
run "postgres-$RUN_ID" postgres --env-file "$WORK/postgres.env" -v "$VOLUME:$(field "['postgres_data']")" "$PG_IMAGE"
# Over TCP: the first start's own server, which creates the database, listens on the socket
# alone, and is stopped before the real one starts.
for _ in $(seq 1 60); do
    podman exec "postgres-$RUN_ID" pg_isready -h 127.0.0.1 -U mailshelf -q 2>/dev/null && break
    sleep 1
done
podman exec "postgres-$RUN_ID" pg_isready -h 127.0.0.1 -U mailshelf -q || fail "PostgreSQL did not start"
for r in replica-1 replica-2; do
    run "$r-$RUN_ID" "$r" --env-file "$WORK/replica.env" -v "$REPO_DIR/samples:$(field "['mount_target']"):ro" "$IMAGE"
done
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
run "lb-$RUN_ID" lb -p "127.0.0.1:$PORT:$(field "['lb_port']")" \
    -v "$WORK/nginx.conf:$(field "['lb_conf_target']"):ro" "$LB_IMAGE"
LB="http://127.0.0.1:$PORT"
log "balancer on $LB"

status() { curl -s --max-time 5 "$LB/api/status" || true; }
code() { curl -s -o /dev/null --max-time 5 -w '%{http_code}' "$@" || true; }
# Waits up to $1 seconds for the command after it to succeed.
within() { local n=$1; shift; for _ in $(seq 1 "$((n * 2))"); do "$@" && return 0; sleep 0.5; done; "$@"; }
indexers_seen() { # how many of 8 answers say indexer true, false
    local t=0 f=0 s
    for _ in $(seq 1 8); do
        s=$(status)
        case "$s" in *'"indexer":true'*) t=$((t + 1)) ;; *'"indexer":false'*) f=$((f + 1)) ;; esac
    done
    echo "$t $f"
}
both_serve_one_indexes() { read -r t f < <(indexers_seen); [ "$t" -gt 0 ] && [ "$f" -gt 0 ] && [ $((t + f)) = 8 ]; }
ready() { case "$(status)" in *'"ready":true'*'"backend":"postgresql"'*) return 0 ;; esac; return 1; }
indexes() { case "$(status)" in *'"indexer":true'*) return 0 ;; esac; return 1; }

# ---- 2: serving ------------------------------------------------------------------------------------
within 90 ready || fail "the balancer never answered a ready status: $(status)"
within 30 both_serve_one_indexes || fail "not both serving with one indexer: $(indexers_seen) (true false)"
log "both replicas answer through the balancer; one indexes"

# ---- 3: an upload -------------------------------------------------------------------------------
printf 'Message-ID: <compose-%s@compose.test>\r\nFrom: a@compose.test\r\nSubject: through the balancer %s\r\nDate: Thu, 26 Nov 2026 03:00:00 +0000\r\n\r\nhello\r\n' \
    "$RUN_ID" "$RUN_ID" > "$WORK/up.eml"
got=$(code -H "Origin: $LB" -F "file=@$WORK/up.eml" "$LB/api/messages")
[ "$got" = 201 ] || fail "upload from the page's own origin: HTTP $got"
got=$(code -H "Origin: http://evil.example" -F "file=@$WORK/up.eml" "$LB/api/messages")
[ "$got" = 403 ] || fail "upload from another site: HTTP $got"
found_everywhere() {
    for _ in $(seq 1 6); do
        case "$(curl -s --max-time 5 "$LB/api/messages?q=subject:balancer")" in *'"total":1'*) ;; *) return 1 ;; esac
    done
}
within 15 found_everywhere || fail "the upload is not found on every replica"
log "an upload through the balancer is found on every replica; another site's is refused"

# ---- 4: a replica killed ---------------------------------------------------------------------------
podman kill "replica-1-$RUN_ID" >/dev/null
bad=0
codes=""
for _ in $(seq 1 20); do c=$(code "$LB/api/messages"); codes="$codes $c"; [ "$c" = 200 ] || bad=$((bad + 1)); done
[ "$bad" = 0 ] || fail "$bad of 20 requests failed after a replica was killed:$codes"
within 15 indexes || fail "nobody indexes after the kill: $(status)"
log "a replica killed: every request answered, the other one indexes"

# ---- 5: the database away ---------------------------------------------------------------------------
podman stop -t 2 "postgres-$RUN_ID" >/dev/null 2>&1
away() {
    local h
    h=$(curl -s -o /dev/null -D - --max-time 5 "$LB/api/messages" || true)
    case "$h" in 'HTTP/1.1 503'*) printf '%s' "$h" | grep -qi '^retry-after: 2' ;; *) return 1 ;; esac
}
within 20 away || fail "no 503 with Retry-After while the database is away: $(code "$LB/api/messages")"
unreachable() { case "$(status)" in *'"database_reachable":false'*) return 0 ;; esac; return 1; }
within 10 unreachable || fail "status while the database is away: $(status)"
podman start "postgres-$RUN_ID" >/dev/null
back() { [ "$(code "$LB/api/messages")" = 200 ]; }
within 60 back || fail "not serving again after the database came back"
within 30 indexes || fail "nobody indexes after the database came back: $(status)"
log "the database away: 503 with Retry-After, then serving again by itself"
