# The image `h3lab dist k8s` runs in each pod: h3lab alone, on a minimal
# base with glibc and CA certificates, as a non-root user.
#
#   docker build -t registry.example/h3lab:0.1 .
#   docker push registry.example/h3lab:0.1
#
# The build stage is the toolchain this repository is built and tested
# with; the runtime stage is distroless (no shell, no package manager).

FROM docker.io/library/rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p h3lab \
    && strip target/release/h3lab

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/h3lab /usr/local/bin/h3lab
# Numeric, so the kubelet can check the manifest's runAsNonRoot.
USER 65532:65532
ENTRYPOINT ["h3lab"]
