# A static pel image (pel k8s job runs it): the binary alone on distroless/static, which
# has CA certificates and a non-root user, and no shell.
#   docker build -t REGISTRY/pel:TAG . && docker push REGISTRY/pel:TAG
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Pure Go (no cgo): the binary runs on any Linux of the architecture, with no libc.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /pel ./cmd/pel

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /pel /pel
# The manifests run it as this user, with a read-only root file system: pel writes only
# its run directory (-o), on the mounted volume.
USER 65532:65532
ENTRYPOINT ["/pel"]
