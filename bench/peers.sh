# Sourced by the bench scripts: peer schedulers from crates.io, built the
# same way as scx_cadence into $CACHE/peers (about 6 min, once). Expects
# CACHE and a sourced .cache/env (BPF_CLANG).

BPFLAND_VERSION=1.1.4
BPFLAND=$CACHE/peers/bin/scx_bpfland

# install_bpfland: builds scx_bpfland@BPFLAND_VERSION unless it is there.
install_bpfland() {
	local have
	have=$("$BPFLAND" --version 2>/dev/null || true)
	if [[ $have != *"$BPFLAND_VERSION"* ]]; then
		echo "bench: cargo install scx_bpfland@$BPFLAND_VERSION (once)"
		cargo install -q --locked "scx_bpfland@$BPFLAND_VERSION" --root "$CACHE/peers"
	fi
}
