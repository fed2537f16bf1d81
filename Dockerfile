# syntax=docker/dockerfile:1
# toolshed in a container: `toolshed serve` (MCP at /mcp, REST at /api/v1) on port 7070,
# the workspace and the data dir as volumes.
#
#   docker build -t toolshed .
#   docker run -d --name toolshed --init -p 127.0.0.1:7070:7070 \
#     --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
#     --security-opt systempaths=unconfined \
#     -v "$PWD":/workspace -v toolshed-data:/data toolshed
#   docker exec toolshed toolshed token      # the bearer token every request needs
#
# The three --security-opt let the command sandbox build its namespaces and mounts;
# without them commands are refused (never run unconfined) and the other tools still work.
# docs/sandbox.md, "In a container", says why, and what to choose instead.

# The build: Rust 1.89 or later (rusqlite 0.43 asks for it; from 1.90 on x86_64 the
# server's functions are also linked together, crates/toolshed-cli/build.rs) and a C
# compiler for QuickJS, the bundled SQLite and ring (the image has gcc). A release build
# takes minutes: one codegen unit and fat LTO (Cargo.toml, [profile.release]).
FROM rust:1.95-slim-trixie AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p toolshed-cli \
    && mkdir -p /out \
    && cp target/release/toolshed target/release/toolshed-sandbox /out/

FROM debian:trixie-slim
# toolshed-sandbox, the sandbox's helper, must sit beside toolshed; the plugins shipped
# with toolshed are found in <prefix>/share/toolshed/plugins beside <prefix>/bin/toolshed.
COPY --from=build /out/toolshed /out/toolshed-sandbox /usr/local/bin/
COPY plugins /usr/local/share/toolshed/plugins
# A user of its own, uid 1000 (a bind-mounted workspace must be writable by it), owning
# the two volumes so that fresh named volumes start out writable.
RUN useradd --create-home --uid 1000 --user-group toolshed \
    && mkdir -p /workspace /data \
    && chown toolshed:toolshed /workspace /data
USER toolshed
ENV TOOLSHED_WORKSPACE=/workspace \
    TOOLSHED_HOME=/data
VOLUME ["/workspace", "/data"]
WORKDIR /workspace
EXPOSE 7070
ENTRYPOINT ["toolshed"]
# 127.0.0.1, serve's default, cannot be reached from outside a container: listen on every
# address. --allow-remote must come with any address that is not loopback; the token (in
# /data/token, printed by `toolshed token`) still guards every request. Requests must name
# the server as 127.0.0.1:7070 or localhost:7070 (publish the same port), else add the name
# clients use: -e TOOLSHED_SERVER__ALLOWED_HOSTS='["toolshed:7070"]'.
CMD ["serve", "--bind", "0.0.0.0", "--allow-remote"]
