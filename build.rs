// Compiles bpf/ into the scheduler's skeleton (OUT_DIR/bpf_skel.rs) and turns
// bpf/intf.h into Rust bindings (OUT_DIR/bpf_intf.rs). scx_cargo ships the
// sched_ext headers and vmlinux.h; set BPF_CLANG=clang-19 on Debian 12.
fn main() {
    scx_cargo::BpfBuilder::new()
        .expect("scx_cargo: no usable clang (set BPF_CLANG=clang-19)")
        .enable_intf("bpf/intf.h", "bpf_intf.rs")
        .enable_skel("bpf/main.bpf.c", "bpf")
        .build()
        .expect("building the BPF scheduler failed");
}
