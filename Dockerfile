# syntax=docker/dockerfile:1
# dlqctl in a small container image, for runbooks run as Kubernetes jobs (docs/install.md,
# docs/ci.md): one static (musl) binary on distroless/static, which has CA certificates and
# time zones and nothing else (no shell), run as the unprivileged user nonroot (65532).
#
#   docker build --build-arg DLQCTL_BUILD_COMMIT="$(git rev-parse HEAD)" -t dlqctl .
#   docker run --rm -e PGPASSWORD -v "$PWD/dlqctl.toml:/etc/dlqctl/dlqctl.toml:ro" \
#       -e DLQCTL_CONFIG=/etc/dlqctl/dlqctl.toml dlqctl verify
#
# Not built by the test suite (its machine has no container engine): see docs/install.md.

ARG RUST_VERSION=1.95
# distroless/static-debian12:debug-nonroot adds BusyBox (sh, wget) for jobs that need a shell.
ARG BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot

FROM rust:${RUST_VERSION}-alpine AS build
# C toolchains for the vendored native code: librdkafka (configure: bash, make), OpenSSL (perl),
# zlib and zstd (cc), aws-lc (cmake).
RUN apk add --no-cache bash cmake g++ linux-headers make musl-dev perl python3
WORKDIR /src
COPY . .
# The commit for `dlqctl --version` (.git is not in the build context).
ARG DLQCTL_BUILD_COMMIT=
ENV DLQCTL_BUILD_COMMIT=${DLQCTL_BUILD_COMMIT}
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked \
    && install -D -m 755 target/release/dlqctl /out/usr/local/bin/dlqctl \
    && mkdir -p /out/var/lib/dlqctl \
    && /out/usr/local/bin/dlqctl --version

FROM ${BASE_IMAGE}
COPY --from=build /out/usr/local/bin/dlqctl /usr/local/bin/dlqctl
# The audit log and the SQS journal (docs/audit.md, docs/sqs.md): mount a volume here to keep
# them across runs.
COPY --from=build --chown=65532:65532 /out/var/lib/dlqctl /var/lib/dlqctl
ENV DLQCTL_STATE_DIR=/var/lib/dlqctl
USER nonroot:nonroot
ENTRYPOINT ["dlqctl"]
CMD ["--help"]
