// Compiles bpf/ into the scheduler's skeleton (OUT_DIR/bpf_skel.rs) and turns
// bpf/intf.h into Rust bindings (OUT_DIR/bpf_intf.rs). scx_cargo ships the
// sched_ext headers and vmlinux.h. It runs $BPF_CLANG (default `clang`), which
// must be clang >= 16: on Debian 12, `export BPF_CLANG=clang-19`.
fn main() {
    scx_cargo::BpfBuilder::new()
        .expect("no usable clang >= 16 for bpf/: install clang-19 and export BPF_CLANG=clang-19")
        .enable_intf("bpf/intf.h", "bpf_intf.rs")
        .enable_skel("bpf/main.bpf.c", "bpf")
        .build()
        .expect("building the BPF scheduler failed");
}
