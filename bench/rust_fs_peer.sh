# Sourced by bench/mcp_stdio.sh and bench/gateway.sh: installs the Rust peer
# rust-mcp-filesystem at RUST_FS_VERSION (default 0.4.5) with `cargo install --locked` into
# bench/peers/ (its own target dir; ignored by git, reused while the version holds) and
# sets `rust_fs` to its binary.
version=${RUST_FS_VERSION:-0.4.5}
peer=bench/peers/rust-mcp-filesystem-$version
if [ ! -x "$peer/bin/rust-mcp-filesystem" ]; then
  cargo install --locked --quiet rust-mcp-filesystem --version "$version" \
    --root "$peer" --target-dir bench/peers/target
fi
rust_fs=$peer/bin/rust-mcp-filesystem
