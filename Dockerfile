# laurel in a container: a static binary on a distroless base, run as a non-root user.
# Not built in CI (no Docker engine there): see docs/operations.md, "Containers".
#
#   docker build -t laurel .
#   docker run -p 7300:7300 -v laurel-data:/data -e LAUREL_ADMIN_KEY=… laurel
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/laurel ./cmd/laurel && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/laurel /usr/local/bin/laurel
# The data directory belongs to the image's non-root user, so that a new volume does too.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
VOLUME /data
EXPOSE 7300
# Listening beyond loopback takes keys (LAUREL_ADMIN_KEY, …): laurel refuses to start open.
ENTRYPOINT ["/usr/local/bin/laurel", "serve", "-addr", "0.0.0.0:7300", "-data", "/data"]
