# The eventpipe consumer image for Cloud Run (see README, "The consumer").
# Build stage: a static binary, built with the same package path and flags
# as `make build-consumer` (cmd/consumer's tests check that they agree).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/consumer ./cmd/consumer

# Run stage: distroless static, no shell, no package manager, non-root user.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/consumer /consumer
USER nonroot:nonroot
ENV PORT=8080
EXPOSE 8080
ENTRYPOINT ["/consumer"]
