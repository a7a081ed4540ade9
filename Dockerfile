# mailshelf container image.
#
# Base images are build arguments. The defaults are the local images that
# scripts/container-base.sh creates on hosts that cannot pull from a registry.
# Anywhere else, build with the public equivalents:
#
#   docker build \
#     --build-arg BUILDER_IMAGE=docker.io/library/rust:1-bookworm \
#     --build-arg RUNTIME_IMAGE=docker.io/library/debian:bookworm-slim \
#     -t mailshelf .
#
# Run (archive read-only at /mail, uploads in the /data volume):
#
#   docker run -v ~/Mail:/mail:ro -v mailshelf-data:/data -p 8080:8080 mailshelf

ARG BUILDER_IMAGE=localhost/mailshelf-builder:latest
ARG RUNTIME_IMAGE=localhost/debian:bookworm-slim

# ---- build ---------------------------------------------------------------------
FROM ${BUILDER_IMAGE} AS builder
WORKDIR /build

# Dependencies first, against stub sources, so that this layer is reused
# until Cargo.toml or Cargo.lock change.
COPY Cargo.toml Cargo.lock ./
# The manifest names a test and a bench target; stubs stand in for them (tests/ and bench/
# are not part of the build context and `cargo build` compiles neither).
RUN mkdir -p src tests bench \
 && echo 'fn main() {}' > src/main.rs \
 && : > src/lib.rs \
 && : > tests/main.rs \
 && echo 'fn main() {}' > bench/rewrite.rs \
 && cargo build --release --locked \
 && rm -rf src target/release/.fingerprint/mailshelf-*

# templates/ and static/ are compiled into the binary.
COPY templates ./templates
COPY static ./static
COPY src ./src
RUN touch src/main.rs src/lib.rs \
 && cargo build --release --locked \
 && install -D -m 0755 target/release/mailshelf /out/mailshelf

# ---- runtime -------------------------------------------------------------------
FROM ${RUNTIME_IMAGE}

ARG APP_UID=10001
ARG APP_GID=10001
# Chromium renders the PDFs of /message/<id>.pdf, found on PATH. Its fonts: DejaVu for Latin,
# Greek, Cyrillic, Hebrew and Arabic; Noto for Thai, the Indic scripts and the others of that set;
# Droid Sans Fallback for Chinese, Japanese and Korean (without them, mail in those scripts prints
# as empty boxes). It makes the image about 870 MB instead of 100 MB: WITH_CHROMIUM=0 leaves it
# out, and the PDF route then answers 501.
ARG WITH_CHROMIUM=1
# hadolint ignore=DL3008
RUN if [ "${WITH_CHROMIUM}" = 1 ]; then \
      apt-get update \
      && apt-get install -y --no-install-recommends chromium fonts-dejavu-core fonts-noto-core \
           fonts-droid-fallback \
      && rm -rf /var/lib/apt/lists/*; \
    fi
RUN groupadd --gid "${APP_GID}" mailshelf \
 && useradd --uid "${APP_UID}" --gid mailshelf --no-create-home --no-log-init \
      --home-dir /nonexistent --shell /usr/sbin/nologin mailshelf \
 && mkdir -p /mail /data \
 && chown "${APP_UID}:${APP_GID}" /data

COPY --from=builder /out/mailshelf /usr/local/bin/mailshelf

# The archive is mounted read-only at /mail; uploads are written to /data.
ENV MAILSHELF_PATH=/mail \
    MAILSHELF_LISTEN=0.0.0.0:8080 \
    MAILSHELF_DATA_DIR=/data

USER ${APP_UID}:${APP_GID}
VOLUME /data
EXPOSE 8080

HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["mailshelf", "healthcheck"]

ENTRYPOINT ["mailshelf"]
CMD ["serve"]
