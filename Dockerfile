# syntax=docker/dockerfile:1
# The eventpipe consumer image for Cloud Run (docs/consumer.md#container-image).
#
# Reproducible (docs.docker.com/build/building/reproducible-builds/): both base images are
# pinned by digest (each the one its tag named when pinned; refresh with `crane digest TAG`),
# the Go toolchain by version (GOTOOLCHAIN), and the binary is built with -trimpath, no VCS
# stamp and no build id, so the same commit gives the same bytes from any checkout
# (cmd/consumer TestConsumerBuildIsReproducible). Layer and image timestamps come from
# SOURCE_DATE_EPOCH:
#   docker buildx build --build-arg SOURCE_DATE_EPOCH=$(git log -1 --pretty=%ct) \
#     --output type=image,name=IMAGE,rewrite-timestamp=true,push=true .
#
# Build stage: a static binary, built with the same package path and flags as
# `make build-consumer` (cmd/consumer's tests check that they agree).
FROM golang:1.26-bookworm@sha256:a688600ca24f8a4d3ca77f95b0dd40704a9fc787c826660eb7ba0b641b8b175d AS build
ARG SOURCE_DATE_EPOCH
ENV GOTOOLCHAIN=go1.26.8
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags="-s -w -buildid=" -o /out/consumer ./cmd/consumer

# Run stage: distroless static, no shell, no package manager, non-root user.
FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab
ARG SOURCE_DATE_EPOCH
COPY --from=build /out/consumer /consumer
USER nonroot:nonroot
ENV PORT=8080
EXPOSE 8080
ENTRYPOINT ["/consumer"]
